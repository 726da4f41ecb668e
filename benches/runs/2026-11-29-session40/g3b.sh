#!/usr/bin/env bash
# Session 40, call g3b: as g3.sh, with the fast tier through ptxas (KILN_GPU_LINK=ptxas) as a second axis.
# side on the compile workers (KILN_GPU_COMPILE_AHEAD=on, the new default) and one after
# another (off), alternated: truly cold (CUDA_CACHE_DISABLE=1, an empty kiln cache), then again
# over the kiln cache it left; then on the CPU. Session 39's g3.sh with the new knob.
# Carry ["s40-ex"].
set -u
P=$PWD/s40-ex; R=$OUT/r; mkdir -p $R
nvidia-smi -L; nproc; cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
data=$P/data
cd /tmp
run_one() {
  local mode=$1 ahead=$2 link=$3 name=$4; shift 4
  t0=$(date +%s%N)
  env ${link:+KILN_GPU_LINK=$link} KILN_GPU_COMPILE_AHEAD=$ahead KILN_HOST_TRACE=1 CUDA_CACHE_DISABLE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "$@" > $R/ex-$name-gpu-$mode-$ahead-${link:-default}.txt 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf "%-5s ahead %-3s link %-7s %-18s rc %d  %d ms\n" "$mode" "$ahead" "${link:-default}" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
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
  for v in "on " "on ptxas" "off " "off ptxas"; do
    set -- $v; ahead=$1; link=${2:-}
    c=$(mktemp -d)
    for mode in cold disk; do run_one $mode $ahead "$link" $name "${args[@]}"; done
    rm -rf "$c"
  done
  if [ $round = 1 ]; then
    c=$(mktemp -d)
    t0=$(date +%s%N)
    KILN_CACHE_DIR=$c KILN_DEVICE=cpu timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "${args[@]}" > $R/ex-$name-cpu.txt 2>&1
    printf "%-5s           %-18s rc %d  %d ms\n" cpu "$name" "$?" "$(( ($(date +%s%N) - t0) / 1000000 ))" >> $R/examples.txt
    rm -rf "$c"
  fi
done
done
cat $R/examples.txt
for f in $R/ex-gmm-gpu-*.txt; do echo "== $f"; grep -v '^iteration' $f | head -24; done > $OUT/gmm-traces.txt
cd $R && tar czf $OUT/logs.tgz . && cp examples.txt $OUT/
