#!/usr/bin/env bash
# Issue 18 (session 21, helper km): round 2 (the committed code): GPU tests (+ ptxas -v of the k-means kernel), kiln-bench, a variant, peers.
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
echo "== KILN_ARG_SCREEN=2 (lanes take 2 terms a step)"; KILN_ARG_SCREEN=2 timeout 25 ./kiln-bench kmeans --reps 25
echo "== default again"; timeout 25 ./kiln-bench kmeans --reps 25; } 2>&1 | tee $L/bench.txt
echo "t=$(( $(date +%s) - $(cat /tmp/t0) ))s before peers"
PYTHONUNBUFFERED=1 timeout 90 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee $L/peers.txt
PYTHONUNBUFFERED=1 timeout 50 python3 peers_ops.py scatter_add 2>&1 | grep -v -i warn | tee $L/peers_ops.txt
echo "t=$(( $(date +%s) - $(cat /tmp/t0) ))s end" | tee -a $L/bench.txt
