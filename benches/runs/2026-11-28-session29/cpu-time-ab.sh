#!/bin/bash
# The timing program's A/B (cpu-km-time.rs of session 28, built as examples/cpu_km_time: 3
# rounds of ITERS iterations, medians), alternated in one sitting: the four settings of
# KILN_HOST_DISTANCES x KILN_HOST_BLOCK_SCATTER ("direct loop" is session 28's code), then
# scikit-learn's Lloyd iteration, ROUNDS rounds, the load average and vmstat's idle before each.
# Usage: [KM_N=points] [RAYON_NUM_THREADS=1] cpu-time-ab.sh [ROUNDS] [ITERS]
cd "$(dirname "$0")/../../.."
ROUNDS=${1:-3}
ITERS=${2:-100}
for r in $(seq "$ROUNDS"); do
  for cfg in "direct loop" "expanded loop" "direct unrolled" "expanded unrolled"; do
    set -- $cfg
    echo "round $r $cfg $(uptime | sed 's/.*load/load/'); idle $(vmstat 1 2 | tail -1 | awk '{print $15}')%: $(KILN_HOST_DISTANCES=$1 KILN_HOST_BLOCK_SCATTER=$2 target/release/examples/cpu_km_time 3 "$ITERS" 2>&1 | grep round | awk '{print $4}' | tr '\n' ' ')"
  done
  if [ -z "$RAYON_NUM_THREADS" ] && [ -z "$KM_N" ]; then
    echo "round $r scikit-learn $(uptime | sed 's/.*load/load/'): $(/tmp/skenv/bin/python benches/sklearn_kmeans.py 2>&1 | grep chunked)"
  fi
done
