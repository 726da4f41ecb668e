#!/bin/bash
# lead, session 29, device call 1: the per-warp bins of one-element scatters (KILN_GPU_SCATTER_WARP)
# off/on alternated, twice, kiln-bench scatter/bincount/kmeans; peers_ops.py's scatter rows; ncu of on.
set -u
P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; xz -d -T4 kiln-bench.xz; chmod +x kiln-bench
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
W="scatter_add_2^26_into_1024 scatter_add_2^26_into_1048576 bincount_2^26_into_1024 kmeans_iter_1048576x64_k10 copy"
for i in 1 2; do
  KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCATTER_WARP=off timeout 60 ./kiln-bench $W --reps 25 > $R/bench-off-$i.txt 2>&1
  KILN_CACHE_DIR=/tmp/c-on timeout 60 ./kiln-bench $W --reps 25 > $R/bench-on-$i.txt 2>&1
done
t bench
timeout 150 python3 peers_ops.py scatter_add_2^26_into bincount_2^26_into_1024 copy > $R/peers.txt 2>&1
t peers
NCU="ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats -k regex:kiln_gpu --launch-skip 3 --launch-count 1"
KILN_CACHE_DIR=/tmp/c-on timeout 60 $NCU ./kiln-bench scatter_add_2^26_into_1024 --reps 5 > $R/ncu-on.txt 2>&1
KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCATTER_WARP=off timeout 60 $NCU ./kiln-bench scatter_add_2^26_into_1024 --reps 5 > $R/ncu-off.txt 2>&1
t ncu
{ cat $R/times.txt $R/device.txt; grep -H "scatter\|bincount\|kmeans_iter\|^copy" $R/bench-*.txt; grep -i "scatter\|bincount\|copy" $R/peers.txt; for v in on off; do echo "== ncu $v"; grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  " $R/ncu-$v.txt; done; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
