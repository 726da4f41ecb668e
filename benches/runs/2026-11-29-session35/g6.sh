#!/usr/bin/env bash
# Session 35, call 6: the GPU tests of scans (the look-ahead scan with a whole tile's runs
# unrolled), compactions, masks and the replay. Carry la-pack/.
set -u
R=$PWD; P=$PWD/la-pack
nvidia-smi -L
cd "$P" && xz -d -T16 -k -f kiln-tests.xz && chmod +x kiln-tests && cat MANIFEST
cd "$R"
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no
timeout 400 "$P/kiln-tests" scan cum compaction nonzero mask gpu_replay random_params --test-threads 8 > "$OUT/tests.txt" 2>&1; echo "tests rc $?" >> "$OUT/tests.txt"
grep -E "test result|FAILED|panicked|rc " "$OUT/tests.txt" | head -20
