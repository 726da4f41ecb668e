#!/usr/bin/env bash
# Session 37, call q3: the queued scatter's label phase, by the existing knobs (one binary, a
# cache dir each, two rounds): the default (a lane a position, the direct screen), the expanded
# screen, two positions a thread (two lanes a position), both, and with 4 terms a step (16-byte
# loads). Carry q-pack/.
set -u
Q=$PWD/q-pack
nvidia-smi -L
cat "$Q/MANIFEST"
(cd "$Q" && xz -d -T8 -k -f kiln-bench.xz && chmod +x kiln-bench)
export KILN_DEVICE=cuda:0
for r in 1 2; do
  for v in "def:" "exp:KILN_GPU_SCREEN_EXPANDED=on" "p2:KILN_GPU_SCATTER_POSITIONS=2" "p2exp:KILN_GPU_SCATTER_POSITIONS=2 KILN_GPU_SCREEN_EXPANDED=on" "p2a4exp:KILN_GPU_SCATTER_POSITIONS=2 KILN_ARG_SCREEN=4 KILN_GPU_SCREEN_EXPANDED=on" "off:KILN_GPU_SCATTER_QUEUE=off"; do
    name=${v%%:*}; envs=${v#*:}
    env $envs KILN_CACHE_DIR=/tmp/kc-$name timeout 60 "$Q/kiln-bench" kmeans_iter_1048576 --reps 25 > "$OUT/b-$r-$name.txt" 2>&1; echo "bench rc $?" >> "$OUT/b-$r-$name.txt"
    echo "== round $r $name ($envs): $(grep -E "^kmeans[a-z0-9_]+ +[0-9]" "$OUT/b-$r-$name.txt" | cut -c1-60) $(grep -E "rc " "$OUT/b-$r-$name.txt")"
  done
done
tar czf "$OUT/q3.tgz" -C "$OUT" $(cd "$OUT" && ls b-*.txt) && rm -f "$OUT"/b-*.txt
