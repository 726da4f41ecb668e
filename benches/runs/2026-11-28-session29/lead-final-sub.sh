#!/bin/bash
# Session 29, after the final suite: the scatter, indexing, k-means, label and screen tests on
# the final code (cpu29's host-only merge and the atomic-combine refactor since the suite).
ROOT=$PWD; P=$PWD/sub-pack
xz -d -T4 $P/kiln-tests.xz && chmod +x $P/kiln-tests
KILN_DEVICE=cuda:0 KILN_REPO=$ROOT KILN_DATA=$P/data INSTA_WORKSPACE_ROOT=$ROOT INSTA_UPDATE=no KILN_CACHE_DIR=/tmp/c-sub timeout 200 $P/kiln-tests scatter indexing kmeans label screen bincount --test-threads 4 > $OUT/tests.txt 2>&1
grep -E "test result|FAILED|panicked" $OUT/tests.txt | head
