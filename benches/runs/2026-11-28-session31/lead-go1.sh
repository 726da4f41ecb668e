#!/bin/bash
# lead, session 31, device call 1: the 48-op chain built per call (tiny_chain_48ops) and as a
# fused closure run per call (tiny_chain_48ops_fuse, Fused::run's direct path), two rounds and
# a traced one; peers.py's tiny_chain rows (lead-tiny-peers.py, session 24's copy); the GPU
# tests of fuse, dispatch and replay.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-tests; do rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
for i in 1 2; do
  KILN_CACHE_DIR=/tmp/c-b timeout 120 ./kiln-bench copy tiny_chain_48ops tiny_chain_48ops_fuse --reps 25 > $R/bench-$i.txt 2>&1
done
KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/c-b timeout 120 ./kiln-bench tiny_chain_48ops tiny_chain_48ops_fuse --reps 25 > $R/bench-trace.txt 2>&1
t bench
timeout 150 python3 lead-tiny-peers.py > $R/peers.txt 2>&1
t peers
cd $ROOT
KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-t timeout 150 $P/kiln-tests fuse dispatch replay user_kernels --test-threads 4 > $R/tests.txt 2>&1
t tests
{ cat $R/times.txt $R/device.txt; grep -h "tiny_chain\|^copy" $R/bench-*.txt; cat $R/peers.txt | grep tiny; grep -E "test result|FAILED|panicked" $R/tests.txt | head; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
