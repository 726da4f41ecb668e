#!/usr/bin/env bash
# Session 35, call 5: the look-ahead scan with a whole tile's runs in a loop of their own,
# unrolled by 4 (kiln-bench), against main's kernel (kiln-bench-old), alternated, three rounds of
# copy and cumsum; then each kernel's time under ncu at normal clocks. Carry la-bench/.
set -u
B=$PWD/la-bench
nvidia-smi -L
cd "$B" && (xz -d -T8 -k -f kiln-bench.xz & xz -d -T8 -k -f kiln-bench-old.xz; wait) && chmod +x kiln-bench kiln-bench-old && cat MANIFEST
export KILN_DEVICE=cuda:0
for r in 1 2 3; do
  for v in old new; do
    bin=./kiln-bench; [ $v = old ] && bin=./kiln-bench-old
    KILN_CACHE_DIR=/tmp/kc-$v timeout 60 $bin copy cumsum --reps 25 > "$OUT/bench-$r-$v.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$v.txt"
    echo "== round $r $v"; grep -E "^copy |^cumsum|rc " "$OUT/bench-$r-$v.txt" | head -8
  done
done
for v in old new; do
  bin=./kiln-bench; [ $v = old ] && bin=./kiln-bench-old
  KILN_CACHE_DIR=/tmp/kc-$v timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum $bin cumsum_2 --reps 10 > "$OUT/ncu-$v.txt" 2>&1
  echo "== ncu $v (µs, sorted)"; grep -E "gpu__time_duration" "$OUT/ncu-$v.txt" | awk '{print $NF}' | sort -n | tr '\n' ' '; echo
done
