"""The first compile of kiln's PTX on an H100: driver JIT (CUDA_CACHE_DISABLE=1) against nvJitLink
(in-process ptxas, relocatable code) at option sets and a ptxas process (whole program): compile
ms (median/min of 5, first), module load ms, and the kernel's time (params in, out, n, chunk=4;
2^26 float32, grid 132*32 x 256; events, median of 20).  usage: nvjl.py FILE.ptx..."""
import ctypes, os, statistics, subprocess, sys, tempfile, time
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUresult {r}")
ck(cu.cuInit(0), "init")
dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "dev")
ctx = ctypes.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx")
ck(cu.cuCtxSetCurrent(ctx), "set")
t = time.perf_counter()
for p in ["libnvJitLink.so.13", "/usr/local/cuda/lib64/libnvJitLink.so.13"]:
    try:
        L = ctypes.CDLL(p); break
    except OSError:
        continue
print(f"dlopen libnvJitLink {1e3*(time.perf_counter()-t):.1f} ms ({p})")
n = 1 << 26
a = ctypes.c_uint64(); b = ctypes.c_uint64()
ck(cu.cuMemAlloc_v2(ctypes.byref(a), ctypes.c_size_t(4 * n)), "alloc")
ck(cu.cuMemAlloc_v2(ctypes.byref(b), ctypes.c_size_t(4 * n)), "alloc")
ck(cu.cuMemsetD32_v2(a, 0x3f000000, ctypes.c_size_t(n)), "memset")
e0 = ctypes.c_void_p(); e1 = ctypes.c_void_p()
ck(cu.cuEventCreate(ctypes.byref(e0), 0), "ev"); ck(cu.cuEventCreate(ctypes.byref(e1), 0), "ev")
def kernel_ms(mod):
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
    return statistics.median(ks)
def load(image):
    mod = ctypes.c_void_p(); t = time.perf_counter()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), "load")
    return mod, 1e3 * (time.perf_counter() - t)
def jl(ptx, opts):
    h = ctypes.c_void_p(); o = (ctypes.c_char_p * len(opts))(*[x.encode() for x in opts])
    t = time.perf_counter()
    ck(L.__nvJitLinkCreate_13_0(ctypes.byref(h), len(opts), o), "create")
    ck(L.__nvJitLinkAddData_13_0(h, 2, ptx, len(ptx), b"kiln"), "add")
    ck(L.__nvJitLinkComplete_13_0(h), "complete")
    s = ctypes.c_size_t(); ck(L.__nvJitLinkGetLinkedCubinSize_13_0(h, ctypes.byref(s)), "size")
    buf = ctypes.create_string_buffer(s.value); ck(L.__nvJitLinkGetLinkedCubin_13_0(h, buf), "cubin")
    ms = 1e3 * (time.perf_counter() - t); L.__nvJitLinkDestroy_13_0(ctypes.byref(h))
    return ms, buf.raw
def ptxas(path, opts):
    out = tempfile.mktemp(suffix=".cubin"); t = time.perf_counter()
    subprocess.run(["/usr/local/cuda/bin/ptxas", "-arch=sm_90", *opts, "-o", out, path], check=True)
    ms = 1e3 * (time.perf_counter() - t); data = open(out, "rb").read(); os.unlink(out)
    return ms, data
def report(name, tries):
    ts = [t for t, _ in tries]; img = tries[-1][1]
    mod, lms = load(img)
    print(f"  {name}: compile median {statistics.median(ts):.1f} min {min(ts):.1f} first {ts[0]:.1f} ms; load {lms:.2f} ms; cubin {len(img)} B; kernel {kernel_ms(mod):.4f} ms", flush=True)
for path in sys.argv[1:]:
    print(path, flush=True)
    ptx = open(path, "rb").read()
    # the driver's JIT (CUDA_CACHE_DISABLE=1 in the environment)
    tries = []
    for i in range(5):
        mod = ctypes.c_void_p(); t = time.perf_counter()
        ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0")), "jit")
        tries.append(1e3 * (time.perf_counter() - t))
    print(f"  driver JIT: median {statistics.median(tries):.1f} min {min(tries):.1f} first {tries[0]:.1f} ms; kernel {kernel_ms(mod):.4f} ms", flush=True)
    for opts in [[], ["-Xptxas=--Ofast-compile=max"], ["-Xptxas=--Ofast-compile=mid"], ["-Xptxas=--Ofast-compile=min"], ["-O0"]]:
        try:
            report("nvJitLink " + (" ".join(opts) or "default"), [jl(ptx, ["-arch=sm_90", *opts]) for _ in range(5)])
        except Exception as e:
            print("  nvJitLink", opts, e)
    for opts in [["-O3"], ["--Ofast-compile=max"]]:
        try:
            report("ptxas process " + " ".join(opts), [ptxas(path, opts) for _ in range(3)])
        except Exception as e:
            print("  ptxas", opts, e)
