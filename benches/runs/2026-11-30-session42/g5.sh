#!/usr/bin/env bash
# Session 42, call g5: gmm and pca (both call cuSOLVER) in a new process over the kiln cache a
# cold run left ("disk"), with the libraries the program called remembered there (default)
# against the same cache with that entry removed (no-hint: `programs/` deleted before the
# disk run), alternated, three rounds; cold runs have CUDA_CACHE_DISABLE=1 and an empty kiln
# cache. Host trace on. Carry ["s42-ex"].
set -u
P=$PWD/s42-ex; R=$OUT/r; mkdir -p $R
nvidia-smi -L; nproc; cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
data=$P/data
cd /tmp
run_one() {
  local mode=$1 variant=$2 name=$3; shift 3
  t0=$(date +%s%N)
  env KILN_HOST_TRACE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 CUDA_CACHE_DISABLE=1 timeout 60 \
    bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples "$@" > $R/ex-$name-$mode-$variant-$round.txt 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf "%-6s %-9s %-6s round %d rc %d  %d ms\n" "$mode" "$variant" "$name" "$round" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
}
for round in 1 2 3; do
  for name in gmm pca; do
    case $name in
      gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
      pca) args=("$data/digits_x.npy") ;;
    esac
    for variant in hint no-hint; do
      c=$(mktemp -d)
      run_one cold $variant $name "${args[@]}"
      ls $c/programs > $R/programs-$name-$variant-$round.txt 2>&1
      [ $variant = no-hint ] && rm -rf $c/programs
      run_one disk $variant $name "${args[@]}"
      rm -rf "$c"
    done
  done
done
sort -k3,3 -k1,1 -k2,2 -s $R/examples.txt
grep -hE "solver: library loaded|solver: handle made" $R/ex-gmm-disk-*-1.txt | head -8
cd $R && tar czf $OUT/logs.tgz . && cp examples.txt $OUT/
