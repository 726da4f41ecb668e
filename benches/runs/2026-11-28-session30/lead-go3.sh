#!/bin/bash
# lead, session 30, device call 3: thread-owned bins split into copies by tile share
# (KILN_GPU_SCATTER_SPLIT=1|2|4) with and without the L2 prefetch, on the k-means iteration,
# alternated, a cache dir per setting; the scatter/k-means GPU tests under split 2 and 4;
# ncu (source counters) of split 4.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-tests; do rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
cd $ROOT
for sp in 2 4; do
KILN_GPU_SCATTER_SPLIT=$sp KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-t$sp timeout 150 $P/kiln-tests scatter indexing kmeans label screen bincount epilogue --test-threads 4 --skip screen_expanded::kmeans_iteration_expanded_screen_ptx > $R/tests-split$sp.txt 2>&1
done
t tests
cd $P
run() { # name, env...
  local name=$1; shift
  env KILN_CACHE_DIR=/tmp/c-$name "$@" timeout 60 ./kiln-bench kmeans copy --reps 25 >> $R/bench-$name.txt 2>&1
}
for i in 1 2 3; do
  run s1 KILN_GPU_SCATTER_SPLIT=1
  run s2 KILN_GPU_SCATTER_SPLIT=2
  run s4 KILN_GPU_SCATTER_SPLIT=4
  run s2off KILN_GPU_SCATTER_SPLIT=2 KILN_GPU_SCATTER_PREFETCH=off
  run s4off KILN_GPU_SCATTER_SPLIT=4 KILN_GPU_SCATTER_PREFETCH=off
  run s4ex KILN_GPU_SCATTER_SPLIT=4 KILN_GPU_SCREEN_EXPANDED=on
done
t bench
KILN_GPU_SCATTER_SPLIT=4 KILN_CACHE_DIR=/tmp/c-ncu timeout 200 ncu --set full --import-source no -k regex:kiln_gpu --launch-skip 5 --launch-count 1 -o $R/km4 ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-run.txt 2>&1
ncu -i $R/km4.ncu-rep --page source --csv --print-source sass > $R/sass4.csv 2> $R/sass-err.txt
ncu -i $R/km4.ncu-rep --page details > $R/details4.txt 2>&1
rm -f $R/km4.ncu-rep
t ncu
{ cat $R/times.txt $R/device.txt; grep -H "kmeans\|^copy" $R/bench-*.txt | grep -v "host"; grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  |Dynamic Shared" $R/details4.txt; grep -H -E "test result|FAILED|panicked" $R/tests-*.txt | head -20; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
