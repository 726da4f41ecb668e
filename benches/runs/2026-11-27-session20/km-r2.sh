#!/usr/bin/env bash
# Issue 18 (session 20, helper km): round 2: GPU tests, ncu of the new scatter kernel, kiln-bench (block shapes), peers.
set -uo pipefail
cd "$(dirname "$0")"
o=${OUT:-/tmp}
for f in *.xz; do xz -d -T4 "$f"; done; chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p logs
export KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kiln-cache
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km
KILN_REPO=$PWD timeout 170 km-pack/kiln-tests screened kmeans indexing:: scatter 2>&1 | grep -Ev '^test .* ok$' | tail -40 | tee km-pack/logs/tests.txt
cd km-pack
{ ./kiln-bench kmeans scatter --reps 25
for sc in 128,128 256,64 512,128; do echo "== KILN_GPU_SCATTER=$sc"; KILN_GPU_SCATTER=$sc ./kiln-bench kmeans --reps 25; done
echo "== default again"; ./kiln-bench kmeans --reps 25; } 2>&1 | tee logs/bench.txt
timeout 100 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 2 --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis --section WorkloadDistribution ./kiln-bench kmeans_iter_1048576 --reps 60 > logs/ncu.txt 2>&1
PYTHONUNBUFFERED=1 timeout 150 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee logs/peers.txt
tar czf $o/logs.tgz logs
