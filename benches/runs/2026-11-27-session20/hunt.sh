#!/usr/bin/env bash
# Hunt for the intermittent CUDA 700 (session 20): the whole suite (pool on) beside the random
# program test alone (4,000 cases, pool on) and under memcheck (400 cases, pool off), every
# fused_props case logged before it runs (KILN_PROP_LOG).
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
xz -dc kiln-tests.xz > /tmp/kt && chmod +x /tmp/kt
cd "$R"
export KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data
T=fused_props::fused_plans_compute_what_the_reference_computes
( KILN_CACHE_DIR=/tmp/kca KILN_PROP_CASES=4000 KILN_PROP_LOG=/tmp/a.cases timeout 300 /tmp/kt --exact $T > /tmp/a.log 2>&1; echo "A rc=$?" >> /tmp/a.log ) &
( KILN_CACHE_DIR=/tmp/kcb KILN_GPU_POOL=off CUDA_MODULE_LOADING=EAGER KILN_GPU_SANITIZER=1 KILN_SANITIZER_TOOL=memcheck KILN_PROP_CASES=400 KILN_PROP_LOG=/tmp/b.cases timeout 300 compute-sanitizer --tool memcheck --print-limit 50 /tmp/kt --exact $T > /tmp/b.log 2>&1; echo "B rc=$?" >> /tmp/b.log ) &
KILN_CACHE_DIR=/tmp/kcc KILN_PROP_LOG=/tmp/c.cases timeout 300 /tmp/kt --test-threads 16 > /tmp/c.log 2>&1; echo "C rc=$?" >> /tmp/c.log
wait
for x in a b c; do echo "== $x"; grep -E "^test result|rc=|ILLEGAL|ERROR SUMMARY|Invalid|panicked" /tmp/$x.log | head -12; echo "cases logged: $(grep -c '=== case' /tmp/$x.cases 2>/dev/null)"; done
for x in a b c; do tail -c 6000 /tmp/$x.cases > /tmp/$x.lastcase 2>/dev/null; done
tar czf $OUT/hunt.tgz -C /tmp a.log b.log c.log a.lastcase b.lastcase c.lastcase
