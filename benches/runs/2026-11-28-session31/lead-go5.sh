#!/bin/bash
# lead, session 31, device call 5: kiln's own CUDA C++ (linalg helpers) compiled once per
# device and kept in the disk cache. Each example truly cold (CUDA_CACHE_DISABLE=1, an empty
# kiln cache), traced, then again in a new process over the kiln cache it left; GPU tests of
# linalg, sorts, selection.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R
cd $P; for f in kiln-examples kiln-tests; do rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
data=$P/data
cd /tmp
for name in gmm kmeans digits_stats image_pipeline softmax_layernorm; do
  case $name in
    digits_stats) args=("$data/digits_x.npy") ;;
    kmeans) args=("$data/digits_x.npy" "$data/digits_y.npy") ;;
    gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
    image_pipeline) args=("$data/china.npy" /tmp/edges.png) ;;
    softmax_layernorm) args=() ;;
  esac
  c=$(mktemp -d)
  for mode in cold disk; do
    t0=$(date +%s%N)
    KILN_HOST_TRACE=1 CUDA_CACHE_DISABLE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" $P/kiln-examples "${args[@]}" > $R/ex-$name-gpu-$mode.txt 2>&1
    rc=$?
    t1=$(date +%s%N)
    printf "%-5s %-18s rc %d  %d ms\n" "$mode" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
  done
  rm -rf "$c"
done
cd $ROOT
KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-t timeout 200 $P/kiln-tests linalg sort select radix topk --test-threads 8 > $R/tests.txt 2>&1
{ cat $R/examples.txt; for f in $R/ex-gmm-*.txt $R/ex-kmeans-*.txt; do echo "== $f"; sed -n '/host trace/,$p' $f | head -16; done; grep -E "test result|FAILED|panicked" $R/tests.txt | head; } > $OUT/summary.txt 2>&1
cat $OUT/summary.txt
