#!/bin/bash
# One sitting on the 2-core dev machine: kiln's k-means iteration before (BEFORE: cpu_peers of
# main's code) and after (AFTER: this branch), and scikit-learn's Lloyd iteration, alternated
# for ROUNDS rounds; the load average before each run.
# Usage: BEFORE=... AFTER=... ROUNDS=3 bash cpukm-sitting.sh
set -u
for r in $(seq 1 "${ROUNDS:-3}"); do
  for who in before after sklearn; do
    echo "== round $r $who load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
    case $who in
      before) "$BEFORE" --bench kmeans_iter --warm-up-time 2 --measurement-time 5 --noplot 2>&1 | grep -E "time:" | head -1 ;;
      after) "$AFTER" --bench kmeans_iter --warm-up-time 2 --measurement-time 5 --noplot 2>&1 | grep -E "time:" | head -1 ;;
      sklearn) python3 benches/sklearn_kmeans.py 2>&1 | tail -2 ;;
    esac
  done
done
