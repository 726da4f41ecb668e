#!/usr/bin/env bash
# On the device (session 24, scan helper), round 3: kiln's chunk look-back (scan_gpu/lookback.rs).
# GPU scan tests (default, then scans with KILN_GPU_SCAN_LOOKBACK=fenwick), the harness's round 6
# (reduce first), kiln-bench with the chunk and Fenwick look-backs alternated (two rounds), and
# peers_ops.py's cumsums, one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
P=scan-pack
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd $P && { xz -d -T16 kiln-tests.xz & xz -d -T16 kiln-bench.xz & wait; } && chmod +x kiln-*)
(cd $P && nvcc -O3 -arch=sm_90 -Xptxas -v -o scan_harness6 scan_harness6.cu > nvcc6.log 2>&1 || cp scan_harness6.local scan_harness6) &
NV=$!
mkdir -p /work && ln -sfn "$root" /work/wt-scan
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
L=$OUT/logs; mkdir -p $L
timeout 150 ./$P/kiln-tests $(cat $P/filters.txt) --test-threads 4 > $L/tests.txt 2>&1
echo "tests rc $?"; grep -E "^test .*FAILED|panicked|test result" $L/tests.txt | head -20
KILN_GPU_SCAN_LOOKBACK=fenwick timeout 60 ./$P/kiln-tests scans:: --test-threads 4 > $L/tests-fenwick.txt 2>&1
echo "fenwick tests rc $?"; grep -E "^test .*FAILED|panicked|test result" $L/tests-fenwick.txt | head -10
for round in 1 2; do
  for m in chunk fenwick; do
    echo "== round $round KILN_GPU_SCAN_LOOKBACK=$m"
    KILN_GPU_SCAN_LOOKBACK=$m timeout 40 ./$P/kiln-bench copy cumsum_2^26 cumsum_of_square_2^26 cumsum_rows --reps 25 2>&1 | grep -E "^work|^copy|cumsum"
  done
done > $L/bench.txt 2>&1
cat $L/bench.txt
(cd $P && timeout 90 python3 peers_ops.py cumsum_2 cumsum_of 2>&1 | grep -v Warning | tail -12) > $L/peers.txt 2>&1
cat $L/peers.txt
wait $NV
(cd $P && tail -n 3 nvcc6.log; timeout 100 ./scan_harness6 67108864 40) > $L/harness.txt 2>&1
cat $L/harness.txt
tar -C $OUT -czf $OUT/scan-logs.tgz logs && rm -rf $L
