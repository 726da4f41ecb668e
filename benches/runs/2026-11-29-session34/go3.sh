#!/usr/bin/env bash
# Session 34: scan_ws with each tile stored by one bulk copy (SCAN_TMA_STORE=1) against stores
# from registers, alternated.
set -u
S=$PWD/benches/runs/2026-11-29-session34
C="16384,3,8,1;16384,3,16,1"
for v in 0 1 0 1; do
  echo "== tma store $v"
  SCAN_CONFIGS="$C" SCAN_TMA_STORE=$v timeout 60 python3 "$S/scan-ws.py" 40 2>&1 | grep -v "^  File\|^    " | grep -v "^NVIDIA\|pipeline copy"
done
