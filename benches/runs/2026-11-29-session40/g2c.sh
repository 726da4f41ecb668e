#!/usr/bin/env bash
# Session 40, call g2c: g2b.sh after narrow programs (every value 32 bits or less) keep 32-bit
# registers (kiln_interp_32). Carry ["s40-bench"].
set -u
B=$PWD/s40-bench
nvidia-smi -L
cat "$B/MANIFEST"
W=/tmp/w40b; rm -rf $W; mkdir -p $W
xz -dc "$B/kiln-bench.xz" > $W/kiln-bench && chmod +x $W/kiln-bench
export KILN_DEVICE=cuda:0
cd $W
for mode in always on always on; do
  echo "== KILN_GPU_INTERP=$mode"
  KILN_GPU_INTERP=$mode timeout 120 ./kiln-bench copy first_expr ew_chain tiny_chain_48ops --reps 15
done > "$OUT/steady.txt" 2>&1
grep -E "^==|^ *(copy|first_expr|ew_chain|tiny_chain)" "$OUT/steady.txt" | cut -c1-200
