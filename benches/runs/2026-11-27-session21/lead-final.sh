#!/usr/bin/env bash
# Session 21's final device call (one GPU): the whole GPU suite (run.sh) on merged main, then
# division by a constant (reciprocal and correction) against the plain division, in one
# call: kiln-bench's layer norm, softmax and dropout rows with KILN_CONST_DIV on and off.
# (A gmm cold-run timeline was planned too; kiln-examples did not fit the carry limit.)
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final-suite.txt" | tail -20
B=/tmp/kiln-gpu-pack/kiln-bench
{ for round in 1 2; do for d in on off; do echo "== KILN_CONST_DIV=$d round $round"
  KILN_CONST_DIV=$d KILN_DEVICE=cuda:0 timeout 60 $B copy layernorm_rows softmax_rows dropout_2^26 --reps 25 2>&1 | grep -vE "^\s*$" | tail -12
done; done; } 2>&1 | tee "$OUT/final-constdiv.txt"
