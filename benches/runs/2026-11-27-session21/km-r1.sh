#!/usr/bin/env bash
# Issue 18 (session 21, helper km): round 1: GPU tests (+ ptxas -v of the k-means kernel), kiln-bench (variants), peers, a short ncu.
set -uo pipefail
cd "$(dirname "$0")"
o=${OUT:-/tmp}; mkdir -p logs; L=$o
date +%s > /tmp/t0
(xz -d -T8 kiln-tests.xz & xz -d -T8 kiln-bench.xz & wait); chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/device.txt
export KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kiln-cache
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km; cp km-pack/*.snap tests/suite/snapshots/
KILN_REPO=$PWD timeout 100 km-pack/kiln-tests screened kmeans indexing:: scatter 2>&1 | grep -Ev '^test .* ok$' | tail -25 | tee $L/tests.txt
KILN_REPO=$PWD timeout 30 km-pack/kiln-tests kmeans_update_gpu_kernel_ptx --nocapture 2>&1 | grep -E "registers|spill|smem|test result" | tee -a $L/tests.txt
cd km-pack
{ timeout 40 ./kiln-bench kmeans scatter --reps 25
echo "== KILN_ARG_SCREEN=1 (no lane unroll)"; KILN_ARG_SCREEN=1 timeout 25 ./kiln-bench kmeans --reps 25
echo "== KILN_GPU_SCATTER=256,64"; KILN_GPU_SCATTER=256,64 timeout 25 ./kiln-bench kmeans --reps 25
echo "== default again"; timeout 25 ./kiln-bench kmeans --reps 25; } 2>&1 | tee $L/bench.txt
echo "t=$(( $(date +%s) - $(cat /tmp/t0) ))s before peers"
PYTHONUNBUFFERED=1 timeout 90 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee $L/peers.txt
PYTHONUNBUFFERED=1 timeout 50 python3 peers_ops.py scatter_add 2>&1 | grep -v -i warn | tee $L/peers_ops.txt
echo "t=$(( $(date +%s) - $(cat /tmp/t0) ))s before ncu"
timeout 35 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 2 --section SpeedOfLight --section Occupancy --section InstructionStats --section WarpStateStats --section LaunchStats ./kiln-bench kmeans_iter_1048576 --reps 50 > $L/ncu.txt 2>&1
echo "t=$(( $(date +%s) - $(cat /tmp/t0) ))s end" | tee -a $L/bench.txt
