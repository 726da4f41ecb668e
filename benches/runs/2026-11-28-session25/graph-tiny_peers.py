"""tiny_multi's peers: the same expression on 1,024 float32s (a sum, elementwise work, a max,
a scale by both), host call to result with a synchronize on both sides, median of 200 calls."""
import time, statistics, sys
import numpy as np
import cupy as cp
import torch

x_np = np.random.default_rng(21).standard_normal(1024).astype(np.float32)

def f(x, absf):
    s1 = x.sum()
    y = absf(x - s1 * (1.0 / 1024.0)) * 1.5 + 0.25
    s2 = y.max()
    return y / s2 + s1

def bench(name, fn, sync, reps=200):
    for _ in range(20):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - t0) * 1e3)
    print(f"tiny_multi {name}: {statistics.median(ts):.4f} ms", flush=True)

xc = cp.asarray(x_np)
bench("cupy", lambda: f(xc, cp.abs), cp.cuda.Device().synchronize)
xt = torch.from_numpy(x_np).cuda()
bench("torch", lambda: f(xt, torch.abs), torch.cuda.synchronize)
for mode in ["default", "reduce-overhead"]:
    try:
        g = torch.compile(lambda x: f(x, torch.abs), mode=mode)
        bench(f"torch.compile {mode}", lambda: g(xt), torch.cuda.synchronize)
    except Exception as e:
        print(f"tiny_multi torch.compile {mode}: error {e}", flush=True)
