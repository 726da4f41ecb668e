#!/usr/bin/env bash
# Session 37, calls q8 and q8-old: tiny_chain_48ops (the expression built each call) and its
# fused form, three rounds, by the kiln-bench of the carried folder: q-pack/ (562bc84: the
# uniform elementwise node built apart from infer's path), then q-old/ (5629903) on the same
# warm machine right after. `bash q8.sh DIR`.
set -u
Q=$PWD/${1:-q-pack}
nvidia-smi -L
cat "$Q/MANIFEST"
(cd "$Q" && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  KILN_CACHE_DIR=/tmp/kc-$r timeout 60 "$Q/kiln-bench" tiny_chain --reps 200 > "$OUT/b-$r.txt" 2>&1; echo "bench rc $?" >> "$OUT/b-$r.txt"
  echo "== round $r: $(grep -E "^tiny_chain[a-z0-9_]* +[0-9]" "$OUT/b-$r.txt" | cut -c1-45 | tr '\n' ' ') $(grep -E "tiny_chain_48ops host time" "$OUT/b-$r.txt" | cut -c1-90) $(grep -E "rc " "$OUT/b-$r.txt")"
done
