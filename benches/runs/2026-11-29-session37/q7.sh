#!/usr/bin/env bash
# Session 37, call q7: the queued k-means' expanded screen taking 1 (default), 2, 4 or 8 terms a
# step (KILN_ARG_SCREEN: 8-, 16-byte loads of the rows and centres), one binary (5629903), a cache
# dir each, two rounds. Carry q-pack/.
set -u
Q=$PWD/q-pack
nvidia-smi -L
(cd "$Q" && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
for r in 1 2; do
  for u in def 2 4 8; do
    if [ $u = def ]; then e=""; else e="KILN_ARG_SCREEN=$u"; fi
    env $e KILN_CACHE_DIR=/tmp/kc-$u timeout 60 "$Q/kiln-bench" kmeans --reps 25 > "$OUT/b-$r-$u.txt" 2>&1; echo "bench rc $?" >> "$OUT/b-$r-$u.txt"
    echo "== round $r terms $u: $(grep -E "^kmeans[a-z0-9_]+ +[0-9]" "$OUT/b-$r-$u.txt" | cut -c1-48 | tr '\n' ' ') $(grep -E "rc " "$OUT/b-$r-$u.txt")"
  done
done
tar czf "$OUT/q7.tgz" -C "$OUT" $(cd "$OUT" && ls b-*.txt) && rm -f "$OUT"/b-*.txt
