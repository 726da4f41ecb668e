#!/usr/bin/env bash
# The whole array suite under compute-sanitizer (issue 26 §2), split into parts that run side by
# side on every GPU of the machine, each part in a process of its own:
#
#   bash sanitize_parts.sh KILN_TESTS SECONDS [TOOL...] [-- NAMES_FILE]
#
# KILN_TESTS is the suite's test binary (unpacked); SECONDS the wall-clock budget: no part
# starts after 85% of it, and a part still running at the end is stopped and its finished tests
# recorded. TOOLs default to memcheck initcheck synccheck racecheck. NAMES_FILE (optional) holds
# the test names to run (one a line), e.g. the `left-TOOL.txt` of an earlier run; by default every
# test of the suite but the examples' (their binaries are not packed).
#
# Each (tool, shard) part runs `compute-sanitizer --tool TOOL kiln-tests --exact NAMES...` with
# KILN_GPU_SANITIZER=1 (timing and memory-filling tests skip themselves, and so do kernels that
# fault on purpose) and KILN_SANITIZER_TOOL=TOOL (what a tool does not support skips), eager
# module loading
# (lazy loading deadlocks the driver under the sanitizer with many threads), and for memcheck and
# initcheck the pool off (`KILN_GPU_POOL=off`: every buffer its own allocation, so the bounds and
# the initialised bytes the tools see are the buffer's own). KILN_PROP_CASES (default 200 here)
# sizes the random-program test.
#
# PARTS="memcheck:5 initcheck:3 ..." runs only those (tool, shard) parts (to read the logs of
# parts that reported errors again); SHARDS (default: two per worker) and PARTS_PER_GPU (default
# 2) shape the split.
#
# Output in $OUT (else ./sanitize-out): summary.txt (a line per part: tool, shard, tests passed
# and failed, the sanitizer's summary, exit status, seconds), part-logs.tar.gz (the log of every
# part that failed or reported an error), and left-TOOL.txt: the tests not run or not finished
# per tool (the device tool brings back at most 8 files, so the parts' files stay in a temporary
# folder).
set -uo pipefail

