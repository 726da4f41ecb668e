#!/usr/bin/env bash
# Session 27 (lead), call 2: nvJitLink at its default (-O3) for the fast tier against the
# driver's JIT (KILN_GPU_LINK=ptx), one binary alternated: the first call with the driver's cache
# on (the default) and off, two rounds; then fast-tier kernel times both ways.
cd "$(dirname "$0")"; xz -d -k -f kiln-bench.xz; chmod +x kiln-bench; nvidia-smi -L
for r in 1 2; do
  for cache in on off; do
    for mode in ptx nvjitlink; do
      echo "== round $r, driver cache $cache, fast tier via $mode"
      if [ $mode = ptx ]; then export KILN_GPU_LINK=ptx; else unset KILN_GPU_LINK; fi
      if [ $cache = off ]; then export CUDA_CACHE_DISABLE=1; else unset CUDA_CACHE_DISABLE; fi
      KILN_DEVICE=cuda:0 timeout 60 ./kiln-bench first_call --reps 5 2>&1 | grep -E "^first_call|^first call|nvJitLink|warn"
    done
  done
done
unset CUDA_CACHE_DISABLE
for r in 1 2; do
for mode in ptx nvjitlink; do
  if [ $mode = ptx ]; then export KILN_GPU_LINK=ptx; else unset KILN_GPU_LINK; fi
  echo "== round $r, fast tier kernels via $mode"
  KILN_GPU_TIER=fast KILN_DEVICE=cuda:0 timeout 90 ./kiln-bench copy ew_chain sqdiff_bcast sum_cols softmax_rows layernorm_rows --reps 15 2>&1 | grep -E "^(copy|ew|sqdiff|sum|softmax|layer)  |warn"
done
done
