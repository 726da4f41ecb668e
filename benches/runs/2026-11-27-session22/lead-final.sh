#!/usr/bin/env bash
# Session 22's final device call (one GPU): the whole GPU suite (run.sh) on merged main, then
# small uploads as memsets against pinned staging (KILN_GPU_SMALL_UPLOAD on/off, alternated,
# two rounds: dropout and standard_normal, whose counter offset is an 8-byte upload a call),
# then peers_ops.py's copy and dropout rows (torch.compile) in the same call.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final-suite.txt" | tail -20
B=/tmp/kiln-gpu-pack/kiln-bench
{ for round in 1 2; do for u in on off; do echo "== KILN_GPU_SMALL_UPLOAD=$u round $round"
  KILN_GPU_SMALL_UPLOAD=$u KILN_DEVICE=cuda:0 timeout 60 $B copy dropout random_normal kmeans topk_rows --reps 25 2>&1 | grep -vE "^\s*$" | tail -16
done; done; } 2>&1 | tee "$OUT/final-upload.txt"
(cd "$P" && timeout 100 python3 peers_ops.py copy dropout 2>&1 | grep -v Warning | tail -8) | tee "$OUT/final-peers.txt"
