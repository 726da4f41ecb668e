#!/usr/bin/env bash
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
xz -dc kiln-bench.xz > /tmp/kb && chmod +x /tmp/kb
for g in 1 2 1 2; do echo "== --gpus $g"; KILN_DEVICE=cuda:0 timeout 200 /tmp/kb --multi-gpu --gpus $g --reps 5 2>&1 | grep -A1 kmeans; done
echo "== nsys?"; which nsys
