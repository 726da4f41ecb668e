#!/usr/bin/env bash
# Where the host's time per call goes on the GPU machine: kiln-bench with KILN_HOST_TRACE=1
# (kiln_runtime::host_trace points on the dispatch path), two rounds, then a round without it.
cd "$(dirname "$0")"; P=$PWD
nvidia-smi -L
mkdir -p /tmp/k && xz -dc kiln-bench.xz > /tmp/k/kiln-bench && chmod +x /tmp/k/kiln-bench
W="copy dropout random_normal tiny_chain kmeans_iter layernorm_rows softmax_rows"
{ for r in 1 2; do echo "== trace round $r"
  KILN_HOST_TRACE=1 KILN_DEVICE=cuda:0 timeout 100 /tmp/k/kiln-bench $W --reps 25 2>&1 | grep -vE "^\s*$"
done
echo "== no trace"
KILN_DEVICE=cuda:0 timeout 100 /tmp/k/kiln-bench $W --reps 25 2>&1 | grep -vE "^\s*$"
} 2>&1 | tee "$OUT/trace.txt"
