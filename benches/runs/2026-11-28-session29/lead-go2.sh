#!/bin/bash
# lead, session 29, device call 2: per-warp bins without tiles (KILN_GPU_SCATTER_WARP) off/on
# alternated, twice; ncu of both; the scatter/indexing/k-means GPU tests with it on and off.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-tests; do xz -d -T4 $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
W="scatter_add_2^26_into_1024 scatter_add_2^26_into_1048576 kmeans_iter_1048576x64_k10 kmeans_iter_1797x64_k10 copy"
for i in 1 2; do
  KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCATTER_WARP=off timeout 60 ./kiln-bench $W --reps 25 > $R/bench-off-$i.txt 2>&1
  KILN_CACHE_DIR=/tmp/c-on timeout 60 ./kiln-bench $W --reps 25 > $R/bench-on-$i.txt 2>&1
done
t bench
NCU="ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats -k regex:kiln_gpu --launch-skip 3 --launch-count 1"
KILN_CACHE_DIR=/tmp/c-on timeout 60 $NCU ./kiln-bench scatter_add_2^26_into_1024 --reps 5 > $R/ncu-on.txt 2>&1
t ncu
cd $ROOT
KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_CACHE_DIR=/tmp/c-t1 timeout 150 $P/kiln-tests scatter indexing kmeans label screen bincount --test-threads 4 > $R/tests-on.txt 2>&1
KILN_GPU_SCATTER_WARP=off KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_CACHE_DIR=/tmp/c-t2 timeout 100 $P/kiln-tests scatter_warp indexing --test-threads 4 > $R/tests-off.txt 2>&1
t tests
{ cat $R/times.txt $R/device.txt; grep -H "scatter\|kmeans_iter\|^copy" $R/bench-*.txt | grep -v "host µs"; echo "== ncu on"; grep -E "kiln_gpu \(|Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  " $R/ncu-on.txt; grep -E "test result|FAILED|panicked" $R/tests-*.txt | head -20; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
