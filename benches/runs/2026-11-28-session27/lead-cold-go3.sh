#!/usr/bin/env bash
# Session 27 (lead), call 3: fast-tier kernel times, nvJitLink (-O3, relocatable) against the
# driver's JIT (KILN_GPU_LINK=ptx), two rounds, then the optimised tier.
cd "$(dirname "$0")"; xz -d -k -f kiln-bench.xz; chmod +x kiln-bench; nvidia-smi -L
for r in 1 2; do
for mode in ptx nvjitlink; do
  if [ $mode = ptx ]; then export KILN_GPU_LINK=ptx; else unset KILN_GPU_LINK; fi
  echo "== round $r, fast tier kernels via $mode"
  KILN_GPU_TIER=fast KILN_DEVICE=cuda:0 timeout 90 ./kiln-bench copy ew_chain sqdiff_bcast sum_cols softmax_rows layernorm_rows kmeans --reps 15 2>&1 | grep -vE "^\s*$"
done
done
unset KILN_GPU_LINK
echo "== optimised tier"
KILN_GPU_TIER=optimized KILN_DEVICE=cuda:0 timeout 90 ./kiln-bench copy ew_chain sqdiff_bcast sum_cols softmax_rows layernorm_rows kmeans --reps 15 2>&1 | grep -vE "^\s*$"
