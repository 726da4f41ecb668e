#!/usr/bin/env bash
# Issue 18 (session 22, helper km): round 2 (the committed code: lanes take 2 terms a step where a
# block takes several tiles): GPU tests (+ ptxas -v), kiln-bench (default, the old default
# KILN_ARG_SCREEN=1, default again), kmeans_peers.py; one device call.
set -uo pipefail
cd "$(dirname "$0")"
L=${OUT:-/tmp}
t0=$(date +%s); el() { echo "t=$(( $(date +%s) - t0 ))s $*"; }
(xz -d -T8 kiln-tests.xz & xz -d -T8 kiln-bench.xz & wait); chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/device.txt
export KILN_DEVICE=cuda:0
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km; cp km-pack/*.snap tests/suite/snapshots/
KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kc-tests timeout 120 km-pack/kiln-tests screened kmeans indexing:: scatter argmin same_bits 2>&1 | grep -Ev '^test .* ok$' | tail -25 | tee $L/tests.txt
KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kc-tests timeout 30 km-pack/kiln-tests kmeans_update_gpu_kernel_ptx --nocapture 2>&1 | grep -E "registers|spill|smem|test result" | tee -a $L/tests.txt
el "tests done" | tee -a $L/tests.txt
cd km-pack
v() { name=$1; shift; echo "== $name: $*"; env "$@" KILN_CACHE_DIR=/tmp/kc-$name timeout 30 ./kiln-bench "${W[@]}" --reps 25 2>&1 | grep -v '^kiln-bench on'; }
{
W=(kmeans scatter); v default
W=(kmeans); v old-default KILN_ARG_SCREEN=1
W=(kmeans); v default-again
el "bench done"
} 2>&1 | tee $L/bench.txt
PYTHONUNBUFFERED=1 timeout 60 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee $L/peers.txt
el "end" | tee -a $L/bench.txt
