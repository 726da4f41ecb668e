#!/usr/bin/env bash
# Session 23 (rowsort helper), round 1: the block radix row sort wired into kiln. GPU tests
# (default, then the sorts suite with KILN_GPU_ROW_SORT=bitonic), the standalone harness's
# variants (launch bounds, __match_any_sync), kiln-bench rows with the row sort and the bitonic
# line sort alternated, and peers_ops.py's rows, one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
P=rowsort-pack
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd $P && { xz -d -T16 kiln-tests.xz & xz -d -T16 kiln-bench.xz & wait; } && chmod +x kiln-*)
# The harness variants compile (CPU) while the tests run.
(cd $P && nvcc -O3 -arch=sm_90 -o h_b1 harness.cu > nvcc_b1.log 2>&1 &
 nvcc -O3 -arch=sm_90 -DROW_MIN_BLOCKS=2 -o h_b2 harness.cu > nvcc_b2.log 2>&1 &
 nvcc -O3 -arch=sm_90 -DROW_MATCH_ANY -o h_m1 harness.cu > nvcc_m1.log 2>&1 &
 nvcc -O3 -arch=sm_90 -DROW_MATCH_ANY -DROW_MIN_BLOCKS=2 -o h_m2 harness.cu > nvcc_m2.log 2>&1 &
 wait) &
NV=$!
mkdir -p /work && ln -sfn "$root" /work/wt-rowsort
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
L=$OUT/logs; mkdir -p $L
timeout 110 ./$P/kiln-tests gpu_rowsort gpu_radix gpu_select gpu_topk sorts:: --test-threads 1 > $L/tests.txt 2>&1
echo "tests rc $?"; grep -E "^test .*FAILED|panicked|test result" $L/tests.txt | head -20
KILN_GPU_ROW_SORT=bitonic timeout 45 ./$P/kiln-tests sorts:: --test-threads 1 > $L/tests-bitonic.txt 2>&1
echo "bitonic tests rc $?"; grep -E "^test .*FAILED|panicked|test result" $L/tests-bitonic.txt | head -10
wait $NV
for v in b1 b2 m1 m2; do echo "== variant $v"; tail -n 3 $P/nvcc_$v.log; (cd $P && timeout 20 ./h_$v 8192); done > $L/harness.txt 2>&1
cat $L/harness.txt
for round in 1 2; do
  for m in radix bitonic; do
    echo "== round $round KILN_GPU_ROW_SORT=$m"
    KILN_GPU_ROW_SORT=$m timeout 30 ./$P/kiln-bench sort_rows argsort_rows median_rows --reps 20 2>&1 | grep -E "^work|_rows_"
  done
done > $L/bench.txt 2>&1
cat $L/bench.txt
(cd $P && timeout 70 python3 peers_ops.py sort_rows median_rows 2>&1 | grep -v Warning | tail -12) > $L/peers.txt 2>&1
cat $L/peers.txt
tar -C $OUT -czf $OUT/rowsort-logs.tgz logs && rm -rf $L
