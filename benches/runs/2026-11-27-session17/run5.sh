#!/usr/bin/env bash
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
xz -dc kiln-bench.xz > /tmp/kb && chmod +x /tmp/kb
echo "== in one process"; KILN_DEVICE=cuda:0 timeout 200 /tmp/kb --multi-gpu --gpus 0 2>&1 | grep kmeans
echo "== children"; KILN_DEVICE=cuda:0 timeout 300 /tmp/kb --multi-gpu --reps 20 2>&1 | grep -v "^multi-GPU"
