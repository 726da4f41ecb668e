#!/usr/bin/env bash
# Issue 18 (session 22, helper km): round 1: kiln-bench kmeans over launch-bound/lane variants
# (a cache dir each), ncu of one variant, kmeans_peers.py; one device call.
set -uo pipefail
cd "$(dirname "$0")"
L=${OUT:-/tmp}
t0=$(date +%s); el() { echo "t=$(( $(date +%s) - t0 ))s $*"; }
xz -d -T8 kiln-bench.xz; chmod +x kiln-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/device.txt
export KILN_DEVICE=cuda:0
v() { name=$1; shift; echo "== $name: $*"; env "$@" KILN_CACHE_DIR=/tmp/kc-$name timeout 25 ./kiln-bench kmeans --reps 25 2>&1 | grep -v '^copy:\|^kiln-bench on'; }
{
v base
v s2 KILN_ARG_SCREEN=2
v s4b4 KILN_ARG_SCREEN=4 KILN_GPU_SCATTER_BOUNDS=4
v s2b4 KILN_ARG_SCREEN=2 KILN_GPU_SCATTER_BOUNDS=4
v s1b5 KILN_GPU_SCATTER_BOUNDS=5
v t64s4b4 KILN_GPU_SCATTER=256,64 KILN_ARG_SCREEN=4 KILN_GPU_SCATTER_BOUNDS=4
v base-again
el "bench done"
} 2>&1 | tee $L/bench.txt
NCUV=${NCUV:-KILN_ARG_SCREEN=4 KILN_GPU_SCATTER_BOUNDS=4}
echo "ncu of $NCUV" > $L/ncu.txt
env $NCUV KILN_CACHE_DIR=/tmp/kc-ncu timeout 45 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SourceCounters --section LaunchStats ./kiln-bench kmeans_iter_1048576 --reps 50 >> $L/ncu.txt 2>&1
el "ncu done" | tee -a $L/bench.txt
PYTHONUNBUFFERED=1 timeout 60 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee $L/peers.txt
el "end" | tee -a $L/bench.txt
