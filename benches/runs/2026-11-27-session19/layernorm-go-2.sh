#!/usr/bin/env bash
# Session 19, layer norm (issue 22 §2): float32 division by a loop-invariant divisor as the
# reciprocal and two FMA corrections. GPU tests of the change, kiln's row kernels as PTX (before
# and after) through CuPy beside torch.compile, kiln-bench before (78ccb3f) and after alternated,
# and peers.py in the same call.
cd "$(dirname "$0")"
P=$PWD
R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for b in kiln-bench kiln-tests; do xz -dc $b.xz > /tmp/$b && chmod +x /tmp/$b; done
(cd "$R" && KILN_DEVICE=cuda:0 KILN_REPO=$R KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/kc-t timeout 200 /tmp/kiln-tests division row_kernels fused_props layer softmax numpy_fixtures --test-threads 8 2>&1 | tail -30) > $OUT/tests.txt
grep -E "test result|FAILED|panicked" $OUT/tests.txt | head
python3 ln_harness.py ptx 2>&1 | grep -v Warning | tee $OUT/harness.txt
W="layernorm_rows softmax_rows ew_chain l2norm_rows sum_cols copy kmeans_iter_1048576x64_k10"
for round in 1 2; do for rc in 8 off; do echo "row cache $rc"; export KILN_GPU_ROW_CACHE=$rc; for v in kiln-bench; do echo "== $v round $round"; KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kc-$v /tmp/$v --reps 25 $W 2>&1 | grep -vE "host µs|^$|^kiln"; done; done; done 2>&1 | tee $OUT/bench.txt
timeout 200 python3 peers_rows.py 2>&1 | grep -E "copy|layernorm|softmax|ew_chain|l2norm|sum_cols" | tee $OUT/peers.txt
