"""Times kiln's row kernels (PTX dumped on the dev machine, variants edited by hand) on the
device through CuPy, against torch.compile's layer norm, with CUDA events; checks the full
layer norm's output against a float64 NumPy reference. Usage: python3 ln_harness.py PTX_DIR"""
import glob, os, re, sys, statistics
import numpy as np
import cupy as cp

R, C = 8192, 8192
rng = np.random.default_rng(0)
x = cp.asarray(rng.uniform(-1, 1, (R, C)).astype(np.float32))
g = cp.asarray(rng.uniform(0.5, 1.5, C).astype(np.float32))
b = cp.asarray(rng.uniform(-0.5, 0.5, C).astype(np.float32))
out = cp.empty_like(x)
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
grid = min(R, sms * 32)


def timeit(fn, reps=50):
    for _ in range(5):
        fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e))
    return statistics.median(ts)


xn = cp.asnumpy(x).astype(np.float64)
mu = xn.mean(1, keepdims=True)
d = xn - mu
ref = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * cp.asnumpy(g) + cp.asnumpy(b)
copy = timeit(lambda: cp.copyto(out, x))
print(f"copy 8192x8192 f32: {copy:.4f} ms")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.ptx"))):
    name = os.path.basename(path)[:-4]
    text = open(path).read()
    ptrs = len(re.findall(r"\.param \.u64 \.ptr", text))
    ints = len(re.findall(r"\.param \.u64 kiln_gpu_param", text))
    shared = 0 if "nocache" in name else 32768
    vecs = [g, b][: ptrs - 2]
    args = (x, *vecs, out, np.int64(C), np.int64(R), np.int64(1))
    assert ints == 3, (name, ints)
    try:
        f = cp.RawModule(path=path).get_function("kiln_gpu")
        if shared > 48 * 1024:
            f.max_dynamic_shared_size_bytes = shared
        run = lambda: f((grid,), (256,), args, shared_mem=shared)
        out.fill(0)
        run()
        cp.cuda.Device().synchronize()
        err = ""
        if name.startswith("ln") and not name.startswith("lnnogb") and not name.startswith("lng"):
            err = f" max|err| {float(np.abs(cp.asnumpy(out) - ref).max()):.2e}"
        t = timeit(run)
        print(f"{name:24s} {t:.4f} ms  ({copy / t * 100:.0f}% of copy){err}  regs {f.num_regs}")
    except Exception as e:
        print(f"{name:24s} FAILED {type(e).__name__}: {str(e)[:200]}")
try:
    import torch
    xt = torch.as_tensor(x, device="cuda"); gt = torch.as_tensor(g, device="cuda"); bt = torch.as_tensor(b, device="cuda")
    def ln_t(x, g, b):
        mu = x.mean(dim=1, keepdim=True); d = x - mu
        var = (d * d).mean(dim=1, keepdim=True)
        return d / torch.sqrt(var + 1e-5) * g + b
    tln = torch.compile(ln_t)
    def run_t():
        tln(xt, gt, bt)
    for _ in range(3): run_t()
    torch.cuda.synchronize()
    ts = []
    for _ in range(50):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); run_t(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    print(f"torch.compile layernorm  {statistics.median(ts):.4f} ms (events)")
    sm = torch.compile(lambda x: torch.softmax(x, -1))
    for _ in range(3): sm(xt)
    torch.cuda.synchronize(); ts = []
    for _ in range(50):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); sm(xt); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    print(f"torch.compile softmax    {statistics.median(ts):.4f} ms (events)")
except Exception as e:
    print("torch FAILED", e)
