#!/usr/bin/env bash
# Session 35, call 4: where the graph launch's host time goes (trace points in the replay) and
# whether nodes are updated each call, for cumsum, k-means and the tiny chains.
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && xz -d -T16 -k -f kiln-bench.xz && chmod +x kiln-bench && cat MANIFEST
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_DEVICE=cuda:0
timeout 60 ./kiln-bench copy cumsum_2 kmeans_iter_1048576 tiny_chain_48ops --reps 25 > "$OUT/bench.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench.txt"
grep -vE "^work|^kiln-bench" "$OUT/bench.txt" | cut -c1-400
KILN_HOST_TRACE=1 timeout 60 ./kiln-bench cumsum_2 kmeans_iter_1048576 tiny_chain_48ops --reps 25 > "$OUT/bench-trace.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-trace.txt"
grep -E "host trace|launch lists|rc " "$OUT/bench-trace.txt" | cut -c1-1500
