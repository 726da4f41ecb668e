# Compares the SASS of kiln's PTX compiled three ways: ptxas whole-program (what the driver's
# JIT does for cuModuleLoadDataEx), ptxas -c (relocatable, what cuLinkAddData does), nvJitLink.
import ctypes, glob, os, re, subprocess, sys, time
d = sys.argv[1]
out = os.environ.get("OUT", "/tmp")
cuda = "/usr/local/cuda"
lib = None
for p in [f"{cuda}/lib64/libnvJitLink.so.13", f"{cuda}/lib64/libnvJitLink.so"] + glob.glob("/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libnvJitLink.so*") + glob.glob("/usr/lib/python3*/site-packages/nvidia/*/lib/libnvJitLink.so*"):
    if os.path.exists(p):
        lib = ctypes.CDLL(p); print("nvJitLink:", p); break
def nvjitlink(ptx, opts):
    h = ctypes.c_void_p()
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    assert lib.nvJitLinkCreate(ctypes.byref(h), len(opts), arr) == 0
    data = ptx.encode() + b"\0"
    r = lib.nvJitLinkAddData(h, 2, data, len(data), b"k")
    r2 = lib.nvJitLinkComplete(h)
    if r or r2:
        n = ctypes.c_size_t(); lib.nvJitLinkGetErrorLogSize(h, ctypes.byref(n)); b = ctypes.create_string_buffer(n.value + 1); lib.nvJitLinkGetErrorLog(h, b)
        raise RuntimeError(b.value.decode())
    n = ctypes.c_size_t(); lib.nvJitLinkGetLinkedCubinSize(h, ctypes.byref(n))
    b = ctypes.create_string_buffer(n.value); lib.nvJitLinkGetLinkedCubin(h, b)
    lib.nvJitLinkDestroy(ctypes.byref(h))
    return b.raw
def sass(path):
    t = subprocess.run([f"{cuda}/bin/cuobjdump", "-sass", path], capture_output=True, text=True).stdout
    ins = []
    for line in t.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4}\*/\s+(.*?);", line)
        if m: ins.append(re.sub(r"\s+", " ", m.group(1)))
    return ins
for f in sorted(glob.glob(f"{d}/*.ptx")):
    name = os.path.basename(f)[:-4]
    ptx = open(f).read()
    w, c, j = f"{out}/{name}.whole.cubin", f"{out}/{name}.reloc.cubin", f"{out}/{name}.nvjl.cubin"
    t0 = time.time(); subprocess.run([f"{cuda}/bin/ptxas", "-arch=sm_90", "-O3", f, "-o", w], check=True); tw = time.time() - t0
    subprocess.run([f"{cuda}/bin/ptxas", "-arch=sm_90", "-O3", "-c", f, "-o", c], check=True)
    t0 = time.time(); open(j, "wb").write(nvjitlink(ptx, ["-arch=sm_90", "-O3"])); tj = time.time() - t0
    sw, sc, sj = sass(w), sass(c), sass(j)
    print(f"{name}: whole {len(sw)} ins ({tw*1e3:.0f} ms ptxas), reloc {len(sc)} ins, nvjitlink {len(sj)} ins ({tj*1e3:.0f} ms); nvjitlink==whole: {sj == sw}; reloc==whole: {sc == sw}")
    for tag, s in (("whole", sw), ("reloc", sc), ("nvjl", sj)):
        open(f"{out}/{name}.{tag}.sass", "w").write("\n".join(s))
