#!/usr/bin/env bash
# Session 32, call 4 (diagnosis): the tensor-core screen's decisions trusted outright
# (KILN_DEBUG_MMA=trust, wrong at near ties) or never trusted (every position through the
# float32 fallback), labels of normal data against the host's, and the k-means bench.
set -u
R=$PWD
P=$PWD/km-pack
cd "$P" && for f in kiln-bench kiln-tests; do xz -dc $f.xz > $f && chmod +x $f; done
mkdir -p /tmp/o
for dbg in "" trust never; do
  KILN_DEBUG_MMA=$dbg KILN_GPU_SCREEN_MMA=on KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_CACHE_DIR=/tmp/c-t-$dbg timeout 120 ./kiln-tests gpu_debug_mma --nocapture 2>&1 | grep -E "DEBUG|test result"
done
run() { # name, env...
  local name=$1; shift
  env KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-$name KILN_DATA=$P/data "$@" timeout 60 ./kiln-bench kmeans --reps 25 > /tmp/o/bench-$name-$round.txt 2>&1
  echo "$name r$round: $(grep -E '^(copy|kmeans)' /tmp/o/bench-$name-$round.txt | grep -v host | awk '{printf "%s %s  ", $1, $2}')"
}
for round in 1 2; do
  run off
  run mma KILN_GPU_SCREEN_MMA=on
  run trust KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust
  run never KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=never
done
