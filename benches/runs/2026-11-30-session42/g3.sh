#!/usr/bin/env bash
# Session 42, call g3: the interpreter's tests (every sample program against the evaluator,
# now also at 2^21 + 3 elements), then the GPU suite, on the commit in the pack's MANIFEST.
# Carry ["s42-pack"].
set -u
P=$PWD/s42-pack; R=$PWD
nvidia-smi -L; cat "$P/MANIFEST"
W=/tmp/w42; rm -rf $W; mkdir -p $W
xz -dc "$P/kiln-tests.xz" > $W/kiln-tests && chmod +x $W/kiln-tests
export KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data
KILN_CACHE_DIR=$(mktemp -d) timeout 150 $W/kiln-tests interp_gpu --test-threads 4 > "$OUT/interp-tests.txt" 2>&1
echo "interp tests rc $?" >> "$OUT/interp-tests.txt"
grep -E "^test |test result|panicked|rc " "$OUT/interp-tests.txt" | head -30
cd "$R" && KILN_DATA=$P/data timeout 360 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |FAILED|panicked|suite rc|test result|^== " "$OUT/suite.txt" | tail -25
