#!/usr/bin/env bash
# Session 32, call 13 (diagnosis): more of the tile's loads in flight (KILN_GPU_SCATTER_STAGE:
# loads a thread issues before their stores), with the default labels and with the tensor-core
# screen trusted (labels nearly free; the km-experiments.patch binary). kiln-bench kmeans, two
# rounds.
set -u
P=$PWD/km-pack
cd "$P" && xz -dc kiln-bench.xz > kiln-bench && chmod +x kiln-bench
run() { # name, env...
  local name=$1; shift
  env KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-$name KILN_DATA=$P/data "$@" timeout 60 ./kiln-bench kmeans --reps 25 > /tmp/b.txt 2>&1
  echo "$name r$round: $(grep -E '^kmeans_iter' /tmp/b.txt | grep -v host | awk '{printf "%s %s  ", $1, $2}')"
}
for round in 1 2; do
  run off
  run stage4 KILN_GPU_SCATTER_STAGE=4
  run stage8 KILN_GPU_SCATTER_STAGE=8
  run trust KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust
  run trust-stage8 KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust KILN_GPU_SCATTER_STAGE=8
  run trust-stage8-b4 KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust KILN_GPU_SCATTER_STAGE=8 KILN_GPU_SCATTER_BOUNDS=4
done
