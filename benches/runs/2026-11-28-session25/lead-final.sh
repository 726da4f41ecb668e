#!/usr/bin/env bash
# Session 25's final device call (one GPU): the whole GPU suite (run.sh) on merged main; then
# kiln-bench over the session's rows (sorts, k-means, the dispatch chains, rows), the launch
# lists' graphs off against the default (on) for the two-kernel rows; then the peers of the
# same call: tiny_chain's (lead-tiny-peers.py), tiny_multi's (tiny_multi_peers.py),
# peers_ops.py's sorts and copy, kmeans_peers.py. Timeouts sum to 575 s, under the call's 600.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 320 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final-suite.txt" | tail -20
B=/tmp/kiln-gpu-pack/kiln-bench
W="copy tiny_chain tiny_multi kmeans layernorm_rows softmax_rows sort_f32 argsort unique_i32"
KILN_HOST_TRACE=1 KILN_DEVICE=cuda:0 timeout 30 $B tiny_chain tiny_multi kmeans --reps 25 2>&1 | grep -vE "^\s*$" > "$OUT/final-trace.txt"
KILN_DEVICE=cuda:0 timeout 75 $B $W --reps 15 2>&1 | grep -vE "^\s*$" > "$OUT/final-bench.txt"; tail -12 "$OUT/final-bench.txt"
KILN_GPU_GRAPHS=off KILN_DEVICE=cuda:0 timeout 25 $B tiny_multi kmeans --reps 25 2>&1 | grep -vE "^\s*$" > "$OUT/final-graphs-off.txt"; tail -4 "$OUT/final-graphs-off.txt"
{ cd "$P" && timeout 35 python3 lead-tiny-peers.py 2>&1 | grep -v Warning | tail -6
  timeout 20 python3 tiny_multi_peers.py 2>&1 | grep -v Warning | tail -4
  timeout 40 python3 peers_ops.py sort_f32 argsort unique copy 2>&1 | grep -v Warning | tail -10
  timeout 30 python3 kmeans_peers.py 2>&1 | grep -v Warning | tail -10
} 2>&1 | tee "$OUT/final-peers.txt"
