#!/bin/bash
# lead, session 30, device call 5: the first call of a new expression with the driver's JIT
# cache off (CUDA_CACHE_DISABLE=1): `x * k + cos(x)` against `x * k + 0.5`
# (KILN_BENCH_FIRST_EXPR=plain), each without and with the driver's JIT started at backend
# selection on a tiny module (KILN_GPU_WARM_JIT=on), two rounds; a part of the GPU suite with
# the warm-up on.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-tests; do rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
for i in 1 2; do
  for e in cos plain; do
    CUDA_CACHE_DISABLE=1 KILN_BENCH_FIRST_EXPR=$e KILN_HOST_TRACE=1 timeout 60 ./kiln-bench first_call --quick --reps 3 > $R/first-$e-off-$i.txt 2>&1
    CUDA_CACHE_DISABLE=1 KILN_BENCH_FIRST_EXPR=$e KILN_GPU_WARM_JIT=on KILN_HOST_TRACE=1 timeout 60 ./kiln-bench first_call --quick --reps 3 > $R/first-$e-warm-$i.txt 2>&1
  done
done
t first
cd $ROOT
KILN_GPU_WARM_JIT=on KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-tw timeout 90 $P/kiln-tests dispatch elementwise gpu_replay --test-threads 4 > $R/tests-warm.txt 2>&1
t tests
{ cat $R/times.txt $R/device.txt; grep -H "^first_call\|^first call [0-9]" $R/first-*.txt | grep -v trace; grep -E "test result|FAILED|panicked" $R/tests-warm.txt | head; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
