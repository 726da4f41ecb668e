#!/usr/bin/env bash
# Session 36, call 10: the whole GPU suite (self-tests and the array suite, run.sh) on the
# session's final code (kept buffers never dropped).
set -u
P=$PWD/final-pack; R=$PWD
nvidia-smi -L
cat "$P/MANIFEST"
cd "$R" && KILN_DATA=$P/data timeout 400 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -12
grep -E "^    [a-z_0-9:]+$" "$OUT/suite.txt" | head -20
