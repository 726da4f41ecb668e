#!/usr/bin/env bash
# Session 32, call 12 (diagnosis): ncu of the k-means 2^20 kernel, the default and with the
# tensor-core screen's decisions trusted (labels nearly free; KILN_DEBUG_MMA=trust, the
# km-experiments.patch binary): where the stalls are once the labels cost nothing.
set -u
P=$PWD/km-pack; R=$OUT/r; mkdir -p $R
cd $P; xz -dc kiln-bench.xz > kiln-bench && chmod +x kiln-bench
export KILN_DEVICE=cuda:0
for v in default trust; do
  case $v in trust) e="KILN_GPU_SCREEN_MMA=on KILN_DEBUG_MMA=trust";; *) e="";; esac
  env $e KILN_CACHE_DIR=/tmp/c-$v timeout 150 ncu --set full --import-source no -k regex:kiln_gpu --launch-skip 5 --launch-count 1 -o $R/km-$v ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-run-$v.txt 2>&1
  ncu -i $R/km-$v.ncu-rep --page details > $R/details-$v.txt 2>&1
  ncu -i $R/km-$v.ncu-rep --page raw --csv > $R/raw-$v.csv 2>&1
  rm -f $R/km-$v.ncu-rep
done
tar czf $OUT/all.tgz -C $R .
for v in default trust; do echo "== $v"; grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  |Block Limit" $R/details-$v.txt; done
