#!/usr/bin/env bash
# Fuzzing (issue 26): runs each of kiln's fuzz targets (fuzz/fuzz_targets/) for SECONDS under
# libFuzzer, one after another, and exits non-zero when any target crashes (a panic, an abort,
# a timeout or running out of memory). Outside CI: CI replays the committed corpora and crash
# regressions instead (tests/suite/fuzz_corpora.rs, inside `cargo test`).
#
#   scripts/fuzz.sh SECONDS [TARGET...]   fuzz each target (all by default) for SECONDS
#   scripts/fuzz.sh merge [TARGET...]     merge what the runs found (fuzz/work/T) into the
#                                         committed corpus (fuzz/corpus/T), minimised to a set
#                                         of inputs covering the same edges
#
# Each target starts from fuzz/corpus/T and fuzz/regressions/T (the crash regressions: one that
# crashes again stops the run at once) and writes new inputs to fuzz/work/T (git-ignored); a
# crash is written to fuzz/artifacts/T/ and the run's log to fuzz/artifacts/T.log, whose last
# lines give the executions per second and in total. A crash fixed becomes a regression: copy
# the artifact to fuzz/regressions/T/ with a name saying what it found.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). kiln's toolchain is stable; cargo-fuzz passes
# nightly flags (-Zsanitizer...), which RUSTC_BOOTSTRAP=1 allows on stable. The targets are built
# without a sanitizer (kiln's Rust is safe but for FFI and JIT-compiled code, which ASan does not
# instrument) and with debug assertions and overflow checks (fuzz/Cargo.toml), into fuzz/target.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/fuzz.sh SECONDS [TARGET...] | scripts/fuzz.sh merge [TARGET...]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
mode=$1
shift
if [ "$mode" != merge ] && ! [[ "$mode" =~ ^[0-9]+$ ]]; then
  usage
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "error: cargo-fuzz is not installed (cargo install cargo-fuzz)" >&2
  exit 2
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_targets/*.rs; do
    targets+=("$(basename "$f" .rs)")
  done
fi

export RUSTC_BOOTSTRAP=1
# FUZZ_NO_BUILD=1 runs the targets built last (while the tree does not build, say).
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  cargo fuzz build --release --sanitizer none
fi
bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"

# The host kernel cache on disk would fill with the kernels of random programs.
export KILN_CACHE_DIR=off

if [ "$mode" = merge ]; then
  for t in "${targets[@]}"; do
    mkdir -p "fuzz/work/$t" fuzz/artifacts
    rm -rf "fuzz/corpus/$t.merged"
    mkdir -p "fuzz/corpus/$t.merged"
    # The fewest inputs that cover the same edges (hit counts and comparisons aside: the
    # corpora stay small enough for git and for the replay in CI).
    "$bin_dir/$t" -set_cover_merge=1 -use_counters=0 -use_cmp=0 \
      "fuzz/corpus/$t.merged" "fuzz/corpus/$t" "fuzz/work/$t" \
      >"fuzz/artifacts/$t.merge.log" 2>&1 || { tail -20 "fuzz/artifacts/$t.merge.log"; exit 1; }
    rm -rf "fuzz/corpus/$t"
    mv "fuzz/corpus/$t.merged" "fuzz/corpus/$t"
    echo "$t: $(ls "fuzz/corpus/$t" | wc -l) inputs, $(du -sb "fuzz/corpus/$t" | cut -f1) bytes"
  done
  exit 0
fi

seconds=$mode
failed=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t" "fuzz/corpus/$t" "fuzz/regressions/$t"
  log="fuzz/artifacts/$t.log"
  echo "== $t: ${seconds}s (log: $log)"
  status=0
  "$bin_dir/$t" "fuzz/work/$t" "fuzz/corpus/$t" "fuzz/regressions/$t" \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=6144 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  echo "   ${runs:-?} executions, ${rate:-?}/s, exit $status"
  if [ "$status" -ne 0 ]; then
    grep -m1 -E "panicked at|ERROR: libFuzzer" "$log" || true
    grep -E "Test unit written to" "$log" || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "crashed: ${failed[*]}" >&2
  exit 1
fi
echo "no crashes"
