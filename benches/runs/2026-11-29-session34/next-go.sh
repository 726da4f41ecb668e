#!/usr/bin/env bash
# For session 35 (not run in session 34): the look-ahead scan's kernel time alone in kiln, to
# split kiln-bench's 0.168-0.181 ms into host time before the launch, the counters' memset and
# the kernel (the prototype's kernel took 0.146-0.155). Carry la-bench/ (kiln-bench.xz built from
# main). Uses nsys if the machine has it, else ncu's gpu__time_duration.
set -u
B=$PWD/la-bench
cd "$B" && xz -d -T16 -k -f kiln-bench.xz && chmod +x kiln-bench && cat MANIFEST
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_DEVICE=cuda:0
if command -v nsys > /dev/null; then
  timeout 120 nsys profile -o /tmp/la --force-overwrite true --stats=true ./kiln-bench copy cumsum_2 --reps 25 > "$OUT/nsys.txt" 2>&1
  grep -E "kiln_gpu|Memset|memcpy|Time \(%\)" "$OUT/nsys.txt" | head -20
else
  timeout 200 ncu --metrics gpu__time_duration.sum -k regex:kiln_gpu ./kiln-bench cumsum_2 --reps 5 > "$OUT/ncu.txt" 2>&1
  grep -E "gpu__time_duration" "$OUT/ncu.txt" | sort | uniq -c | head -20
fi
