#!/usr/bin/env bash
# Session 12, on the GPU machine (carry gpu-pack with kiln-bench-before.xz = 2eeb6c8's kiln-bench):
# before/after A/B of the host-bound and row workloads, each process with its own empty disk
# cache (so first_call is cold every time), then the first call with the driver's JIT instead
# of ptxas, then an ncu profile of the layer-norm kernel.
set -u
cd "$(dirname "$0")"
pack=$(pwd)
[ -f kiln-bench.xz ] || pack=$(pwd)/gpu-pack
cd "$pack"
xz -dc kiln-bench-before.xz > /tmp/kb-before && xz -dc kiln-bench.xz > /tmp/kb-after && chmod +x /tmp/kb-before /tmp/kb-after
export KILN_DEVICE=cuda:0
W="copy tiny_chain_48ops first_call ew_chain softmax_rows layernorm_rows kmeans_iter"
for round in 1 2; do
  for b in before after; do
    echo "=== $b round $round"
    /tmp/kb-$b --reps 25 $W 2>&1
  done
done
echo "=== after, KILN_GPU_LINK=ptx (the driver compiles the PTX)"
KILN_GPU_LINK=ptx /tmp/kb-after --reps 25 tiny_chain first_call 2>&1
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  echo "=== ncu layernorm_rows (after)"
  timeout 240 ncu --clock-control none -k regex:kiln --launch-skip 8 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section SourceCounters \
    /tmp/kb-after --reps 3 layernorm_rows 2>&1 | tail -150
  echo "=== ncu softmax_rows (after)"
  timeout 200 ncu --clock-control none -k regex:kiln --launch-skip 8 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats /tmp/kb-after --reps 3 softmax_rows 2>&1 | tail -90
fi
