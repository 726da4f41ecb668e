#!/bin/bash
# Alternates kiln's host k-means iteration (2^18x64, k = 10; criterion's `kmeans_iter` of
# benches/cpu_peers.rs, one binary) with large host data on huge pages (the new default) and
# without (KILN_HOST_HUGE_PAGES=off), with scikit-learn's Lloyd kernel
# (benches/sklearn_kmeans.py), ROUNDS rounds, each run started on a quiet machine (vmstat idle
# >= 95% over 2 s, waits up to WAIT s) and tagged with the rustc count and load before/after.
# Usage: benches/runs/2026-11-28-session30/cpu-huge-ab.sh [ROUNDS] [WAIT]
cd "$(dirname "$0")/../../.."
BIN=$(ls -t target/release/deps/cpu_peers-* | grep -v '\.d$' | head -1)
WAIT=${2:-300}
quiet() {
  local t=0
  while [ "$(vmstat 2 2 | tail -1 | awk '{print $15}')" -lt 95 ] && [ $t -lt "$WAIT" ]; do sleep 3; t=$((t + 5)); done
}
tag() { echo "rustc: $(pgrep -c rustc), $(uptime | sed 's/.*load/load/')"; }
for r in $(seq "${1:-3}"); do
  for h in off on; do
    quiet
    before=$(tag)
    t=$(KILN_HOST_HUGE_PAGES=$h "$BIN" --bench kmeans_iter --warm-up-time 1 --measurement-time 4 2>&1 | grep -E "^\s+time:" | head -1)
    echo "round $r huge pages $h: $t | before: $before | after: $(tag) | $(date +%T)"
  done
  quiet
  before=$(tag)
  t=$(/tmp/skenv/bin/python benches/sklearn_kmeans.py 2>&1 | grep chunked)
  echo "round $r scikit-learn: $t | before: $before | after: $(tag) | $(date +%T)"
done
