#!/usr/bin/env bash
# Session 35, call 8: main (u4) against a grid kernel's scratch argument passed as its counters (new),
# alternated, three rounds of copy and cumsum, and the host trace of each.
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && (xz -d -T8 -k -f kiln-bench-u4.xz & xz -d -T8 -k -f kiln-bench-new.xz; wait) && chmod +x kiln-bench-u4 kiln-bench-new && cat MANIFEST
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  for v in u4 new; do
    KILN_CACHE_DIR=/tmp/kc-$v timeout 60 ./kiln-bench-$v copy cumsum_2 cumsum_of --reps 25 > "$OUT/bench-$r-$v.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$v.txt"
    echo "== round $r $v"; grep -E "^copy  |^cumsum_[a-z0-9^_]+ +[0-9]|rc " "$OUT/bench-$r-$v.txt" | head -8
  done
done
for v in u4 new; do
  KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/kc-$v timeout 60 ./kiln-bench-$v cumsum_2 --reps 25 > "$OUT/trace-$v.txt" 2>&1
  echo "== trace $v"; grep -E "host µs|host trace" "$OUT/trace-$v.txt" | cut -c1-900
done
