#!/usr/bin/env bash
# Session 25's second final call: the whole GPU suite (run.sh) on merged main after the fix of
# the recording state's thread-local (the first final call's suite aborted at thread exit);
# then kiln-bench's two-kernel rows and the dispatch chain, graphs on (the default).
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
mkdir -p /work && [ -e /work/main ] || ln -sfn "$R" /work/main
nvidia-smi -L
cd "$R" && KILN_DATA=$P/data timeout 340 bash "$P/run.sh" > "$OUT/final2-suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/final2-suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/final2-suite.txt" | tail -20
grep -E "FAILED|panicked" "$OUT/gpu-tests-suite.log" | head -20
B=/tmp/kiln-gpu-pack/kiln-bench
KILN_DEVICE=cuda:0 timeout 25 $B tiny_chain tiny_multi kmeans --reps 25 2>&1 | grep -vE "^\s*$" > "$OUT/final2-bench.txt"; tail -6 "$OUT/final2-bench.txt"
