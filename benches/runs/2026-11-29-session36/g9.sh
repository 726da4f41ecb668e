#!/usr/bin/env bash
# Session 36, call 9: the final code's cumsum rows against copy, six rounds (kiln-bench-new of
# call 8, 7c9ca09). Carry la-bench/.
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && xz -d -T8 -k -f kiln-bench-new.xz && chmod +x kiln-bench-new && cat MANIFEST
export KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kc-new
for r in 1 2 3 4 5 6; do
  timeout 60 ./kiln-bench-new copy cumsum_2 cumsum_of --reps 25 > "$OUT/bench-$r.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r.txt"
  echo "== round $r"; grep -E "^copy  |^cumsum_[a-z0-9^_]+ +[0-9]|rc " "$OUT/bench-$r.txt" | cut -c1-80
done
