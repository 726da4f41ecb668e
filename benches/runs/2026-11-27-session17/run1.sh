#!/usr/bin/env bash
# Issue 25, first device run: the multi-GPU tests, the example, torch's all-reduce.
cd "$(dirname "$0")"
P=$PWD
export NCCL_NVLS_ENABLE=0
nvidia-smi -L
nvidia-smi topo -m 2>/dev/null | head -5
NCCL=$(find / -name 'libnccl.so.2' 2>/dev/null | head -1); echo "nccl: $NCCL"
export KILN_NCCL=$NCCL
xz -dc kiln-tests.xz > /tmp/t && chmod +x /tmp/t
xz -dc kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
mkdir -p /work && ln -sfn "$(cd .. && pwd)" /work/wt
cd ..
echo "== tests multi_gpu"; KILN_DEVICE=cuda:0 KILN_REPO=$PWD KILN_DATA=$P/data timeout 300 /tmp/t multi_gpu 2>&1 | tail -25
echo "== example digits"; (exec -a kmeans_multi_gpu /tmp/kiln-examples $P/data/digits_x.npy) 2>&1 | tail -8
echo "== example 2^24"; (exec -a kmeans_multi_gpu /tmp/kiln-examples --synthetic 24 --iters 20) 2>&1 | tail -8
echo "== torch all_reduce"; timeout 200 /opt/torch/.venv/bin/python $P/allreduce_peers.py 2>&1 | tail -3
echo "== one process per GPU"; for r in 0 1; do (RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_PORT=29555 exec -a kmeans_multi_gpu /tmp/kiln-examples --synthetic 24 --iters 20) & done; wait
