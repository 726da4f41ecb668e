#!/usr/bin/env bash
# On the device (session 21, dropout helper, round 3): division by a constant as the reciprocal
# and one FMA correction. kiln-bench's rows, peers_ops.py's, then the GPU tests, one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd rng-pack && xz -d -T8 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-rng
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 40 ./rng-pack/kiln-bench copy dropout dropout_scaled random_normal layernorm_rows softmax_rows --reps 25 2>&1 | tee $OUT/bench.txt | tail -9
(cd rng-pack && timeout 45 python3 peers_ops.py copy dropout random_normal 2>&1 | grep -v Warning | tail -8) | tee $OUT/peers.txt
timeout 15 ./rng-pack/kiln-tests division_by_a_constant --skip is_a_product --test-threads 8 > $OUT/tests-division.txt 2>&1; grep -E "test result|FAILED|panicked" $OUT/tests-division.txt | head
timeout 40 ./rng-pack/kiln-tests random fused_props --test-threads 8 > $OUT/tests-full.txt 2>&1; grep -E "test result|FAILED|panicked|failed|error 700|illegal" $OUT/tests-full.txt | head -20; tail -3 $OUT/tests-full.txt
