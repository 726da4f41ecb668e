#!/usr/bin/env bash
# Session 36, call 8: the final code (new: split reductions' and scatters' counters kept per
# stream, zeroed once) against c270ed2 (old: those counters zeroed by a memset node a launch;
# both with the look-ahead scan's kept epoch words), alternated, three rounds; then the peers'
# cumsum rows and the k-means peers in the same call. Carry la-bench/.
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && (xz -d -T8 -k -f kiln-bench-old.xz & xz -d -T8 -k -f kiln-bench-new.xz; wait) && chmod +x kiln-bench-old kiln-bench-new && cat MANIFEST
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  for v in old new; do
    KILN_CACHE_DIR=/tmp/kc-$v timeout 120 ./kiln-bench-$v copy cumsum_2 cumsum_of sum_all kmeans tiny_chain --reps 25 > "$OUT/bench-$r-$v.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$v.txt"
    echo "== round $r $v"; grep -E "^(copy|cumsum_[a-z0-9^_]+|sum_all|kmeans[a-z0-9_]+|tiny_chain[a-z0-9_]*) +[0-9]|rc " "$OUT/bench-$r-$v.txt" | cut -c1-80
  done
done
timeout 150 python3 "$B/peers_ops.py" cumsum > "$OUT/peers.txt" 2>&1; echo "peers rc $?" >> "$OUT/peers.txt"
grep -E "cumsum|rc " "$OUT/peers.txt" | head -12
timeout 200 python3 "$B/kmeans_peers.py" > "$OUT/kmeans-peers.txt" 2>&1; echo "kmeans peers rc $?" >> "$OUT/kmeans-peers.txt"
tail -12 "$OUT/kmeans-peers.txt"
