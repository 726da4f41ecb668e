#!/usr/bin/env bash
# On the GPU machine: unpacks the binaries of gpu-pack/ (made by scripts/gpu/pack.sh) and runs
# the GPU tests, printing one line per test and a closing summary `gpu: N passed, N failed,
# N skipped`. Exits non-zero if a test failed (or a sanitizer found an error).
#
#   bash gpu-pack/run.sh [--sanitize] [FILTER...]
#
#   --sanitize   also run the tests under compute-sanitizer --tool memcheck and --tool racecheck
#                (timing and memory-filling tests skip themselves there); a sanitizer error
#                counts as a failed test
#   --sanitize-suite  run the array suite (tests/main.rs, FILTERs apply) under memcheck and
#                racecheck too (slow: run it on parts of the suite)
#   FILTER       run only the tests whose name contains one of these words
#
# KILN_SANITIZER_TOOLS (default "memcheck racecheck") picks the sanitizer tools, so that a slow
# pass can have a device call of its own.
#
# The pack is found beside this script, else in ./gpu-pack. Logs go to $OUT when it is set
# (the device tool brings them back), else to the unpack folder.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if compgen -G "$here/*.xz" > /dev/null; then
  pack=$here
elif compgen -G "gpu-pack/*.xz" > /dev/null; then
  pack=$(cd gpu-pack && pwd)
else
  echo "run.sh: no gpu-pack/*.xz found (run scripts/gpu/pack.sh first, carry gpu-pack)" >&2
  exit 2
fi

sanitize=0
sanitize_suite=0
filters=()
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    --sanitize-suite) sanitize_suite=1 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) filters+=("$arg") ;;
  esac
done

work=${TMPDIR:-/tmp}/kiln-gpu-pack
rm -rf "$work"
mkdir -p "$work"
for f in "$pack"/*.xz; do
  out=$work/$(basename "$f" .xz)
  xz -dc "$f" > "$out" && chmod +x "$out" || { echo "run.sh: cannot unpack $f" >&2; exit 2; }
done
logs=${OUT:-$work}
mkdir -p "$logs"
[[ -f "$pack/MANIFEST" ]] && cat "$pack/MANIFEST"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true

passed=0 failed=0 skipped=0
# Runs one test pass; adds its summary line to the totals.
run_pass() {
  local name=$1; shift
  local log=$logs/gpu-tests-$name.log
  echo "== $name: $*"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -1)
  if [[ -z "$line" ]]; then
    echo "== $name: no summary (exit $rc)"
    failed=$((failed + 1))
    return
  fi
  read -r p _ f _ s _ <<< "${line//,/}"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  # A sanitizer error, or a crash after the summary, without a failed test.
  if (( rc != 0 && f == 0 )); then
    echo "== $name: exit status $rc"
    failed=$((failed + 1))
  fi
}

bin=$work/kiln-gpu-selftest
run_pass plain "$bin" "${filters[@]}"

# The array suite (tests/main.rs) on the device: every test that materialises arrays runs its
# kernels on cuda:0. The examples' tests need the example binaries, which are not packed.
# libtest's summary is turned into the totals' form.
suite_pass() {
  local name=$1; shift
  local log=$logs/gpu-tests-$name.log
  echo "== $name: $*"
  KILN_DEVICE=cuda:0 KILN_REPO=$PWD KILN_DATA=$pack/data "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line p f s
  line=$(grep -E '^test result: ' "$log" | tail -1)
  if [[ -z "$line" ]]; then
    echo "== $name: no summary (exit $rc)"; failed=$((failed + 1)); return
  fi
  p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<< "$line")
  f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<< "$line")
  s=$(sed -E 's/.* ([0-9]+) ignored.*/\1/' <<< "$line")
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  echo "$p passed, $f failed, $s skipped"
}
suite_filters=()
for f in "${filters[@]}"; do suite_filters+=("$f"); done
suite_pass suite "$work/kiln-tests" --skip examples:: "${suite_filters[@]}"

if (( sanitize )); then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [[ -x "$cs" ]]; then
    # API errors are not counted: the tests provoke some on purpose (out of memory, invalid
    # PTX, unknown kernel names) and the runtime probes kernel parameters until
    # cuFuncGetParamInfo says there are no more. Memory access errors and races are counted.
    for tool in ${KILN_SANITIZER_TOOLS:-memcheck racecheck}; do
      KILN_GPU_SANITIZER=1 KILN_SANITIZER_TOOL=$tool run_pass "$tool" "$cs" --tool "$tool" --report-api-errors no --error-exitcode 99 \
        "$bin" "${filters[@]}"
    done
  else
    echo "run.sh: compute-sanitizer not found; sanitizer passes not run"
    failed=$((failed + 1))
  fi
fi

if (( sanitize_suite )); then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # CUDA_MODULE_LOADING=EAGER: with the driver's lazy loading (the default), threads that
  # create cuBLAS handles and cuFFT plans while others load modules deadlock inside libcuda
  # under compute-sanitizer 13.0 (every thread waits on one of the driver's locks; seen with
  # `streams::stress_concurrent_threads_match_the_evaluator`, which passes plainly and, with
  # eager loading, under both tools).
  for tool in ${KILN_SANITIZER_TOOLS:-memcheck racecheck}; do
    CUDA_MODULE_LOADING=EAGER KILN_GPU_SANITIZER=1 KILN_SANITIZER_TOOL=$tool suite_pass "suite-$tool" "$cs" --tool "$tool" --report-api-errors no --error-exitcode 99 \
      "$work/kiln-tests" --skip examples:: --test-threads 4 "${suite_filters[@]}"
    if grep -qE '^========= (ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9])' "$logs/gpu-tests-suite-$tool.log"; then
      echo "== suite-$tool: the sanitizer reported errors"
      failed=$((failed + 1))
    fi
  done
fi

echo "gpu: $passed passed, $failed failed, $skipped skipped"
(( failed == 0 ))
