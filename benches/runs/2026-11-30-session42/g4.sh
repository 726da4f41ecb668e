#!/usr/bin/env bash
# Session 42, call g4: the interpreter's kernel (KILN_GPU_INTERP=always) against the compiled
# code (on), alternated, medians of 15 (session 40's g2.sh, steady part); then the first call
# of a new expression with no cache at all, interpreter on and off. Carry ["s42-bench"].
set -u
B=$PWD/s42-bench
nvidia-smi -L
cat "$B/MANIFEST"
W=/tmp/w42b; rm -rf $W; mkdir -p $W
xz -dc "$B/kiln-bench.xz" > $W/kiln-bench && chmod +x $W/kiln-bench
export KILN_DEVICE=cuda:0
cd $W
for mode in always on always on; do
  echo "== KILN_GPU_INTERP=$mode"
  KILN_GPU_INTERP=$mode timeout 120 ./kiln-bench copy first_expr ew_chain tiny_chain_48ops --reps 15
done > "$OUT/steady.txt" 2>&1
grep -E "^==|^ *(copy|first_expr|ew_chain|tiny_chain)" "$OUT/steady.txt" | cut -c1-200
for mode in on off on off; do
  echo "== KILN_GPU_INTERP=$mode CUDA_CACHE_DISABLE=1"
  KILN_GPU_INTERP=$mode CUDA_CACHE_DISABLE=1 KILN_HOST_TRACE=1 timeout 90 ./kiln-bench first_call --reps 5
done > "$OUT/first-call.txt" 2>&1
grep -E "^==|^first call|first_call|landed" "$OUT/first-call.txt" | cut -c1-300
