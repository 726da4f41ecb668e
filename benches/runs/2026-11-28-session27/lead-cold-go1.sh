#!/usr/bin/env bash
# Session 27 (lead): the fast tier through nvJitLink (new default) against the driver's JIT
# (KILN_GPU_LINK=ptx: the old default for the fast tier), one binary, alternated, three rounds;
# the driver's cache disabled (CUDA_CACHE_DISABLE=1). Then fast-tier kernel times both ways, and
# the optimised tier, for the 1.5x rule.
cd "$(dirname "$0")"; xz -d -k -f kiln-bench.xz; chmod +x kiln-bench; nvidia-smi -L
for r in 1 2 3; do
  for mode in ptx nvjitlink; do
    echo "== round $r, fast tier via $mode"
    if [ $mode = ptx ]; then export KILN_GPU_LINK=ptx; else unset KILN_GPU_LINK; fi
    CUDA_CACHE_DISABLE=1 KILN_DEVICE=cuda:0 timeout 60 ./kiln-bench first_call --reps 5 2>&1 | grep -E "^first|nvJitLink|warn"
  done
done
for mode in ptx nvjitlink; do
  if [ $mode = ptx ]; then export KILN_GPU_LINK=ptx; else unset KILN_GPU_LINK; fi
  echo "== fast tier kernels via $mode"
  KILN_GPU_TIER=fast KILN_DEVICE=cuda:0 timeout 90 ./kiln-bench copy ew_chain sqdiff_bcast sum_cols sum_rows softmax_rows layernorm_rows --reps 15 2>&1 | grep -E "^(work|copy|ew|sqdiff|sum|softmax|layer)|warn"
done
echo "== optimised tier"
KILN_GPU_TIER=optimized KILN_DEVICE=cuda:0 timeout 90 ./kiln-bench copy ew_chain sqdiff_bcast sum_cols sum_rows softmax_rows layernorm_rows --reps 15 2>&1 | grep -E "^(work|copy|ew|sqdiff|sum|softmax|layer)|warn"
