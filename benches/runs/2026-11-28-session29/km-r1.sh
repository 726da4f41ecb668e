#!/bin/bash
# km, session 29, device call 1: kiln-bench kmeans of branch km29, the labels' screen by
# expanded distances (KILN_GPU_SCREEN_EXPANDED=on, the default) against off (session 28's
# kernel), alternated in one binary, a cache directory per setting; a sweep with expanded on
# (terms a lane takes a step, positions a thread); ptxas -v of both 2^17 kernels; ncu sections
# of both 2^20 kernels; the GPU tests of the area (expanded on). Everything in $OUT/all.tgz, a
# summary in $OUT/summary.txt.
set -u
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD INSTA_WORKSPACE_ROOT=$PWD INSTA_UPDATE=no
P=$PWD/km29-pack
R=$OUT/r; mkdir -p $R
S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P
for f in *.xz; do timeout 30 xz -d -T4 "$f"; done; chmod +x kiln-bench kiln-tests
timeout 10 nvidia-smi -L > $R/device.txt 2>&1; timeout 10 nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $R/device.txt
t unpacked
B="kmeans --reps 25"
for i in 1 2 3; do
  KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCREEN_EXPANDED=off timeout 25 ./kiln-bench $B > $R/bench-off-$i.txt 2>&1
  KILN_CACHE_DIR=/tmp/c-new KILN_GPU_SCREEN_EXPANDED=on timeout 25 ./kiln-bench $B > $R/bench-new-$i.txt 2>&1
done
t bench
sw() { local name=$1; shift; env KILN_CACHE_DIR=/tmp/c-$name KILN_GPU_SCREEN_EXPANDED=on "$@" timeout 25 ./kiln-bench $B > $R/sweep-$name.txt 2>&1; }
sw s1 KILN_ARG_SCREEN=1
sw s4 KILN_ARG_SCREEN=4
sw p2 KILN_GPU_SCATTER_POSITIONS=2
t sweep
for v in new off; do timeout 20 ptxas -arch=sm_90 -v km-$v.ptx -o /tmp/km-$v.cubin > $R/ptxas-$v.txt 2>&1; done
t ptxas
NCU="ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats -k regex:kiln_gpu --launch-skip 5 --launch-count 1"
KILN_CACHE_DIR=/tmp/c-new KILN_GPU_SCREEN_EXPANDED=on timeout 40 $NCU ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-new.txt 2>&1
KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCREEN_EXPANDED=off timeout 40 $NCU ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-off.txt 2>&1
t ncu
cd $P/..
INSTA_WORKSPACE_ROOT=$P/ws KILN_CACHE_DIR=/tmp/c-tests timeout 100 ./km29-pack/kiln-tests gpu_ scatter kmeans label screen --test-threads 4 > $R/gpu-tests.txt 2>&1
echo "tests rc $?" >> $R/times.txt; t tests
{ cat $R/times.txt; cat $R/device.txt; grep -H "kmeans_iter\|^copy " $R/bench-*.txt $R/sweep-*.txt | grep -v "host µs"; grep -H "registers\|spill" $R/ptxas-*.txt; for v in new off; do echo "== ncu $v"; grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  |Executed Ipc A" $R/ncu-$v.txt; done; grep -E "test result|FAILED|panicked|^    " $R/gpu-tests.txt | head -30; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
