#!/usr/bin/env bash
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
nvidia-smi -L
xz -dc kiln-bench.xz > /tmp/kb && chmod +x /tmp/kb
echo "== one process"; KILN_DEVICE=cuda:0 timeout 300 /tmp/kb --multi-gpu --reps 20 2>&1 | tail -8
echo "== one process, no all-reduce first"; KILN_DEVICE=cuda:0 KILN_BENCH_SKIP_ALLREDUCE=1 timeout 300 /tmp/kb --multi-gpu --gpus 1 --reps 5 2>&1 | grep kmeans
