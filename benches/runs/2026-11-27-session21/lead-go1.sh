#!/usr/bin/env bash
# Session 21, the lead's first device call: the GPU tests of the random draws (the array
# parameters of gamma, beta, poisson, binomial) and of DLPack (foreign host memory shared), then
# where a cold example's time goes: gmm and kmeans in new processes with empty kiln caches, the
# driver's JIT cache on and off, the default tiers and fast code only; the CPU beside.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
xz -dc "$P/kiln-tests.xz" > /tmp/kt && chmod +x /tmp/kt
xz -dc "$P/kiln-examples.xz" > /tmp/kx && chmod +x /tmp/kx
cd "$R" && KILN_REPO=$R KILN_DEVICE=cuda:0 KILN_CACHE_DIR=/tmp/kc KILN_DATA=$P/data timeout 150 /tmp/kt random interop dlpack --test-threads 8 > "$OUT/lead1-tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/lead1-tests.txt"
grep -E "FAILED|panicked|test result|tests rc" "$OUT/lead1-tests.txt" | tail -8
{ for cfg in "cuda:0 0 auto" "cuda:0 1 auto" "cuda:0 0 fast" "cuda:0 1 fast" "cpu 0 auto"; do set -- $cfg
  for ex in gmm kmeans; do
    rm -rf /tmp/kce /tmp/nvc; a="$P/data/iris_x.npy $P/data/iris_y.npy"; [ $ex = kmeans ] && a="$P/data/digits_x.npy $P/data/digits_y.npy"
    tier=""; [ $3 = fast ] && tier="KILN_GPU_TIER=fast"
    s=$(date +%s.%N); (cd /tmp && env CUDA_CACHE_PATH=/tmp/nvc CUDA_CACHE_DISABLE=$2 $tier KILN_CACHE_DIR=/tmp/kce KILN_DEVICE=$1 timeout 25 bash -c "exec -a $ex /tmp/kx $a" > /tmp/ex.txt 2>&1); rc=$?
    e=$(date +%s.%N)
    echo "$ex dev=$1 cuda_cache_disable=$2 tier=$3 rc=$rc wall $(awk "BEGIN{printf \"%.0f\", ($e - $s)*1000}") ms, kiln cache entries $(find /tmp/kce -type f 2>/dev/null | wc -l), driver cache $(du -sk /tmp/nvc 2>/dev/null | cut -f1) KiB: $(grep -iE 'time|ms\b|iterations' /tmp/ex.txt | head -3 | tr '\n' ' ')"
  done; done; } 2>&1 | tee "$OUT/lead1-examples.txt"
