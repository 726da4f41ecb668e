#!/usr/bin/env bash
# On the device (session 23, scan helper), round 1: the standalone scan harness (nvcc), then
# kiln-bench of main's head (when packed) and peers_ops.py cumsum, in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
cd scan-pack
nvcc -O3 -arch=sm_90 -o scan_harness scan_harness.cu > $OUT/nvcc.log 2>&1; tail -20 $OUT/nvcc.log
timeout 150 ./scan_harness 67108864 40 2>&1 | tee $OUT/harness.txt
if [ -f kiln-bench.xz ]; then
  xz -d -T16 kiln-bench.xz && chmod +x kiln-bench
  mkdir -p /work && ln -sfn "$root" /work/wt-scan
  KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache timeout 90 ./kiln-bench copy cumsum_2^26 cumsum_of_square_2^26 --reps 25 > $OUT/bench.txt 2>&1; tail -8 $OUT/bench.txt
fi
timeout 90 python3 peers_ops.py cumsum_2 cumsum_of 2>&1 | grep -v Warning | tail -12 | tee $OUT/peers.txt
