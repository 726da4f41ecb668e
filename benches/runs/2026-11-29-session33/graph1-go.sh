#!/usr/bin/env bash
# Session 33: one-kernel plans replayed as one-node CUDA graphs (replay.rs). kiln-bench's tiny
# chains with the host trace and without, graphs on (the new default) and off; the one-kernel
# row workloads and k-means beside the copy, graphs on and off, two rounds.
set -u
P=$PWD/g1-bench
xz -dc "$P/kiln-bench.xz" > /tmp/kiln-bench && chmod +x /tmp/kiln-bench
for g in on off; do
  KILN_DEVICE=cuda:0 KILN_GPU_GRAPHS=$g KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/c-$g timeout 60 /tmp/kiln-bench tiny_chain_48ops tiny_chain_48ops_fuse --reps 200 > $OUT/tiny-trace-$g.txt 2>&1
  echo "== graphs $g, traced"; grep -E "^tiny.*(host time|trace)" $OUT/tiny-trace-$g.txt | grep -o "^[a-z_0-9]*\|run: walk end [0-9.]*\|launch: cuLaunchKernel [0-9.]*\|run [0-9.]* µs" | paste -sd' '
done
for round in 1 2; do
  for g in on off; do
    KILN_DEVICE=cuda:0 KILN_GPU_GRAPHS=$g KILN_CACHE_DIR=/tmp/c-$g timeout 100 /tmp/kiln-bench copy tiny_chain_48ops tiny_chain_48ops_fuse softmax_rows layernorm_rows ew_chain kmeans --reps 25 > $OUT/bench-$g-$round.txt 2>&1
    echo "graphs $g r$round: $(grep -E '^(copy|tiny|softmax|layernorm|ew_chain|kmeans)[^:]* +[0-9]' $OUT/bench-$g-$round.txt | awk '{printf "%s %s  ", $1, $2}')"
    grep -E "^tiny_chain_48ops(_fuse)?: host" $OUT/bench-$g-$round.txt | cut -c1-200
  done
done
