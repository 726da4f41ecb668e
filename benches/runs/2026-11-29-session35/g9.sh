#!/usr/bin/env bash
# Session 35, call 9: k-means' label sums loop unrolled by LLVM (KILN_GPU_LABEL_UNROLL=2, 4)
# against LLVM's own choice (unset), alternated, two rounds of kiln-bench's k-means rows.
# Carry la-bench/ (kiln-bench.xz).
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && xz -d -T16 -k -f kiln-bench.xz && chmod +x kiln-bench && cat MANIFEST
export KILN_DEVICE=cuda:0
for r in 1 2; do
  for u in none 2 4; do
    if [ $u = none ]; then unset KILN_GPU_LABEL_UNROLL; else export KILN_GPU_LABEL_UNROLL=$u; fi
    KILN_CACHE_DIR=/tmp/kc-$u timeout 60 ./kiln-bench copy kmeans --reps 25 > "$OUT/bench-$r-$u.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$u.txt"
    echo "== round $r unroll $u"; grep -E "^copy  |^kmeans_[a-z0-9^_]+ +[0-9]|rc " "$OUT/bench-$r-$u.txt" | head -6
  done
done
