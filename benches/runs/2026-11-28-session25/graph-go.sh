#!/usr/bin/env bash
# On the device, one call: unpack; GPU tests with graphs on; kiln-bench off vs on (a cache
# dir each, alternated, two rounds); the peers.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd graph-pack && xz -d -T8 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-graph
export KILN_DEVICE=cuda:0 KILN_REPO=$root
# The tests: the new ones, dispatch, the radix sort, k-means (graphs on).
KILN_GPU_GRAPHS=on KILN_CACHE_DIR=/tmp/kc-test timeout 100 ./graph-pack/kiln-tests gpu_replay dispatch:: gpu_radix_sort_of_lines gpu_radix_sort_of_every kmeans --test-threads 2 > $OUT/tests.txt 2>&1
tail -5 $OUT/tests.txt
W="tiny_multi sort_f32_2^26 kmeans_iter softmax_rows layernorm_rows tiny_chain_48ops"
for round in 1 2; do
  for m in off on; do
    echo "== round $round KILN_GPU_GRAPHS=$m" >> $OUT/bench.txt
    KILN_GPU_GRAPHS=$m KILN_CACHE_DIR=/tmp/kc-$m timeout 60 ./graph-pack/kiln-bench $W --reps 25 >> $OUT/bench.txt 2>&1
  done
done
grep -E "^(tiny|sort|kmeans|softmax|layernorm)[a-z_0-9^x]* +[0-9]|^==|host µs per call|error|panick" $OUT/bench.txt | head -80
(cd graph-pack && timeout 70 python3 tiny_peers.py 2>&1 | grep -v -i warn) | tee $OUT/peers.txt
(cd graph-pack && timeout 40 python3 peers_ops.py sort_f32 2>&1 | grep -v -i warn | tail -5) | tee -a $OUT/peers.txt
