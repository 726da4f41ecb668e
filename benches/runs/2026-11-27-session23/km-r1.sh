#!/usr/bin/env bash
# Issue 18 (session 23, helper km): round 1: the GPU tests under the new knobs (two positions a
# thread, staged loads in flight), kiln-bench kmeans over the variants (a cache dir each),
# ptxas -v of each variant's PTX (made on the dev machine), ncu of the fastest, kmeans_peers.py.
set -uo pipefail
cd "$(dirname "$0")"
L=${OUT:-/tmp}
t0=$(date +%s); el() { echo "t=$(( $(date +%s) - t0 ))s $*"; }
(xz -d -T8 kiln-tests.xz & xz -d -T8 kiln-bench.xz & wait); chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/device.txt
export KILN_DEVICE=cuda:0
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km
for V in "" "KILN_GPU_SCATTER_POSITIONS=2 KILN_GPU_SCATTER_STAGE=8" "KILN_GPU_SCATTER_POSITIONS=4 KILN_GPU_SCATTER_STAGE=4"; do
  echo "== tests $V"
  env $V KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kc-tests-${#V} timeout 90 km-pack/kiln-tests screened kmeans indexing:: scatter argmin same_bits --skip kmeans_update_gpu_kernel_ptx 2>&1 | grep -Ev '^test .* ok$' | tail -12
done 2>&1 | tee $L/tests.txt
el "tests done" | tee -a $L/tests.txt
cd km-pack
for f in ptx/*.ptx; do echo "== $f"; ptxas -arch=sm_90 -v -o /tmp/x.cubin $f 2>&1 | grep -E "registers|spill"; done > $L/ptxas.txt 2>&1
v() { name=$1; shift; echo "== $name: $*"; env "$@" KILN_CACHE_DIR=/tmp/kc-$name timeout 30 ./kiln-bench kmeans --reps 25 2>&1 | grep -v '^kiln-bench on\|^copy:'; }
{
v base
v st8 KILN_GPU_SCATTER_STAGE=8
v p2 KILN_GPU_SCATTER_POSITIONS=2
v p2st8 KILN_GPU_SCATTER_POSITIONS=2 KILN_GPU_SCATTER_STAGE=8
v p2st4 KILN_GPU_SCATTER_POSITIONS=2 KILN_GPU_SCATTER_STAGE=4
v p2st8s4 KILN_GPU_SCATTER_POSITIONS=2 KILN_GPU_SCATTER_STAGE=8 KILN_ARG_SCREEN=4
v p4st4 KILN_GPU_SCATTER_POSITIONS=4 KILN_GPU_SCATTER_STAGE=4
v p2st8b4 KILN_GPU_SCATTER_POSITIONS=2 KILN_GPU_SCATTER_STAGE=8 KILN_GPU_SCATTER_BOUNDS=4
v base-again
el "bench done"
} 2>&1 | tee $L/bench.txt
# The fastest variant at 2^20 (its knobs), for ncu.
best=$(awk '/^== /{n=$2; sub(":","",n); k=$0; sub(/^== [^:]*: ?/,"",k)} /^kmeans_iter_1048576x64_k10 /{print $2, n, k}' $L/bench.txt | sort -n | head -1)
echo "fastest: $best" | tee $L/ncu.txt
NCUV=$(echo "$best" | cut -d' ' -f3-)
env $NCUV KILN_CACHE_DIR=/tmp/kc-ncu timeout 45 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis ./kiln-bench kmeans_iter_1048576 --reps 50 2>&1 | grep -v '^ *$' >> $L/ncu.txt
el "ncu done" | tee -a $L/bench.txt
PYTHONUNBUFFERED=1 timeout 60 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee $L/peers.txt
el "end" | tee -a $L/bench.txt
