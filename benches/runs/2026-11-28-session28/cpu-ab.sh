#!/bin/bash
# Alternates kiln's host k-means iteration (2^18x64, k = 10; criterion, the same binary with
# KILN_HOST_LABEL_BLOCK off (one position at a time, main's code) and on (16 positions a block))
# with scikit-learn's Lloyd iteration (benches/sklearn_kmeans.py), ROUNDS rounds, the load
# average before each. Usage: benches/runs/2026-11-28-session28/cpu-ab.sh [ROUNDS]
cd "$(dirname "$0")/../../.."
BIN=$(ls -t target/release/deps/cpu_peers-* | grep -v '\.d$' | head -1)
for r in $(seq "${1:-3}"); do
  for knob in off on; do
    echo "round $r KILN_HOST_LABEL_BLOCK=$knob $(uptime | sed 's/.*load/load/')"
    KILN_HOST_LABEL_BLOCK=$knob "$BIN" --bench kmeans_iter --warm-up-time 1 --measurement-time 4 2>&1 | grep -E "^\s+time:" | head -1
  done
  echo "round $r scikit-learn $(uptime | sed 's/.*load/load/')"
  /tmp/skenv/bin/python benches/sklearn_kmeans.py
done
