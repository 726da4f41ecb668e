#!/bin/bash
# Alternates kiln's host k-means iteration (2^18x64, k = 10; criterion's `kmeans_iter` of
# benches/cpu_peers.rs, one binary) under session 28's code (KILN_HOST_DISTANCES=direct
# KILN_HOST_BLOCK_SCATTER=loop) and this session's defaults (expanded, unrolled), with
# scikit-learn's Lloyd iteration (benches/sklearn_kmeans.py), ROUNDS rounds, the load average
# and vmstat's idle before each. Usage: benches/runs/2026-11-28-session29/cpu-ab.sh [ROUNDS]
cd "$(dirname "$0")/../../.."
BIN=$(ls -t target/release/deps/cpu_peers-* | grep -v '\.d$' | head -1)
for r in $(seq "${1:-3}"); do
  for cfg in "direct loop" "expanded unrolled"; do
    set -- $cfg
    echo "round $r KILN_HOST_DISTANCES=$1 KILN_HOST_BLOCK_SCATTER=$2 $(uptime | sed 's/.*load/load/'); idle $(vmstat 1 2 | tail -1 | awk '{print $15}')%"
    KILN_HOST_DISTANCES=$1 KILN_HOST_BLOCK_SCATTER=$2 "$BIN" --bench kmeans_iter --warm-up-time 1 --measurement-time 4 2>&1 | grep -E "^\s+time:" | head -1
  done
  echo "round $r scikit-learn $(uptime | sed 's/.*load/load/'); idle $(vmstat 1 2 | tail -1 | awk '{print $15}')%"
  /tmp/skenv/bin/python benches/sklearn_kmeans.py 2>&1 | grep chunked
done
