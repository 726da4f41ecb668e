#!/usr/bin/env bash
# Issue 18 (session 23, helper km): round 2 (the candidate default: 8 staged loads in flight by
# default): GPU tests (+ ptxas -v of the k-means PTX test), kiln-bench kmeans (default, the
# old default KILN_GPU_SCATTER_STAGE=1); one device call (peers: round 1's). The default went back to 1
# after this call (no gain beyond the noise).
set -uo pipefail
cd "$(dirname "$0")"
L=${OUT:-/tmp}
t0=$(date +%s); el() { echo "t=$(( $(date +%s) - t0 ))s $*"; }
(xz -d -T8 kiln-tests.xz & xz -d -T8 kiln-bench.xz & wait); chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/device.txt
export KILN_DEVICE=cuda:0
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km
KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kc-tests timeout 40 km-pack/kiln-tests screened kmeans indexing:: scatter argmin same_bits --nocapture 2>&1 | grep -Ev '^test .* ok$' | grep -E "registers|spill|test result|FAIL|panic" | tee $L/tests.txt
el "tests done" | tee -a $L/tests.txt
cd km-pack
v() { name=$1; shift; echo "== $name: $*"; env "$@" KILN_CACHE_DIR=/tmp/kc-$name timeout 20 ./kiln-bench kmeans --reps 25 2>&1 | grep -v '^kiln-bench on\|^copy:'; }
{
v default
v old-default KILN_GPU_SCATTER_STAGE=1
el "bench done"
} 2>&1 | tee $L/bench.txt
