#!/usr/bin/env bash
# On the device (session 22, rows helper): unpack; the standalone block radix row sort (nvcc);
# the GPU top-k/select/sort tests; kiln-bench and peers_ops.py rows in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd rows-pack && { xz -d -T16 kiln-tests.xz & xz -d -T16 kiln-bench.xz & wait; } && chmod +x kiln-*)
# Fixtures only in the worktree.
cp rows-pack/fixtures-sort/* tests/fixtures/sort/
(cd rows-pack && cp ../exec/src/cuda/radix_sort.cu . && nvcc -O3 -arch=sm_90 -o rowsort rowsort_harness.cu > nvcc.log 2>&1; tail -5 nvcc.log; timeout 30 ./rowsort 8192) 2>&1 | tee $OUT/rows-harness.txt
mkdir -p /work && ln -sfn "$root" /work/wt-rows
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 100 ./rows-pack/kiln-tests gpu_topk gpu_select sorts:: --test-threads 1 > $OUT/rows-tests.txt 2>&1; tail -8 $OUT/rows-tests.txt
timeout 50 ./rows-pack/kiln-bench topk_rows median_rows sort_rows --reps 20 > $OUT/rows-bench.txt 2>&1; tail -8 $OUT/rows-bench.txt
(cd rows-pack && timeout 70 python3 peers_ops.py topk_rows median_rows sort_rows 2>&1 | grep -v Warning | tail -12) | tee $OUT/rows-peers.txt
