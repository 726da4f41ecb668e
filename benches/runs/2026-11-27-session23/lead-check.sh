#!/usr/bin/env bash
# After the final suite failed (cuStreamWriteValue64 refused on the null stream): the whole GPU
# suite again with the write kept off the null stream (and memsets where a write is refused),
# then one alternated round of small uploads by writes and by memsets.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/check-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/check-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/check-suite.txt" | tail -12
B=/tmp/kiln-gpu-pack/kiln-bench
{ for u in write memset write memset; do echo "== KILN_GPU_SMALL_UPLOAD=$u"
  KILN_GPU_SMALL_UPLOAD=$u KILN_DEVICE=cuda:0 timeout 60 $B copy dropout random_normal --reps 25 2>&1 | grep -vE "^\s*$" | tail -9
done; } 2>&1 | tee "$OUT/check-upload.txt"
