#!/usr/bin/env bash
# Session 37, call q6: the final code's kiln-bench (same binary as q5) for issue 18's remaining
# same-call figure, scatter_add of 2^26 float32 into 2^20 bins (global atomics) beside the
# peers' row, and k-means 2^20 and the digits again, three rounds. Carry q-pack/.
set -u
Q=$PWD/q-pack
nvidia-smi -L
cat "$Q/MANIFEST"
(cd "$Q" && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  KILN_CACHE_DIR=/tmp/kc timeout 120 "$Q/kiln-bench" copy kmeans scatter_add_2^26_into_1048576 scatter_add_2^26_into_1024 --reps 25 > "$OUT/bench-$r.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r.txt"
  echo "== round $r"; grep -E "^(copy|kmeans[a-z0-9_]+|scatter[a-z0-9_^]+) +[0-9]|rc " "$OUT/bench-$r.txt" | cut -c1-80
done
timeout 150 python3 "$Q/peers_ops.py" scatter_add_2^26_into copy > "$OUT/peers.txt" 2>&1; echo "peers rc $?" >> "$OUT/peers.txt"
grep -E "scatter|copy|rc " "$OUT/peers.txt" | head -14
timeout 150 python3 "$Q/kmeans_peers.py" > "$OUT/kmeans-peers.txt" 2>&1; echo "kmeans peers rc $?" >> "$OUT/kmeans-peers.txt"
tail -10 "$OUT/kmeans-peers.txt"
