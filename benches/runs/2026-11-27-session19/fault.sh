#!/usr/bin/env bash
# The three tests that failed after an illegal address late in the suite, each in its own process, twice.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
xz -dc kiln-tests.xz > /tmp/kt && chmod +x /tmp/kt
cd "$R"
for round in 1 2; do for t in reduce_dtype::matrix_against_numpy fused_props::fused_plans_compute_what_the_reference_computes special::host_code_matches_the_evaluator; do
  KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/kc timeout 150 /tmp/kt --exact $t > /tmp/f.log 2>&1
  echo "$round $t rc=$? $(grep -E '^test result' /tmp/f.log | cut -c1-40)"; grep -m3 -E "ILLEGAL|panicked|graph v1" -A6 /tmp/f.log | head -14
done; done 2>&1 | tee $OUT/fault.txt
