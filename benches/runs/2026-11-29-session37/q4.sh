#!/usr/bin/env bash
# Session 37, call q4: the whole GPU suite (self-tests and the array suite, run.sh) on the
# queued scatter with the expanded screen by default and the carveout set once. Carry
# final-pack/.
set -u
P=$PWD/final-pack; R=$PWD
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 450 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -12
