#!/usr/bin/env bash
# Session 32, call 5 (diagnosis): with the labels nearly free (the tensor-core screen trusted,
# KILN_DEBUG_MMA=trust: 1 label in 2^20 off at a near tie), what the rest of the kernel costs
# under other bins and staging settings. kiln-bench kmeans, two rounds.
set -u
P=$PWD/km-pack
cd "$P" && xz -dc kiln-bench.xz > kiln-bench && chmod +x kiln-bench
run() { # name, env...
  local name=$1; shift
  env KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-$name KILN_DATA=$P/data "$@" timeout 60 ./kiln-bench kmeans --reps 25 > /tmp/b.txt 2>&1
  echo "$name r$round: $(grep -E '^kmeans_iter_1048' /tmp/b.txt | grep -v host | awk '{printf "%s %s  ", $1, $2}')"
}
for round in 1 2; do
  run off
  run trust KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust
  run trust-owned-off KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust KILN_GPU_SCATTER_OWNED=off
  run trust-pipe KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCATTER=128,64
  run trust-b1024 KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust KILN_GPU_SCATTER_BLOCKS=1024
  run trust-512t KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust KILN_GPU_SCATTER=512,128
done
