#!/usr/bin/env bash
# Round 1 (session 21): the GPU sort tests on the new kernel (keys scattered to shared memory
# before the look-back, argsort's values loaded after ranking, argsort's passes at 4 blocks an
# SM), kiln-bench's sort rows for the committed kernel (KILN_RADIX_OPTS=-DKILN_RADIX_OLD ...)
# and the new one and its argsort variants (one binary; NVRTC options from KILN_RADIX_OPTS, a
# cache folder each), peers_ops.py's rows of the same names, then the standalone kernels
# (harness.cu over rs_var.cu, the same source) in variants.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
cd sort-pack
xz -d -T8 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*
B="-O3 -arch=sm_90 -DKILN_RADIX_F32_ONLY -Xptxas -v"
b() { t=$1; shift; nvcc $B "$@" -o h_$t harness.cu > h_$t.log 2>&1 || { echo "BUILD FAIL $t"; tail -20 h_$t.log; }; }
V="A B B3 E E5 P12 P20"
( b A -DKILN_RADIX_OLD -DKILN_RADIX_MIN_BLOCKS_PAIRS=3 &
  b B &
  b B3 -DKILN_RADIX_MIN_BLOCKS_PAIRS=3 -DKILN_RADIX_MIN_BLOCKS=5 &
  b E -DKILN_VALUES_EARLY -DKILN_RADIX_ITEMS=20 &
  b E5 -DKILN_VALUES_EARLY -DKILN_RADIX_MIN_BLOCKS_PAIRS=5 -DKILN_RADIX_ITEMS=12 -DKILN_RADIX_MIN_BLOCKS=5 &
  b P12 -DKILN_RADIX_ITEMS_PAIRS=12 -DKILN_RADIX_MIN_BLOCKS_PAIRS=5 -DKILN_RADIX_ITEMS=24 -DKILN_RADIX_MIN_BLOCKS=3 &
  b P20 -DKILN_RADIX_ITEMS_PAIRS=20 -DKILN_RADIX_MIN_BLOCKS_PAIRS=3 -DKILN_RADIX_MIN_BLOCKS=3 & wait ) > build.txt 2>&1 &
bp=$!
cd "$root"
mkdir -p /work && ln -sfn "$root" /work/wt-sort
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 120 ./sort-pack/kiln-tests gpu_radix gpu_select sorts:: --test-threads 1 > sort-pack/tests.txt 2>&1; echo "tests rc $?" >> sort-pack/tests.txt
grep -E "^test result|FAILED|panicked|failed|error|tests rc" sort-pack/tests.txt | head -20
KB=./sort-pack/kiln-bench
R="--reps 15"
{ echo "== B (new kernel, defaults)"; timeout 60 $KB sort_f32_2^26 argsort_f32_2^26 unique_i32_2^26 sort_rows_8192x8192 $R
  echo "== A (committed kernel)"; KILN_CACHE_DIR=/tmp/kc-A KILN_RADIX_OPTS="-DKILN_RADIX_OLD -DKILN_RADIX_MIN_BLOCKS_PAIRS=3" timeout 60 $KB sort_f32_2^26 argsort_f32_2^26 unique_i32_2^26 $R
  echo "== B3 (argsort at 3 blocks)"; KILN_CACHE_DIR=/tmp/kc-B3 KILN_RADIX_OPTS="-DKILN_RADIX_MIN_BLOCKS_PAIRS=3" timeout 40 $KB argsort_f32_2^26 $R
  echo "== E (values to shared before the look-back)"; KILN_CACHE_DIR=/tmp/kc-E KILN_RADIX_OPTS="-DKILN_VALUES_EARLY" timeout 40 $KB argsort_f32_2^26 $R
  echo "== E5 (E at 5 blocks)"; KILN_CACHE_DIR=/tmp/kc-E5 KILN_RADIX_OPTS="-DKILN_VALUES_EARLY -DKILN_RADIX_MIN_BLOCKS_PAIRS=5" timeout 40 $KB argsort_f32_2^26 $R
} 2>&1 | tee $OUT/bench.txt
(cd sort-pack && timeout 150 python3 peers_ops.py sort_f32 unique sort_rows 2>&1 | grep -v Warning | tail -12) | tee $OUT/peers.txt
wait $bp
cd sort-pack
cat build.txt
for t in $V; do [ -x h_$t ] && timeout 30 ./h_$t $t; done 2>&1 | tee $OUT/harness.txt
for t in $V; do echo "== $t"; grep -A1 "Compiling entry function '\(kiln_radix_pass_f32\|kiln_radix_pairs_f32\)" h_$t.log | grep -v "^--"; grep "Used" h_$t.log; done > ptxas.txt 2>&1
tar czf $OUT/logs.tgz tests.txt ptxas.txt build.txt
