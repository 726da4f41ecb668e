#!/usr/bin/env bash
# Session 25, lead's first call: the GPU tests of the row kernels (coop.rs's output pass was
# restructured: review item 3), then tiny_chain's host trace with the drop split into the
# chain's nodes and the output buffer's free, and k-means; then tiny_chain's peers.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 200 bash "$P/run.sh" row division softmax layernorm layer_norm norm moments > "$OUT/diag-tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/diag-tests.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|tests rc|test result" "$OUT/diag-tests.txt" | tail -12
B=/tmp/kiln-gpu-pack/kiln-bench
KILN_HOST_TRACE=1 KILN_DEVICE=cuda:0 timeout 60 $B tiny_chain kmeans --reps 25 2>&1 | grep -vE "^\s*$" > "$OUT/diag-trace.txt"; tail -8 "$OUT/diag-trace.txt"
KILN_DEVICE=cuda:0 timeout 60 $B tiny_chain kmeans layernorm_rows softmax_rows copy --reps 25 2>&1 | grep -vE "^\s*$" > "$OUT/diag-bench.txt"; tail -8 "$OUT/diag-bench.txt"
cd "$P" && timeout 50 python3 lead-tiny-peers.py 2>&1 | grep -v Warning | tail -6 | tee "$OUT/diag-peers.txt"
