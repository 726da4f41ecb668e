"""Cut from /work/shared/bench/peers.py (session 24, layer norm): copy, softmax_rows and
layernorm_rows with CuPy, torch and torch.compile (no JAX), wall time as peers.py; then
torch.compile again by CUDA events."""
"""Peer baselines on one GPU: CuPy (eager, fuse), PyTorch (eager, compile), JAX (jit).

Every workload is float32 unless named otherwise. Time is wall time around one call with a
device synchronize on both sides, median of REPS calls after warm-up; for memory-bound work the
figure is also given as GB/s of the fewest bytes the work must move (each input read once, each
output written once) and as a fraction of the measured device-to-device copy rate.

Usage: python3 peers.py [--quick] [--json OUT]
"""
import json, os, sys, time, statistics, math, traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
QUICK = "--quick" in sys.argv
REPS = 10 if QUICK else 25
OUT = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None

import numpy as np
import cupy as cp
import torch

results = []


def bench(fn, sync, reps=REPS, inner=1):
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / inner)
    return statistics.median(ts)


def record(work, peer, secs, nbytes=None, flops=None, note=""):
    row = {"work": work, "peer": peer, "ms": secs * 1e3}
    if nbytes:
        row["GBps"] = nbytes / secs / 1e9
    if flops:
        row["TFLOPs"] = flops / secs / 1e12
    if note:
        row["note"] = note
    results.append(row)
    extra = "".join(f" {k}={v:.1f}" for k, v in row.items() if k in ("GBps", "TFLOPs"))
    print(f"{work:28s} {peer:16s} {row['ms']:10.4f} ms{extra} {note}", flush=True)


def trial(work, peer, make, sync, nbytes=None, flops=None, inner=1):
    try:
        fn = make()
        record(work, peer, bench(fn, sync, inner=inner), nbytes, flops)
    except Exception as e:  # a peer that cannot run a workload gets a row that says so
        print(f"{work:28s} {peer:16s} FAILED {type(e).__name__}: {str(e)[:160]}", flush=True)
        results.append({"work": work, "peer": peer, "error": str(e)[:300]})


cps = cp.cuda.runtime.deviceSynchronize
tss = torch.cuda.synchronize

rng = np.random.default_rng(0)
N = 1 << (24 if QUICK else 26)
R, C = (4096, 4096) if QUICK else (8192, 8192)
x_np = rng.standard_normal(N, dtype=np.float32)
m_np = rng.standard_normal((R, C), dtype=np.float32)
v_np = rng.standard_normal(C, dtype=np.float32)
g_np = rng.standard_normal(C, dtype=np.float32)
b_np = rng.standard_normal(C, dtype=np.float32)

xc, mc, vc, gc, bc = (cp.asarray(a) for a in (x_np, m_np, v_np, g_np, b_np))
xt, mt, vt, gt, bt = (torch.from_numpy(a).cuda() for a in (x_np, m_np, v_np, g_np, b_np))

# --- the physical ceiling: device-to-device copy -------------------------------------------
yc = cp.empty_like(xc)
trial("copy", "cupy", lambda: (lambda: yc.__setitem__(Ellipsis, xc)), cps, nbytes=8 * N)
yt = torch.empty_like(xt)
trial("copy", "torch", lambda: (lambda: yt.copy_(xt)), tss, nbytes=8 * N)


# --- softmax over rows ---------------------------------------------------------------------
def softmax(xp, x, ax):
    kd = "keepdim" if ax == "dim" else "keepdims"
    mx = x.max(**{ax: 1, kd: True})
    mx = mx.values if hasattr(mx, "values") else mx
    e = xp.exp(x - mx)
    return e / e.sum(**{ax: 1, kd: True})


nb = 8 * R * C
trial("softmax_rows", "cupy", lambda: (lambda: softmax(cp, mc, "axis")), cps, nbytes=nb)
trial("softmax_rows", "torch", lambda: (lambda: torch.softmax(mt, dim=1)), tss, nbytes=nb)
tsm = torch.compile(lambda x: softmax(torch, x, "dim"))
trial("softmax_rows", "torch.compile", lambda: (lambda: tsm(mt)), tss, nbytes=nb)


# --- layer norm over rows, with scale and shift ----------------------------------------------
def layernorm(xp, x, g, b):
    mu = x.mean(axis=1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=1, keepdims=True)
    return d / xp.sqrt(var + 1e-5) * g + b


def layernorm_t(x, g, b):
    mu = x.mean(dim=1, keepdim=True)
    d = x - mu
    var = (d * d).mean(dim=1, keepdim=True)
    return d / torch.sqrt(var + 1e-5) * g + b


nb = 8 * R * C + 8 * C
trial("layernorm_rows", "cupy", lambda: (lambda: layernorm(cp, mc, gc, bc)), cps, nbytes=nb)
trial("layernorm_rows", "torch", lambda: (lambda: layernorm_t(mt, gt, bt)), tss, nbytes=nb)
tln = torch.compile(layernorm_t)
trial("layernorm_rows", "torch.compile", lambda: (lambda: tln(mt, gt, bt)), tss, nbytes=nb)


# --- torch.compile timed by CUDA events (as kiln-bench times kiln), same tensors -------------
def events(fn, reps=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)


print(f"{'layernorm_rows':28s} {'torch.compile':16s} {events(lambda: tln(mt, gt, bt)):10.4f} ms (CUDA events)")
print(f"{'softmax_rows':28s} {'torch.compile':16s} {events(lambda: tsm(mt)):10.4f} ms (CUDA events)")
print(f"{'copy':28s} {'torch':16s} {events(lambda: yt.copy_(xt)):10.4f} ms (CUDA events, 2^26)")
