#!/usr/bin/env bash
# Session 12: each example in a new process with an empty disk cache, on the GPU and on the CPU,
# wall time of the whole process (issue 22 §3's goal: no slower on the GPU than on the CPU).
# With kiln-examples-before.xz beside kiln-examples.xz, both binaries, alternating.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bins=(after)
xz -dc "$here/kiln-examples.xz" > /tmp/kiln-examples-after && chmod +x /tmp/kiln-examples-after
if [ -f "$here/kiln-examples-before.xz" ]; then
  xz -dc "$here/kiln-examples-before.xz" > /tmp/kiln-examples-before && chmod +x /tmp/kiln-examples-before
  bins=(before after)
fi
data=$here/data
cd /tmp
for round in 1 2; do
for name in digits_stats kmeans gmm image_pipeline softmax_layernorm; do
  case $name in
    digits_stats) args=("$data/digits_x.npy") ;;
    kmeans) args=("$data/digits_x.npy" "$data/digits_y.npy") ;;
    gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
    image_pipeline) args=("$data/china.npy" /tmp/edges.png) ;;
    softmax_layernorm) args=() ;;
  esac
  for b in "${bins[@]}"; do
  for dev in cuda:0 cpu; do
    [ "$b" = before ] && [ "$dev" = cpu ] && continue
    c=$(mktemp -d)
    t0=$(date +%s%N)
    KILN_CACHE_DIR=$c KILN_DEVICE=$dev bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" /tmp/kiln-examples-$b "${args[@]}" > /tmp/ex-$name-$dev-$b.txt 2>&1
    rc=$?
    t1=$(date +%s%N)
    printf "round %d %-18s %-7s %-6s rc %d  %d ms\n" "$round" "$name" "$dev" "$b" "$rc" "$(( (t1 - t0) / 1000000 ))"
    rm -rf "$c"
  done
  done
done
done
