#!/bin/bash
# km, session 28, device call 2 (same binaries as call 1, warm machine): A/B repeated twice
# (KILN_GPU_SCATTER_OWNED off/on alternated), then knob sweeps with owned on (tile copy's loads
# in flight, screened argmin's terms a step, a 128-thread block), and ncu sections of the off
# kernel beside call 1's of the owned one.
set -u
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD INSTA_WORKSPACE_ROOT=$PWD INSTA_UPDATE=no
P=$PWD/km-pack
export KILN_DATA=$P/data
R=$OUT/r; mkdir -p $R
S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P
[ -x kiln-bench ] || { for f in *.xz; do timeout 30 xz -d -T4 "$f"; done; chmod +x kiln-bench kiln-tests; }
timeout 10 nvidia-smi -L > $R/device.txt 2>&1
t unpacked
B="kmeans --reps 25"
for i in 1 2; do
  KILN_CACHE_DIR=/tmp/c2-off KILN_GPU_SCATTER_OWNED=off timeout 25 ./kiln-bench $B > $R/bench-off-$i.txt 2>&1
  KILN_CACHE_DIR=/tmp/c2-new KILN_GPU_SCATTER_OWNED=on timeout 25 ./kiln-bench $B > $R/bench-new-$i.txt 2>&1
done
t bench
sw() { local name=$1; shift; env KILN_CACHE_DIR=/tmp/c2-$name KILN_GPU_SCATTER_OWNED=on "$@" timeout 25 ./kiln-bench $B > $R/sweep-$name.txt 2>&1; }
sw st2 KILN_GPU_SCATTER_STAGE=2
sw st4 KILN_GPU_SCATTER_STAGE=4
sw st8 KILN_GPU_SCATTER_STAGE=8
sw s2 KILN_ARG_SCREEN=2
sw s4 KILN_ARG_SCREEN=4
sw t128 KILN_GPU_SCATTER=128,128
sw p2b4 KILN_GPU_SCATTER_POSITIONS=2 KILN_GPU_SCATTER_BOUNDS=4
t sweep
NCU="ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats -k regex:kiln_gpu --launch-skip 5 --launch-count 1"
KILN_CACHE_DIR=/tmp/c2-off KILN_GPU_SCATTER_OWNED=off timeout 40 $NCU ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-off.txt 2>&1
KILN_CACHE_DIR=/tmp/c2-new KILN_GPU_SCATTER_OWNED=on timeout 40 $NCU ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-new.txt 2>&1
t ncu
{ cat $R/times.txt; cat $R/device.txt; grep -H "kmeans_iter\|^copy " $R/bench-*.txt $R/sweep-*.txt | grep -v "host µs"; for v in off new; do echo "== ncu $v"; grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Compute \(SM\) Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  |Executed Ipc A" $R/ncu-$v.txt; done; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
