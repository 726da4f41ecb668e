#!/usr/bin/env bash
# Session 40, call g1: the GPU suite on an H200 over session 40's changes (a plan's new kernels
# compiled ahead, both tiers through ptxas, the gather as a carried module). Carry ["s40-pack"].
# 1. the tests nearest the change (interp_gpu, the gathered operands); 2. the whole GPU suite
# (run.sh).
set -u
P=$PWD/s40-pack; R=$PWD
nvidia-smi -L
cat "$P/MANIFEST"
W=/tmp/w40; rm -rf $W; mkdir -p $W
xz -dc "$P/kiln-tests.xz" > $W/kiln-tests && chmod +x $W/kiln-tests
export KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data
KILN_CACHE_DIR=$(mktemp -d) timeout 150 $W/kiln-tests interp_gpu vendor_gpu::gpu_strided --test-threads 4 > "$OUT/interp-tests.txt" 2>&1
echo "interp tests rc $?" >> "$OUT/interp-tests.txt"
grep -E "^test |test result|panicked|rc " "$OUT/interp-tests.txt" | head -20
# The suite only where those passed.
grep -q "test result: ok" "$OUT/interp-tests.txt" || exit 1
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -25
