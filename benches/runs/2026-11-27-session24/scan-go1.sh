#!/usr/bin/env bash
# On the device (session 24, scan helper), round 1: the standalone scan harness (nvcc on the
# device; the locally built binary if that fails), kiln-bench of main's head, peers_ops.py.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
cd scan-pack
nvcc --version | tail -1
nvcc -O3 -arch=sm_90 -Xptxas -v -o scan_harness4 scan_harness4.cu > $OUT/nvcc.log 2>&1 || { echo NVCC FAILED; tail -20 $OUT/nvcc.log; cp scan_harness4.local scan_harness4; }
timeout 150 ./scan_harness4 67108864 40 2>&1 | tee $OUT/harness.txt
xz -d -T16 kiln-bench.xz && chmod +x kiln-bench
mkdir -p /work && ln -sfn "$root" /work/wt-scan
KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache timeout 90 ./kiln-bench copy cumsum_2^26 cumsum_of_square_2^26 --reps 25 > $OUT/bench.txt 2>&1; tail -8 $OUT/bench.txt
timeout 90 python3 peers_ops.py cumsum_2 cumsum_of 2>&1 | grep -v Warning | tail -12 | tee $OUT/peers.txt
