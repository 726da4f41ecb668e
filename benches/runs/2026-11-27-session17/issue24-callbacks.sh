#!/usr/bin/env bash
# Issue 24 (helper): the callback tests alone, then kiln-bench's window rows and CuPy's peers.
# Copy into gpu-pack/ with the test binary (kiln-tests-24.xz), kiln-bench (kiln-bench-24.xz) and
# benches/fft_callback_peers.py (as fft_callback_peers-24.py); run as `bash gpu-pack/run24.sh`.
cd "$(dirname "$0")/.."
mkdir -p /work && ln -sfn $PWD /work/main
xz -dc gpu-pack/kiln-tests-24.xz > /tmp/t && chmod +x /tmp/t
xz -dc gpu-pack/kiln-bench-24.xz > /tmp/kb && chmod +x /tmp/kb
export KILN_DEVICE=cuda:0 KILN_REPO=$PWD INSTA_UPDATE=no
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
timeout 300 /tmp/t fft_callback --test-threads=1 --nocapture 2>&1 | grep -E "^decision|: fft callback|FAILED|panicked|test result|^[a-z0-9 ]+: " | cut -c1-300 | head -60
echo "== kiln-bench"
timeout 200 /tmp/kb fft_c64 fft_window_abs fft_window_abs_cb_load fft_window_abs_generated --reps 25 2>&1 | tail -12
echo "== peers"
timeout 120 /opt/torch/.venv/bin/python gpu-pack/fft_callback_peers-24.py 2>&1 | tail -8
