#!/usr/bin/env bash
# Builds kiln's GPU test binary here (release, no GPU needed), strips it and compresses it with
# xz -9 into gpu-pack/ at the repository's root, with run.sh beside it. On the GPU machine (no
# Rust there) `bash gpu-pack/run.sh` unpacks and runs it.
#
#   scripts/gpu/pack.sh            # build and pack
#   scripts/gpu/pack.sh --no-build # pack what target/release already holds
#
# With the device tool: run with carry ["gpu-pack"] and the command `bash gpu-pack/run.sh`
# (add --sanitize for compute-sanitizer's memcheck and racecheck). The pack must stay under
# 60 MiB (a device run carries at most 64 MiB with the working tree).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
pack=gpu-pack
limit=$((60 * 1024 * 1024))
# The binaries that go to the GPU machine: "package:binary".
bins=("kiln-runtime:kiln-gpu-selftest" "kiln:kiln-bench" "kiln:kiln-examples")

if [[ "${1:-}" != "--no-build" ]]; then
  for entry in "${bins[@]}"; do
    features=()
    [[ "${entry##*:}" == kiln-examples ]] && features=(--features examples-bin)
    cargo build --release -p "${entry%%:*}" --bin "${entry##*:}" "${features[@]}"
  done
  cargo test --release --test main --no-run
fi
# The suite's test binary (tests/main.rs), the newest one built.
test_bin=$(ls -t target/release/deps/main-* 2>/dev/null | grep -v '\.d$' | head -1)
[[ -n "$test_bin" ]] || { echo "pack.sh: no test binary (cargo test --release --test main --no-run)" >&2; exit 1; }
mkdir -p target/release/pack-staging
cp "$test_bin" target/release/kiln-tests
bins+=("kiln:kiln-tests")

rm -rf "$pack"
mkdir -p "$pack"
{
  echo "kiln gpu pack"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(ldd --version 2>&1 | head -1)"
} > "$pack/MANIFEST"

for entry in "${bins[@]}"; do
  bin=${entry##*:}
  src=target/release/$bin
  [[ -x "$src" ]] || { echo "pack.sh: $src is missing (build it first)" >&2; exit 1; }
  cp "$src" "$pack/$bin"
  strip "$pack/$bin"
  stripped=$(stat -c %s "$pack/$bin")
  # The newest glibc symbol version it needs (the GPU machine has glibc 2.39).
  glibc=$(objdump -T "$pack/$bin" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 || true)
  sum=$(sha256sum "$pack/$bin" | cut -d' ' -f1)
  xz -9 -f "$pack/$bin"
  echo "$bin: ${stripped} bytes stripped, $(stat -c %s "$pack/$bin.xz") bytes xz, needs ${glibc:-?}, sha256 $sum" >> "$pack/MANIFEST"
done
# The data sets the suite reads (shared/ does not travel to the GPU machine).
mkdir -p "$pack/data"
cp ../shared/data/*.npy "$pack/data/"
cp scripts/gpu/run.sh "$pack/run.sh"
cp scripts/gpu/examples.sh "$pack/examples.sh"
# The peers' scripts (CuPy, torch, JAX on the same workloads), run beside kiln-bench.
mkdir -p "$pack/peers"
cp ../shared/bench/peers.py ../shared/bench/kmeans_peers.py scripts/gpu/allreduce_peers.py "$pack/peers/"
chmod +x "$pack/run.sh"

total=$(du -sb "$pack" | cut -f1)
echo "total: $total bytes" >> "$pack/MANIFEST"
cat "$pack/MANIFEST"
if (( total > limit )); then
  echo "pack.sh: $pack is $total bytes, over the 60 MiB limit" >&2
  exit 1
fi
