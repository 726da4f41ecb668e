#!/bin/bash
# The final A/B, alternated in one sitting: kiln's host k-means iteration (2^18x64, k = 10;
# cpu-km-time.rs built as examples/cpu_km_time: 3 rounds of 100 iterations, medians) with
# KILN_HOST_LABEL_BLOCK=off (one position at a time, main's code) and on (the default: 16
# positions a block), and scikit-learn's Lloyd iteration (benches/sklearn_kmeans.py), ROUNDS
# rounds, the load average and the CPU use of other processes (vmstat) before each.
cd "$(dirname "$0")/../../.."
for r in $(seq "${1:-3}"); do
  for knob in off on; do
    echo "round $r kiln KILN_HOST_LABEL_BLOCK=$knob $(uptime | sed 's/.*load/load/'); vmstat idle: $(vmstat 1 2 | tail -1 | awk '{print $15}')%"
    KILN_HOST_LABEL_BLOCK=$knob target/release/examples/cpu_km_time 3 100 2>&1 | grep round
  done
  echo "round $r scikit-learn $(uptime | sed 's/.*load/load/'); vmstat idle: $(vmstat 1 2 | tail -1 | awk '{print $15}')%"
  /tmp/skenv/bin/python benches/sklearn_kmeans.py
done
