#!/usr/bin/env bash
# Session 31's final call: the whole GPU suite on the final code (self-tests and the array
# suite, scripts/gpu/run.sh), the benches in lead-final-bench.sh. Run twice: on 9a70f5f's code
# (lead-final/), then after the review's mends (lead-final-review/).
set -u
P=$PWD/final-pack; R=$PWD
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -12
