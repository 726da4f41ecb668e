#!/usr/bin/env bash
# Session 37, call q5: kiln-bench on the final code, the queue on (default) and off alternated
# (one binary, a cache dir each), three rounds of k-means and the scatters; then the peers'
# k-means and scatter rows in the same call. Carry q-pack/.
set -u
Q=$PWD/q-pack
nvidia-smi -L
cat "$Q/MANIFEST"
(cd "$Q" && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  for v in on off; do
    KILN_GPU_SCATTER_QUEUE=$v KILN_CACHE_DIR=/tmp/kc-$v timeout 120 "$Q/kiln-bench" copy kmeans scatter_add_2^26_into_1024 bincount_2^26_into_1024 --reps 25 > "$OUT/bench-$r-$v.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$v.txt"
    echo "== round $r queue $v"; grep -E "^(copy|kmeans[a-z0-9_]+|scatter[a-z0-9_^]+|bincount[a-z0-9_^]+) +[0-9]|kmeans.*host|rc " "$OUT/bench-$r-$v.txt" | cut -c1-110
  done
done
timeout 150 python3 "$Q/kmeans_peers.py" > "$OUT/kmeans-peers.txt" 2>&1; echo "kmeans peers rc $?" >> "$OUT/kmeans-peers.txt"
tail -10 "$OUT/kmeans-peers.txt"
timeout 120 python3 "$Q/peers_ops.py" scatter_add_2^26_into_1024 bincount_2^26_into_1024 copy > "$OUT/peers.txt" 2>&1; echo "peers rc $?" >> "$OUT/peers.txt"
grep -E "scatter|bincount|copy|rc " "$OUT/peers.txt" | head -14
