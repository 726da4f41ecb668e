#!/usr/bin/env bash
# Session 22 (rows helper), round 2: the GPU tests after find_digit was shared by the select and
# top-k kernels; kiln-bench and torch's rows again, one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device2.txt
(cd rows-pack && { xz -d -T16 kiln-tests.xz & xz -d -T16 kiln-bench.xz & wait; } && chmod +x kiln-*)
cp rows-pack/fixtures-sort/* tests/fixtures/sort/
mkdir -p /work && ln -sfn "$root" /work/wt-rows
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 100 ./rows-pack/kiln-tests gpu_topk gpu_select gpu_radix sorts:: --test-threads 1 > $OUT/rows-tests2.txt 2>&1; tail -4 $OUT/rows-tests2.txt
timeout 50 ./rows-pack/kiln-bench topk_rows median_rows sort_rows --reps 20 > $OUT/rows-bench2.txt 2>&1; tail -5 $OUT/rows-bench2.txt
(cd rows-pack && timeout 70 python3 peers_ops.py topk_rows median_rows sort_rows 2>&1 | grep -v Warning | tail -12) | tee $OUT/rows-peers2.txt
