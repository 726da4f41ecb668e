"""Times the CUDA driver's JIT (cuModuleLoadData) of PTX files in this new process.
usage: python3 jit_time.py [--dlopen] [--bg WARM.ptx] [--sleep MS] [--unique] A.ptx [B.ptx ...]
--bg: WARM.ptx loaded on a background thread right after the context is made, while the main
thread sleeps --sleep ms (kiln's own compile) before loading A, B, ...; --unique: a random
comment appended to every PTX (new to the driver's JIT cache); --dlopen: the JIT library opened
first (timed). Prints each load's ms, first load of the process first."""
import ctypes, os, random, sys, threading, time
args = sys.argv[1:]
def opt(name, has_value=False):
    if name not in args:
        return None
    i = args.index(name)
    v = args[i + 1] if has_value else True
    del args[i:i + (2 if has_value else 1)]
    return v
dl, bg, sleep, unique = opt("--dlopen"), opt("--bg", True), opt("--sleep", True), opt("--unique")
T0 = time.perf_counter()
def now():
    return 1e3 * (time.perf_counter() - T0)
if dl:
    t = time.perf_counter()
    ctypes.CDLL("libnvidia-ptxjitcompiler.so.1")
    print(f"dlopen ptxjitcompiler {1e3*(time.perf_counter()-t):.2f} ms")
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise SystemExit(f"{what}: CUresult {r}")
t0 = time.perf_counter()
ck(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ck(cu.cuCtxSetCurrent(ctx), "set")
print(f"ctx {1e3*(time.perf_counter()-t0):.1f} ms")
tag = f"{os.getpid()}-{random.random()}"
def text(path):
    b = open(path, "rb").read()
    if unique:
        b += f"\n// {tag}\n".encode()
    return b + b"\0"
def load(path, who):
    ptx = text(path)
    mod = ctypes.c_void_p()
    s = now()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), f"load {path}")
    e = now()
    print(f"{who}: load {path.split('/')[-1]} {e-s:.2f} ms (from {s:.1f} to {e:.1f} ms)")
th = None
if bg:
    def warm():
        ck(cu.cuCtxSetCurrent(ctx), "set bg")
        load(bg, "background")
    th = threading.Thread(target=warm)
    th.start()
if sleep:
    time.sleep(float(sleep) / 1e3)
for path in args:
    load(path, "main")
if th:
    th.join()
if opt_launch := (os.environ.get("LAUNCH") == "1"):
    # The rest of a disk hit: 256 MiB allocations (first and second), the kernel of the last
    # PTX loaded launched over 2^26 float32 (params: in, out, chunks, chunk), synchronised.
    n = 1 << 26
    ptrs = []
    for i in range(2):
        p = ctypes.c_uint64()
        s = now()
        ck(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(4 * n)), "alloc")
        print(f"alloc 256 MiB #{i}: {now()-s:.3f} ms")
        ptrs.append(p)
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(text(args[-1]))), "reload")
    f = ctypes.c_void_p()
    s = now()
    ck(cu.cuModuleGetFunction(ctypes.byref(f), mod, b"kiln_gpu"), "getfunction")
    print(f"getfunction {now()-s:.3f} ms")
    chunk = ctypes.c_uint64(4)
    total = ctypes.c_uint64(n)
    vals = [ptrs[0], ptrs[1], total, chunk]
    arr = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
    for i in range(3):
        s = now()
        ck(cu.cuLaunchKernel(f, 132 * 32, 1, 1, 256, 1, 1, 0, None, arr, None), "launch")
        m = now()
        ck(cu.cuCtxSynchronize(), "sync")
        print(f"launch #{i}: {m-s:.3f} ms, to its end {now()-s:.3f} ms")
