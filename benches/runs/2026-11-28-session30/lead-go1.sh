#!/bin/bash
# lead, session 30, device call 1: the GPU scatter's L2 prefetch of the next tile
# (KILN_GPU_SCATTER_PREFETCH) on the k-means iteration, A/B alternated with a cache dir per
# setting; the scatter/k-means GPU tests; first calls with the driver's JIT cache off
# (CUDA_CACHE_DISABLE=1), PTX (default) against nvJitLink.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-tests; do xz -d -T4 $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
cd $ROOT
KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-t1 timeout 150 $P/kiln-tests scatter indexing kmeans label screen bincount --test-threads 4 > $R/tests.txt 2>&1
t tests
cd $P
run() { # name, env...
  local name=$1; shift
  env KILN_CACHE_DIR=/tmp/c-$name "$@" timeout 60 ./kiln-bench kmeans copy --reps 25 >> $R/bench-$name.txt 2>&1
}
for i in 1 2; do
  run off KILN_GPU_SCATTER_PREFETCH=off
  run p1 KILN_GPU_SCATTER_PREFETCH=1
  run p1b32 KILN_GPU_SCATTER_PREFETCH=1,32
  run p2 KILN_GPU_SCATTER_PREFETCH=2
  run p2b64 KILN_GPU_SCATTER_PREFETCH=2,64
  run p1s8 KILN_GPU_SCATTER_PREFETCH=1 KILN_GPU_SCATTER_STAGE=8
  run p1ex KILN_GPU_SCATTER_PREFETCH=1 KILN_GPU_SCREEN_EXPANDED=on
  run offex KILN_GPU_SCATTER_PREFETCH=off KILN_GPU_SCREEN_EXPANDED=on
done
t bench
for i in 1 2; do
  CUDA_CACHE_DISABLE=1 KILN_HOST_TRACE=1 timeout 60 ./kiln-bench first_call --quick --reps 3 > $R/first-ptx-$i.txt 2>&1
  CUDA_CACHE_DISABLE=1 KILN_GPU_LINK=nvjitlink KILN_HOST_TRACE=1 timeout 60 ./kiln-bench first_call --quick --reps 3 > $R/first-nvjl-$i.txt 2>&1
done
t first
{ cat $R/times.txt $R/device.txt; grep -H "kmeans\|^copy" $R/bench-*.txt | grep -v "host"; grep -H "^first_call\|^first call [0-9]" $R/first-*.txt; grep -E "test result|FAILED|panicked" $R/tests.txt | head -20; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
