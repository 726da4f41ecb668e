#!/usr/bin/env bash
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
nvidia-smi -L
xz -dc kiln-bench.xz > /tmp/kb && chmod +x /tmp/kb
echo "== kiln-bench --multi-gpu"; KILN_DEVICE=cuda:0 timeout 400 /tmp/kb --multi-gpu --reps 20 2>&1 | tail -12; echo "== order 2"; KILN_DEVICE=cuda:0 timeout 200 /tmp/kb --multi-gpu --reps 5 2>&1 | grep kmeans
echo "== torch all_reduce"; timeout 200 /opt/torch/.venv/bin/python allreduce_peers.py 2>&1 | grep peer
