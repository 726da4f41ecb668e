#!/usr/bin/env bash
# Session 28, call 2: KILN_GPU_ROW_PREFETCH off/on alternated (layer norm's γ/β loads at the
# output step's start), three rounds, a cache dir each; the row GPU tests under both; PTX dumps.
cd "$(dirname "$0")"; P=$PWD
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz"
B=$P/x/kiln-bench; T=$P/x/kiln-tests
for r in 1 2 3; do for s in off on; do
  echo "== round $r prefetch $s"
  KILN_GPU_ROW_PREFETCH=$s KILN_CACHE_DIR=/tmp/kc-$s KILN_DEVICE=cuda:0 timeout 40 $B copy layernorm_rows softmax_rows --reps 25 2>&1 | grep -E "^(copy|layernorm_rows|softmax_rows) " | tee -a "$OUT/bench-$s.txt"
done; done
for s in off on; do
  KILN_GPU_ROW_PREFETCH=$s KILN_CACHE_DIR=/tmp/kd-$s KILN_DUMP=ptx KILN_DUMP_DIR=/tmp/dump-$s KILN_DEVICE=cuda:0 timeout 30 $B layernorm_rows --reps 3 > /dev/null 2>&1
  KILN_GPU_ROW_PREFETCH=$s KILN_DEVICE=cuda:0 KILN_REPO=$PWD/.. KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/kt-$s timeout 60 $T --test-threads 4 row division layer softmax 2>&1 | grep -E "test result|FAILED|panicked" | tee "$OUT/tests-$s.txt"
done
cd /tmp && tar -czf "$OUT/all.tgz" dump-off dump-on 2>/dev/null; ls -la "$OUT"
