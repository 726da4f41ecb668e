#!/usr/bin/env bash
# Session 13 (issue 21): kiln::linalg on the GPU beside CuPy and torch, one device call.
# kiln-bench's linalg workloads (event time, median of 5 after 2 warm-ups) and peers_ops.py's
# (wall time around a synchronised call, median of 25 after 3 warm-ups), same shapes, float32.
#   bash benches/runs/2026-11-26-session13/linalg.sh   (after gpu-pack/run.sh unpacked the pack)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bench=${TMPDIR:-/tmp}/kiln-gpu-pack/kiln-bench
[ -x "$bench" ] || { xz -dc gpu-pack/kiln-bench.xz > /tmp/kiln-bench && chmod +x /tmp/kiln-bench; bench=/tmp/kiln-bench; }
works=(cholesky_8192 solve_8192 qr_8192 svd_2048 eigh_2048 inv_batched_100000x8x8 einsum_bij_bjk_bik)
for round in 1 2; do
  echo "== kiln round $round"
  KILN_DEVICE=cuda:0 "$bench" --reps 5 "${works[@]}"
done
echo "== peers"
python3 "$here/peers_ops.py" "${works[@]}"
