#!/usr/bin/env bash
# Installs what kiln's build needs on a fresh Debian 12 (or Ubuntu 24.04) x86-64 machine with Rust:
# LLVM/MLIR 22 (static libraries), clang 22 (libclang for bindgen) and zstd. Idempotent: does
# nothing when they are present. Run as root or with sudo. The README's quick start and CI call it.
set -euo pipefail
cd "$(dirname "$0")/.."

LLVM_PREFIX=/usr/lib/llvm-22
LLVM_PACKAGES=(llvm-22-dev libmlir-22-dev libpolly-22-dev clang-22 libzstd-dev)

# Runs a command as root: directly when root, else through sudo.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "error: need root or sudo for: $*" >&2
    exit 1
  fi
}

# Everything the build needs from those packages, all static: melior/mlir-sys link libMLIR*.a,
# melior-macro's tblgen links libMLIRTableGen.a, inkwell/llvm-sys links libLLVM*.a and libPolly.a,
# bindgen loads libclang, and `llvm-config --system-libs` asks for -lzstd. (mlir-tblgen, the
# program, is not needed: it is in mlir-22-tools, which is not installed.)
llvm_ready() {
  [ -x "$LLVM_PREFIX/bin/llvm-config" ] &&
    [ -f "$LLVM_PREFIX/lib/libMLIRCAPIIR.a" ] &&
    [ -f "$LLVM_PREFIX/lib/libMLIRTableGen.a" ] &&
    [ -f "$LLVM_PREFIX/lib/libLLVMCore.a" ] &&
    [ -f "$LLVM_PREFIX/lib/libPolly.a" ] &&
    [ -x "$LLVM_PREFIX/bin/clang++" ] &&
    compgen -G "$LLVM_PREFIX/lib/libclang-22.so*" >/dev/null &&
    [ -f /usr/include/zstd.h ]
}

# On Debian 12 the *-22 packages (1:22.1.8-1~deb12u1) come from Debian's own security archive,
# `deb.debian.org/debian-security bookworm-security main`, signed by the key in
# debian-archive-keyring; not from apt.llvm.org. Stock images list that suite already
# (/etc/apt/sources.list.d/debian.sources); add it where a trimmed image lacks it.
ensure_bookworm_security() {
  local codename=""
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true
  if [ "$codename" != bookworm ]; then
    echo "note: not Debian 12 (VERSION_CODENAME=${codename:-?}); using the configured apt sources as they are"
    return
  fi
  if grep -rqsE '^[^#]*bookworm-security' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return
  fi
  echo "adding the bookworm-security apt source (it provides llvm-22 on Debian 12)"
  as_root tee /etc/apt/sources.list.d/kiln-bookworm-security.sources >/dev/null <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
}

if llvm_ready; then
  echo "LLVM/MLIR 22: present in $LLVM_PREFIX"
else
  echo "LLVM/MLIR 22: installing ${LLVM_PACKAGES[*]}"
  ensure_bookworm_security
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update
  as_root apt-get install -y "${LLVM_PACKAGES[@]}"
  if ! llvm_ready; then
    echo "error: LLVM/MLIR 22 still incomplete in $LLVM_PREFIX after installing ${LLVM_PACKAGES[*]}" >&2
    exit 1
  fi
fi
"$LLVM_PREFIX/bin/llvm-config" --version


# NVIDIA's ptxas and libdevice (fetched from PyPI wheels, not committed): the tests assemble the
# generated PTX with ptxas, and GPU kernels calling math functions link libdevice.
# .cargo/config.toml points KILN_PTXAS and KILN_LIBDEVICE here. Best effort: without them those
# checks are skipped (and say so).
CUDA_TOOLS=.toolchain/cuda
if [ -x "$CUDA_TOOLS/bin/ptxas" ] && [ -f "$CUDA_TOOLS/nvvm/libdevice/libdevice.10.bc" ]; then
  echo "ptxas and libdevice: present in $CUDA_TOOLS"
else
  if ! command -v python3 >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update && as_root apt-get install -y python3 ca-certificates || true
  fi
  python3 scripts/fetch_cuda_tools.py "$CUDA_TOOLS" || echo "warning: could not fetch ptxas/libdevice; PTX checks will be skipped"
fi
