#!/usr/bin/env bash
# Session 18's final device call (one GPU): the whole GPU suite (run.sh), and beside it
# compute-sanitizer's initcheck over the linear-algebra tests (cuSOLVER's zeroed workspaces) and
# the cuBLASLt epilogue test, and initcheck over CuPy's and torch's own float16 products and SVD
# (is the float16 epilogue finding kiln's, or the library's under the tool?).
cd "$(dirname "$0")"
P=$PWD
R=$(cd .. && pwd)
mkdir -p /work && ln -sfn "$R" /work/wt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi -L
xz -dc kiln-tests.xz > /tmp/kt && chmod +x /tmp/kt
(cd "$R" && KILN_DATA=$P/data timeout 300 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt") &
(cd "$R" && KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data KILN_GPU_SANITIZER=1 KILN_SANITIZER_TOOL=initcheck \
  CUDA_MODULE_LOADING=EAGER KILN_GPU_POOL=off timeout 280 "$cs" --tool initcheck --report-api-errors no \
  --error-exitcode 99 --print-limit 20 /tmp/kt linalg:: vendor_gpu::gpu_absorbed --test-threads 4 \
  > "$OUT/initcheck-linalg-epilogues.txt" 2>&1; echo "rc $?" >> "$OUT/initcheck-linalg-epilogues.txt") &
(for c in cupy_f16_matmul cupy_svd; do timeout 120 "$cs" --tool initcheck --print-limit 5 python3 "$P/initcheck_peers.py" $c; echo "rc $?"; done
 for c in torch_f16_linear_bias torch_f16_matmul; do timeout 120 "$cs" --tool initcheck --print-limit 5 /opt/torch/.venv/bin/python "$P/initcheck_peers.py" $c; echo "rc $?"; done) > "$OUT/initcheck-peers.txt" 2>&1 &
wait
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc" "$OUT/suite.txt" | tail -25
grep -E "ERROR SUMMARY|test result|rc " "$OUT/initcheck-linalg-epilogues.txt"
grep -E "ERROR SUMMARY|^cupy|^torch|rc |Uninitialized" "$OUT/initcheck-peers.txt" | head -30
