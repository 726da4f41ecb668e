#!/usr/bin/env bash
# On the device (session 24, scan helper), round 2: the standalone scan harness, round 5
# (the chunked look-back beside kiln's Fenwick tree).
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
nvcc -O3 -arch=sm_90 -Xptxas -v -o scan_harness5 scan_harness5.cu > $OUT/nvcc.log 2>&1 || { echo NVCC FAILED; tail -20 $OUT/nvcc.log; cp scan_harness5.local scan_harness5; }
timeout 150 ./scan_harness5 67108864 40 2>&1 | tee $OUT/harness.txt
