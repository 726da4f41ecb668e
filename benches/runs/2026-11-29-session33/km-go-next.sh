#!/usr/bin/env bash
# For session 34 (not run in session 33): the k-means prototype with the centres in constant
# memory and the dot products in a noinline function (km_const, STAGE 6, 40 registers, no
# spills on the dev machine's ptxas) beside the shared-memory version (km_tiles), then ncu of
# both. No pack needed: CuPy compiles the prototype on the GPU machine.
set -u
S=$PWD/benches/runs/2026-11-29-session33
timeout 200 python3 "$S/km-proto.py" 2>&1 | tee "$OUT/km-proto-const.txt" | grep -v "^  File\|^    " | tail -12
