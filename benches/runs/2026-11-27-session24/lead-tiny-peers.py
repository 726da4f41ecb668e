# The tiny_chain_48ops rows of ../shared/bench/peers.py (session 24's copy: its header, its
# trial functions and that one workload, unchanged), so that one device call measures the peers
# of the dispatch figure without running every workload.
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
import jax, jax.numpy as jnp

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
jsync = lambda: None  # jax: block_until_ready inside the callable

rng = np.random.default_rng(0)
# --- dispatch overhead: a chain of 64 tiny ops on 1,024 elements -------------------------------
s_np = rng.standard_normal(1024, dtype=np.float32)
sc, st, sj = cp.asarray(s_np), torch.from_numpy(s_np).cuda(), jax.device_put(s_np)


def tiny(x):
    for _ in range(16):
        x = x * 1.0001 + 0.5
        x = x - 0.25
        x = x * 0.999
    return x


trial("tiny_chain_48ops", "cupy", lambda: (lambda: tiny(sc)), cps)
tf = cp.fuse(tiny)
trial("tiny_chain_48ops", "cupy.fuse", lambda: (lambda: tf(sc)), cps)
trial("tiny_chain_48ops", "torch", lambda: (lambda: tiny(st)), tss)
ttc = torch.compile(tiny)
trial("tiny_chain_48ops", "torch.compile", lambda: (lambda: ttc(st)), tss)
jt = jax.jit(tiny)
trial("tiny_chain_48ops", "jax.jit", lambda: (lambda: jt(sj).block_until_ready()), jsync)
