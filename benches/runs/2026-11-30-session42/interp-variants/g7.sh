#!/usr/bin/env bash
# Session 42, call g7: where main's interpreter stalls (ncu, warp states) on add16 and ew_chain.
set -u
cd s42; gcc -O2 ib2.c -o /tmp/ib -ldl -lm || exit 1
NCU=/usr/local/cuda/bin/ncu
for prog in 3 2; do
  IB_PROG=$prog IB_OCC=1 IB_N=16777216 timeout 100 $NCU --kernel-name regex:kiln_interp --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section InstructionStats --section LaunchStats --section Occupancy \
    --metrics smsp__pcsamp_warps_issue_stalled_no_instruction,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_imc_miss,smsp__pcsamp_warps_issue_stalled_no_instructions \
    /tmp/ib out/ref.cubin out/base.cubin:4 > $OUT/ncu-p$prog.txt 2>&1
  grep -E "pcsamp|Warp Cycles Per Issued|Issue Slots Busy|Executed Instructions  |Achieved Occupancy|Eligible Warps|Active Warps Per" $OUT/ncu-p$prog.txt | head -30
done
