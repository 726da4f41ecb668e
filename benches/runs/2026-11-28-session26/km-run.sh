#!/bin/bash
set -u
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD KILN_CACHE_DIR=/tmp/kiln-cache INSTA_WORKSPACE_ROOT=$PWD INSTA_UPDATE=no
P=km-pack
S=$SECONDS
(cd $P && tar xJf bins.tar.xz)
nvidia-smi -L > $OUT/km-device.txt 2>&1
echo "unpacked $((SECONDS-S)) s" >> $OUT/km-times.txt
for i in 1 2; do
  timeout 15 ./$P/kiln-bench-main kmeans --reps 25 > $OUT/km-bench-main-$i.txt 2>&1
  timeout 15 ./$P/kiln-bench kmeans --reps 25 > $OUT/km-bench-new-$i.txt 2>&1
  echo "bench round $i $((SECONDS-S)) s" >> $OUT/km-bench-main-$i.txt
done
timeout 35 ./$P/kiln-tests scatter_epilogue kmeans scatter indexing --skip examples --skip kmeans_iteration_gpu_kernel_ptx --test-threads 4 > $OUT/km-gpu-tests.txt 2>&1
echo "tests rc $? $((SECONDS-S)) s" >> $OUT/km-times.txt
timeout $((116 - (SECONDS-S))) python3 $P/kmeans_peers.py > $OUT/km-peers.txt 2>&1
echo "peers rc $? $((SECONDS-S)) s" >> $OUT/km-times.txt
cat $OUT/km-times.txt; grep -h "kmeans_iter\|round" $OUT/km-bench-*.txt; cat $OUT/km-peers.txt | grep kmeans; grep -E "test result|FAILED|panicked" $OUT/km-gpu-tests.txt | head
