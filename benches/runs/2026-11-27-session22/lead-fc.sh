#!/usr/bin/env bash
# Where a new process's first call from the disk cache spends its time (issue 22 §3).
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
xz -d -T8 kiln-bench.xz && chmod +x kiln-bench
export KILN_DEVICE=cuda:0
child() { ./kiln-bench --first-call-child 2>&1 | grep -E "^first"; }
for v in ptx cubin; do
  d=/tmp/kc-$v; rm -rf $d; export KILN_CACHE_DIR=$d
  L=""; [ $v = cubin ] && L=cubin
  echo "== $v: cold"; KILN_GPU_LINK=$L child
  for i in 1 2 3; do echo "== $v: warm $i"; KILN_GPU_LINK=$L child; done
  for i in 1 2; do echo "== $v: warm, CUDA_CACHE_DISABLE=1, $i"; CUDA_CACHE_DISABLE=1 KILN_GPU_LINK=$L child; done
done
which nsys && for v in ptx cubin; do
  L=""; [ $v = cubin ] && L=cubin
  KILN_CACHE_DIR=/tmp/kc-$v KILN_GPU_LINK=$L timeout 60 nsys profile -q --trace=cuda,osrt -o /tmp/ns-$v ./kiln-bench --first-call-child > /dev/null 2>&1
  echo "== nsys $v"; nsys stats -q --report cuda_api_trace --format csv /tmp/ns-$v.nsys-rep 2>/dev/null | cut -c1-160 | tail -70
done
