#!/bin/bash
# lead, session 29, device call 3: scatters without tiles (floats per warp, integers by atomics)
# off/on, the scatter GPU tests, and the first call's host trace (KILN_HOST_TRACE=1), 3 rounds.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-tests; do xz -d -T4 $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
cd $ROOT
KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_CACHE_DIR=/tmp/c-t1 timeout 150 $P/kiln-tests scatter indexing kmeans label screen bincount --test-threads 4 > $R/tests-on.txt 2>&1
t tests
cd $P
W="scatter_add_2^26_into_1024 bincount_2^26_into_1024 scatter_add_2^26_into_1048576 copy"
for i in 1 2; do
  KILN_CACHE_DIR=/tmp/c-off KILN_GPU_SCATTER_WARP=off timeout 60 ./kiln-bench $W --reps 25 > $R/bench-off-$i.txt 2>&1
  KILN_CACHE_DIR=/tmp/c-on timeout 60 ./kiln-bench $W --reps 25 > $R/bench-on-$i.txt 2>&1
done
t bench
for i in 1 2 3; do KILN_HOST_TRACE=1 timeout 60 ./kiln-bench first_call --quick --reps 3 > $R/first-$i.txt 2>&1; done
t first
{ cat $R/times.txt $R/device.txt; grep -H "scatter\|bincount\|^copy" $R/bench-*.txt | grep -v "host µs"; grep -h "first call\|first_call" $R/first-*.txt; grep -E "test result|FAILED|panicked" $R/tests-*.txt | head -20; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
