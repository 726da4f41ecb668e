#!/usr/bin/env bash
# Session 37, call q1: the queued GPU scatter (producer warps' bulk copies into a queue of tile
# buffers, consumer warps taking tiles; KILN_GPU_SCATTER_QUEUE, on by default on sm_90).
# kiln-bench's k-means with the queue on and off alternated (one binary, a cache dir each),
# three rounds, then the k-means peers. Carry q-pack/ (kiln-bench.xz, kmeans_peers.py). The
# suite's GPU tests ran in the next call (q2.sh: the two packs do not travel together).
set -u
Q=$PWD/q-pack; R=$PWD
nvidia-smi -L
cat "$Q/MANIFEST"
(cd "$Q" && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  for v in on off; do
    KILN_GPU_SCATTER_QUEUE=$v KILN_CACHE_DIR=/tmp/kc-$v timeout 90 "$Q/kiln-bench" copy kmeans --reps 25 > "$OUT/bench-$r-$v.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$v.txt"
    echo "== round $r queue $v"; grep -E "^(copy|kmeans[a-z0-9_]+) +[0-9]|host|rc " "$OUT/bench-$r-$v.txt" | cut -c1-120
  done
done
timeout 150 python3 "$Q/kmeans_peers.py" > "$OUT/kmeans-peers.txt" 2>&1; echo "kmeans peers rc $?" >> "$OUT/kmeans-peers.txt"
tail -12 "$OUT/kmeans-peers.txt"
