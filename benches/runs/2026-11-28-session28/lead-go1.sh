#!/usr/bin/env bash
# Session 28's first device call: the whole GPU suite (run.sh) on main as session 27 left it,
# then kiln-bench's rows and the peers of the same call, then the first call with nvJitLink.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz" && for f in "$P"/x/*; do xz -0 -T16 -c "$f" > "$P/$(basename "$f").xz"; done
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -20
B=$P/x/kiln-bench
KILN_DEVICE=cuda:0 timeout 90 $B copy kmeans layernorm_rows softmax_rows tiny_chain cumsum_2^26 first_call --reps 15 2>&1 | grep -vE "^\s*$" > "$OUT/bench.txt"; grep -E "^work|^copy|^kmeans|^layer|^softmax|^tiny|^cumsum|^first" "$OUT/bench.txt"
KILN_GPU_LINK=nvjitlink KILN_DEVICE=cuda:0 timeout 30 $B first_call --reps 5 2>&1 | grep -vE "^\s*$" > "$OUT/bench-nvjl.txt"; grep -E "^first" "$OUT/bench-nvjl.txt"
{ cd "$P" && timeout 35 python3 lead-tiny-peers.py 2>&1 | grep -v Warning | tail -6
  timeout 40 python3 ln-peers_rows.py 2>&1 | grep -v Warning | tail -10
  timeout 30 python3 kmeans_peers.py 2>&1 | grep -v Warning | tail -10
  timeout 30 python3 peers_ops.py cumsum_2 copy 2>&1 | grep -v Warning | tail -6
} 2>&1 | tee "$OUT/peers.txt"
cd "$OUT" && tar -czf all.tgz *.txt *.log 2>/dev/null; ls -la "$OUT"
