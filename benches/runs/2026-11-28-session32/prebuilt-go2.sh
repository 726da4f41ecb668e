#!/bin/bash
# session 32, call 7: kiln's own CUDA C++ (radix sort, linalg and solver helpers) loaded from
# the cubins the library carries for sm_90 (runtime/prebuilt/), as session 31's lead-go6.sh measured (the examples from pre-pack,
# the tests from PACK=pre-pack2 in a second call: one pack was past the 64 MiB a call carries). Each example
# truly cold (CUDA_CACHE_DISABLE=1, an empty kiln cache), traced, then again in a new process
# over the kiln cache it left; the same with the driver's JIT cache on (a user's setting); the
# CPU; GPU tests of linalg, sorts, selection, vendor calls.
set -u
ROOT=$PWD; P=$PWD/${PACK:-pre-pack}; R=$OUT/r; mkdir -p $R
cd $P; for f in kiln-examples kiln-tests; do [ -f $f.xz ] || continue; rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
data=$P/data
cd /tmp
run_one() {
  local mode=$1 name=$2; shift 2
  local off=1; case $mode in user-*) off=;; esac
  t0=$(date +%s%N)
  KILN_HOST_TRACE=1 CUDA_CACHE_DISABLE=$off KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" $P/kiln-examples "$@" > $R/ex-$name-gpu-$mode.txt 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf "%-9s %-18s rc %d  %d ms\n" "$mode" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
}
for name in $( [ -x $P/kiln-examples ] && echo gmm kmeans digits_stats softmax_layernorm ); do
  case $name in
    digits_stats) args=("$data/digits_x.npy") ;;
    kmeans) args=("$data/digits_x.npy" "$data/digits_y.npy") ;;
    gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
    image_pipeline) args=("$data/china.npy" /tmp/edges.png) ;;
    softmax_layernorm) args=() ;;
  esac
  c=$(mktemp -d)
  for mode in cold disk; do
    run_one $mode $name "${args[@]}"
  done
  rm -rf "$c"; c=$(mktemp -d)
  for mode in user-cold user-disk; do
    run_one $mode $name "${args[@]}"
  done
  rm -rf "$c"; c=$(mktemp -d)
  t0=$(date +%s%N)
  KILN_CACHE_DIR=$c KILN_DEVICE=cpu timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" $P/kiln-examples "${args[@]}" > $R/ex-$name-cpu.txt 2>&1
  printf "%-9s %-18s rc %d  %d ms\n" cpu "$name" "$?" "$(( ($(date +%s%N) - t0) / 1000000 ))" >> $R/examples.txt
  rm -rf "$c"
done
cd $ROOT
[ -x $P/kiln-tests ] && KILN_REPO=$ROOT INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/c-t timeout 200 $P/kiln-tests linalg sort select radix topk vendor_gpu solve --test-threads 8 > $R/tests.txt 2>&1
{ cat $R/examples.txt; for f in $R/ex-gmm-*.txt; do echo "== $f"; sed -n '/host trace/,$p' $f | head -16; done; grep -E "test result|FAILED|panicked" $R/tests.txt | head; } > $OUT/summary.txt 2>&1
cat $OUT/summary.txt
