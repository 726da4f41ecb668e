#!/usr/bin/env bash
# Session 16's device run: the whole GPU suite, the bad-input walk's kernels part, issue 24's rows.
cd "$(dirname "$0")/.."
bash gpu-pack/run.sh 2>&1 | grep -E '^test .*FAILED|gpu:|test result|panicked' | head -40
cp $OUT/gpu-tests-suite.log $OUT/suite.log 2>/dev/null
K=${TMPDIR:-/tmp}/kiln-gpu-pack
cd $K
echo "== bad input, kernels part"
KILN_DEVICE=cuda:0 KILN_BAD_INPUT_GPU=kernels ./kiln-tests bad_input 2>&1 | grep -E 'test result|FAILED|panicked' | head
echo "== callbacks"
KILN_DEVICE=cuda:0 ./kiln-tests fft_callbacks --nocapture --test-threads 1 2>&1 | grep -vE '^\s+(ops|fft|kernel_then|callback_ms|fused)' | grep -E 'test |load and store|Decision|fused:|callback_ms|kernel_then|ops' | head -40
KILN_DEVICE=cuda:0 ./kiln-tests gpu_fft_producers_fused --nocapture 2>&1 | grep -A60 '^\[' | head -60
cd - >/dev/null
KILN_DEVICE=cuda:0 $K/kiln-bench fft_c64 fft_window_abs --reps 25 2>&1 | tail -8
python3 gpu-pack/fft_callback_peers.py 2>&1 | tail -8
