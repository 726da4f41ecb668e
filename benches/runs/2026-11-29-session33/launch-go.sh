#!/usr/bin/env bash
# Session 33: the host cost of a launch on the GPU machine (launch-cost.cu), then kiln-bench's
# tiny chains with the host trace, CUDA graphs on (the default) and off.
set -u
S=$PWD/benches/runs/2026-11-29-session33; P=$PWD/wt-bench
cd /tmp && nvcc -O2 -arch=sm_90 -o launch-cost "$S/launch-cost.cu" -lcuda 2>&1 | tail -3 && ./launch-cost | tee $OUT/launch-cost.txt
xz -dc "$P/kiln-bench.xz" > /tmp/kiln-bench && chmod +x /tmp/kiln-bench
for g in on off; do
  KILN_DEVICE=cuda:0 KILN_GPU_GRAPHS=$g KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/c-tiny-$g timeout 60 /tmp/kiln-bench tiny_chain_48ops tiny_chain_48ops_fuse --reps 200 > $OUT/tiny-$g.txt 2>&1
  echo "== graphs $g"; grep -E "^tiny|host" $OUT/tiny-$g.txt | cut -c1-700
done
