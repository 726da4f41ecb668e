#!/usr/bin/env bash
# Session 21's final device call (one GPU): the whole GPU suite (run.sh) on merged main, then
# where gmm's cold 4.6 s goes: a new process with an empty kiln cache, its cache files' times
# (when each kernel was stored, from the process start), then the same with the cache warm.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/final-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final-suite.txt" | tail -20
X=/tmp/kiln-gpu-pack/kiln-examples
{ rm -rf /tmp/kce; a="$P/data/iris_x.npy $P/data/iris_y.npy"
  for run in cold warm; do
    s=$(date +%s.%N); (cd /tmp && KILN_CACHE_DIR=/tmp/kce KILN_DEVICE=cuda:0 timeout 20 bash -c "exec -a gmm $X $a" > /tmp/ex.txt 2>&1); rc=$?
    e=$(date +%s.%N); echo "gmm $run rc=$rc wall $(awk "BEGIN{printf \"%.0f\", ($e - $s)*1000}") ms: $(grep -iE 'time' /tmp/ex.txt | head -2 | tr '\n' ' ')"
    [ $run = cold ] && find /tmp/kce -type f -printf '%T@ %s %P\n' | sort -n | awk -v s=$s '{printf "  +%.0f ms %d B %s\n", ($1 - s)*1000, $2, $3}'
  done; } 2>&1 | tee "$OUT/final-gmm.txt"
