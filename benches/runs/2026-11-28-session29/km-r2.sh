#!/bin/bash
# km, session 29, device call 2: the binary with 660 blocks under the expanded screen
# (KILN_GPU_SCATTER_BLOCKS's default there). A/B twice: KILN_GPU_SCREEN_EXPANDED=off (session
# 28's kernel: plain screen, 512 blocks) against the default (expanded, 660 blocks), alternated,
# a cache directory per setting; a sweep of the blocks (expanded at 512 and 1320, plain at 528
# and 660); ncu of the default kernel; the GPU tests of the area. Everything in $OUT/all.tgz.
set -u
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD INSTA_WORKSPACE_ROOT=$PWD INSTA_UPDATE=no
P=$PWD/km29-pack
R=$OUT/r; mkdir -p $R
S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P
for f in *.xz; do timeout 30 xz -d -T4 "$f"; done; chmod +x kiln-bench kiln-tests
timeout 10 nvidia-smi -L > $R/device.txt 2>&1
t unpacked
B="kmeans --reps 25"
for i in 1 2; do
  KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCREEN_EXPANDED=off timeout 25 ./kiln-bench $B > $R/bench-off-$i.txt 2>&1
  KILN_CACHE_DIR=/tmp/c-new timeout 25 ./kiln-bench $B > $R/bench-new-$i.txt 2>&1
done
t bench
sw() { local name=$1; shift; env KILN_CACHE_DIR=/tmp/c-$name "$@" timeout 25 ./kiln-bench $B > $R/sweep-$name.txt 2>&1; }
sw e512 KILN_GPU_SCATTER_BLOCKS=512
sw e1320 KILN_GPU_SCATTER_BLOCKS=1320
sw p528 KILN_GPU_SCREEN_EXPANDED=off KILN_GPU_SCATTER_BLOCKS=528
sw p660 KILN_GPU_SCREEN_EXPANDED=off KILN_GPU_SCATTER_BLOCKS=660
t sweep
NCU="ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats -k regex:kiln_gpu --launch-skip 5 --launch-count 1"
KILN_CACHE_DIR=/tmp/c-new timeout 40 $NCU ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-new.txt 2>&1
t ncu
cd $P/..
INSTA_WORKSPACE_ROOT=$P/ws KILN_CACHE_DIR=/tmp/c-tests timeout 100 ./km29-pack/kiln-tests gpu_ scatter kmeans label screen --test-threads 4 > $R/gpu-tests.txt 2>&1
echo "tests rc $?" >> $R/times.txt; t tests
{ cat $R/times.txt; cat $R/device.txt; grep -H "kmeans_iter\|^copy " $R/bench-*.txt $R/sweep-*.txt | grep -v "host µs"; echo "== ncu new"; grep -E "Duration|Registers Per|Achieved Occupancy|Waves Per SM|Grid Size|DRAM Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  |Executed Ipc A" $R/ncu-new.txt; grep -E "test result|FAILED|panicked|^    " $R/gpu-tests.txt | head -30; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
