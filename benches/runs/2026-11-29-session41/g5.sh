#!/usr/bin/env bash
# Session 41, call g5: pca (digits: centring, covariance by cuBLAS, eigh by cuSOLVER, its
# libraries preloaded beside the context's creation) in a new process, cold and over the disk
# cache, three rounds, host trace on: whether the library loads still wait at their steps.
# (Its first try, g5-a, ran color_quantization and a binary without pca.) Carry ["s41-ex"].
set -u
P=$PWD/s41-ex; R=$OUT/r; mkdir -p $R
cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
cd /tmp
for round in 1 2 3; do
  for name in pca; do
    case $name in
      pca) args=("$P/data/digits_x.npy") ;;
      color_quantization) args=("$P/data/china.npy" /tmp/q.png) ;;
    esac
    c=$(mktemp -d)
    for mode in cold disk; do
      t0=$(date +%s%N)
      KILN_HOST_TRACE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 CUDA_CACHE_DISABLE=1 timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "${args[@]}" > $R/$name-$mode-$round.txt 2>&1
      echo "$name $mode $round rc $? $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a $R/wall.txt
    done
    rm -rf $c
  done
done
for f in $R/*.txt; do echo "== $f"; grep -E 'library loaded|handle made|upload: start|dispatch key|cubin made|compiled:|total|time' $f; done
cd $R && tar czf $OUT/logs.tgz .
