#!/usr/bin/env bash
# Session 21: where gmm's cold run goes on the GPU. A new process with an empty kiln cache
# (the kernels' cache files' times, from the process start, show when each was compiled and
# stored), then the same with the cache warm, then the CPU.
cd "$(dirname "$0")"; P=$PWD
xz -dc "$P/kiln-examples.xz" > /tmp/kx && chmod +x /tmp/kx
{ rm -rf /tmp/kce; a="$P/data/iris_x.npy $P/data/iris_y.npy"
  for run in "cold cuda:0" "warm cuda:0" "warm2 cuda:0" "cold cpu"; do set -- $run
    [ $1 = cold ] && rm -rf /tmp/kce
    s=$(date +%s.%N); (cd /tmp && KILN_CACHE_DIR=/tmp/kce KILN_DEVICE=$2 timeout 20 bash -c "exec -a gmm /tmp/kx $a" > /tmp/ex.txt 2>&1); rc=$?
    e=$(date +%s.%N); echo "gmm $1 $2 rc=$rc wall $(awk "BEGIN{printf \"%.0f\", ($e - $s)*1000}") ms: $(grep -iE 'time' /tmp/ex.txt | head -2 | tr '\n' ' ')"
    [ $1 = cold ] && find /tmp/kce -type f -printf '%T@ %s %P\n' | sort -n | awk -v s=$s '{printf "  +%.0f ms %d B %s\n", ($1 - s)*1000, $2, $3}'
  done; } 2>&1 | tee "$OUT/gmm-timeline.txt"
