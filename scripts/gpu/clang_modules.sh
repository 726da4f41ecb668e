#!/usr/bin/env bash
# Makes again the sm_90 cubins of kiln's modules that are compiled here rather than by NVRTC on
# a GPU (runtime/prebuilt/LABEL.sm_90.cubin, and the SHA-256 of the source each was made from):
# the bytecode interpreter (exec/src/cuda/interp.cu) and the strided gather
# (runtime/src/gather.cu). Needed when one of them changes (the tests
# `the_prebuilt_interpreter_is_of_this_source` and `gather::tests::the_prebuilt_module_is_of_this_source`
# fail until it is done).
#
# Here, with no GPU: clang compiles the CUDA C++ (device code only, no CUDA headers) to PTX
# with libdevice linked (the math functions kiln's kernels use), and the toolkit's ptxas
# assembles it for sm_90. Needs clang-22 (the LLVM the build uses) and `./scripts/setup.sh`'s
# .toolchain (ptxas, libdevice).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/runtime/prebuilt
work=$(mktemp -d)
for module in kiln_interp:exec/src/cuda/interp.cu kiln_gather:runtime/src/gather.cu; do
  label=${module%%:*}
  src=$root/${module#*:}
  clang-22 -x cuda --cuda-gpu-arch=sm_90 --cuda-device-only -nocudainc -nocudalib \
    -Xclang -target-feature -Xclang +ptx80 -O3 -S -o "$work/$label.ptx" "$src" \
    -Xclang -mlink-builtin-bitcode -Xclang "$root/.toolchain/cuda/nvvm/libdevice/libdevice.10.bc"
  "$root/.toolchain/cuda/bin/ptxas" -arch=sm_90 -O3 "$work/$label.ptx" -o "$out/$label.sm_90.cubin"
  sha256sum "$src" | cut -d' ' -f1 | tr -d '\n' > "$out/$label.sha256"
  ls -la "$out/$label.sm_90.cubin"
done
