#!/usr/bin/env python3
"""Writes the seed inputs of kiln's fuzz targets into fuzz/corpus/<target>/ (run once; the
committed corpora are these seeds merged with what the fuzzer found, minimised by libFuzzer's
-merge=1). Needs NumPy for the .npy seeds. Run from the repository root: python3 fuzz/make_seeds.py
"""
import hashlib, io, os, re, random, sys
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- ir_text: the graphs of tests/filetests/ (the program and each expected graph stage) ---
for dirpath, _, files in os.walk(os.path.join(ROOT, "tests", "filetests")):
    for fn in sorted(files):
        if not fn.endswith(".kir"):
            continue
        text = open(os.path.join(dirpath, fn)).read()
        lines = text.splitlines()
        # The program: from the header to the return line.
        prog, on = [], False
        for l in lines:
            if l.startswith("kiln.graph"):
                on = True
            if on:
                prog.append(l)
                if l.startswith("return"):
                    break
        if prog:
            put("ir_text", "\n".join(prog) + "\n")
        # Expected graphs (commented out with "; ").
        block = None
        for l in lines:
            if l.startswith("; kiln.graph"):
                block = [l[2:]]
            elif block is not None:
                block.append(l[2:] if l.startswith("; ") else l)
                if l.startswith("; return"):
                    put("ir_text", "\n".join(block) + "\n")
                    block = None

# --- params: parameter lists ---
for p in ["float32 x, float32 y", "T x, raw T y", "X x, Y y", "raw float32 x1, raw float32 x2",
          "int32 a, int32 b", "bool p, int8 q, uint16 r, uint64 s", "complex64 z, complex128 w",
          "float16 h, bfloat16 b", "T x, int32 m", "", "  T  x ,\n  raw  U   y  ", "int64 _x",
          "raw raw T x", "float x", "T i", "T x, T x", "T 1x", "TT x"]:
    put("params", p)

# --- kernel_code: mode byte (bit 0 reduction, bits 1-3 signature, 4-5 shape, 6-7 axis), then
# NUL-separated parts ---
def ew(sig, shape, *parts):
    return bytes([sig << 1 | shape << 4]) + "\0".join(parts).encode()

def red(sig, shape, axis, *parts):
    return bytes([1 | sig << 1 | shape << 4 | axis << 6]) + "\0".join(parts).encode()

SEEDS = [
    ew(0, 0, "z = (x - y) * (x - y)"),
    ew(1, 1, "z = x > y ? x : y"),
    ew(2, 0, "c = a + b[_ind.size() - i - 1]"),
    ew(3, 1, "T t = x * 2;\nz = t + y[i * 7 - 3] - y[-i];"),
    ew(4, 0, "s = q / r; t = p ? (float)q : -1.5f;"),
    ew(5, 2, "z = x * x + complex<float>(1.0f, 2.0f)"),
    ew(6, 3, "z = sinf(x) * expf(-x); w = (int)round(x); z += fma(x, x, 1.0);"),
    ew(7, 1, "z = static_cast<U>(x) + y"),
    ew(0, 0, "for (int k = 0; k < 4; ++k) { z += x * k; } if (x > 0) z = -z; else { z = y; }"),
    ew(1, 0, "z = clamp01(x) + twice(y)",
       "template <typename U> __device__ inline U twice(U a) { return a + a; }\n"
       "__device__ float clamp01(float v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }"),
    ew(0, 1, "unsigned long long u = 3ull; long long v = -2ll; z = x + u * v + 0x1fu + 1e-3 + .5f + INFINITY;"),
    ew(6, 0, "z = isnan(x) ? NAN : min(max(x, -FLT_MAX), M_PI); w = x != x || !(x < 0) && ~3 ^ 5 | 1 << 2 >> 1;"),
    ew(0, 0, "z = x; z++; --z; z -= 1; z *= 2; z /= 3; z %= 4;"),
    ew(0, 0, "while (y > 1) y /= 2;"),
    ew(3, 0, "z = x + y.size() + _ind.size() + i"),
    red(1, 0, 0, "x * x", "a + b", "z = sqrt(a)", "0"),
    red(1, 0, 1, "abs(x)", "max(a, b)", "z = a", "0"),
    red(1, 0, 2, "x", "a < b ? a : b", "z = a", ""),
    red(0, 1, 0, "x - y", "a * b", "z = a", "1", "double"),
    red(3, 0, 3, "x * y[_j]", "a + b", "z = a", "0"),
    red(7, 2, 1, "y", "min(a, b)", "z = a", "INFINITY", "U", "__device__ float f(float v) { return v; }"),
]
for s in SEEDS:
    put("kernel_code", s)

# --- npy: NumPy's files of every dtype, C and Fortran order, 0-d and empty; some broken ---
arrays = [np.arange(6).astype(t).reshape(2, 3) for t in
          ["b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]]
arrays += [np.asfortranarray(np.arange(12.0).reshape(3, 4)), np.float32(2.5).reshape(()),
           np.zeros((0, 3), "f4"), np.arange(4, dtype=">i4"), np.arange(3, dtype="<u2"),
           np.array([np.nan, -0.0, np.inf], "f8")]
for a in arrays:
    b = io.BytesIO()
    np.save(b, a)
    put("npy", b.getvalue())
for version in [(2, 0), (3, 0)]:
    b = io.BytesIO()
    np.lib.format.write_array(b, np.arange(5, dtype="f4"), version=version)
    put("npy", b.getvalue())
b = io.BytesIO(); np.save(b, np.zeros(3, dtype=[("a", "f4"), ("b", "i2")])); put("npy", b.getvalue())
good = io.BytesIO(); np.save(good, np.arange(8, dtype="f8")); good = good.getvalue()
put("npy", good[:-5])              # truncated data
put("npy", good[:40])              # truncated header

# --- programs: random bytes of a few lengths ---
rng = random.Random(26)
for n in [8, 16, 24, 32, 48, 64, 96, 128] * 3:
    put("programs", bytes(rng.randrange(256) for _ in range(n)))

for t in sorted(os.listdir(CORPUS)):
    print(t, len(os.listdir(os.path.join(CORPUS, t))))
