#!/usr/bin/env bash
# Session 36, call 4: the look-ahead scan's words kept per stream and tagged by launch epochs
# (new: a graph of one cooperative kernel node) against db4aab2 (old: a memset node clears the
# words before the kernel), alternated, three rounds of copy and cumsum; each kernel under ncu;
# then the peers' cumsum rows in the same call. Carry la-bench/.
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && (xz -d -T8 -k -f kiln-bench-old.xz & xz -d -T8 -k -f kiln-bench-new.xz; wait) && chmod +x kiln-bench-old kiln-bench-new && cat MANIFEST
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  for v in old new; do
    KILN_CACHE_DIR=/tmp/kc-$v timeout 60 ./kiln-bench-$v copy cumsum_2 cumsum_of --reps 25 > "$OUT/bench-$r-$v.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$v.txt"
    echo "== round $r $v"; grep -E "^copy  |^cumsum_[a-z0-9^_]+ +[0-9]|rc " "$OUT/bench-$r-$v.txt" | cut -c1-120 | head -8
  done
done
for v in old new; do
  KILN_CACHE_DIR=/tmp/kc-$v timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum ./kiln-bench-$v cumsum_2 --reps 10 > "$OUT/ncu.txt" 2>&1
  echo "== ncu $v (µs, sorted)"; grep -E "gpu__time_duration" "$OUT/ncu.txt" | awk '{print $NF}' | sort -n | tr '\n' ' '; echo
done
rm -f "$OUT/ncu.txt"
KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/kc-new timeout 60 ./kiln-bench-new cumsum_2 --reps 25 2>&1 | grep -E "host µs|host trace|launch lists" | cut -c1-1200
timeout 150 python3 "$B/peers_ops.py" cumsum > "$OUT/peers.txt" 2>&1; echo "peers rc $?" >> "$OUT/peers.txt"
grep -E "cumsum|rc " "$OUT/peers.txt" | head -12
