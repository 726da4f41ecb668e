#!/bin/bash
# km, session 27, device call 1: kiln-bench kmeans of branch km27 with the centres held in shared
# memory (KILN_GPU_SCATTER_HELD=on, the default) against off (the code path of main, caba387),
# alternated; a sweep of the scatter knobs; ncu --set full of both kernels; the GPU tests; peers.
set -u
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD INSTA_WORKSPACE_ROOT=$PWD INSTA_UPDATE=no
P=$PWD/km-pack
S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $OUT/times.txt; }
cd $P
for f in *.xz; do xz -d -T4 "$f"; done; chmod +x kiln-bench kiln-tests
nvidia-smi -L > $OUT/device.txt 2>&1; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> $OUT/device.txt
t unpacked
B="kmeans --reps 25"
for i in 1 2 3; do
  KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCATTER_HELD=off timeout 20 ./kiln-bench $B > $OUT/bench-off-$i.txt 2>&1
  KILN_CACHE_DIR=/tmp/c-new timeout 20 ./kiln-bench $B > $OUT/bench-new-$i.txt 2>&1
done
t bench
sw() { local name=$1; shift; env KILN_CACHE_DIR=/tmp/c-$name "$@" timeout 20 ./kiln-bench $B > $OUT/sweep-$name.txt 2>&1; }
sw t128 KILN_GPU_SCATTER=128,128
sw t512 KILN_GPU_SCATTER=512,128
sw t256x64 KILN_GPU_SCATTER=256,64
sw b4 KILN_GPU_SCATTER_BOUNDS=4
sw s4 KILN_ARG_SCREEN=4
sw st8 KILN_GPU_SCATTER_STAGE=8

sw off-s4 KILN_GPU_SCATTER_HELD=off KILN_ARG_SCREEN=4
t sweep
NCU="ncu --set full --import-source no -k regex:kiln_gpu --launch-skip 5 --launch-count 1"
KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCATTER_HELD=off timeout 50 $NCU -o $OUT/ncu-off ./kiln-bench kmeans_iter_1048576 --reps 10 > $OUT/ncu-off-log.txt 2>&1
t ncu-off
KILN_CACHE_DIR=/tmp/c-new timeout 50 $NCU -o $OUT/ncu-new ./kiln-bench kmeans_iter_1048576 --reps 10 > $OUT/ncu-new-log.txt 2>&1
t ncu-new
for v in off new; do ncu --import $OUT/ncu-$v.ncu-rep --page details > $OUT/ncu-$v-details.txt 2>&1; ncu --import $OUT/ncu-$v.ncu-rep --page source --csv --print-source sass > $OUT/ncu-$v-sass.csv 2>&1; done
t ncu-pages
cd $P/..
KILN_CACHE_DIR=/tmp/c-tests timeout 70 ./km-pack/kiln-tests gpu_ scatter kmeans --test-threads 4 > $OUT/gpu-tests.txt 2>&1
echo "tests rc $?" >> $OUT/times.txt; t tests
cd $P
left=$((255 - (SECONDS-S))); [ $left -gt 20 ] && timeout $left python3 kmeans_peers.py > $OUT/peers.txt 2>&1
echo "peers rc $?" >> $OUT/times.txt; t peers
cat $OUT/times.txt; grep -H "kmeans_iter" $OUT/bench-*.txt $OUT/sweep-*.txt | grep -v host; grep -E "test result|FAILED|panicked" $OUT/gpu-tests.txt | head; grep kmeans $OUT/peers.txt
