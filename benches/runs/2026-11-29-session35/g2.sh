#!/usr/bin/env bash
# Session 35, call 2: the GPU tests of the change (graph replay of the look-ahead scan, its
# tests, the random parameters' test), then where kiln's host time goes in the k-means and
# tiny-chain calls (KILN_HOST_TRACE), and each kernel's own time under ncu at the GPU's normal
# clocks (--clock-control none): copy's, the look-ahead scan's, k-means'. Carry la-pack/
# (kiln-tests.xz) or la-bench/ (kiln-bench.xz) or both (each part runs if its pack is there).
set -u
R=$PWD; P=$PWD/la-pack; B=$PWD/la-bench
nvidia-smi -L
[ -d "$P" ] && (cd "$P" && xz -d -T16 -k -f kiln-tests.xz && chmod +x kiln-tests) &
[ -d "$B" ] && (cd "$B" && xz -d -T16 -k -f kiln-bench.xz && chmod +x kiln-bench); wait
cat "$P/MANIFEST" "$B/MANIFEST" 2>/dev/null
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$R/final-pack/data
[ -d "$P" ] && timeout 150 "$P/kiln-tests" gpu_replay scan_lookahead random_params --test-threads 4 > "$OUT/tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/tests.txt"
grep -E "test result|FAILED|panicked|rc " "$OUT/tests.txt" | head -20
[ -d "$B" ] || exit 0; cd "$B"
KILN_HOST_TRACE=1 timeout 60 ./kiln-bench kmeans_iter_1048576 tiny_chain_48ops --reps 25 > "$OUT/bench-trace.txt" 2>&1; echo "bench rc $?" >> "$OUT/bench-trace.txt"
grep -E "host trace|host µs|host time|rc " "$OUT/bench-trace.txt" | head -20
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum ./kiln-bench copy cumsum_2 kmeans_iter_1048576 --reps 5 > "$OUT/ncu.txt" 2>&1; echo "ncu rc $?" >> "$OUT/ncu.txt"
grep -E "^  [a-zA-Z_0-9]+.*\(|gpu__time_duration|rc " "$OUT/ncu.txt" | awk '/\(/{k=$1} /gpu__time/{print k, $NF}' | sort | uniq -c | head -40
tail -3 "$OUT/ncu.txt"
