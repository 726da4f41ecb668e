"""JIT time and kernel time of a kiln PTX at the driver's JIT options (CUDA_CACHE_DISABLE=1).
usage: python3 jit_levels.py FILE.ptx  -- per option set: median/min of 5 loads, then the kernel
(params in, out, n, chunk=4; 2^26 float32, grid 132*32 x 256) timed by events, median of 20."""
import ctypes, statistics, sys, time
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUresult {r}")
ck(cu.cuInit(0), "init")
dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "dev")
ctx = ctypes.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx")
ck(cu.cuCtxSetCurrent(ctx), "set")
path = sys.argv[1]
ptx = open(path, "rb").read() + b"\0"
n = 1 << 26
a = ctypes.c_uint64(); b = ctypes.c_uint64()
ck(cu.cuMemAlloc_v2(ctypes.byref(a), ctypes.c_size_t(4 * n)), "alloc")
ck(cu.cuMemAlloc_v2(ctypes.byref(b), ctypes.c_size_t(4 * n)), "alloc")
ck(cu.cuMemsetD32_v2(a, 0x3f000000, ctypes.c_size_t(n)), "memset")
e0 = ctypes.c_void_p(); e1 = ctypes.c_void_p()
ck(cu.cuEventCreate(ctypes.byref(e0), 0), "ev"); ck(cu.cuEventCreate(ctypes.byref(e1), 0), "ev")
def load(opts):
    mod = ctypes.c_void_p()
    k = len(opts)
    o = (ctypes.c_int * max(k, 1))(*[x for x, _ in opts])
    v = (ctypes.c_void_p * max(k, 1))(*[ctypes.c_void_p(y) for _, y in opts])
    t = time.perf_counter()
    r = cu.cuModuleLoadDataEx(ctypes.byref(mod), ctypes.c_char_p(ptx), k, o, v)
    ms = 1e3 * (time.perf_counter() - t)
    return r, ms, mod
LEVEL, FAST, SPLIT = 7, 16, 34
sets = [("default", []), ("level 4", [(LEVEL, 4)]), ("level 3", [(LEVEL, 3)]), ("level 2", [(LEVEL, 2)]),
        ("level 1", [(LEVEL, 1)]), ("level 0", [(LEVEL, 0)]), ("fast_compile 1", [(FAST, 1)]),
        ("level 3 + fast_compile 1", [(LEVEL, 3), (FAST, 1)]), ("split 0", [(SPLIT, 0)])]
for name, opts in sets:
    ts = []
    mod = None
    for i in range(5):
        r, ms, m = load(opts)
        if r != 0:
            print(f"{path} {name}: CUresult {r}"); break
        ts.append(ms); mod = m
    if not ts:
        continue
    f = ctypes.c_void_p(); ck(cu.cuModuleGetFunction(ctypes.byref(f), mod, b"kiln_gpu"), "fn")
    vals = [a, b, ctypes.c_uint64(n), ctypes.c_uint64(4)]
    arr = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in vals])
    ks = []
    for i in range(23):
        ck(cu.cuEventRecord(e0, None), "rec")
        ck(cu.cuLaunchKernel(f, 132 * 32, 1, 1, 256, 1, 1, 0, None, arr, None), "launch")
        ck(cu.cuEventRecord(e1, None), "rec"); ck(cu.cuEventSynchronize(e1), "sync")
        x = ctypes.c_float(); ck(cu.cuEventElapsedTime(ctypes.byref(x), e0, e1), "el")
        if i >= 3: ks.append(x.value)
    print(f"{path.split('/')[-1]} {name}: JIT median {statistics.median(ts):.1f} min {min(ts):.1f} ms; kernel median {statistics.median(ks):.4f} ms")
