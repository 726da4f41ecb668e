#!/usr/bin/env bash
# Round 2 (session 20): the GPU tests, kiln-bench's sort rows and peers_ops.py's rows of the same
# names, and standalone kernel variants, in one call. In the pack: harness.cu (sort-harness.cu)
# over rs_var.cu (the kernel kiln-bench ran, 24 keys a thread and argsort's passes uncapped,
# with sort-variant-reorder.patch under #ifdef KILN_REORDER), harness_old.cu (session 18's
# sort-harness.cu) over rs_old.cu (the kernel at the session's start).
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
cd sort-pack
xz -d -T8 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*
B="-O3 -arch=sm_90 -DKILN_RADIX_F32_ONLY -Xptxas -v"
b() { t=$1; h=$2; shift 2; nvcc $B "$@" -o h_$t $h > h_$t.log 2>&1 || { echo "BUILD FAIL $t"; tail -20 h_$t.log; }; }
( b old harness_old.cu & b new harness.cu & b reorder harness.cu -DKILN_REORDER &
  b i16 harness.cu -DKILN_RADIX_ITEMS=16 & b m4 harness.cu -DKILN_RADIX_ITEMS=16 -DKILN_RADIX_MIN_BLOCKS=4 &
  b p20 harness.cu -DKILN_RADIX_ITEMS_PAIRS=20 -DKILN_RADIX_MIN_BLOCKS_PAIRS=2 &
  b p16m3 harness.cu -DKILN_RADIX_MIN_BLOCKS_PAIRS=3 & wait ) > build.txt 2>&1 &
bp=$!
cd "$root"
mkdir -p /work && ln -sfn "$root" /work/wt-sort
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 300 ./sort-pack/kiln-tests gpu_radix gpu_select sorts:: --test-threads 1 > sort-pack/tests.txt 2>&1; echo "tests rc $?" >> sort-pack/tests.txt
grep -E "^test result|FAILED|panicked|failed|error" sort-pack/tests.txt | head -20
timeout 150 ./sort-pack/kiln-bench sort_f32_2^26 argsort_f32_2^26 unique_i32_2^26 sort_rows_8192x8192 --reps 15 2>&1 | tee $OUT/bench.txt | tail -6
(cd sort-pack && timeout 200 python3 peers_ops.py sort_f32 unique sort_rows 2>&1 | grep -v Warning | tail -12) | tee $OUT/peers.txt
wait $bp
cd sort-pack
cat build.txt
for t in old new reorder i16 m4 p20 p16m3; do [ -x h_$t ] && timeout 40 ./h_$t $t; done 2>&1 | tee $OUT/harness.txt
for t in old new reorder i16 m4 p20 p16m3; do echo "== $t"; grep -A1 "Compiling entry function '\(kiln_radix_pass_f32\|kiln_radix_pairs_f32\)" h_$t.log | grep -v "^--"; grep "Used" h_$t.log; done > ptxas.txt 2>&1
tar czf $OUT/logs.tgz tests.txt ptxas.txt build.txt
