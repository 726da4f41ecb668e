#!/usr/bin/env bash
# Session 38, calls b3: tiny_chain_48ops only, five rounds of 200 calls, by the kiln-bench of
# the carried folder (s38-pack/ at 9c1d65a, q-pack/ at edf2225), the two called one after the
# other, twice, on one warm H200. `bash benches/runs/2026-11-29-session38/b3.sh PACK TAG`.
set -u
R=$PWD; p=$1; tag=$2
(cd "$R/$p" && cat MANIFEST && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
for r in 1 2 3 4 5; do
  f=$OUT/$p-$tag-$r.txt
  KILN_CACHE_DIR=/tmp/kc-$p timeout 90 "$R/$p/kiln-bench" tiny_chain --reps 200 > "$f" 2>&1; echo "rc $?" >> "$f"
  echo "== $p $tag round $r: $(grep -E "^tiny_chain[a-z0-9_]* +[0-9]" "$f" | cut -c1-45 | tr '\n' ' ')"
done
