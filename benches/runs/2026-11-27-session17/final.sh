#!/usr/bin/env bash
# Session 17's final device run: the whole GPU suite, then issue 25's figures and torch's.
cd "$(dirname "$0")"
P=$PWD
export NCCL_NVLS_ENABLE=0
mkdir -p /work && ln -sfn "$(cd .. && pwd)" /work/wt
nvidia-smi -L
(cd .. && KILN_DATA=$P/data timeout 330 bash $P/run.sh > $OUT/suite.txt 2>&1); echo "suite rc $?"
grep -E "^== |passed, .* failed|FAILED|panicked|^test .* FAILED" $OUT/suite.txt | grep -v " ok$" | tail -25
xz -dc kiln-bench.xz > /tmp/kb && chmod +x /tmp/kb
KILN_DEVICE=cuda:0 timeout 120 /tmp/kb --multi-gpu --reps 20 2>&1 | tee $OUT/multi.txt
timeout 90 /opt/torch/.venv/bin/python peers/allreduce_peers.py 2>&1 | grep peer | tee -a $OUT/multi.txt
