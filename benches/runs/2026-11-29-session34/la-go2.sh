#!/usr/bin/env bash
# Session 34: kiln-bench's copy and cumsum rows with the look-ahead scan (launch attributes and
# occupancy cached), two rounds, then one with KILN_HOST_TRACE=1 (where the host's time goes).
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && xz -d -T16 -k -f kiln-bench.xz && chmod +x kiln-bench && cat MANIFEST
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_DEVICE=cuda:0
for r in 1 2; do
  timeout 40 ./kiln-bench copy cumsum --reps 25 > "$OUT/bench-$r.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r.txt"
  grep -E "^copy |^cumsum|rc " "$OUT/bench-$r.txt" | head -12
done
KILN_HOST_TRACE=1 timeout 40 ./kiln-bench cumsum_2 --reps 25 > "$OUT/bench-trace.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-trace.txt"
grep -iE "µs|rc " "$OUT/bench-trace.txt" | head -40
