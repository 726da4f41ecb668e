#!/usr/bin/env bash
# Session 19's final device call (one GPU): the whole GPU suite (run.sh) on main after the merges.
cd "$(dirname "$0")"
P=$PWD
R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 420 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc" "$OUT/final-suite.txt" | tail -25
