#!/usr/bin/env bash
# Session 19's second device call (one GPU): initcheck over every linear-algebra test in five
# processes: the SVD-based ones (svd, svdvals, pinv, matrix_rank, lstsq, cond, norm) one test at a
# time (each finding attributed to the test printed before it), the rest in four shards.
cd "$(dirname "$0")"
P=$PWD
R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi -L
xz -dc kiln-tests.xz > /tmp/kt && chmod +x /tmp/kt
part() {
  local name=$1 threads=$2
  mapfile -t list < "$P/$name.txt"
  (cd "$R" && KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data KILN_GPU_SANITIZER=1 KILN_SANITIZER_TOOL=initcheck \
   CUDA_MODULE_LOADING=EAGER KILN_GPU_POOL=off KILN_CACHE_DIR=/tmp/kc-$name timeout 330 "$cs" --tool initcheck \
   --report-api-errors no --error-exitcode 99 --print-limit 10000 /tmp/kt --exact --test-threads $threads "${list[@]}" \
   > "/tmp/$name.log" 2>&1; echo "rc $?" >> "/tmp/$name.log")
}
part ic-svd 1 & for s in 0 1 2 3; do part ic-rest$s 3 & done; wait
for n in ic-svd ic-rest0 ic-rest1 ic-rest2 ic-rest3; do
  echo "== $n: $(wc -l < $P/$n.txt) tests; uninitialized: $(grep -c Uninitialized /tmp/$n.log)"
  grep -E "ERROR SUMMARY|^test result|^rc " /tmp/$n.log
done
# The test before each finding (serial part): its name and the first frames.
grep -nE "^test |Uninitialized|Host Frame" /tmp/ic-svd.log | grep -B2 -A4 Uninitialized | head -40
cd /tmp && tar czf "$OUT/ic-logs.tar.gz" ic-*.log
