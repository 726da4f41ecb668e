#!/usr/bin/env bash
# Session 33, call 1: the whole GPU suite on main (self-tests and the array suite, run.sh), then
# the warp-tile k-means prototype (km-proto.py) beside the copy rate.
set -u
P=$PWD/final-pack; R=$PWD; S=$PWD/benches/runs/2026-11-29-session33
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -12
timeout 200 python3 "$S/km-proto.py" 2>&1 | tee "$OUT/km-proto.txt"
