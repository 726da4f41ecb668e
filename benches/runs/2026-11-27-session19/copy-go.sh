#!/usr/bin/env bash
# On the device: the GPU tests of the compaction, kiln-bench's rows and peers_ops.py's rows of
# the same names, in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd copy-pack && xz -d -T4 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-copy
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 150 ./copy-pack/kiln-tests compaction:: scans:: fuzz_corpora random:: --test-threads 4 > $OUT/tests-full.txt 2>&1; grep -E "test result|FAILED|panicked|failed" $OUT/tests-full.txt | head -20
timeout 90 ./copy-pack/kiln-bench copy pad_reflect mask_select nonzero_2 random_normal --reps 25 2>&1 | tee $OUT/bench.txt | tail -12
(cd copy-pack && timeout 120 python3 peers_ops.py copy pad_reflect mask_select nonzero_2 random_normal 2>&1 | grep -v Warning | tail -14) | tee $OUT/peers.txt
