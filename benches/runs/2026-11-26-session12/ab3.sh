#!/usr/bin/env bash
# Session 12, third GPU run: before (2eeb6c8) / after (the pack's commit), kiln-bench's host-bound
# rows, row kernels, k-means and the first call; then ncu of the layer-norm kernel.
set -u
cd "$(dirname "$0")"
pack=$(pwd)
[ -f kiln-bench.xz ] || pack=$(pwd)/gpu-pack
cd "$pack"
xz -dc kiln-bench-before.xz > /tmp/kb-before && xz -dc kiln-bench.xz > /tmp/kb-after && chmod +x /tmp/kb-before /tmp/kb-after
export KILN_DEVICE=cuda:0
W="copy tiny_chain_48ops ew_chain softmax_rows layernorm_rows kmeans_iter first_call"
for round in 1 2; do
  for b in before after; do
    echo "=== $b round $round"
    /tmp/kb-$b --reps 25 $W 2>&1
  done
done
echo "=== after, KILN_GPU_TIER=fast (the fast tier's code alone)"
KILN_GPU_TIER=fast /tmp/kb-after --reps 25 ew_chain sqdiff_bcast softmax_rows layernorm_rows sum_all sum_cols kmeans_iter 2>&1 | grep -E "^[a-z].* +[0-9.]+ +"
echo "=== after, KILN_GPU_TIER=optimized"
KILN_GPU_TIER=optimized /tmp/kb-after --reps 25 ew_chain sqdiff_bcast softmax_rows layernorm_rows sum_all sum_cols kmeans_iter 2>&1 | grep -E "^[a-z].* +[0-9.]+ +"
if command -v ncu >/dev/null; then
  echo "=== ncu layernorm_rows (after)"
  timeout 200 ncu --clock-control none -k regex:kiln --launch-skip 66 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section ComputeWorkloadAnalysis \
    /tmp/kb-after --reps 3 layernorm_rows 2>&1 | grep -v "^==PROF=="
fi
