#!/usr/bin/env bash
# Session 25's last call: the launch-list tests and the k-means/dispatch tests on the code whose
# KILN_GPU_GRAPHS goes through the config (884b9dd), and tiny_multi under each setting.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
cd "$R" && KILN_DATA=$P/data timeout 90 bash "$P/run.sh" gpu_replay dispatch:: kmeans > "$OUT/check3-tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/check3-tests.txt"
grep -E "passed, .* failed|FAILED|panicked|tests rc" "$OUT/check3-tests.txt" | tail -5
B=/tmp/kiln-gpu-pack/kiln-bench
for g in default off sometimes; do
  if [ $g = default ]; then E=""; else E="KILN_GPU_GRAPHS=$g"; fi
  env $E KILN_DEVICE=cuda:0 timeout 20 $B tiny_multi --reps 25 2>&1 | grep -E "tiny_multi |invalid|KILN_GPU_GRAPHS" | sed "s/^/$g: /"
done | tee "$OUT/check3-bench.txt"
