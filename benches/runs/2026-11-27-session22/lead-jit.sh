#!/usr/bin/env bash
# The driver JIT's optimisation level for fast-tier PTX (issue 22 §3): a new process's first
# call with an empty kiln cache and the driver's JIT cache off, and fast-tier kernels' speed.
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
xz -d -T8 kiln-bench.xz && chmod +x kiln-bench
export KILN_DEVICE=cuda:0 CUDA_CACHE_DISABLE=1
child() { ./kiln-bench --first-call-child 2>&1 | grep -E "^first call"; }
# warm the page cache (binary, libdevice, libraries) once
KILN_CACHE_DIR=/tmp/kc-w child > /dev/null
for r in 1 2; do for l in d 0 1 2 3; do
  rm -rf /tmp/kc; export KILN_CACHE_DIR=/tmp/kc
  if [ $l = d ]; then unset KILN_GPU_JIT_OPT; else export KILN_GPU_JIT_OPT=$l; fi
  echo "== round $r, JIT level $l: cold"; child
  echo "== round $r, JIT level $l: kiln disk hit (PTX)"; child
done; done
unset KILN_GPU_JIT_OPT
for l in d 0 1 3; do
  if [ $l = d ]; then unset KILN_GPU_JIT_OPT; else export KILN_GPU_JIT_OPT=$l; fi
  echo "== fast tier only, JIT level $l"
  KILN_CACHE_DIR=/tmp/kc-f$l KILN_GPU_TIER=fast timeout 60 ./kiln-bench ew_chain sqdiff sum_cols softmax_rows layernorm_rows kmeans_iter_1048576 --reps 10 2>&1 | grep -E "^(ew_chain|sqdiff|sum_cols|softmax|layernorm|kmeans)"
done
