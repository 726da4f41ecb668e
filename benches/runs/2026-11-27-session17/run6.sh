#!/usr/bin/env bash
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
xz -dc kiln-bench.xz > /tmp/kb && chmod +x /tmp/kb
echo "== 2,2,1,2"; KILN_BENCH_ORDER=2,2,1,2 KILN_DEVICE=cuda:0 timeout 200 /tmp/kb --multi-gpu --gpus 0 2>&1 | grep kmeans
