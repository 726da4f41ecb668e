#!/usr/bin/env bash
# Session 26 lead: the first call's disk hit, main's kiln-bench (old) against the warm-up's (new).
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
{ xz -d -T16 kiln-bench.xz & xz -d -T16 kiln-bench-old.xz & wait; } && chmod +x kiln-bench*
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD/..
for round in 1 2 3; do
  for b in old new; do
    exe=./kiln-bench; [ $b = old ] && exe=./kiln-bench-old
    echo "== round $round $b"
    KILN_HOST_TRACE=1 timeout 60 $exe first_call --reps 5 2>&1 | grep -E "first_call|first call" | cut -c1-900
  done
done 2>&1 | tee $OUT/cold.txt
