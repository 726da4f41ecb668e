#!/usr/bin/env bash
# Session 37, call q2: the suite's GPU tests of scatters and k-means on the queued GPU scatter
# (the new scatter_queue tests among them). Carry q-tests/ (kiln-tests.xz).
set -u
Q=$PWD/q-tests; R=$PWD
nvidia-smi -L
cat "$Q/MANIFEST"
(cd "$Q" && xz -d -T8 -k -f kiln-tests.xz && chmod +x kiln-tests)
export KILN_DEVICE=cuda:0
cd "$R" && KILN_REPO=$R timeout 400 "$Q/kiln-tests" --skip examples:: queue scatter kmeans bincount screen argmin same_bits indexing > "$OUT/tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/tests.txt"
grep -E "FAILED|panicked|tests rc|test result|^test .*queue" "$OUT/tests.txt" | tail -20
