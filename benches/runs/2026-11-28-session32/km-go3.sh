#!/usr/bin/env bash
# Session 32, call 3: the expanded screen's dot products on tensor cores (KILN_GPU_SCREEN_MMA), undecided positions screened in float32 before the exact fold,
# against the default and the float32 expanded screen, alternated in one kiln-bench binary (a
# cache directory each), three rounds; the area's GPU tests with the knob on first.
set -u
R=$PWD
P=$PWD/km-pack
nvidia-smi -L
cd "$P" && for f in kiln-bench kiln-tests; do xz -dc $f.xz > $f && chmod +x $f; done
mkdir -p /tmp/o
T="env KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data"
KILN_GPU_SCREEN_MMA=on $T KILN_CACHE_DIR=/tmp/c-tests timeout 150 ./kiln-tests gpu_expanded gpu_kmeans scatter_pipeline gpu_scatter screened --test-threads 4 > /tmp/o/tests-mma.txt 2>&1
grep -E "^test result|FAILED|panicked" /tmp/o/tests-mma.txt | head -20
run() { # name, env...
  local name=$1; shift
  env KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-$name KILN_DATA=$P/data "$@" timeout 60 ./kiln-bench copy kmeans --reps 25 > /tmp/o/bench-$name-$round.txt 2>&1
  echo "$name r$round: $(grep -E '^(copy|kmeans)' /tmp/o/bench-$name-$round.txt | grep -v host | awk '{printf "%s %s  ", $1, $2}')"
}
for round in 1 2 3; do
  run off
  run ex KILN_GPU_SCREEN_EXPANDED=on
  run mma KILN_GPU_SCREEN_MMA=on
  run mma-bounds4 KILN_GPU_SCREEN_MMA=on KILN_GPU_SCATTER_BOUNDS=4
  run mma-b660 KILN_GPU_SCREEN_MMA=on KILN_GPU_SCATTER_BLOCKS=660
done
KILN_GPU_SCREEN_MMA=on $T KILN_CACHE_DIR=/tmp/c-tests2 timeout 200 ./kiln-tests gpu_ scatter kmeans label screen bincount epilogue indexing --test-threads 4 > /tmp/o/tests-mma-area.txt 2>&1
grep -E "^test result|FAILED|panicked" /tmp/o/tests-mma-area.txt | head -20
tar czf "$OUT/all.tgz" -C /tmp/o .
