#!/usr/bin/env bash
# Session 35, call 1: the look-ahead scan's cooperative launch recorded in the launch list and
# replayed as a graph (memset node + cooperative kernel node). kiln-bench's copy and cumsum rows
# with graphs on (the default) and off, alternated, two rounds; a host-traced round; the kernel
# alone under nsys (or ncu); the prototype's batched look-ahead window (session 34's next-go2);
# the peers' cumsum rows. Carry la-bench/ (kiln-bench.xz, peers_ops.py).
set -u
R=$PWD; B=$PWD/la-bench; S=$R/benches/runs/2026-11-29-session35
nvidia-smi -L
cd "$B" && xz -d -T16 -k -f kiln-bench.xz && chmod +x kiln-bench && cat MANIFEST
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_DEVICE=cuda:0
for r in 1 2; do
  for g in auto off; do
    KILN_GPU_GRAPHS=$g timeout 60 ./kiln-bench copy cumsum --reps 25 > "$OUT/bench-$r-$g.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-$r-$g.txt"
    echo "== round $r graphs $g"; grep -E "^copy |^cumsum|rc " "$OUT/bench-$r-$g.txt" | head -8
  done
done
KILN_HOST_TRACE=1 timeout 40 ./kiln-bench cumsum_2 --reps 25 > "$OUT/bench-trace.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-trace.txt"
grep -iE "µs|rc " "$OUT/bench-trace.txt" | head -20
timeout 60 ./kiln-bench copy tiny_chain kmeans --reps 25 > "$OUT/bench-other.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-other.txt"
grep -E "^[a-z_0-9^x]+ +[0-9.]+ |rc " "$OUT/bench-other.txt" | head -12
if command -v nsys > /dev/null; then
  timeout 120 nsys profile -o /tmp/la --force-overwrite true --cuda-graph-trace=node --stats=true ./kiln-bench copy cumsum_2 --reps 25 > "$OUT/nsys.txt" 2>&1
  grep -E "kiln_gpu|memset|Memset|memcpy|Time \(%\)" "$OUT/nsys.txt" | head -24
else
  echo "no nsys"; timeout 200 ncu --metrics gpu__time_duration.sum -k regex:kiln_gpu ./kiln-bench cumsum_2 --reps 5 > "$OUT/ncu.txt" 2>&1
  grep -E "gpu__time_duration" "$OUT/ncu.txt" | sort | uniq -c | head -20
fi
cd "$R"
for v in 0 1 0 1; do
  echo "== la batch $v"
  SCAN_CONFIGS="16384,3,8,1;16384,3,16,1" SCAN_LA_BATCH=$v timeout 60 python3 benches/runs/2026-11-29-session34/scan-ws.py 40 2>&1 | grep -v "^  File\|^    " | grep -v "^NVIDIA\|pipeline copy" | tail -6
done > "$OUT/proto-batch.txt" 2>&1
cat "$OUT/proto-batch.txt" | head -40
timeout 150 python3 "$B/peers_ops.py" cumsum > "$OUT/peers.txt" 2>&1; echo "peers rc $?" >> "$OUT/peers.txt"
grep -E "cumsum|rc " "$OUT/peers.txt" | head -12
