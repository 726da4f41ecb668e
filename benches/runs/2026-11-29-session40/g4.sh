#!/usr/bin/env bash
# Session 40, call g4: where gmm's ~190 ms before its first module lookups go (cuBLAS and
# cuSOLVER: the library's load against its handle), with e608fd6's trace points; cold, then
# over the kiln cache, twice. Carry ["s40-ex"].
set -u
P=$PWD/s40-ex; R=$OUT; cat $P/MANIFEST
xz -dc $P/kiln-examples.xz > /tmp/kiln-examples && chmod +x /tmp/kiln-examples
cd /tmp
for round in 1 2; do
  c=$(mktemp -d)
  for mode in cold disk; do
    KILN_HOST_TRACE=1 CUDA_CACHE_DISABLE=1 KILN_CACHE_DIR=$c KILN_DEVICE=cuda:0 timeout 60 bash -c 'exec -a gmm /tmp/kiln-examples "$@"' x $P/data/iris_x.npy $P/data/iris_y.npy > $R/gmm-$mode-$round.txt 2>&1
    echo "== $mode $round"; grep -E 'total time|first EM|blas|solver|module: looked|gpu get|dispatch key' $R/gmm-$mode-$round.txt
  done
  rm -rf "$c"
done
