#!/usr/bin/env bash
# Call 2: main's kiln-bench against cold's, alternated; the JIT's options on kiln's fast PTX;
# the fast tier's speed; the GPU tests of the change.
cd "$(dirname "$0")" || exit 1
pack=$PWD
exec > $OUT/cold-go2.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(tar xJf cold-benches.tar.xz && xz -d -T8 kiln-tests.xz && chmod +x kiln-*) || echo "unpack failed"
echo "== JIT options (CUDA_CACHE_DISABLE=1)"
CUDA_CACHE_DISABLE=1 timeout 40 python3 jit_levels.py fast.ptx
CUDA_CACHE_DISABLE=1 timeout 40 python3 jit_levels.py optimized.ptx
export KILN_DEVICE=cuda:0
child() { timeout 60 ./$1 --first-call-child 2>&1 | grep -E "^first call"; }
KILN_CACHE_DIR=/tmp/kc-w child kiln-bench-main > /dev/null
for r in 1 2; do for b in kiln-bench-main kiln-bench; do
  rm -rf /tmp/kc; export KILN_CACHE_DIR=/tmp/kc
  echo "== round $r $b: cold, JIT cache off"; CUDA_CACHE_DISABLE=1 child $b
  echo "== round $r $b: disk hit x2 (JIT cache on)"; child $b; child $b
done; done
rm -rf /tmp/kc
echo "== cold's binary at JIT level 4 (the libdevice prefetch alone), cold, JIT cache off x2"
for r in 1 2; do rm -rf /tmp/kc; KILN_GPU_JIT_OPT=4 CUDA_CACHE_DISABLE=1 child kiln-bench; done
echo "== cold, JIT cache on (a PTX the driver has seen): main, cold"
for b in kiln-bench-main kiln-bench; do rm -rf /tmp/kc; child $b; done
echo "== host trace of a disk hit (cold's binary) x2"; for r in 1 2; do KILN_HOST_TRACE=1 child kiln-bench; done
echo "== host trace of a cold call, JIT cache off (cold's binary)"; rm -rf /tmp/kc; KILN_HOST_TRACE=1 CUDA_CACHE_DISABLE=1 child kiln-bench
W="ew_chain sqdiff_bcast sum_cols softmax_rows layernorm_rows"
for bt in kiln-bench:fast kiln-bench:optimized kiln-bench-main:fast; do b=${bt%%:*}; t=${bt##*:}; do_=1
  echo "== $b KILN_GPU_TIER=$t"
  KILN_CACHE_DIR=/tmp/kc-$b-$t KILN_GPU_TIER=$t timeout 60 ./$b $W --reps 10 2>&1 | grep -E "^(ew_chain|sqdiff|sum_cols|softmax|layernorm)" | grep -v host
done
cd ..; root=$PWD; mkdir -p /work && ln -sfn "$root" /work/wt-cold
echo "== GPU tests (cold's)"
KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache timeout 60 $pack/kiln-tests codegen:: catalogue:: tier cache first_call jit special:: numpy_fixtures::cos numpy_fixtures::sin numpy_fixtures::exp --test-threads 8 2>&1 | tail -15
