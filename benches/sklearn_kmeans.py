"""scikit-learn's Lloyd iteration on the CPU, the peer of kiln's `kmeans_iter_262144x64_k10`
(benches/cpu_peers.rs): 2^18 points of 64 float32s (standard normal), k = 10, the first 10
points as the initial centres, one iteration (`KMeans(max_iter=1, n_init=1, algorithm="lloyd")`),
median of 15 fits after 2 warm-ups. Usage: python3 benches/sklearn_kmeans.py
"""
import statistics
import time

import numpy as np
from sklearn.cluster import KMeans

N, D, K = 1 << 18, 64, 10
X = np.random.default_rng(0).standard_normal((N, D), dtype=np.float32)
C = X[:K].copy()


def one():
    KMeans(K, init=C, n_init=1, max_iter=1, tol=0.0, algorithm="lloyd").fit(X)


for _ in range(2):
    one()
ts = []
for _ in range(15):
    t0 = time.perf_counter()
    one()
    ts.append(time.perf_counter() - t0)
import sklearn, threadpoolctl
print(f"sklearn {sklearn.__version__} Lloyd iteration {N}x{D} k={K}: {statistics.median(ts) * 1e3:.2f} ms "
      f"(threads: {threadpoolctl.threadpool_info()[0].get('num_threads') if threadpoolctl.threadpool_info() else '?'})")

# The iteration alone: scikit-learn's Cython kernel of one Lloyd step (assign + update), as
# KMeans.fit calls it per iteration, without fit's validation and final assignment.
from sklearn.cluster._k_means_lloyd import lloyd_iter_chunked_dense
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

w = np.ones(N, dtype=np.float32)
centers_new = np.empty_like(C)
labels = np.empty(N, dtype=np.int32)
center_shift = np.empty(K, dtype=np.float32)
weight_in_clusters = np.empty(K, dtype=np.float32)
threads = _openmp_effective_n_threads()


def step():
    lloyd_iter_chunked_dense(X, w, C, centers_new, weight_in_clusters, labels, center_shift, threads, True)


for _ in range(2):
    step()
ts = []
for _ in range(15):
    t0 = time.perf_counter()
    step()
    ts.append(time.perf_counter() - t0)
print(f"sklearn lloyd_iter_chunked_dense {N}x{D} k={K}: {statistics.median(ts) * 1e3:.2f} ms ({threads} threads)")
