#!/usr/bin/env bash
# Session 24, layer norm (issue 22 §2): kiln-bench with KILN_GPU_ROW_DIV (off: main's code,
# hoist: a row value's division by a constant once a row, on: the reciprocal and two FMA
# corrections per element, one range check per step) and KILN_GPU_ROW_BOUNDS (launch bounds),
# a cache dir each, alternated, two rounds; ncu of the default; peers (peers_rows.py, cut from
# peers.py); the GPU tests of division, layer norm, softmax, std/var and fused row kernels.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && ln -sfn "$R" /work/wt-ln
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
for b in kiln-bench kiln-tests; do xz -dc $b.xz > /tmp/$b && chmod +x /tmp/$b; done
export KILN_DEVICE=cuda:0 KILN_REPO=$R
cp snapshots/*.snap "$R/tests/suite/snapshots/"   # the GPU snapshots this change alters
W="copy layernorm_rows softmax_rows ew_chain"
for round in 1 2; do
  for v in off:off off:5 hoist:off on:off on:4 on:5 on:6; do
    d=${v%%:*}; bnd=${v##*:}
    echo "== ROW_DIV=$d ROW_BOUNDS=$bnd round $round"
    KILN_GPU_ROW_DIV=$d KILN_GPU_ROW_BOUNDS=$bnd KILN_CACHE_DIR=/tmp/kc-$d-$bnd timeout 40 /tmp/kiln-bench --reps 15 $W 2>&1 | grep -vE "host µs|^$|^kiln"
  done
done 2>&1 | tee $OUT/bench.txt
(cd "$R" && KILN_CACHE_DIR=/tmp/kc-t timeout 60 /tmp/kiln-tests division layer softmax std var row_kernels l2norm mean --test-threads 16 --skip long_rows_are_read_once 2>&1 | grep -vE "^test .* ok$" | tail -40) > $OUT/tests.txt
grep -E "test result|FAILED|panicked" $OUT/tests.txt | head
timeout 70 python3 peers_rows.py 2>&1 | grep -vE "Warning|warn" | tee $OUT/peers.txt
# ncu of the variant with the least layernorm_rows time (mean of the rounds), and registers of main's code.
best=$(awk '/^== ROW_DIV/{v=$2" "$3} /^layernorm_rows/{s[v]+=$2; n[v]++} END{for(v in s) print s[v]/n[v], v}' $OUT/bench.txt | sort -n | head -1)
echo "best: $best" | tee $OUT/ncu.txt
bd=$(echo "$best" | sed -E 's/.*ROW_DIV=([a-z]+).*/\1/'); bb=$(echo "$best" | sed -E 's/.*ROW_BOUNDS=([a-z0-9]+).*/\1/')
KILN_GPU_ROW_DIV=$bd KILN_GPU_ROW_BOUNDS=$bb KILN_CACHE_DIR=/tmp/kc-$bd-$bb timeout 45 ncu -k kiln_gpu --launch-skip 70 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats /tmp/kiln-bench --reps 3 layernorm_rows 2>&1 | grep -vE "^\s*$|----" | cut -c1-120 | tail -60 >> $OUT/ncu.txt
echo "== ncu, ROW_DIV=off ROW_BOUNDS=off, layernorm_rows" >> $OUT/ncu.txt
KILN_GPU_ROW_DIV=off KILN_CACHE_DIR=/tmp/kc-off-off timeout 30 ncu -k kiln_gpu --launch-skip 70 --launch-count 1 --section LaunchStats --section Occupancy /tmp/kiln-bench --reps 3 layernorm_rows 2>&1 | grep -E "Registers|Achieved Occupancy|Theoretical Occupancy|Duration|Block Limit" >> $OUT/ncu.txt
