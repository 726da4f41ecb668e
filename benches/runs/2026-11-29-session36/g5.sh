#!/usr/bin/env bash
# Session 36, call 5: the GPU tests of the scans (the look-ahead scan's words kept per stream,
# tagged by launch epochs, blocks counted in at their start; its graph replay; compactions, uniques) on the new code. Carry la-pack/.
set -u
P=$PWD/la-pack; R=$PWD
nvidia-smi -L
cat "$P/MANIFEST"
cd "$R" && KILN_DATA=$P/data timeout 400 bash "$P/run.sh" lookahead scan cum compaction nonzero replay unique > "$OUT/tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/tests.txt"
grep -E "^gpu: |FAILED|panicked|tests rc|test result" "$OUT/tests.txt" | tail -12
