#!/usr/bin/env bash
# Session 33, call: kiln-bench's k-means (2^20x64 and the digits) with warps taking tiles on
# their own (KILN_GPU_SCATTER_WARP_TILE) against the block's tiles, settings alternated in one
# binary, a kiln cache directory each, two rounds.
set -u
P=$PWD/wt-bench
xz -dc "$P/kiln-bench.xz" > /tmp/kiln-bench && chmod +x /tmp/kiln-bench
nvidia-smi -L
run() { # name, env...
  local name=$1; shift
  env KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-$name "$@" timeout 60 /tmp/kiln-bench copy kmeans --reps 25 > "$OUT/bench-$name-$round.txt" 2>&1
  echo "$name r$round: $(grep -E '^(copy|kmeans)' "$OUT/bench-$name-$round.txt" | awk '{printf "%s %s  ", $1, $2}')"
}
for round in 1 2; do
  run off KILN_GPU_SCATTER_WARP_TILE=off
  run off-ex KILN_GPU_SCATTER_WARP_TILE=off KILN_GPU_SCREEN_EXPANDED=on
  run wt16 KILN_GPU_SCATTER_WARP_TILE=16
  run wt16-ex KILN_GPU_SCATTER_WARP_TILE=16 KILN_GPU_SCREEN_EXPANDED=on
  run wt32 KILN_GPU_SCATTER_WARP_TILE=32
  run wt32-ex KILN_GPU_SCATTER_WARP_TILE=32 KILN_GPU_SCREEN_EXPANDED=on
  run wt8 KILN_GPU_SCATTER_WARP_TILE=8
  run wt16-256 KILN_GPU_SCATTER_WARP_TILE=16 KILN_GPU_SCATTER=256,128
  run wt16-64 KILN_GPU_SCATTER_WARP_TILE=16 KILN_GPU_SCATTER=64,32
  run wt16-b1024 KILN_GPU_SCATTER_WARP_TILE=16 KILN_GPU_SCATTER_BLOCKS=1024
done
