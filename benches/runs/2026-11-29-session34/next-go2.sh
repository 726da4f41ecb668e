#!/usr/bin/env bash
# For session 35 (not run in session 34): scan_ws with its look-ahead window loaded at once
# (SCAN_LA_BATCH=1: one round trip when every total is out) against the chunk-by-chunk polls,
# alternated. No pack needed (CuPy compiles the prototype).
set -u
S=$PWD/benches/runs/2026-11-29-session34
C="16384,3,8,1;16384,3,16,1"
for v in 0 1 0 1; do
  echo "== la batch $v"
  SCAN_CONFIGS="$C" SCAN_LA_BATCH=$v timeout 60 python3 "$S/scan-ws.py" 40 2>&1 | grep -v "^  File\|^    " | grep -v "^NVIDIA\|pipeline copy"
done
