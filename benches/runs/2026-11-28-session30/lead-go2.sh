#!/bin/bash
# lead, session 30, device call 2: ncu of the k-means 2^20 kernel (default settings, prefetch
# on) with source counters, the SASS with each instruction's stall samples.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
cd $P; for f in kiln-bench; do [ -x $f ] || { xz -d -T4 -k $f.xz; chmod +x $f; }; done
export KILN_DEVICE=cuda:0
ncu --version > $R/ncu-version.txt 2>&1
KILN_CACHE_DIR=/tmp/c-ncu timeout 200 ncu --set full --import-source no -k regex:kiln_gpu --launch-skip 5 --launch-count 1 -o $R/km ./kiln-bench kmeans_iter_1048576 --reps 10 > $R/ncu-run.txt 2>&1
ncu -i $R/km.ncu-rep --page source --csv --print-source sass > $R/sass.csv 2> $R/sass-err.txt
ncu -i $R/km.ncu-rep --page details > $R/details.txt 2>&1
echo "ncu $((SECONDS-S)) s" > $R/times.txt
ls -la $R > $OUT/summary.txt; head -c 3000 $R/sass.csv >> $OUT/summary.txt; cat $R/sass-err.txt >> $OUT/summary.txt
grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|Executed Instructions  " $R/details.txt >> $OUT/summary.txt
rm -f $R/km.ncu-rep.tmp; tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
