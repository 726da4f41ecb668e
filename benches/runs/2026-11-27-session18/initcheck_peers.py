"""Does compute-sanitizer's initcheck flag CuPy's and torch's own results the way it flagged
kiln's float16 cuBLASLt products and cuSOLVER gesvd? Run each case under
`compute-sanitizer --tool initcheck python3 initcheck_peers.py CASE`."""
import sys

import numpy as np

case = sys.argv[1]
rng = np.random.default_rng(0)
if case.startswith("cupy"):
    import cupy as cp

    if case == "cupy_f16_matmul":
        a = cp.asarray(rng.standard_normal((70, 48)).astype(np.float16))
        b = cp.asarray(rng.standard_normal((48, 40)).astype(np.float16))
        print(case, float((a @ b).get().astype(np.float32).sum()))
    elif case == "cupy_svd":
        a = cp.asarray(rng.standard_normal((30, 20)))
        u, s, vt = cp.linalg.svd(a)
        print(case, s.get()[:3])
else:
    import torch

    a = torch.as_tensor(rng.standard_normal((70, 48)), dtype=torch.float16, device="cuda")
    w = torch.as_tensor(rng.standard_normal((40, 48)), dtype=torch.float16, device="cuda")
    bias = torch.as_tensor(rng.standard_normal(40), dtype=torch.float16, device="cuda")
    if case == "torch_f16_linear_bias":
        y = torch.nn.functional.linear(a, w, bias)  # addmm: cuBLASLt with the bias epilogue
    elif case == "torch_f16_matmul":
        y = a @ w.T
    print(case, float(y.float().sum().cpu()), y.cpu().shape)
