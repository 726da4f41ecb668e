#!/usr/bin/env bash
# Session 32, call 6: kiln's own CUDA C++ modules (radix sort, linear algebra, solver helpers)
# as NVRTC compiled them on this machine, taken from the disk cache's entries (key with the
# source, then PTX and cubin) after the GPU tests that load them. (scripts/gpu/prebuilt.sh is
# this, kept; scripts/gpu/prebuilt_extract.py wrote runtime/prebuilt/ from mods.tgz.)
set -u
R=$PWD
P=$PWD/km-pack
cd "$P" && xz -dc kiln-tests.xz > kiln-tests && chmod +x kiln-tests
nvidia-smi -L
KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data KILN_CACHE_DIR=/tmp/cc timeout 200 ./kiln-tests linalg sorts_gpu vendor_gpu einsum --test-threads 8 > /tmp/tests.txt 2>&1
grep -E "^test result|FAILED" /tmp/tests.txt | head
mkdir -p /tmp/mods
grep -rl --null "kiln nvrtc module" /tmp/cc | xargs -0 -I{} cp {} /tmp/mods/
ls -la /tmp/mods
tar czf "$OUT/mods.tgz" -C /tmp/mods .
cp /tmp/tests.txt "$OUT/tests.txt"
