#!/usr/bin/env bash
# On the device (session 20, copy helper): GPU tests of random draws and pad, kiln-bench's rows and
# peers_ops.py's rows of the same names, in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd copy-pack && xz -d -T4 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-copy
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 150 ./copy-pack/kiln-tests random shaping pad --test-threads 4 > $OUT/tests-full.txt 2>&1; grep -E "test result|FAILED|panicked|failed|error 700|illegal" $OUT/tests-full.txt | head -20
timeout 100 ./copy-pack/kiln-bench copy pad_reflect random_normal --reps 25 2>&1 | tee $OUT/bench.txt | tail -8
(cd copy-pack && timeout 120 python3 peers_ops.py copy pad_reflect random_normal 2>&1 | grep -v Warning | tail -8) | tee $OUT/peers.txt
