#!/usr/bin/env bash
# Before/after A/B of kiln-bench on one machine: before = 3ae63fc, after = HEAD of the pack.
set -u
cd "$(dirname "$0")"
for b in before after; do xz -dc kiln-bench-$b.xz > /tmp/kb-$b && chmod +x /tmp/kb-$b; done
export KILN_DEVICE=cuda:0
for round in 1 2; do
  for b in before after; do
    echo "=== $b round $round"
    KILN_CACHE_DIR=/tmp/kc-$b /tmp/kb-$b --reps 25 "$@" 2>&1
  done
done
