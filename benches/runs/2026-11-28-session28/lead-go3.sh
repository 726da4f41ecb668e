#!/usr/bin/env bash
# Session 28, call 3: the whole GPU suite on merged main (km's owned bins, the GPU warm-up), then
# KILN_WARM_UP off/on alternated (first_call rows, --quick inputs), three rounds, then k-means and
# its peers.
cd "$(dirname "$0")"; P=$PWD; R=$(cd .. && pwd)
nvidia-smi -L
mkdir -p "$P/x" && tar -C "$P/x" -xJf "$P/bins.tar.xz" && for f in "$P"/x/*; do xz -0 -T16 -c "$f" > "$P/$(basename "$f").xz"; done
cd "$R" && KILN_DATA=$P/data timeout 330 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^== |passed, .* failed|FAILED|panicked|suite rc|test result" "$OUT/suite.txt" | tail -20
B=$P/x/kiln-bench
for r in 1 2 3; do for s in off on; do
  echo "== round $r warm-up $s" | tee -a "$OUT/warm.txt"
  KILN_WARM_UP=$s KILN_DEVICE=cuda:0 timeout 40 $B first_call --quick --reps 3 2>&1 | grep -E "^first" | tee -a "$OUT/warm.txt"
done; done
KILN_DEVICE=cuda:0 timeout 40 $B copy kmeans --reps 25 2>&1 | grep -E "^(copy|kmeans)" | tee "$OUT/kmeans.txt"
cd "$P" && timeout 40 python3 kmeans_peers.py 2>&1 | grep -v Warning | tail -10 | tee "$OUT/peers.txt"
cd "$OUT" && tar -czf all.tgz *.txt *.log 2>/dev/null; ls -la "$OUT"
