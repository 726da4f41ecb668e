#!/usr/bin/env bash
# After the final suite: the corrected near-tie test and the k-means/scatter tests on the GPU,
# then two more alternated rounds of KILN_GPU_SMALL_UPLOAD on/off (dropout, standard_normal).
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
mkdir -p /tmp/k && for f in kiln-tests kiln-bench; do xz -dc $f.xz > /tmp/k/$f && chmod +x /tmp/k/$f; done
cd "$R" && KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data timeout 120 /tmp/k/kiln-tests indexing:: screened kmeans 2>&1 | grep -E "FAILED|panicked|test result" | tee $OUT/check-tests.txt
{ for round in 3 4; do for u in on off; do echo "== KILN_GPU_SMALL_UPLOAD=$u round $round"
  KILN_GPU_SMALL_UPLOAD=$u KILN_DEVICE=cuda:0 timeout 60 /tmp/k/kiln-bench copy dropout random_normal --reps 25 2>&1 | grep -vE "^\s*$" | tail -8
done; done; } 2>&1 | tee "$OUT/check-upload.txt"
