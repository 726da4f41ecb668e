"""NumPy's side of benches/linalg.rs: the same matrices, median of 10 calls after a warm-up."""
import time

import numpy as np


def entries(n):
    return np.sin(np.arange(n * n, dtype=np.float64)).reshape(n, n)


def spd(n):
    a = entries(n)
    return a @ a.T / n + np.eye(n)


def median_ms(f, reps=10):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    return sorted(ts)[len(ts) // 2]


n = 2048
a = spd(n)
b = np.cos(np.arange(n, dtype=np.float64)).reshape(n, 1)
s = 512
m = entries(s)
sym = spd(s)
print(f"numpy {np.__version__}")
print(f"cholesky_2048_f64: {median_ms(lambda: np.linalg.cholesky(a)):.2f} ms")
print(f"solve_2048_f64: {median_ms(lambda: np.linalg.solve(a, b)):.2f} ms")
print(f"eigh_512_f64: {median_ms(lambda: np.linalg.eigh(sym)):.2f} ms")
print(f"svd_512_f64: {median_ms(lambda: np.linalg.svd(m, full_matrices=False)):.2f} ms")
