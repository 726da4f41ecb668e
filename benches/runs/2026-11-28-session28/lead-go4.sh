#!/usr/bin/env bash
# Session 28's final call: the whole GPU suite on merged main (km's owned bins, cpu's host
# label blocks), then kiln-bench's k-means rows and copy.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz" && for f in "$P"/x/*; do xz -0 -T16 -c "$f" > "$P/$(basename "$f").xz"; done
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -20
KILN_DEVICE=cuda:0 timeout 30 $P/x/kiln-bench copy kmeans --reps 25 2>&1 | grep -E "^(copy|kmeans)" | tee "$OUT/kmeans.txt"
cd "$OUT" && tar -czf all.tgz *.txt *.log 2>/dev/null; ls -la "$OUT"
