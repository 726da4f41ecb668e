#!/usr/bin/env bash
# Session 39, call g1: the bytecode interpreter on an H200. Carry ["final-pack"].
# 1. its GPU tests (interp_gpu); 2. the whole GPU suite (run.sh), the interpreter on (the
# default).
set -u
P=$PWD/final-pack; R=$PWD
nvidia-smi -L
cat "$P/MANIFEST"
W=/tmp/w39; rm -rf $W; mkdir -p $W
xz -dc "$P/kiln-tests.xz" > $W/kiln-tests && chmod +x $W/kiln-tests
export KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data
KILN_CACHE_DIR=$(mktemp -d) timeout 150 $W/kiln-tests interp_gpu --test-threads 4 > "$OUT/interp-tests.txt" 2>&1
echo "interp tests rc $?" >> "$OUT/interp-tests.txt"
grep -E "^test |test result|panicked|rc " "$OUT/interp-tests.txt" | head -20
# The suite only where the interpreter's own tests passed.
grep -q "test result: ok" "$OUT/interp-tests.txt" || exit 1
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -25
