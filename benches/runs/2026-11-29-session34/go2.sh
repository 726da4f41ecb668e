#!/usr/bin/env bash
# Session 34: the look-ahead scan by tickets (scan_tk) against the static one (scan_ws).
set -u
S=$PWD/benches/runs/2026-11-29-session34
C="16384,3,8,1;16384,3,16,1;8192,3,8,2"
for v in "0 128 1" "1 128 1" "1 256 1" "1 128 2" "1 64 1" "0 128 1"; do
  set -- $v
  echo "== ticket $1 round $2 grid_x $3"
  SCAN_CONFIGS="$C" SCAN_TICKET=$1 SCAN_ROUND=$2 SCAN_GRID_X=$3 timeout 80 python3 "$S/scan-ws.py" 40 2>&1 | grep -v "^  File\|^    " | grep -v "^NVIDIA"
done
