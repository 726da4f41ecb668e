#!/usr/bin/env bash
# Round 2 (session 25): the GPU sort tests and kiln-bench's sort rows on the ported kernel
# (CUB-style early counts, 384 threads of 19 / 23 keys), peers_ops.py's rows of the same names,
# then the standalone harness (built on the dev machine): the ported kernel (V, data A and B),
# cub::DeviceRadixSort (data A), and variants on data A (VOR: CUB's atomicOr match masks, sort-variant-matchor.patch);
# V4: sort's passes at 4 blocks.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
(cd sort-pack && xz -d -T8 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-sort
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 100 ./sort-pack/kiln-tests gpu_radix gpu_select sorts:: unique --test-threads 1 > sort-pack/tests.txt 2>&1; echo "tests rc $?" >> sort-pack/tests.txt
grep -E "^test result|FAILED|panicked|tests rc" sort-pack/tests.txt | head -20
timeout 40 ./sort-pack/kiln-bench sort_f32_2^26 argsort_f32_2^26 unique_i32_2^26 --reps 15 2>&1 | tee $OUT/bench.txt | tail -5
(cd sort-pack && timeout 60 python3 peers_ops.py sort_f32 argsort unique 2>&1 | grep -v Warning | tail -8) | tee $OUT/peers.txt
cd sort-pack
{ timeout 15 ./h_V V; for t in cub VOR V4; do timeout 10 ./h_$t $t A; done; } 2>&1 | tee $OUT/harness.txt
cp tests.txt $OUT/tests.txt
