#!/usr/bin/env bash
# On the device (session 21, rng helper, round 2): kiln-bench's copy, random_normal and dropout
# rows (with dropout_scaled: torch's multiply by 1/(1-p)) and peers_ops.py's, in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd rng-pack && xz -d -T4 kiln-bench.xz && chmod +x kiln-bench)
mkdir -p /work && ln -sfn "$root" /work/wt-rng
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 90 ./rng-pack/kiln-bench copy random_normal dropout --reps 25 2>&1 | tee $OUT/bench.txt | tail -9
(cd rng-pack && timeout 120 python3 peers_ops.py copy random_normal dropout 2>&1 | grep -v Warning | tail -8) | tee $OUT/peers.txt
