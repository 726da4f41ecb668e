#!/usr/bin/env bash
# Session 38, calls b1: tiny_chain_48ops (built each call) and its fused form, three rounds of
# 200 calls, a traced round, and k-means 2^20, by the kiln-bench of the carried folder:
# s38-pack/ (16b9531, the structural numbers; 9c1d65a in b2), then q-pack/ (edf2225, frontend 562bc84: the
# code before them) on the same warm machine right after (both do not fit one call); with
# `peers`, then the peers of tiny_chain_48ops (cupy.fuse...).
# `bash benches/runs/2026-11-29-session38/b1.sh PACK [peers]`.
set -u
R=$PWD; p=$1
nvidia-smi -L
(cd "$R/$p" && cat MANIFEST && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
row() { grep -E "^tiny_chain[a-z0-9_]* +[0-9]|^kmeans[a-z0-9_^]* +[0-9]|host time per call" "$1" | cut -c1-100 | tr '\n' ' '; }
for r in 1 2 3; do
  f=$OUT/$p-$r.txt
  KILN_CACHE_DIR=/tmp/kc-$p timeout 90 "$R/$p/kiln-bench" tiny_chain --reps 200 > "$f" 2>&1; echo "rc $?" >> "$f"
  echo "== $p round $r: $(row "$f")"
done
f=$OUT/$p-trace.txt
KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/kc-$p timeout 90 "$R/$p/kiln-bench" tiny_chain --reps 200 > "$f" 2>&1
echo "== $p traced: $(grep -E "tiny_chain_48ops: host trace" "$f" | cut -c1-700)"
f=$OUT/$p-kmeans.txt
KILN_CACHE_DIR=/tmp/kc-$p timeout 120 "$R/$p/kiln-bench" kmeans --reps 25 > "$f" 2>&1; echo "rc $?" >> "$f"
echo "== $p kmeans: $(row "$f")"
if [ "${2:-}" = peers ]; then
  timeout 200 python3 "$R/benches/runs/2026-11-27-session24/lead-tiny-peers.py" > "$OUT/tiny-peers.txt" 2>&1
  echo "== peers:"; grep -E "tiny_chain" "$OUT/tiny-peers.txt"
fi
