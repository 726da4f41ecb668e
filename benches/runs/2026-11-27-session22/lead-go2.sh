#!/usr/bin/env bash
# (1) Fast-tier code through cuLink (the disk cache keeps a cubin) against PTX (KILN_GPU_LINK=ptx):
#     a new process's first call, cold and from the kiln disk cache, driver JIT cache on and off;
#     fast-tier kernels' speed. (2) perf of the host's time per call (tiny_chain, ew_chain).
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
xz -d -T8 kiln-bench-full.xz && chmod +x kiln-bench-full
KB=./kiln-bench-full
export KILN_DEVICE=cuda:0
child() { $KB --first-call-child 2>&1 | grep -E "^first call"; }
KILN_CACHE_DIR=/tmp/kc-w child > /dev/null
for r in 1 2; do for v in culink ptx; do
  L=""; [ $v = ptx ] && L=ptx
  for dc in 0 1; do
    rm -rf /tmp/kc; export KILN_CACHE_DIR=/tmp/kc
    echo "== round $r, fast tier $v, CUDA_CACHE_DISABLE=$dc: cold"; CUDA_CACHE_DISABLE=$dc KILN_GPU_LINK=$L child
    echo "== round $r, fast tier $v, CUDA_CACHE_DISABLE=$dc: disk hit"; CUDA_CACHE_DISABLE=$dc KILN_GPU_LINK=$L child
  done
done; done
for v in culink ptx; do
  L=""; [ $v = ptx ] && L=ptx
  echo "== fast tier only, $v"
  KILN_CACHE_DIR=/tmp/kc-f$v KILN_GPU_LINK=$L KILN_GPU_TIER=fast timeout 60 $KB ew_chain sqdiff sum_cols softmax_rows layernorm_rows kmeans_iter_1048576 --reps 10 2>&1 | grep -E "^(ew_chain|sqdiff|sum_cols|softmax|layernorm|kmeans)" | grep -v host
done
echo "== perf"; which perf
if which perf > /dev/null; then
  export KILN_CACHE_DIR=/tmp/kc-p
  $KB tiny_chain ew_chain --reps 200 > /dev/null 2>&1
  timeout 90 perf record -F 15000 -g -o /tmp/p.data $KB tiny_chain --reps 20000 2>&1 | grep -E "tiny|host" 
  perf report -i /tmp/p.data --no-children --sort symbol 2>/dev/null | grep -E "^ +[0-9]" | cut -c1-150 | head -70 > $OUT/perf-self.txt
  perf report -i /tmp/p.data --children --sort symbol 2>/dev/null | grep -E "^ +[0-9]" | cut -c1-150 | head -120 > $OUT/perf-children.txt
  head -40 $OUT/perf-self.txt
fi
