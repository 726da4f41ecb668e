#!/usr/bin/env bash
# Session 32, call 1: the k-means update through two tile buffers (cp.async,
# KILN_GPU_SCATTER_PIPELINE) against the default, settings alternated in one kiln-bench binary
# (a cache directory each), two rounds; then the area's GPU tests with the knob on.
set -u
R=$PWD
P=$PWD/km-pack
nvidia-smi -L
cd "$P" && for f in kiln-bench kiln-tests; do xz -dc $f.xz > $f && chmod +x $f; done
run() { # name, env...
  local name=$1; shift
  env KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-$name KILN_DATA=$P/data "$@" timeout 60 ./kiln-bench copy kmeans --reps 25 > "$OUT/bench-$name-$round.txt" 2>&1
  echo "$name r$round: $(grep -E '^(copy|kmeans)' "$OUT/bench-$name-$round.txt" | awk '{printf "%s %s  ", $1, $2}')"
}
for round in 1 2; do
  run off
  run on KILN_GPU_SCATTER_PIPELINE=on
  run on-t64 KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCATTER=256,64
  run on-128t64 KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCATTER=128,64
  run on-b264 KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCATTER_BLOCKS=264
  run off-ex KILN_GPU_SCREEN_EXPANDED=on
  run on-ex KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCREEN_EXPANDED=on
  run on-ex-128t64 KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCREEN_EXPANDED=on KILN_GPU_SCATTER=128,64
  run on-ex-b264 KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCREEN_EXPANDED=on KILN_GPU_SCATTER_BLOCKS=264
done
KILN_GPU_SCATTER_PIPELINE=on KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-tests timeout 200 ./kiln-tests gpu_ scatter kmeans label screen bincount epilogue indexing --test-threads 4 > "$OUT/tests-on.txt" 2>&1
grep -E "^test result|FAILED|panicked" "$OUT/tests-on.txt" | head -20
KILN_GPU_SCATTER_PIPELINE=on KILN_GPU_SCATTER=128,64 KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-tests2 timeout 100 ./kiln-tests scatter_pipeline gpu_kmeans --test-threads 4 > "$OUT/tests-on-128t64.txt" 2>&1
grep -E "^test result|FAILED|panicked" "$OUT/tests-on-128t64.txt" | head -20
