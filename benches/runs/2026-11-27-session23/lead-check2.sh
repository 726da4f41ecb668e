#!/usr/bin/env bash
# Stream writes on the null stream again, with memsets wherever the driver refuses a write: the
# self-tests, the suite's tests that failed in the final call (and the random draws'), then
# small uploads by writes and by memsets alternated (kiln-bench runs on the null stream).
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
mkdir -p /tmp/k && for f in kiln-tests kiln-bench kiln-gpu-selftest; do xz -dc $f.xz > /tmp/k/$f && chmod +x /tmp/k/$f; done
KILN_DEVICE=cuda:0 timeout 60 /tmp/k/kiln-gpu-selftest 2>&1 | tail -2 | tee "$OUT/check2-selftest.txt"
cd "$R" && KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data timeout 150 /tmp/k/kiln-tests user_kernels numpy_fixtures vendor random reduce_dtype sorts_gpu select_gpu row_kernels relocatable_async_pool shaping 2>&1 | grep -E "FAILED|panicked|test result" | tee "$OUT/check2-tests.txt"
B=/tmp/k/kiln-bench
{ for u in write memset write memset; do echo "== KILN_GPU_SMALL_UPLOAD=$u"
  KILN_GPU_SMALL_UPLOAD=$u KILN_DEVICE=cuda:0 timeout 40 $B copy dropout --reps 25 2>&1 | grep -vE "^\s*$" | tail -6
done; } 2>&1 | tee "$OUT/check2-upload.txt"
