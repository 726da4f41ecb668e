#!/usr/bin/env bash
# Session 30's final call: the whole GPU suite on the final code (self-tests and the array
# suite), then kiln-bench's copy, k-means, scatter and bincount rows beside kmeans_peers.py and
# peers_ops.py's rows in the same call, and a traced round of small cached calls (host time by
# stage, issue 22).
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz" && for f in "$P"/x/*; do xz -0 -T16 -c "$f" > "$P/$(basename "$f").xz"; done
cd "$R" && KILN_DATA=$P/data timeout 360 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -20
cd "$P"
KILN_DEVICE=cuda:0 timeout 60 $P/x/kiln-bench copy kmeans scatter_add_2^26_into_1024 scatter_add_2^26_into_1048576 bincount_2^26_into_1024 --reps 25 > "$OUT/bench.txt" 2>&1
grep -E "^(copy|kmeans|scatter|bincount)" "$OUT/bench.txt"
timeout 100 python3 kmeans_peers.py > "$OUT/kmeans-peers.txt" 2>&1; grep -iE "torch.compile|jax" "$OUT/kmeans-peers.txt" | head -8
timeout 60 python3 peers_ops.py scatter_add_2^26_into bincount_2^26_into_1024 copy > "$OUT/peers-ops.txt" 2>&1; grep -E "scatter|bincount|copy" "$OUT/peers-ops.txt"
KILN_DEVICE=cuda:0 KILN_HOST_TRACE=1 timeout 40 $P/x/kiln-bench copy tiny_chain ew_chain softmax_rows --reps 25 > "$OUT/trace.txt" 2>&1
grep -E "host" "$OUT/trace.txt" | head -20
cd "$OUT" && tar -czf all.tgz *.txt *.log 2>/dev/null; ls -la "$OUT"
