#!/usr/bin/env bash
# Session 34: the look-ahead scan in kiln. The scan tests on the GPU (a hang stops at the
# timeout), then kiln-bench's copy and cumsum rows, two rounds, then the peers' cumsum rows.
set -u
R=$PWD; P=$PWD/la-pack
nvidia-smi -L
B=$PWD/la-bench
[ -d "$P" ] && { cd "$P" && xz -d -T16 -k -f kiln-tests.xz && chmod +x kiln-tests; }
[ -d "$B" ] && { cd "$B" && xz -d -T16 -k -f kiln-bench.xz && chmod +x kiln-bench; }
cat MANIFEST
cd "$R"
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no
[ -d "$P" ] && timeout 100 "$P/kiln-tests" scan_lookahead scans:: compaction cum --test-threads 4 > "$OUT/tests.txt" 2>&1; rc=$?; echo "tests rc $rc" >> "$OUT/tests.txt"
grep -E "test result|FAILED|panicked|failed|rc |^test .*(FAIL|ok)$" "$OUT/tests.txt" | grep -v " ok$" | head -20
[ -d "$B" ] || exit 0
for r in 1 2; do
  timeout 40 "$B/kiln-bench" copy cumsum --reps 25 > "$OUT/bench-$r.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r.txt"
  grep -E "copy|cumsum|rc " "$OUT/bench-$r.txt" | head -12
done
timeout 120 python3 "$B/peers_ops.py" cumsum > "$OUT/peers.txt" 2>&1; echo "peers rc $?" >> "$OUT/peers.txt"
grep -E "cumsum|rc " "$OUT/peers.txt" | head -12
