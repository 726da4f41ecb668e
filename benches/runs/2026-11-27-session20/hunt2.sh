#!/usr/bin/env bash
# Hunt 2: the random-program test with fixed proptest seeds and no shrinking (the last case
# logged is the failing one): three runs under memcheck (pool off), two with the pool on.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
xz -dc kiln-tests.xz > /tmp/kt && chmod +x /tmp/kt
cd "$R"
export KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data PROPTEST_MAX_SHRINK_ITERS=0
T=fused_props::fused_plans_compute_what_the_reference_computes
for s in 11 12 13; do
( PROPTEST_RNG_SEED=$s KILN_CACHE_DIR=/tmp/kc$s KILN_GPU_POOL=off CUDA_MODULE_LOADING=EAGER KILN_GPU_SANITIZER=1 KILN_SANITIZER_TOOL=memcheck KILN_PROP_CASES=1500 KILN_PROP_LOG=/tmp/m$s.cases timeout 270 compute-sanitizer --tool memcheck --print-limit 30 /tmp/kt --exact $T > /tmp/m$s.log 2>&1; echo "rc=$?" >> /tmp/m$s.log ) &
done
for s in 21 22; do
( PROPTEST_RNG_SEED=$s KILN_CACHE_DIR=/tmp/kc$s KILN_PROP_CASES=4000 KILN_PROP_LOG=/tmp/p$s.cases timeout 270 /tmp/kt --exact $T > /tmp/p$s.log 2>&1; echo "rc=$?" >> /tmp/p$s.log ) &
done
wait
cd /tmp
for x in m11 m12 m13 p21 p22; do echo "== $x cases: $(grep -c '=== case' $x.cases)"; grep -E "^test result|rc=|ILLEGAL|Invalid|Address|kernel|ERROR SUMMARY" $x.log | grep -v cuFuncGetParamInfo | head -8; tail -c 5000 $x.cases > $x.last; done
tar czf $OUT/hunt2.tgz m1?.log p2?.log *.last
