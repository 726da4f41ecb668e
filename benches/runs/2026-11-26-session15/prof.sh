#!/usr/bin/env bash
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=/tmp/kb; mkdir -p $work
xz -dc $here/kiln-bench.xz > $work/kiln-bench && chmod +x $work/kiln-bench
which ncu ptxas; ncu --version | tail -1
for w in dropout random_normal pad_reflect; do
  mkdir -p $OUT/dump-$w
  KILN_DEVICE=cuda:0 KILN_DUMP=ptx KILN_DUMP_DIR=$OUT/dump-$w $work/kiln-bench --reps 2 $w > /dev/null 2>&1
  for p in $OUT/dump-$w/*ptx*; do ptxas -arch=sm_90 -v "$p" -o /dev/null 2>&1 | grep -E "registers|spill" | head -3; done
  KILN_DEVICE=cuda:0 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis $work/kiln-bench --reps 3 $w > $OUT/ncu-$w.txt 2>&1
  grep -E "Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Compute \(SM\)|Grid Size|Block Size|Duration|Stall|Issue Slots Busy|Executed Ipc A|Waves Per SM" $OUT/ncu-$w.txt | head -30
done
