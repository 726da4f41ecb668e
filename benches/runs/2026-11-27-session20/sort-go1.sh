#!/usr/bin/env bash
# Round 1 (session 20): standalone variants of radix_sort.cu (sort-variants-run1.patch: look-back
# window, early counts, items per thread, histogram loads), ptxas usage, a profile of the
# phases (-DKILN_PROF), ncu of two passes. harness.cu then was sort-harness.cu with the
# kernels' signatures of the session's start and cudaFuncSetAttribute(..., 150000).
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
B="-O3 -arch=sm_90 -DKILN_RADIX_F32_ONLY -Xptxas -v"
b() { t=$1; shift; nvcc $B "$@" -o h_$t harness.cu > h_$t.log 2>&1 || { echo "BUILD FAIL $t"; tail -20 h_$t.log; }; }
H="-DHIST_LOADS=8"
b base &
b h8 $H &
b w8 $H -DKILN_LB_WIN=8 &
b w4 $H -DKILN_LB_WIN=4 &
b w16 $H -DKILN_LB_WIN=16 &
b w8e $H -DKILN_LB_WIN=8 -DKILN_EARLY &
b i24w8 $H -DKILN_LB_WIN=8 -DKILN_RADIX_ITEMS=24 -DKILN_RADIX_ITEMS_PAIRS=16 -DKILN_RADIX_MIN_BLOCKS_PAIRS=2 &
b i24w8m2 $H -DKILN_LB_WIN=8 -DKILN_RADIX_ITEMS=24 -DKILN_RADIX_MIN_BLOCKS=2 -DKILN_RADIX_ITEMS_PAIRS=12 &
b i20w8 $H -DKILN_LB_WIN=8 -DKILN_RADIX_ITEMS=20 -DKILN_RADIX_ITEMS_PAIRS=20 -DKILN_RADIX_MIN_BLOCKS_PAIRS=2 &
b pbase -DKILN_PROF &
b pw8 $H -DKILN_PROF -DKILN_LB_WIN=8 &
b pw8e $H -DKILN_PROF -DKILN_LB_WIN=8 -DKILN_EARLY &
wait
for t in base h8 w8 w4 w16 w8e i24w8 i24w8m2 i20w8 pbase pw8 pw8e; do echo "== $t"; grep -A1 "Compiling entry function '\(kiln_radix_pass_f32\|kiln_radix_pairs_f32\|kiln_radix_hist_f32\)" h_$t.log | grep -v "^--"; grep "Used" h_$t.log; done > $OUT/ptxas.txt 2>&1
for t in base h8 w8 w4 w16 w8e i24w8 i24w8m2 i20w8 pbase pw8 pw8e; do [ -x h_$t ] && timeout 40 ./h_$t $t; done 2>&1 | tee $OUT/harness.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
if [ -n "$NCU" ]; then
  for t in base w8; do timeout 100 $NCU --kernel-name kiln_radix_pass_f32 --launch-skip 5 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats ./h_$t ncu_$t 2>&1 | grep -v "^==PROF==" | tail -90; done > $OUT/ncu.txt 2>&1
else echo "no ncu" > $OUT/ncu.txt; fi
