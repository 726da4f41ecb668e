#!/usr/bin/env bash
# Installs what kiln's build needs on Debian 12 / Ubuntu 24.04: LLVM and MLIR 22 (static
# libraries), clang 22 (libclang for bindgen) and zstd. Idempotent: does nothing when present.
set -euo pipefail

need=()
[ -x /usr/lib/llvm-22/bin/llvm-config ] || need+=(llvm-22-dev)
[ -f /usr/lib/llvm-22/lib/libMLIR.a ] || [ -n "$(ls /usr/lib/llvm-22/lib/libMLIRIR.a 2>/dev/null)" ] || need+=(libmlir-22-dev)
[ -f /usr/lib/llvm-22/lib/libPolly.a ] || need+=(libpolly-22-dev)
[ -e /usr/lib/llvm-22/lib/libclang.so ] || [ -n "$(ls /usr/lib/llvm-22/lib/libclang-22*.so* 2>/dev/null)" ] || need+=(clang-22)
[ -f /usr/include/zstd.h ] || need+=(libzstd-dev)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  SUDO=sudo
fi
echo "kiln setup: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q llvm-22-dev libmlir-22-dev libpolly-22-dev clang-22 libzstd-dev
