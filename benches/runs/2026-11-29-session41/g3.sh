#!/usr/bin/env bash
# Session 41, call g3: the examples in a new process (the commit in the MANIFEST): the new
# defaults (libraries kept open, a process's first call compiling beside the context's
# creation) against KILN_GPU_COMPILE_AHEAD=off (no compile ahead at all), alternated; truly
# cold (CUDA_CACHE_DISABLE=1, an empty kiln cache), then over the kiln cache it left ("disk");
# two rounds; the CPU once. Host trace on. Carry ["s41-ex"].
set -u
P=$PWD/s41-ex; R=$OUT/r; mkdir -p $R
nvidia-smi -L; nproc; cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
data=$P/data
cd /tmp
run_one() {
  local mode=$1 variant=$2 name=$3; shift 3
  local env=(KILN_HOST_TRACE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 CUDA_CACHE_DISABLE=1)
  case $variant in
    no-ahead) env+=(KILN_GPU_COMPILE_AHEAD=off) ;;
  esac
  t0=$(date +%s%N)
  env "${env[@]}" timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "$@" > $R/ex-$name-$mode-$variant-$round.txt 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf "%-6s %-9s %-18s round %d rc %d  %d ms\n" "$mode" "$variant" "$name" "$round" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
}
for round in 1 2; do
for name in gmm kmeans digits_stats softmax_layernorm image_pipeline; do
  case $name in
    digits_stats) args=("$data/digits_x.npy") ;;
    kmeans) args=("$data/digits_x.npy" "$data/digits_y.npy") ;;
    gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
    image_pipeline) args=("$data/china.npy" /tmp/edges.png) ;;
    softmax_layernorm) args=() ;;
  esac
  for variant in default no-ahead; do
    c=$(mktemp -d)
    for mode in cold disk; do run_one $mode $variant $name "${args[@]}"; done
    rm -rf "$c"
  done
  if [ $round = 1 ]; then
    c=$(mktemp -d)
    t0=$(date +%s%N)
    KILN_CACHE_DIR=$c KILN_DEVICE=cpu timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "${args[@]}" > $R/ex-$name-cpu.txt 2>&1
    printf "%-6s %-9s %-18s round %d rc %d  %d ms\n" cpu "" "$name" 1 "$?" "$(( ($(date +%s%N) - t0) / 1000000 ))" >> $R/examples.txt
    rm -rf "$c"
  fi
done
done
sort -k3,3 -k1,1 -k2,2 -s $R/examples.txt
cd $R && tar czf $OUT/logs.tgz . && cp examples.txt $OUT/
