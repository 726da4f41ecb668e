#!/usr/bin/env bash
# Makes again the sm_90 cubin of kiln's bytecode interpreter that the library carries
# (runtime/prebuilt/kiln_interp.sm_90.cubin, and the SHA-256 of the source it was made from):
# needed when exec/src/cuda/interp.cu changes (the test
# `interp::tests::the_prebuilt_interpreter_is_of_this_source` fails until it is done).
#
# Here, with no GPU: clang compiles the CUDA C++ (device code only, no CUDA headers) to PTX
# with libdevice linked (the math functions kiln's kernels use), and the toolkit's ptxas
# assembles it for sm_90. Needs clang-22 (the LLVM the build uses) and `./scripts/setup.sh`'s
# .toolchain (ptxas, libdevice).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
src=$root/exec/src/cuda/interp.cu
out=$root/runtime/prebuilt
work=$(mktemp -d)
clang-22 -x cuda --cuda-gpu-arch=sm_90 --cuda-device-only -nocudainc -nocudalib \
  -Xclang -target-feature -Xclang +ptx80 -O3 -S -o "$work/interp.ptx" "$src" \
  -Xclang -mlink-builtin-bitcode -Xclang "$root/.toolchain/cuda/nvvm/libdevice/libdevice.10.bc"
"$root/.toolchain/cuda/bin/ptxas" -arch=sm_90 -O3 "$work/interp.ptx" -o "$out/kiln_interp.sm_90.cubin"
sha256sum "$src" | cut -d' ' -f1 | tr -d '\n' > "$out/kiln_interp.sha256"
ls -la "$out/kiln_interp.sm_90.cubin"
