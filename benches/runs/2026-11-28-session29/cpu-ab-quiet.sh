#!/bin/bash
# cpu-ab.sh's sitting, each run started only when the machine is quiet (vmstat idle >= 95%
# over 2 s; waits up to WAIT seconds) and tagged with the other processes' rustc count before
# and after it (a run with a compiler beside it is loaded). Usage: cpu-ab-quiet.sh [ROUNDS] [WAIT]
cd "$(dirname "$0")/../../.."
BIN=$(ls -t target/release/deps/cpu_peers-* | grep -v '\.d$' | head -1)
WAIT=${2:-300}
quiet() {
  local t=0
  while [ "$(vmstat 2 2 | tail -1 | awk '{print $15}')" -lt 95 ] && [ $t -lt "$WAIT" ]; do sleep 3; t=$((t + 5)); done
}
tag() { echo "rustc: $(pgrep -c rustc), $(uptime | sed 's/.*load/load/')"; }
for r in $(seq "${1:-3}"); do
  for cfg in "direct loop" "expanded unrolled"; do
    set -- $cfg
    quiet
    before=$(tag)
    t=$(KILN_HOST_DISTANCES=$1 KILN_HOST_BLOCK_SCATTER=$2 "$BIN" --bench kmeans_iter --warm-up-time 1 --measurement-time 4 2>&1 | grep -E "^\s+time:" | head -1)
    echo "round $r $cfg: $t | before: $before | after: $(tag) | $(date +%T)"
  done
  quiet
  before=$(tag)
  t=$(/tmp/skenv/bin/python benches/sklearn_kmeans.py 2>&1 | grep chunked)
  echo "round $r scikit-learn: $t | before: $before | after: $(tag) | $(date +%T)"
done
