#!/usr/bin/env bash
# Session 41, call g6: the fast tier's ptxas level (KILN_GPU_JIT_OPT, now `ptxas -O` where
# ptxas makes the cubin): examples in a new process with no cache at all (each run its own
# empty kiln cache, CUDA_CACHE_DISABLE=1), levels 3 (the default), 2 and 1 alternated, two
# rounds: the process's wall time and the trace's ptxas time ("prepare: cubin made").
# Carry ["s41-ex"].
set -u
P=$PWD/s41-ex; R=$OUT/r; mkdir -p $R
cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
cd /tmp
for round in 1 2; do
  for name in kmeans color_quantization softmax_layernorm gmm; do
    case $name in
      kmeans) args=("$P/data/digits_x.npy" "$P/data/digits_y.npy") ;;
      color_quantization) args=("$P/data/china.npy" /tmp/q.png) ;;
      gmm) args=("$P/data/iris_x.npy" "$P/data/iris_y.npy") ;;
      softmax_layernorm) args=() ;;
    esac
    for level in 3 2 1; do
      c=$(mktemp -d)
      t0=$(date +%s%N)
      KILN_GPU_JIT_OPT=$level KILN_HOST_TRACE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 CUDA_CACHE_DISABLE=1 timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "${args[@]}" > $R/$name-O$level-$round.txt 2>&1
      rc=$?; t1=$(date +%s%N)
      cub=$(grep -E 'prepare: cubin made' $R/$name-O$level-$round.txt | sed -E 's/.*made: ([0-9.]+) ms, ([0-9]+) times/\1 ms in \2/')
      tot=$(grep -E '^total time|time per iteration|kernel\(s\)' $R/$name-O$level-$round.txt | head -2 | tr '\n' ' ')
      printf "%-18s O%d round %d rc %d wall %5d ms | ptxas %s | %s\n" $name $level $round $rc $(( (t1 - t0) / 1000000 )) "$cub" "$tot" | tee -a $R/summary.txt
      rm -rf $c
    done
  done
done
cd $R && tar czf $OUT/logs.tgz .
