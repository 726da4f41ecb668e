#!/usr/bin/env bash
# Issue 20's figures: kiln-bench's copy, mask, random workloads and peers_ops.py's rows of the
# same names, in one device call; then the GPU suite.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=/tmp/kb; mkdir -p $work
xz -dc $here/kiln-bench.xz > $work/kiln-bench && chmod +x $work/kiln-bench
nvidia-smi --query-gpu=name --format=csv,noheader
KILN_DEVICE=cuda:0 $work/kiln-bench --reps 25 copy concatenate pad_reflect roll mask_select random_normal dropout ew_chain softmax kmeans_iter_1048576 2>&1 | tee ${OUT:-/tmp}/kiln-bench-issue20.txt
python3 $here/peers_ops.py copy concatenate pad_reflect roll mask_select random_normal dropout 2>&1 | tee ${OUT:-/tmp}/peers-issue20.txt
