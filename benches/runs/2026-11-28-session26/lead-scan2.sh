#!/usr/bin/env bash
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
nvcc -O3 -arch=sm_90 -o scan_lag scan-lag-harness.cu > nvcc.log 2>&1; echo "nvcc rc $?"; grep -i error nvcc.log | head
timeout 150 ./scan_lag 67108864 40 2>&1 | tee $OUT/harness2.txt
