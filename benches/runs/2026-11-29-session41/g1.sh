#!/usr/bin/env bash
# Session 41, call g1: (1) the fixed costs of a CUDA process without kiln (floor.c: libcuda's
# load, cuInit, the primary context; cuSOLVER's and cuBLAS's load, unload and load again, as
# cudarc's `is_culib_present` then `culib()` did, and their first handle), three processes;
# (2) the GPU suite on the commit in the pack's MANIFEST. Carry ["s41-pack"].
set -u
P=$PWD/s41-pack; R=$PWD
nvidia-smi -L; cat "$P/MANIFEST"
ldconfig -p | grep -E 'libcuda\.so|libcusolver\.so|libcublas\.so|libcublasLt\.so' | head
lib() { ldconfig -p | grep -oE "lib$1\.so\.[0-9]+ " | head -1 | tr -d ' '; }
solver=$(lib cusolver); blas=$(lib cublas)
echo "solver=$solver blas=$blas"
for l in $solver $blas; do
  f=$(ldconfig -p | grep -oE "/[^ ]*$l\$" | head -1)
  command -v readelf > /dev/null && echo "$l: $(readelf -Ws --dyn-syms "$f" 2>/dev/null | grep -c UNIQUE) unique symbols; flags: $(readelf -d "$f" 2>/dev/null | grep -E 'FLAGS' | tr -s ' ')"
done
gcc -O2 "$R/benches/runs/2026-11-29-session41/floor.c" -o /tmp/floor -ldl || exit 1
for round in 1 2 3; do
  t0=$(date +%s%N)
  /tmp/floor $solver cusolverDnCreate $blas cublasCreate_v2 > $OUT/floor-$round.txt 2>&1
  t1=$(date +%s%N)
  echo "started $t0 ended $t1 wall $(( (t1 - t0) / 1000000 )) ms" >> $OUT/floor-$round.txt
  echo "== floor $round"; cat $OUT/floor-$round.txt
done
for round in 1 2; do
  t0=$(date +%s%N); /tmp/floor > $OUT/floor-bare-$round.txt 2>&1; t1=$(date +%s%N)
  echo "bare $round: wall $(( (t1 - t0) / 1000000 )) ms"; grep -E 'main at|exit at|cuInit|Retain' $OUT/floor-bare-$round.txt; echo "started $t0 ended $t1"
done
cd "$R" && KILN_DATA=$P/data timeout 360 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |FAILED|panicked|suite rc|test result|^== " "$OUT/suite.txt" | tail -25
