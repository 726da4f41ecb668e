#!/usr/bin/env bash
# Issue 18 (session 24, helper km): round 1: the centres in constant memory
# (KILN_GPU_SCATTER_CONST=on): SASS of the k-means kernel's PTX (made on the dev machine),
# the GPU tests under the knob, kiln-bench kmeans with it off and on (a cache dir each,
# alternated, two rounds), ncu of the const kernel, kmeans_peers.py. One device call.
set -uo pipefail
cd "$(dirname "$0")"
L=${OUT:-/tmp}
t0=$(date +%s); el() { echo "t=$(( $(date +%s) - t0 ))s $*"; }
(xz -d -T8 kiln-tests.xz & xz -d -T8 kiln-bench.xz & wait); chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/device.txt
export KILN_DEVICE=cuda:0
for f in ptx/*.ptx; do
  b=/tmp/$(basename $f .ptx)
  echo "== $f"
  ptxas -arch=sm_90 -v -o $b.cubin $f 2>&1 | grep -E "registers|spill|cmem"
  cuobjdump -sass $b.cubin > $b.sass
  for p in 'FFMA' 'FFMA.*c\[0x3\]' 'LDC' 'LDS' 'LDG' 'ULDC'; do echo "$p: $(grep -c "$p" $b.sass)"; done
  grep -m12 'FFMA.*c\[0x3\]' $b.sass
done > $L/sass.txt 2>&1
el "sass done" | tee -a $L/sass.txt
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km
KILN_GPU_SCATTER_CONST=on KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kc-tests timeout 60 km-pack/kiln-tests kmeans scatter screened indexing:: same_bits argmin --skip km_tmp 2>&1 | grep -Ev '^test .* ok$' | tail -15 | tee $L/tests.txt
el "tests done" | tee -a $L/tests.txt
cd km-pack
v() { name=$1; shift; echo "== $name: $*"; env "$@" KILN_CACHE_DIR=/tmp/kc-$name timeout 25 ./kiln-bench kmeans --reps 25 2>&1 | grep -v '^kiln-bench on\|^copy:'; }
{
v off KILN_GPU_SCATTER_CONST=off
v on KILN_GPU_SCATTER_CONST=on
v on128 KILN_GPU_SCATTER_CONST=on KILN_GPU_SCATTER=128,128
v on128st8 KILN_GPU_SCATTER_CONST=on KILN_GPU_SCATTER=128,128 KILN_GPU_SCATTER_STAGE=8
v off2 KILN_GPU_SCATTER_CONST=off
v on2 KILN_GPU_SCATTER_CONST=on
v on128b KILN_GPU_SCATTER_CONST=on KILN_GPU_SCATTER=128,128
v on128st8b KILN_GPU_SCATTER_CONST=on KILN_GPU_SCATTER=128,128 KILN_GPU_SCATTER_STAGE=8
el "bench done"
} 2>&1 | tee $L/bench.txt
best=$(awk '/^== /{n=$2; sub(":","",n); k=$0; sub(/^== [^:]*: ?/,"",k)} /^kmeans_iter_1048576x64_k10 /{print $2, n, k}' $L/bench.txt | grep CONST=on | sort -n | head -1)
echo "fastest const: $best" | tee $L/ncu.txt
NCUV=$(echo "$best" | cut -d' ' -f3-)
env $NCUV KILN_CACHE_DIR=/tmp/kc-ncu timeout 45 ncu --clock-control none -k regex:kiln_gpu --launch-skip 80 --launch-count 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis ./kiln-bench kmeans_iter_1048576 --reps 50 2>&1 | grep -v '^ *$' | grep -v "^    OPT\|^          " >> $L/ncu.txt
el "ncu done" | tee -a $L/bench.txt
PYTHONUNBUFFERED=1 timeout 70 python3 kmeans_peers.py 2>&1 | grep -v -i warn | tee $L/peers.txt
el "end" | tee -a $L/bench.txt
