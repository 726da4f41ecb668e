#!/usr/bin/env bash
# Issue 18 (session 20, helper km): round 1: ncu of the k-means scatter kernel (optimised tier) and the baseline figures.
set -uo pipefail
cd "$(dirname "$0")"
o=${OUT:-/tmp}
for f in *.xz; do xz -d -T4 "$f"; done; chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/gpu.txt
export KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kiln-cache
mkdir -p logs
timeout 200 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 2 --set full --import-source no ./kiln-bench kmeans_iter_1048576 --reps 60 > logs/ncu.txt 2>&1
timeout 120 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 1 --section SourceCounters --section WarpStateStats --page source --print-source sass ./kiln-bench kmeans_iter_1048576 --reps 60 > logs/ncu-sass.txt 2>&1
{ ./kiln-bench kmeans scatter --reps 25; } 2>&1 | tee logs/bench.txt
PYTHONUNBUFFERED=1 timeout 150 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee logs/peers.txt
tar czf $o/logs.tgz logs
