#!/usr/bin/env bash
# Session 34's first call: the TMA look-ahead scan prototype (scan-ws.py), then the whole GPU
# suite on main (final-pack: the tests of ce37535's tree, the review's mends unrun on a GPU),
# then the constant-memory k-means prototype of session 33 (km-go-next.sh) if time is left.
set -u
S=$PWD/benches/runs/2026-11-29-session34; P=$PWD/final-pack
nvidia-smi -L
timeout 170 python3 "$S/scan-ws.py" 30 > "$OUT/scan-ws.txt" 2>&1; echo "scan rc $?" >> "$OUT/scan-ws.txt"
cat "$OUT/scan-ws.txt" | grep -v "^  File\|^    " | tail -40
cat "$P/MANIFEST"
KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -12
timeout 60 python3 benches/runs/2026-11-29-session33/km-proto.py > "$OUT/km-proto-const.txt" 2>&1; echo "km rc $?" >> "$OUT/km-proto-const.txt"
tail -15 "$OUT/km-proto-const.txt"
