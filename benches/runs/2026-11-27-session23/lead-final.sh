#!/usr/bin/env bash
# Session 23's final device call (one GPU): the whole GPU suite (run.sh) on merged main; then
# kiln-bench with KILN_HOST_TRACE=1 (where the host's time per call goes, after philox_bits);
# then small uploads by stream writes against memsets (KILN_GPU_SMALL_UPLOAD write/memset,
# alternated, two rounds: copy, dropout, standard_normal); then peers_ops.py in the same call.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final-suite.txt" | tail -20
B=/tmp/kiln-gpu-pack/kiln-bench
KILN_HOST_TRACE=1 KILN_DEVICE=cuda:0 timeout 100 $B copy dropout random_normal tiny_chain sort_rows argsort_rows median_rows kmeans --reps 25 2>&1 | grep -vE "^\s*$" > "$OUT/final-trace.txt"; tail -12 "$OUT/final-trace.txt"
{ for round in 1 2; do for u in write memset; do echo "== KILN_GPU_SMALL_UPLOAD=$u round $round"
  KILN_GPU_SMALL_UPLOAD=$u KILN_DEVICE=cuda:0 timeout 60 $B copy dropout random_normal --reps 25 2>&1 | grep -vE "^\s*$" | tail -9
done; done; } 2>&1 | tee "$OUT/final-upload.txt"
(cd "$P" && timeout 120 python3 peers_ops.py copy dropout random_normal sort_rows argsort_rows 2>&1 | grep -v Warning | tail -16) | tee "$OUT/final-peers.txt"
