#!/usr/bin/env bash
# Session 36, call 11: after the review's refactor (the launch's stream passed once, Words::zeroed;
# PTX unchanged), the GPU tests of what it touches: the self-tests and the suite's scans,
# reductions, scatters, k-means, streams and graph replays. Carry final-pack/.
set -u
P=$PWD/final-pack; R=$PWD
nvidia-smi -L
cat "$P/MANIFEST"
cd "$R" && KILN_DATA=$P/data timeout 170 bash "$P/run.sh" scan cum lookahead streams replay scatter split kmeans bincount sum reduce compaction nonzero > "$OUT/tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/tests.txt"
grep -E "^gpu: |passed, .* failed|FAILED|panicked|tests rc|test result" "$OUT/tests.txt" | tail -12
