#!/usr/bin/env bash
# Makes again the cubins of kiln's own CUDA C++ that the library carries (runtime/prebuilt/:
# the radix sort, the linear-algebra and the solver helpers), as NVRTC compiles them on a GPU.
# Needed when one of those sources changes (the crates' `the_prebuilt_module_is_of_this_source`
# tests fail until it is done).
#
# On the GPU machine, over a pack holding kiln-tests.xz (scripts/gpu/pack.sh), with an empty
# disk cache: the GPU tests that load the three modules compile the changed ones with NVRTC and
# keep them in the cache; their entries (the key holds the source, then the PTX and the cubin)
# come back in $OUT/modules.tgz. Then, here:
#
#   python3 scripts/gpu/prebuilt_extract.py modules.tgz runtime/prebuilt
#
# writes each module's cubin (LABEL.sm_XX.cubin) and its source's digest (LABEL.sha256); `PREBUILT` in
# runtime/src/kiln_modules.rs lists them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pack=${1:-$root/gpu-pack}
work=$(mktemp -d)
xz -dc "$pack/kiln-tests.xz" > "$work/kiln-tests" && chmod +x "$work/kiln-tests"
cache=$(mktemp -d)
KILN_DEVICE=cuda:0 KILN_REPO=$root INSTA_WORKSPACE_ROOT=$root INSTA_UPDATE=no \
  KILN_DATA=$pack/data KILN_CACHE_DIR=$cache \
  "$work/kiln-tests" linalg sorts_gpu vendor_gpu einsum --test-threads 8 | grep -E "^test result" || true
# (a changed source fails gpu_the_linear_algebra_helpers_compile_once's prebuilt check: expected)
mkdir -p "$work/modules"
grep -rl --null "kiln nvrtc module" "$cache" | xargs -0 -r -I{} cp {} "$work/modules/"
ls -la "$work/modules"
tar czf "${OUT:-$root}/modules.tgz" -C "$work/modules" .
