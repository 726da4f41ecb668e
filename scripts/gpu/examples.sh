#!/usr/bin/env bash
# On the GPU machine: runs every example of the pack on the GPU (KILN_DEVICE=cuda:0) and on the
# CPU (KILN_DEVICE=cpu), and compares what they computed. Run after run.sh has unpacked the pack
# (or it unpacks kiln-examples itself).
#
#   bash gpu-pack/examples.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${TMPDIR:-/tmp}/kiln-gpu-pack
mkdir -p "$work"
[[ -x "$work/kiln-examples" ]] || { xz -dc "$here/kiln-examples.xz" > "$work/kiln-examples" && chmod +x "$work/kiln-examples"; }
data=$here/data
out=${OUT:-$work}/examples
mkdir -p "$out"
status=0
run() { # backend name args...
  local dev=$1 name=$2; shift 2
  local dir=$out/$dev
  mkdir -p "$dir"
  (cd "$dir" && KILN_DEVICE=$dev exec -a "$name" "$work/kiln-examples" "$@") > "$dir/$name.txt" 2>&1
  local rc=$?
  (( rc == 0 )) || { echo "$name on $dev: exit $rc"; tail -5 "$dir/$name.txt"; status=1; }
}
for dev in cuda:0 cpu; do
  run "$dev" digits_stats "$data/digits_x.npy"
  run "$dev" kmeans "$data/digits_x.npy" "$data/digits_y.npy"
  run "$dev" gmm "$data/iris_x.npy" "$data/iris_y.npy"
  run "$dev" image_pipeline "$data/china.npy" edges.png
  run "$dev" softmax_layernorm
done
for name in digits_stats kmeans gmm image_pipeline softmax_layernorm; do
  echo "== $name (GPU | CPU)"
  grep -vE 'time|ms\b|seconds|took' "$out/cuda:0/$name.txt" | head -12 > "$out/$name.gpu.cmp"
  grep -vE 'time|ms\b|seconds|took' "$out/cpu/$name.txt" | head -12 > "$out/$name.cpu.cmp"
  paste -d'|' "$out/$name.gpu.cmp" "$out/$name.cpu.cmp" | cut -c1-220
  grep -iE 'time|ms\b|took' "$out/cuda:0/$name.txt" | head -3 | sed 's/^/  gpu: /'
  grep -iE 'time|ms\b|took' "$out/cpu/$name.txt" | head -3 | sed 's/^/  cpu: /'
done
if cmp -s "$out/cuda:0/edges.png" "$out/cpu/edges.png"; then echo "edges.png: identical on GPU and CPU"; else echo "edges.png: differs between GPU and CPU"; fi
exit $status
