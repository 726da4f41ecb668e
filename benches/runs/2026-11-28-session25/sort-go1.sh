#!/usr/bin/env bash
# Round 1 (session 25): standalone digit-pass variants (built on the dev machine by nvcc 13.0
# from harness.cu over rs_old.cu = main's radix_sort.cu and rs_new.cu = the CUB-style ranking)
# and cub::DeviceRadixSort (CCCL main of 2026-08-22) in one run.
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
for t in cub old N N3 NM N256 N512 N21 cub; do timeout 25 ./h_$t $t; done 2>&1 | tee $OUT/harness.txt
