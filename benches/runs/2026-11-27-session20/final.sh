#!/usr/bin/env bash
# Session 20's final device call (one GPU): the whole GPU suite (run.sh) on merged main, then
# gmm and kmeans in new processes with empty caches, precompiling a new plan's kernels off and on.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 235 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final-suite.txt" | tail -20
X=/tmp/kiln-gpu-pack/kiln-examples
{ for mode in off on off on; do for ex in gmm kmeans; do
  rm -rf /tmp/kce; a="$P/data/iris_x.npy $P/data/iris_y.npy"; [ $ex = kmeans ] && a="$P/data/digits_x.npy $P/data/digits_y.npy"
  s=$(date +%s.%N); (cd /tmp && CUDA_CACHE_DISABLE=1 KILN_PRECOMPILE=$mode KILN_CACHE_DIR=/tmp/kce KILN_DEVICE=cuda:0 timeout 20 bash -c "exec -a $ex $X $a" > /tmp/ex.txt 2>&1); rc=$?
  e=$(date +%s.%N); echo "$ex precompile=$mode rc=$rc wall $(awk "BEGIN{printf \"%.0f\", ($e - $s)*1000}") ms: $(grep -iE 'total time|ms' /tmp/ex.txt | head -2 | tr '\n' ' ')"
done; done; } 2>&1 | tee "$OUT/examples-precompile.txt"
