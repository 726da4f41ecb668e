#!/bin/bash
# lead, session 31, device call 4 (call 3 again with finer trace points: cubins, module loads, upgrades): gmm and kmeans truly cold on the GPU (the driver's JIT cache
# off, CUDA_CACHE_DISABLE=1; an empty kiln cache), traced (KILN_HOST_TRACE=1), then untraced;
# and with the fast tier only (KILN_GPU_TIER=fast: no optimised upgrade compiles).
set -u
P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R
cd $P; for f in kiln-examples; do rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
data=$P/data
cd /tmp
for name in gmm kmeans softmax_layernorm; do
  case $name in
    kmeans) args=("$data/digits_x.npy" "$data/digits_y.npy") ;;
    gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
    softmax_layernorm) args=() ;;
  esac
  for mode in trace fast; do
    c=$(mktemp -d)
    tr=""; [ $mode = trace ] && tr=1
    tier=""; [ $mode = fast ] && tier=fast
    t0=$(date +%s%N)
    KILN_HOST_TRACE=1 CUDA_CACHE_DISABLE=1 KILN_GPU_TIER=$tier KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" $P/kiln-examples "${args[@]}" > $R/ex-$name-gpu-$mode.txt 2>&1
    rc=$?
    t1=$(date +%s%N)
    printf "%-6s %-18s rc %d  %d ms\n" "$mode" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
    rm -rf "$c"
  done
done
{ cat $R/examples.txt; for f in $R/ex-*-gpu-*.txt; do echo "== $f"; sed -n '/host trace/,$p' $f; done; grep -h "time" $R/ex-*.txt; } > $OUT/summary.txt 2>&1
cat $OUT/summary.txt
