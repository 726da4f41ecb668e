#!/usr/bin/env bash
# Session 38, call s1: the whole GPU suite (self-tests and the array suite, run.sh) on 16b9531
# (the structural numbers). Carry ["final-pack"].
set -u
P=$PWD/final-pack; R=$PWD
nvidia-smi -L
cat "$P/MANIFEST"
cd "$R" && KILN_DATA=$P/data timeout 520 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -12
