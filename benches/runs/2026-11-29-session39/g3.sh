#!/usr/bin/env bash
# Session 39, call g3: the examples in a new process, the bytecode interpreter on (default) and
# off alternated: truly cold (CUDA_CACHE_DISABLE=1, an empty kiln cache), then again over the
# kiln cache it left; with the driver's JIT cache on (a user's setting); and on the CPU.
# Session 32's prebuilt-go2.sh, with the interpreter's modes. Carry ["s39-ex"].
set -u
P=$PWD/s39-ex; R=$OUT/r; mkdir -p $R
nvidia-smi -L; cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
data=$P/data
cd /tmp
run_one() {
  local mode=$1 interp=$2 name=$3; shift 3
  local off=1; case $mode in user-*) off=;; esac
  t0=$(date +%s%N)
  KILN_GPU_INTERP=$interp KILN_HOST_TRACE=1 CUDA_CACHE_DISABLE=$off KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "$@" > $R/ex-$name-gpu-$mode-$interp.txt 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf "%-9s interp %-3s %-18s rc %d  %d ms\n" "$mode" "$interp" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
}
for name in gmm kmeans digits_stats softmax_layernorm image_pipeline; do
  case $name in
    digits_stats) args=("$data/digits_x.npy") ;;
    kmeans) args=("$data/digits_x.npy" "$data/digits_y.npy") ;;
    gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
    image_pipeline) args=("$data/china.npy" /tmp/edges.png) ;;
    softmax_layernorm) args=() ;;
  esac
  for interp in on off; do
    c=$(mktemp -d)
    for mode in cold disk; do run_one $mode $interp $name "${args[@]}"; done
    rm -rf "$c"; c=$(mktemp -d)
    for mode in user-cold user-disk; do run_one $mode $interp $name "${args[@]}"; done
    rm -rf "$c"
  done
  c=$(mktemp -d)
  t0=$(date +%s%N)
  KILN_CACHE_DIR=$c KILN_DEVICE=cpu timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "${args[@]}" > $R/ex-$name-cpu.txt 2>&1
  printf "%-9s            %-18s rc %d  %d ms\n" cpu "$name" "$?" "$(( ($(date +%s%N) - t0) / 1000000 ))" >> $R/examples.txt
  rm -rf "$c"
done
cat $R/examples.txt
