#!/usr/bin/env bash
# Issue 18 (session 18, helper km): the screened k-means labels on the GPU. Tests, then
# kiln-bench's k-means rows with the screen off and at each unroll, scatter block shapes, then
# kmeans_peers.py, in one device call.
set -uo pipefail
cd "$(dirname "$0")"
o=${OUT:-/tmp}
for f in *.xz; do xz -d -T4 "$f"; done; chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km
KILN_DEVICE=cuda:0 KILN_REPO=$PWD timeout 150 km-pack/kiln-tests screened kmeans indexing:: scatter --skip kmeans_update_region_and_host_kernel_snapshots 2>&1 | grep -Ev '^test .* ok$' | tail -40 | tee $o/tests.txt
cd km-pack
export KILN_DEVICE=cuda:0
{
for s in off 1 4 8; do echo "== KILN_ARG_SCREEN=$s"; KILN_ARG_SCREEN=$s ./kiln-bench kmeans --reps 25; done
for sc in 128,128 256,256 512,256 512,128; do echo "== KILN_GPU_SCATTER=$sc"; KILN_GPU_SCATTER=$sc ./kiln-bench kmeans_iter_1048576 --reps 25; done
echo "== default again"; ./kiln-bench kmeans --reps 25
} 2>&1 | tee $o/kiln-bench.txt
PYTHONUNBUFFERED=1 timeout 170 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee $o/kmeans_peers.txt
echo "== KILN_ARG_SCREEN=off again"; KILN_ARG_SCREEN=off ./kiln-bench kmeans --reps 25 2>&1 | tee -a $o/kiln-bench.txt
