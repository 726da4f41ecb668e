#!/usr/bin/env bash
# Issue 18 (session 24, helper km): round 2: the centres in constant memory four elements
# apart (scalar ld.const, no more ld.const.v4): SASS of the new PTX (made on the dev machine),
# the GPU tests under KILN_GPU_SCATTER_CONST=on, kiln-bench kmeans off/on alternated. One call.
set -uo pipefail
cd "$(dirname "$0")"
L=${OUT:-/tmp}
t0=$(date +%s); el() { echo "t=$(( $(date +%s) - t0 ))s $*"; }
(xz -d -T8 kiln-tests.xz & xz -d -T8 kiln-bench.xz & wait); chmod +x kiln-*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/device.txt
export KILN_DEVICE=cuda:0
for f in ptx2/*.ptx; do
  b=/tmp/$(basename $f .ptx)
  echo "== $f"
  ptxas -arch=sm_90 -v -o $b.cubin $f 2>&1 | grep -E "registers|spill|cmem"
  cuobjdump -sass $b.cubin > $b.sass
  for p in 'FFMA' 'FFMA.*c\[0x3\]' ' LDC' 'ULDC' 'LDS' 'LDG'; do echo "$p: $(grep -c "$p" $b.sass)"; done
  grep -m6 'FFMA.*c\[0x3\]' $b.sass
done > $L/sass.txt 2>&1
cd ..; mkdir -p /work && ln -sfn "$PWD" /work/wt-km
KILN_GPU_SCATTER_CONST=on KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kc-tests timeout 45 km-pack/kiln-tests kmeans scatter screened indexing:: same_bits argmin --skip km_tmp 2>&1 | grep -Ev '^test .* ok$' | tail -12 | tee $L/tests.txt
el "tests done" | tee -a $L/tests.txt
cd km-pack
v() { name=$1; shift; echo "== $name: $*"; env "$@" KILN_CACHE_DIR=/tmp/kc-$name timeout 20 ./kiln-bench kmeans --reps 25 2>&1 | grep -v '^kiln-bench on\|^copy:\|host µs'; }
{
v off KILN_GPU_SCATTER_CONST=off
v on128 KILN_GPU_SCATTER_CONST=on KILN_GPU_SCATTER=128,128
v on KILN_GPU_SCATTER_CONST=on
v off2 KILN_GPU_SCATTER_CONST=off
v on128b KILN_GPU_SCATTER_CONST=on KILN_GPU_SCATTER=128,128
el "bench done"
} 2>&1 | tee $L/bench.txt
