#!/usr/bin/env bash
# On the device: unpack, the standalone select timings (variants), the GPU tests, kiln-bench
# and peers in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd sort-pack && xz -d -T4 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
cd sort-pack
b() { t=$1; shift; nvcc -O3 -arch=sm_90 "$@" -o h_$t sel-harness.cu > h_$t.log 2>&1 || tail -5 h_$t.log; }
b base
for th in 128 256; do for cap in 0 1024; do timeout 30 ./h_base base $th $cap; done; done 2>&1 | tee $OUT/harness.txt
cd "$root"
mkdir -p /work && ln -sfn "$root" /work/wt-sort
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 240 ./sort-pack/kiln-tests gpu_select sorts:: gpu_radix --test-threads 1 2>&1 | tee $OUT/tests.txt | tail -8
timeout 100 ./sort-pack/kiln-bench median_rows_8192x8192 --reps 15 2>&1 | tee $OUT/bench.txt | tail -8
(cd sort-pack && timeout 150 python3 peers_ops.py median_rows 2>&1 | grep -v Warning | tail -12) | tee $OUT/peers.txt
