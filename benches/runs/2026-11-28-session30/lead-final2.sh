#!/usr/bin/env bash
# Session 30's last call: the whole GPU suite (self-tests and the array suite) on the code after
# the review's mends (9b7e800).
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz" && for f in "$P"/x/*; do xz -0 -T16 -c "$f" > "$P/$(basename "$f").xz"; done
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -20
