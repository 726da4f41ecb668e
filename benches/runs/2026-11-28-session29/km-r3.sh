#!/bin/bash
# km, session 29, device call 3 (same binaries as call 2): blocks of 128 threads and tiles of
# 64 positions (KILN_GPU_SCATTER=128,64) with as many blocks as a multiprocessor holds (1320
# with the expanded screen's 44 registers, 1056 with the plain screen's 63), against the
# defaults (expanded: 256,128 and 660 blocks; off: session 28's kernel), alternated; then the
# area's GPU tests that run the k-means kernels, under the 128,64 / 1320 setting.
set -u
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD INSTA_WORKSPACE_ROOT=$PWD INSTA_UPDATE=no
P=$PWD/km29-pack
R=$OUT/r; mkdir -p $R
S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P
for f in *.xz; do timeout 30 xz -d -T4 "$f"; done; chmod +x kiln-bench kiln-tests
t unpacked
B="kmeans_iter_1048576 --reps 25"
sw() { local name=$1; shift; env KILN_CACHE_DIR=/tmp/c-$name "$@" timeout 20 ./kiln-bench $B > $R/sweep-$name.txt 2>&1; }
for i in 1 2; do
  sw def
  sw off KILN_GPU_SCREEN_EXPANDED=off
  sw e128 KILN_GPU_SCATTER=128,64 KILN_GPU_SCATTER_BLOCKS=1320
  sw p128 KILN_GPU_SCREEN_EXPANDED=off KILN_GPU_SCATTER=128,64 KILN_GPU_SCATTER_BLOCKS=1056
  for f in def off e128 p128; do mv $R/sweep-$f.txt $R/sweep-$f-$i.txt; done
done
t sweep
cd $P/..
INSTA_WORKSPACE_ROOT=$P/ws KILN_CACHE_DIR=/tmp/c-tests KILN_GPU_SCATTER=128,64 KILN_GPU_SCATTER_BLOCKS=1320 timeout 35 ./km29-pack/kiln-tests gpu_kmeans screen_expanded::gpu kmeans_update_of_several screened_labels epilogue_ --test-threads 4 > $R/gpu-tests-e128.txt 2>&1
echo "tests rc $?" >> $R/times.txt; t tests
{ cat $R/times.txt; grep -H "kmeans_iter" $R/sweep-*.txt | grep -v "host µs"; grep -E "test result|FAILED|panicked" $R/gpu-tests-e128.txt | head -20; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
