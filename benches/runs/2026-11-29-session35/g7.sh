#!/usr/bin/env bash
# Session 35, call 7: the look-ahead scan's whole-tile runs unrolled by 4 (main) and fully (16),
# alternated, three rounds of copy and cumsum; then the peers' cumsum rows in the same call.
# Carry la-bench/ (kiln-bench-u4.xz, kiln-bench-u16.xz, peers_ops.py).
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && (xz -d -T8 -k -f kiln-bench-u4.xz & xz -d -T8 -k -f kiln-bench-u16.xz; wait) && chmod +x kiln-bench-u4 kiln-bench-u16 && cat MANIFEST
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  for v in u4 u16; do
    KILN_CACHE_DIR=/tmp/kc-$v timeout 60 ./kiln-bench-$v copy cumsum_2 cumsum_of --reps 25 > "$OUT/bench-$r-$v.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$v.txt"
    echo "== round $r $v"; grep -E "^copy  |^cumsum_[a-z0-9^_]+ +[0-9]|rc " "$OUT/bench-$r-$v.txt" | head -8
  done
done
timeout 150 python3 "$B/peers_ops.py" cumsum > "$OUT/peers.txt" 2>&1; echo "peers rc $?" >> "$OUT/peers.txt"
grep -E "cumsum|rc " "$OUT/peers.txt" | head -12
