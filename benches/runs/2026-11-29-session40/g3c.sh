#!/usr/bin/env bash
# Session 40, call g3c: the examples in a new process (the commit in the MANIFEST): the new defaults (a plan's new
# kernels compiled ahead, both tiers through ptxas) against ahead off, and against the old way
# (ahead off, fast code as PTX for the driver: KILN_GPU_LINK=ptx), alternated; truly cold
# (CUDA_CACHE_DISABLE=1, an empty kiln cache), then over the kiln cache it left ("disk"); the
# defaults also with the driver's cache on ("user": a user's setting); then on the CPU.
# Carry ["s40-ex"].
set -u
P=$PWD/s40-ex; R=$OUT/r; mkdir -p $R
nvidia-smi -L; nproc; cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
data=$P/data
cd /tmp
run_one() {
  local mode=$1 variant=$2 name=$3; shift 3
  local env=(KILN_HOST_TRACE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0)
  case $mode in cold|disk) env+=(CUDA_CACHE_DISABLE=1) ;; esac
  case $variant in
    no-ahead) env+=(KILN_GPU_COMPILE_AHEAD=off) ;;
    old) env+=(KILN_GPU_COMPILE_AHEAD=off KILN_GPU_LINK=ptx) ;;
  esac
  t0=$(date +%s%N)
  env "${env[@]}" timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "$@" > $R/ex-$name-$mode-$variant.txt 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf "%-9s %-8s %-18s rc %d  %d ms\n" "$mode" "$variant" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
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
  for variant in default no-ahead old; do
    c=$(mktemp -d)
    for mode in cold disk; do run_one $mode $variant $name "${args[@]}"; done
    rm -rf "$c"
  done
  # The driver's cache on: emptied first (~/.nv/ComputeCache), then as a user has it.
  rm -rf ~/.nv/ComputeCache; c=$(mktemp -d)
  for mode in user-cold user-disk; do run_one $mode default $name "${args[@]}"; done
  rm -rf "$c"
  if [ $round = 1 ]; then
    c=$(mktemp -d)
    t0=$(date +%s%N)
    KILN_CACHE_DIR=$c KILN_DEVICE=cpu timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "${args[@]}" > $R/ex-$name-cpu.txt 2>&1
    printf "%-9s %-8s %-18s rc %d  %d ms\n" cpu "" "$name" "$?" "$(( ($(date +%s%N) - t0) / 1000000 ))" >> $R/examples.txt
    rm -rf "$c"
  fi
done
done
cat $R/examples.txt
for f in $R/ex-gmm-cold-*.txt $R/ex-gmm-disk-default.txt; do echo "== $f"; grep -v '^iteration' $f | head -22; done > $OUT/gmm-traces.txt
cd $R && tar czf $OUT/logs.tgz . && cp examples.txt $OUT/
