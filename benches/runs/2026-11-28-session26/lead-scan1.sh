#!/usr/bin/env bash
# Session 26 lead, call 1: the look-ahead scan harness, kiln's cumsum and median rows, peers.
cd "$(dirname "$0")/.." || exit 1
P=lead-pack
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(cd $P && nvcc -O3 -arch=sm_90 -Xptxas -v -o scan_lag scan-lag-harness.cu > nvcc.log 2>&1; echo "nvcc rc $?") &
NV=$!
(cd $P && xz -d -T16 kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kiln-cache
timeout 60 ./$P/kiln-bench copy cumsum_2^26 cumsum_of_square_2^26 median_rows sort_rows --reps 25 2>&1 | grep -vi warn | tail -12
(cd $P && timeout 90 python3 peers_ops.py copy cumsum_2 cumsum_of median sort_rows 2>&1 | grep -v Warning | tail -14)
wait $NV
grep -E "error|spill" $P/nvcc.log | sort | uniq -c | head
(cd $P && timeout 150 ./scan_lag 67108864 40) 2>&1 | tee $OUT/harness.txt
timeout 40 ./$P/kiln-bench copy cumsum_2^26 --reps 25 2>&1 | grep -E "copy|cumsum"
