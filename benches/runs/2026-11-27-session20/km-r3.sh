#!/usr/bin/env bash
# Issue 18 (session 20, helper km): round 3: GPU tests (default block shape and 128,128), kiln-bench, ncu, peers.
set -uo pipefail
cd "$(dirname "$0")"
o=${OUT:-/tmp}
for f in *.xz; do xz -d -T4 "$f"; done; chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p logs
export KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kiln-cache
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km; cp km-pack/*.snap tests/suite/snapshots/
for sc in default 128,128; do echo "== tests, KILN_GPU_SCATTER=$sc"; if [ $sc = default ]; then unset KILN_GPU_SCATTER; else export KILN_GPU_SCATTER=$sc; fi
KILN_REPO=$PWD timeout 120 km-pack/kiln-tests screened kmeans indexing:: scatter 2>&1 | grep -Ev '^test .* ok$' | tail -30; done 2>&1 | tee km-pack/logs/tests.txt
unset KILN_GPU_SCATTER
cd km-pack
{ ./kiln-bench kmeans scatter --reps 25
echo "== KILN_GPU_SCATTER=128,128"; KILN_GPU_SCATTER=128,128 ./kiln-bench kmeans --reps 25
echo "== default again"; ./kiln-bench kmeans --reps 25; } 2>&1 | tee logs/bench.txt
timeout 60 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section InstructionStats --section WorkloadDistribution ./kiln-bench kmeans_iter_1048576 --reps 50 > logs/ncu.txt 2>&1
PYTHONUNBUFFERED=1 timeout 150 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee logs/peers.txt
tar czf $o/logs.tgz logs
