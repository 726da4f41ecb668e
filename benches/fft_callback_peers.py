"""Peers of kiln-bench's fft_window_abs (abs(fft(z * w)), z complex64 and w float32 of 2^24):
CuPy plain, CuPy with its hand-written JIT load callback (cb_ver="jit", the window), and CuPy
with a load and a store callback on one plan (the store writing |x| into an aux array), to see
whether cuFFT links both. Medians of 25 CUDA-event timings, as peers.py."""
import sys
import time

import cupy as cp
import numpy as np

n = 1 << 24
rng = np.random.default_rng(0)
z = cp.asarray((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64))
w = cp.asarray(rng.standard_normal(n).astype(np.float32))
absout = cp.empty(n, np.float32)


def timeit(f, reps=25):
    f()
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        s.record()
        f()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))


LOAD = r'''
#include <cufftXt.h>
__device__ cufftComplex window(void *d, unsigned long long o, void *w, void *s)
{ cufftComplex x = ((cufftComplex*)d)[o]; float k = ((const float*)w)[o]; x.x *= k; x.y *= k; return x; }
'''
STORE = r'''
#include <cufftXt.h>
__device__ void magnitude(void *d, unsigned long long o, cufftComplex e, void *a, void *s)
{ ((float*)a)[o] = sqrtf(e.x * e.x + e.y * e.y); }
'''
ref = cp.abs(cp.fft.fft(z * w))
print(f"fft_window_abs cupy {timeit(lambda: cp.abs(cp.fft.fft(z * w))):.3f} ms")
opts = ("-default-device",)
try:
    with cp.fft.config.set_cufft_callbacks(cb_load=LOAD, cb_load_name="window", cb_ver="jit",
                                           cb_load_data=w.data, nvrtc_options=opts):
        t = time.perf_counter()
        out = cp.abs(cp.fft.fft(z))
        cp.cuda.Device().synchronize()
        first = (time.perf_counter() - t) * 1e3
        ms = timeit(lambda: cp.abs(cp.fft.fft(z)))
    err = float(cp.abs(out - ref).max() / ref.max())
    print(f"fft_window_abs_cb_load cupy.jit {ms:.3f} ms (first call {first:.0f} ms, rel err {err:.1e})")
except Exception as e:  # noqa: BLE001
    print("cupy jit load callback failed:", type(e).__name__, str(e)[:300])
try:
    with cp.fft.config.set_cufft_callbacks(cb_load=LOAD, cb_store=STORE, cb_load_name="window",
                                           cb_store_name="magnitude", cb_ver="jit",
                                           cb_load_data=w.data, cb_store_data=absout.data,
                                           nvrtc_options=opts):
        cp.fft.fft(z)
        cp.cuda.Device().synchronize()
        ms = timeit(lambda: cp.fft.fft(z))
    err = float(cp.abs(absout - ref).max() / ref.max())
    print(f"fft_window_abs_cb_load_store cupy.jit {ms:.3f} ms (rel err {err:.1e})")
except Exception as e:  # noqa: BLE001
    print("cupy jit load+store callbacks failed:", type(e).__name__, str(e)[:300])
try:
    import torch
    zt = torch.as_tensor(z, device="cuda")
    wt = torch.as_tensor(w, device="cuda")
    print(f"fft_window_abs torch {timeit(lambda: torch.abs(torch.fft.fft(zt * wt))):.3f} ms")
except Exception as e:  # noqa: BLE001
    print("torch failed:", type(e).__name__, str(e)[:200])
sys.stdout.flush()
