#!/usr/bin/env bash
# Session 27, layer norm (issue 22 §2), call 1: default x3 (copy layernorm_rows softmax_rows),
# a sweep of the row knobs (a cache dir each), ncu --set full of layernorm_rows and softmax_rows,
# the peers (torch.compile, same call).
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
xz -dc kiln-bench.xz > /tmp/kb && chmod +x /tmp/kb
export KILN_DEVICE=cuda:0
F="grep -vE host.µs|^$|^kiln"
def() { echo "== default round $1 (t=$SECONDS)"; KILN_CACHE_DIR=/tmp/kc-d timeout 25 /tmp/kb copy layernorm_rows softmax_rows --reps 25 2>&1 | grep -vE "host µs|^$|^kiln"; }
{ def 1; } 2>&1 | tee -a $OUT/bench.txt
for w in layernorm_rows softmax_rows; do
  KILN_CACHE_DIR=/tmp/kc-d timeout 45 ncu --set full -k regex:kiln_gpu --launch-skip 3 --launch-count 1 -o $OUT/ncu-$w /tmp/kb $w --reps 5 > $OUT/ncu-$w-log.txt 2>&1
  ncu --import $OUT/ncu-$w.ncu-rep --page details > $OUT/ncu-$w.txt 2>&1
  timeout 20 ncu --import $OUT/ncu-$w.ncu-rep --page source --print-source sass --csv > $OUT/ncu-$w-sass.csv 2>&1
  echo "ncu $w done t=$SECONDS"
done
{
for v in ROW_BOUNDS=3 ROW_BOUNDS=5 ROW_BOUNDS=6 ROW_BOUNDS=off ROW_CACHE=off ROW_CACHE=4 ROW_CACHE=16 WRITE_UNROLL=1 WRITE_UNROLL=2 WRITE_UNROLL=8 ONLINE_SOFTMAX=0 LINK=ptx; do
  [ $SECONDS -gt 150 ] && { echo "skip $v (time)"; continue; }
  k=${v%%=*}; val=${v##*=}; var=KILN_GPU_$k; [ $k = ONLINE_SOFTMAX ] && var=KILN_ONLINE_SOFTMAX
  echo "== $var=$val (t=$SECONDS)"
  env $var=$val KILN_CACHE_DIR=/tmp/kc-$k-$val timeout 20 /tmp/kb layernorm_rows softmax_rows --reps 25 2>&1 | grep -vE "host µs|^$|^kiln|^work"
done
def 2
} 2>&1 | tee -a $OUT/bench.txt
timeout 60 python3 peers_rows.py 2>&1 | grep -vE "Warning|warn" | tee $OUT/peers.txt
{ def 3; echo "end t=$SECONDS"; } 2>&1 | tee -a $OUT/bench.txt
