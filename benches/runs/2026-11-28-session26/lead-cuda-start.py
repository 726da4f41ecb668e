# Wall time of a new process's CUDA start: cuInit, the primary context, a first allocation.
import ctypes, time, sys
t0 = time.perf_counter()
cu = ctypes.CDLL("libcuda.so.1")
t1 = time.perf_counter()
assert cu.cuInit(0) == 0
t2 = time.perf_counter()
dev = ctypes.c_int(); assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
ctx = ctypes.c_void_p(); assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cu.cuCtxSetCurrent(ctx) == 0
t3 = time.perf_counter()
p = ctypes.c_uint64(); assert cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0
t4 = time.perf_counter()
print(f"dlopen {1e3*(t1-t0):.1f} ms, cuInit {1e3*(t2-t1):.1f} ms, primary context {1e3*(t3-t2):.1f} ms, first alloc {1e3*(t4-t3):.1f} ms, total {1e3*(t4-t0):.1f} ms")
