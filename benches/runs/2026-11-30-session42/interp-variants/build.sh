#!/usr/bin/env bash
# builds s42/NAME.cu [extra clang flags] -> s42/out/NAME.cubin
set -euo pipefail
root=/work/main; src=$1; name=$2; shift 2
mkdir -p $root/s42/out
clang-22 -x cuda --cuda-gpu-arch=sm_90 --cuda-device-only -nocudainc -nocudalib \
  -Xclang -target-feature -Xclang +ptx80 -O3 -S -o "$root/s42/out/$name.ptx" "$src" \
  -Xclang -mlink-builtin-bitcode -Xclang "$root/.toolchain/cuda/nvvm/libdevice/libdevice.10.bc" "$@"
$root/.toolchain/cuda/bin/ptxas -arch=sm_90 -O3 -v "$root/s42/out/$name.ptx" -o "$root/s42/out/$name.cubin" 2>&1 | grep -E "Compiling|registers|spill" | head -8
ls -la $root/s42/out/$name.cubin | awk '{print $5}'
