#!/usr/bin/env bash
# Session 24, layer norm, call 2: the new default (KILN_GPU_ROW_DIV=on, launch bounds of 4
# blocks where a row kernel divides by a row value) against main's code (ROW_DIV=off,
# ROW_BOUNDS=off), alternated, two rounds; the GPU tests of division, layer norm, softmax,
# std/var and row kernels.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && ln -sfn "$R" /work/wt-ln
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
for b in kiln-bench kiln-tests; do xz -dc $b.xz > /tmp/$b && chmod +x /tmp/$b; done
export KILN_DEVICE=cuda:0 KILN_REPO=$R
cp snapshots/*.snap "$R/tests/suite/snapshots/"
(cd "$R" && KILN_CACHE_DIR=/tmp/kc-t timeout 40 /tmp/kiln-tests division layer softmax std var row_kernels l2norm --test-threads 16 2>&1 | grep -vE "^test .* ok$" | tail -30) > $OUT/tests.txt
grep -E "test result|FAILED|panicked" $OUT/tests.txt | head
W="copy layernorm_rows softmax_rows ew_chain"
for round in 1 2; do
  echo "== default round $round"; KILN_CACHE_DIR=/tmp/kc-d timeout 20 /tmp/kiln-bench --reps 15 $W 2>&1 | grep -vE "host µs|^$|^kiln"
  echo "== ROW_DIV=off ROW_BOUNDS=off round $round"; KILN_GPU_ROW_DIV=off KILN_GPU_ROW_BOUNDS=off KILN_CACHE_DIR=/tmp/kc-o timeout 20 /tmp/kiln-bench --reps 15 $W 2>&1 | grep -vE "host µs|^$|^kiln"
done 2>&1 | tee $OUT/bench.txt
