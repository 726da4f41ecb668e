#!/bin/bash
# lead, session 30, device call 4: a copy of the bins a warp, combined right after the labels
# (KILN_GPU_SCATTER_WARP_BINS) against the default on the k-means iteration, alternated, a
# cache dir per setting; the area's GPU tests with it on.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-tests; do rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
export KILN_DEVICE=cuda:0
cd $ROOT
KILN_GPU_SCATTER_WARP_BINS=on KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-tw timeout 150 $P/kiln-tests scatter indexing kmeans label screen bincount epilogue --test-threads 4 --skip screen_expanded::kmeans_iteration_expanded_screen_ptx --skip kmeans_iteration_bins_owned --skip kmeans_iteration_gpu_kernel_ptx > $R/tests-wb.txt 2>&1
t tests
cd $P
run() { # name, env...
  local name=$1; shift
  env KILN_CACHE_DIR=/tmp/c-$name "$@" timeout 60 ./kiln-bench kmeans copy --reps 25 >> $R/bench-$name.txt 2>&1
}
for i in 1 2 3; do
  run base
  run wb KILN_GPU_SCATTER_WARP_BINS=on
  run wb128 KILN_GPU_SCATTER_WARP_BINS=on KILN_GPU_SCATTER=128,64 KILN_GPU_SCATTER_BLOCKS=924
  run wb128x KILN_GPU_SCATTER_WARP_BINS=on KILN_GPU_SCATTER=128,64 KILN_GPU_SCATTER_BLOCKS=1056
  run wbex KILN_GPU_SCATTER_WARP_BINS=on KILN_GPU_SCREEN_EXPANDED=on
  run wb128ex KILN_GPU_SCATTER_WARP_BINS=on KILN_GPU_SCATTER=128,64 KILN_GPU_SCATTER_BLOCKS=924 KILN_GPU_SCREEN_EXPANDED=on
done
t bench
KILN_GPU_SCATTER_WARP_BINS=on KILN_CACHE_DIR=/tmp/c-ncu timeout 200 ncu --set full --import-source no -k regex:kiln_gpu --launch-skip 5 --launch-count 1 -o $R/kmw ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-run.txt 2>&1
ncu -i $R/kmw.ncu-rep --page source --csv --print-source sass > $R/sassw.csv 2> $R/sass-err.txt
ncu -i $R/kmw.ncu-rep --page details > $R/detailsw.txt 2>&1
rm -f $R/kmw.ncu-rep
t ncu
{ cat $R/times.txt $R/device.txt; grep -H "kmeans_iter_1048576\|^copy" $R/bench-*.txt | grep -v "host"; grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  |Dynamic Shared" $R/detailsw.txt; grep -H -E "test result|FAILED|panicked" $R/tests-*.txt | head -20; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
