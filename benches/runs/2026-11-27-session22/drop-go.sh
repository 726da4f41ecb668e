#!/usr/bin/env bash
# On the device (session 22, dropout helper): kiln-bench's rows (twice), the GPU tests of the
# compare rule, peers_ops.py, the dropout kernel's SASS (main's and this branch's PTX, from
# `kernel_code` on the dev machine) and ncu of it, one call (most needed first).
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd drop-pack && xz -d -T8 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-drop
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
B="copy dropout dropout_scaled random_normal"
bench() { timeout 20 ./drop-pack/kiln-bench $B --reps 25 2>&1 | sed "s/^/$1 /" | tee -a $OUT/bench.txt | grep -E "copy |dropout|random_normal" | grep -v host; }
bench run1
KILN_PROP_CASES=300 timeout 40 ./drop-pack/kiln-tests random fused_props division --test-threads 16 > $OUT/tests.txt 2>&1; grep -E "test result|FAILED|panicked|failed|error 700|illegal" $OUT/tests.txt | head -20; tail -2 $OUT/tests.txt
(cd drop-pack && timeout 35 python3 peers_ops.py copy dropout 2>&1 | grep -v Warning | tail -6) | tee $OUT/peers.txt
for k in dropout-main dropout-rule; do
  (cd drop-pack && ptxas -arch=sm_90 -v $k.ptx -o /tmp/$k.cubin 2>&1 | grep -E "registers|spill" | sed "s/^/$k /"; cuobjdump -sass /tmp/$k.cubin > $OUT/$k.sass 2>&1
   echo "$k: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/$k.sass) SASS instructions";
   grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_.]+' $OUT/$k.sass | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -16 | tr '\n' ' '; echo)
done 2>&1 | tee $OUT/sass-summary.txt
(cd $OUT && tar czf sass.tgz dropout-main.sass dropout-rule.sass && rm dropout-main.sass dropout-rule.sass)
# ncu of the dropout kernel (optimised tier, past the warm-up), real clocks, two launches.
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
timeout 25 ncu $S --clock-control none -k regex:kiln_gpu --launch-skip 40 --launch-count 2 ./drop-pack/kiln-bench dropout --reps 3 > $OUT/ncu.txt 2>&1; grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy" $OUT/ncu.txt | head -14
bench run2
