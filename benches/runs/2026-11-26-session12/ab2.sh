#!/usr/bin/env bash
# Session 12, second GPU call: before (2eeb6c8) / after (the pack's commit) on the row kernels,
# the host-bound chain and the first call; the output pass's unroll 1, 2, 4, 8; the first call
# three times in new processes (no cache) with its breakdown.
set -u
cd "$(dirname "$0")"
pack=$(pwd)
[ -f kiln-bench.xz ] || pack=$(pwd)/gpu-pack
cd "$pack"
xz -dc kiln-bench-before.xz > /tmp/kb-before && xz -dc kiln-bench.xz > /tmp/kb-after && chmod +x /tmp/kb-before /tmp/kb-after
export KILN_DEVICE=cuda:0
W="copy tiny_chain_48ops ew_chain softmax_rows layernorm_rows l2norm_rows kmeans_iter"
for round in 1 2; do
  for b in before after; do
    echo "=== $b round $round"
    /tmp/kb-$b --reps 25 $W 2>&1
  done
done
for u in 1 2 8; do
  echo "=== after, KILN_GPU_WRITE_UNROLL=$u"
  KILN_GPU_WRITE_UNROLL=$u /tmp/kb-after --reps 25 softmax_rows layernorm_rows 2>&1 | grep -E "^(softmax|layernorm)_rows +[0-9]"
done
for i in 1 2 3; do
  echo "=== first call $i (after)"
  /tmp/kb-after first_call 2>&1 | grep -E "first|^copy"
done
echo "=== first call (before)"
/tmp/kb-before first_call 2>&1 | grep -E "first"
