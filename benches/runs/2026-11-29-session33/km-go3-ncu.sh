#!/usr/bin/env bash
# Session 33: Nsight Compute of the prototype's three label variants (FFMA, free, tensor cores).
set -u
S=$PWD/benches/runs/2026-11-29-session33
which ncu || ls /usr/local/cuda*/bin/ncu
NCU=$(which ncu 2>/dev/null || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 250 $NCU --set full --kernel-name regex:km_ --launch-count 3 -o $OUT/km-ncu python3 $S/km-ncu.py > $OUT/ncu-log.txt 2>&1
echo "ncu rc $?"; tail -5 $OUT/ncu-log.txt
$NCU --import $OUT/km-ncu.ncu-rep --page details --csv > $OUT/km-ncu-details.csv 2>/dev/null
$NCU --import $OUT/km-ncu.ncu-rep --page raw --csv > $OUT/km-ncu-raw.csv 2>/dev/null
for m in gpu__time_duration.sum sm__throughput.avg.pct_of_peak_sustained_elapsed dram__throughput.avg.pct_of_peak_sustained_elapsed launch__registers_per_thread sm__warps_active.avg.pct_of_peak_sustained_active smsp__issue_active.avg.pct_of_peak_sustained_active l1tex__data_pipe_lsu_wavefronts_mem_shared.sum smsp__inst_executed.sum smsp__average_warp_latency_issue_stalled_barrier smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio smsp__average_warps_issue_stalled_wait_per_issue_active.ratio smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio smsp__average_warps_issue_stalled_selected_per_issue_active.ratio smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio smsp__average_warps_issue_stalled_membar_per_issue_active.ratio smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum; do
  echo "$m: $(grep -o "\"$m\"" $OUT/km-ncu-raw.csv >/dev/null && python3 - "$m" "$OUT/km-ncu-raw.csv" <<'PY'
import csv, sys
m, f = sys.argv[1], sys.argv[2]
rows = list(csv.reader(open(f)))
h = rows[0]; i = h.index(m)
print("  ".join(r[i] for r in rows[2:]))
PY
)"
done