bin=${1:?usage: sanitize_parts.sh KILN_TESTS SECONDS [TOOL...] [-- NAMES_FILE]}
budget=${2:?seconds}
shift 2
tools=()
names_file=
while (( $# )); do
  if [[ $1 == -- ]]; then names_file=${2:?names file}; shift 2; continue; fi
  tools+=("$1"); shift
done
(( ${#tools[@]} )) || tools=(memcheck initcheck synccheck racecheck)
out=${OUT:-$PWD/sanitize-out}
work=$(mktemp -d)
mkdir -p "$out" "$work/parts"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[[ -x $cs ]] || { echo "no compute-sanitizer" >&2; exit 2; }
gpus=$(nvidia-smi -L | wc -l)
per_gpu=${PARTS_PER_GPU:-2}
workers=$(( gpus * per_gpu ))
start=$(date +%s)
deadline=$(( start + budget ))
last_start=$(( start + budget * 85 / 100 ))

if [[ -n $names_file ]]; then
  cp "$names_file" "$out/names.txt"
else
  "$bin" --list 2>/dev/null | sed -n 's/: test$//p' | grep -v '^examples::' > "$out/names.txt"
fi
total=$(wc -l < "$out/names.txt")
shards=${SHARDS:-$(( workers * 2 ))}
# Shards interleave the names (neighbours in a module are alike in cost), then the (tool, shard)
# parts are dealt to the workers.
for (( s = 0; s < shards; s++ )); do
  awk -v s=$s -v n=$shards 'NR % n == s' "$out/names.txt" > "$work/parts/shard-$s.txt"
done
tasks=()
if [[ -n ${PARTS:-} ]]; then
  read -r -a tasks <<< "$PARTS"
else
  for tool in "${tools[@]}"; do
    for (( s = 0; s < shards; s++ )); do tasks+=("$tool:$s"); done
  done
fi
echo "sanitize_parts: $total tests, ${#tools[@]} tools (${tools[*]}), $shards shards, $workers workers on $gpus GPU(s), ${budget}s"

run_part() {
  local tool=$1 shard=$2 gpu=$3
  local names=$work/parts/shard-$shard.txt log=$work/parts/$tool-$shard.log
  local now left pool=on t0 rc
  now=$(date +%s)
  left=$(( deadline - now ))
  if (( now > last_start || left < 20 )); then
    echo "$tool shard=$shard not-started" >> "$out/summary.txt"
    return
  fi
  [[ $tool == memcheck || $tool == initcheck ]] && pool=off
  t0=$now
  mapfile -t list < "$names"
  CUDA_VISIBLE_DEVICES=$gpu KILN_DEVICE=cuda:0 KILN_GPU_SANITIZER=1 KILN_SANITIZER_TOOL=$tool \
    CUDA_MODULE_LOADING=EAGER \
    KILN_GPU_POOL=$pool KILN_PROP_CASES=${KILN_PROP_CASES:-200} \
    timeout -k 5 $(( left - 5 )) "$cs" --tool "$tool" --report-api-errors no --error-exitcode 99 \
    --print-limit 50 "$bin" --exact --test-threads 4 "${list[@]}" > "$log" 2>&1
  rc=$?
  local result summary p f
  result=$(grep -E '^test result: ' "$log" | tail -1)
  summary=$(grep -E '^========= (ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY)' "$log" | tail -1 | sed 's/^========= //')
  p=$(grep -cE '^test .* \.\.\. ok$' "$log")
  f=$(grep -cE '^test .* \.\.\. FAILED$' "$log")
  echo "$tool shard=$shard gpu=$gpu passed=$p failed=$f rc=$rc secs=$(( $(date +%s) - t0 )) ${result:+[$result]} ${summary:+[$summary]}" >> "$out/summary.txt"
  # Tests that did not finish (the part was stopped): for the next call.
  if [[ -z $result ]]; then
    grep -E '^test .* \.\.\. (ok|FAILED|ignored)$' "$log" | sed -E 's/^test (.*) \.\.\. .*/\1/' | sort > "$log.done"
    sort "$names" | comm -23 - "$log.done" >> "$out/left-$tool.txt"
  fi
  # Keep only the logs worth reading.
  if (( rc == 0 )) && [[ -n $result ]]; then rm -f "$log" "$log.done"; fi
}

# A shared queue: each worker takes the next part (a counter under a lock), so slow tools spread
# over all workers.
echo 0 > "$work/next"
worker() {
  local gpu=$(( $1 % gpus )) i task
  while true; do
    i=$(flock "$work/next" bash -c 'i=$(cat "$0"); echo $((i + 1)) > "$0"; echo $i' "$work/next")
    (( i < ${#tasks[@]} )) || return
    task=${tasks[$i]}
    run_part "${task%%:*}" "${task##*:}" "$gpu"
  done
}

: > "$out/summary.txt"
for (( w = 0; w < workers; w++ )); do worker "$w" & done
wait
for tool in "${tools[@]}"; do
  [[ -f $out/left-$tool.txt ]] || : > "$out/left-$tool.txt"
  # Parts never started leave their whole shard.
  grep -E "^$tool shard=[0-9]+ not-started" "$out/summary.txt" | sed -E 's/.*shard=([0-9]+).*/\1/' |
    while read -r s; do cat "$work/parts/shard-$s.txt"; done >> "$out/left-$tool.txt"
  echo "$tool: $(wc -l < "$out/left-$tool.txt") of $total tests left"
done
sort "$out/summary.txt" -o "$out/summary.txt"
if compgen -G "$work/parts/*.log" > /dev/null; then
  tar -C "$work/parts" -czf "$out/part-logs.tar.gz" $(cd "$work/parts" && ls *.log)
fi
cat "$out/summary.txt"
echo "sanitize_parts: $(( $(date +%s) - start ))s"
