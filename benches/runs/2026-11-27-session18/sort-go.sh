#!/usr/bin/env bash
# On the device: unpack, the standalone kernel timings (variants), the GPU sort tests,
# kiln-bench and peers in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd sort-pack && xz -d -T4 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
cd sort-pack
sed 's/if (tile > 0) {/if (false) {/' radix_sort.cu > nolook.cu
sed 's/u32 ballot = __ballot_sync(0xffffffffu, bit);/u32 ballot = bit ? 0xffffffffu : 0u;/' radix_sort.cu > noballot.cu
b() { t=$1; shift; sed "s/\"radix_sort.cu\"/\"$1\"/" harness.cu > h_$t.cu; shift; nvcc -O3 -arch=sm_90 "$@" -o h_$t h_$t.cu > h_$t.log 2>&1 || tail -4 h_$t.log; }
b base radix_sort.cu & b nolook nolook.cu & b noballot noballot.cu & b i24 radix_sort.cu -DKILN_RADIX_ITEMS=24 & b early early.cu & wait
for t in base nolook noballot i24 early; do timeout 30 ./h_$t $t; done 2>&1 | tee $OUT/harness.txt
cd "$root"
mkdir -p /work && ln -sfn "$root" /work/wt-sort
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 200 ./sort-pack/kiln-tests gpu_radix sorts:: --test-threads 1 2>&1 | tee $OUT/tests.txt | tail -8
timeout 150 ./sort-pack/kiln-bench sort_f32_2^26 argsort_f32_2^26 unique_i32_2^26 --reps 15 2>&1 | tee $OUT/bench.txt | tail -8
(cd sort-pack && timeout 200 python3 peers_ops.py sort_f32 unique 2>&1 | grep -v Warning | tail -12) | tee $OUT/peers.txt
