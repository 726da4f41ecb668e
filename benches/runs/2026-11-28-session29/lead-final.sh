#!/usr/bin/env bash
# Session 29's final call: the whole GPU suite on merged main, then kiln-bench's k-means,
# scatter and bincount rows, kmeans_peers.py and peers_ops.py's scatter rows in the same call.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz" && for f in "$P"/x/*; do xz -0 -T16 -c "$f" > "$P/$(basename "$f").xz"; done
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -20
cd "$P"
KILN_DEVICE=cuda:0 timeout 40 $P/x/kiln-bench copy kmeans scatter_add_2^26_into_1024 scatter_add_2^26_into_1048576 bincount_2^26_into_1024 --reps 25 > "$OUT/bench.txt" 2>&1
grep -E "^(copy|kmeans|scatter|bincount)" "$OUT/bench.txt"
timeout 90 python3 kmeans_peers.py > "$OUT/kmeans-peers.txt" 2>&1; grep -iE "torch.compile|jax" "$OUT/kmeans-peers.txt" | head -8
timeout 60 python3 peers_ops.py scatter_add_2^26_into bincount_2^26_into_1024 copy > "$OUT/peers-ops.txt" 2>&1; grep -E "scatter|bincount|copy" "$OUT/peers-ops.txt"
cd "$OUT" && tar -czf all.tgz *.txt *.log 2>/dev/null; ls -la "$OUT"
