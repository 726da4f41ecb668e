#!/usr/bin/env bash
# Session 26's final device call (one GPU): the whole GPU suite (run.sh) on merged main, then
# kiln-bench over the session's rows (k-means, the first call's disk hit, layer norm, softmax,
# tiny_chain, cumsum) and the peers of the same call (lead-tiny-peers.py, ln-peers_rows.py,
# kmeans_peers.py, peers_ops.py). Timeouts sum to 560 s, under the call's 600.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz" && for f in "$P"/x/*; do xz -0 -T16 -c "$f" > "$P/$(basename "$f").xz"; done
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final-suite.txt" | tail -20
B=$P/x/kiln-bench
KILN_DEVICE=cuda:0 timeout 95 $B copy kmeans layernorm_rows softmax_rows tiny_chain cumsum_2^26 first_call --reps 15 2>&1 | grep -vE "^\s*$" > "$OUT/final-bench.txt"; grep -E "^work|^copy|^kmeans|^layer|^softmax|^tiny|^cumsum|^first" "$OUT/final-bench.txt"
{ cd "$P" && timeout 35 python3 lead-tiny-peers.py 2>&1 | grep -v Warning | tail -6
  timeout 40 python3 ln-peers_rows.py 2>&1 | grep -v Warning | tail -10
  timeout 30 python3 kmeans_peers.py 2>&1 | grep -v Warning | tail -10
  timeout 30 python3 peers_ops.py cumsum_2 copy 2>&1 | grep -v Warning | tail -6
} 2>&1 | tee "$OUT/final-peers.txt"
