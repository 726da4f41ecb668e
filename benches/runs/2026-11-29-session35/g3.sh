#!/usr/bin/env bash
# Session 35, call 3: what a launch list's graph costs the host by its nodes (graph-cost.cu).
set -u
S=$PWD/benches/runs/2026-11-29-session35
nvidia-smi -L
cd /tmp && nvcc -O2 -arch=sm_90 -o graph-cost "$S/graph-cost.cu" -lcuda 2>&1 | tail -3 && timeout 120 ./graph-cost | tee $OUT/graph-cost.txt
