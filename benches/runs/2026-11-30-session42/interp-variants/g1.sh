#!/usr/bin/env bash
# Session 42, call g1: interpreter variants against compiled references (ib.c). Carry ["s42"].
set -u
cd s42; nvidia-smi -L
gcc -O2 ib.c -o /tmp/ib -ldl -lm || exit 1
V="out/v0.cubin:4 out/v0_8.cubin:8 out/v1.cubin:4 out/v1_8.cubin:8 out/v1.cubin:1 $EXTRA"
/tmp/ib out/ref.cubin $V | tee $OUT/ib-2e26.txt
IB_N=1048576 /tmp/ib out/ref.cubin $V | tee $OUT/ib-2e20.txt
/tmp/ib out/ref.cubin $V > $OUT/ib-2e26-b.txt; cat $OUT/ib-2e26-b.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
echo "ncu: $NCU"
if [ -n "$NCU" ]; then
  for v in out/v0.cubin:4 out/v1.cubin:4; do
    for prog in 1 2; do
      IB_PROG=$prog IB_N=16777216 timeout 120 $NCU --kernel-name regex:kiln_interp --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats \
        /tmp/ib out/ref.cubin $v > $OUT/ncu-$(basename ${v%%:*} .cubin)-p$prog.txt 2>&1
      grep -E "Duration|Executed Ipc|Issue Slots Busy|Executed Instructions  |Achieved Occupancy|Memory Throughput|Stall|One or More|No Eligible|Active Warps Per|Eligible Warps" $OUT/ncu-$(basename ${v%%:*} .cubin)-p$prog.txt | head -20
    done
  done
  (command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump) && $(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump) -sass out/v1.cubin > $OUT/v1.sass 2>&1; wc -l $OUT/v1.sass
fi
