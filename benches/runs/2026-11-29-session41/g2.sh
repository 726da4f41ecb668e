#!/usr/bin/env bash
# Session 41, call g2: the GPU suite on the commit in the pack's MANIFEST (a process's first
# call compiling beside the context's creation; the device's attributes without a context),
# the interpreter's tests first (the new child-process test among them). Carry ["s41-pack"].
set -u
P=$PWD/s41-pack; R=$PWD
nvidia-smi -L; cat "$P/MANIFEST"
W=/tmp/w41; rm -rf $W; mkdir -p $W
xz -dc "$P/kiln-tests.xz" > $W/kiln-tests && chmod +x $W/kiln-tests
export KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data
KILN_CACHE_DIR=$(mktemp -d) timeout 150 $W/kiln-tests interp_gpu --test-threads 4 > "$OUT/interp-tests.txt" 2>&1
echo "interp tests rc $?" >> "$OUT/interp-tests.txt"
grep -E "^test |test result|panicked|rc |first-call" "$OUT/interp-tests.txt" | head -30
cd "$R" && KILN_DATA=$P/data timeout 360 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |FAILED|panicked|suite rc|test result|^== " "$OUT/suite.txt" | tail -25
