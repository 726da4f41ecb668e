#!/usr/bin/env bash
# On the device: the GPU tests after the shared-memory opt-in fix, and kiln-bench's median.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd sort-pack && xz -d -T4 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-sort
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 240 ./sort-pack/kiln-tests gpu_select sorts:: gpu_radix --test-threads 1 2>&1 | tee $OUT/tests.txt | tail -8
timeout 100 ./sort-pack/kiln-bench median_rows_8192x8192 --reps 15 2>&1 | tee $OUT/bench.txt | tail -4
