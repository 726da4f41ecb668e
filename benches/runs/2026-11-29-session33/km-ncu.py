"""Session 33: one launch of each k-means prototype variant (km-proto.py) for Nsight Compute:
python3 km-ncu.py  (run under `ncu --set full --kernel-name regex:km_ -c 3`)."""
import sys
import numpy as np
import cupy as cp
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import importlib
kp = importlib.import_module("km-proto")

N, D, K = 1 << 20, 64, 10
rng = np.random.default_rng(0)
X = rng.standard_normal((N, D), dtype=np.float32)
C = X[rng.choice(N, K, replace=False)].copy()
Xc, Cc = cp.asarray(X), cp.asarray(C)
sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
for stage, nt, bps, free in ((1, 128, 4, 0), (3, 256, 2, 1), (4, 128, 4, 0)):
    wt = 32
    smem = 4 * (K * D + 16 + (nt // 32) * ((wt * (D + 4)) + K * D + 16))
    if stage == 4:
        smem += 4 * 2 * (D // 8) * 32 * 4
    kt, kf = kp.build(nt, stage, 1, free)
    kt.max_dynamic_shared_size_bytes = smem
    B = sms * bps
    per = -(-N // B); per = -(-per // 32) * 32
    part = cp.empty((B, K * D + K), cp.float32)
    und = cp.zeros(1, cp.uint32)
    args = (Xc, Cc, part, cp.int64(N), cp.int64(per)) + ((und,) if stage == 4 else ())
    kt((B,), (nt,), args, shared_mem=smem)
    cp.cuda.runtime.deviceSynchronize()
    print(f"stage {stage} nt {nt} blocks {B} free {free} smem {smem}: launched", flush=True)
