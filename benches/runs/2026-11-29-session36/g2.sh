#!/usr/bin/env bash
# Session 36, call 2: where the host's time goes in a cached call (cumsum of 2^26, the 48-op
# chain built per call), by sampling kiln-bench (with its symbols) under perf where the machine
# has it. Carry la-bench/ (kiln-bench-sym.xz).
set -u
B=$PWD/la-bench
nvidia-smi -L
for t in perf gdb valgrind ltrace strace py-spy; do printf "%s: %s\n" $t "$(command -v $t || echo none)"; done
cd "$B" && xz -d -T8 -k -f kiln-bench-sym.xz && chmod +x kiln-bench-sym
export KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kc
./kiln-bench-sym cumsum_2 tiny_chain_48ops --reps 25 2>&1 | grep -E "^cumsum|^tiny|host µs" | cut -c1-160
if command -v perf >/dev/null; then
  for w in cumsum_2 tiny_chain_48ops; do
    perf record -F 25000 -g -o "$OUT/perf-$w.data" ./kiln-bench-sym $w --reps 3000 > /dev/null 2> "$OUT/perf-$w.err"
    perf report -i "$OUT/perf-$w.data" --stdio --no-children --percent-limit 0.4 --sort symbol -g none 2>/dev/null | grep -v "^$" | head -90 > "$OUT/report-$w.txt"
    perf report -i "$OUT/perf-$w.data" --stdio --children --percent-limit 1.5 --sort symbol -g none 2>/dev/null | grep -v "^$" | head -90 > "$OUT/children-$w.txt"
    rm -f "$OUT/perf-$w.data"
    echo "== $w self"; head -60 "$OUT/report-$w.txt"
  done
fi
