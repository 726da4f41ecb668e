#!/usr/bin/env bash
# Session 31's final bench call (the pack with the suite and the bench did not fit one call's
# 64 MiB): kiln-bench's tiny chains (built per call, and as a fused closure run directly) and
# k-means beside lead-tiny-peers.py (peers.py's tiny_chain rows) and kmeans_peers.py in the
# same call, then a second round and a traced round of the tiny chains.
set -u
P=$PWD/lead-pack
nvidia-smi -L
cd "$P" && xz -dc kiln-bench.xz > kiln-bench && chmod +x kiln-bench
KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-f timeout 90 ./kiln-bench copy tiny_chain_48ops tiny_chain_48ops_fuse kmeans --reps 25 > "$OUT/bench.txt" 2>&1
grep -E "^(copy|tiny|kmeans)" "$OUT/bench.txt"
timeout 90 python3 lead-tiny-peers.py > "$OUT/tiny-peers.txt" 2>&1; grep tiny "$OUT/tiny-peers.txt"
timeout 100 python3 kmeans_peers.py > "$OUT/kmeans-peers.txt" 2>&1; grep -iE "torch.compile|jax" "$OUT/kmeans-peers.txt" | head -8
KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/c-f timeout 60 ./kiln-bench tiny_chain_48ops tiny_chain_48ops_fuse --reps 25 > "$OUT/bench2.txt" 2>&1
grep -E "^tiny" "$OUT/bench2.txt"
KILN_DEVICE=cuda:0 KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/c-f timeout 40 ./kiln-bench tiny_chain_48ops tiny_chain_48ops_fuse --reps 25 > "$OUT/trace.txt" 2>&1
grep -E "host" "$OUT/trace.txt" | head -8
