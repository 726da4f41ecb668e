"""Session 34: why scan_tk (tiles by ticket) hung: one run with each block's progress written to
mapped host memory, read after 3 s. Usage: python3 scan-dbg.py [ROUND]"""
import collections, ctypes, os, sys, time
import numpy as np
import cupy as cp

here = os.path.dirname(os.path.abspath(__file__))
SRC = open(os.path.join(here, 'scan-dbg.cu')).read()
T, S, CW, R = 16384, 3, 8, int(sys.argv[1]) if len(sys.argv) > 1 else 128
N = 1 << 26
n_tiles = N // T
mod = cp.RawModule(code=SRC, options=('-std=c++17', f'-DROUND={R}', f'-DTILE={T}', f'-DSTAGES={S}',
                                      f'-DCWARPS={CW}', '-DSQUARE=0'))
k = mod.get_function('scan_dbg')
smem = S * T * 4
k.max_dynamic_shared_size_bytes = smem
SMS = cp.cuda.Device().attributes['MultiProcessorCount']
G = SMS
x = cp.asarray(np.random.default_rng(7).standard_normal(N).astype(np.float32))
y = cp.empty_like(x)
words = cp.zeros(N // 256 + 64, dtype=cp.uint64)
nb = G * 16
hp = cp.cuda.runtime.hostAlloc(nb * 4, 2)
dp = hp  # unified addressing: the mapped host pointer is the device pointer
dbg = np.ctypeslib.as_array((ctypes.c_int * nb).from_address(hp))
dbg[:] = -1
cp.cuda.Device().synchronize()
e = cp.cuda.Event()
k((G,), ((2 + CW) * 32,), (x, y, words, np.int32(n_tiles), np.uint32(1), np.uint64(dp)), shared_mem=smem)
e.record()
t0 = time.time()
while time.time() - t0 < 3 and not e.done:
    time.sleep(0.01)
print('finished' if e.done else 'HUNG', f'after {time.time() - t0:.2f} s; round {R}, grid {G}, tiles {n_tiles}')
d = dbg.reshape(G, 16).copy()
base = (words.data.ptr >> 3) & 0xfffffff
names = ['prod_k', 'prod_ticket', 'la_k', 'la_t', 'la_phase', 'la_word', 'cons_k', 'cons_phase', 'cons_t', 'tix0', 'tix1', 'tix2']
for f, name in enumerate(names):
    col = d[:, f]
    if name == 'la_word':
        col = np.where(col >= 0, col - base, col)
    c = collections.Counter(col.tolist())
    print(f'{name:12s} min {col.min()} max {col.max()} most common {c.most_common(6)}')
print('block ' + ' '.join(names))
for b in np.argsort(d[:, 3]):
    row = d[b].tolist()
    row[5] = row[5] - base if row[5] >= 0 else row[5]
    print(b, ' '.join(str(v) for v in row[:12]))
if e.done:
    yh = y.get(); ref = np.cumsum(x.get().astype(np.float64))
    print('max abs err', float(np.max(np.abs(yh - ref))))
sys.stdout.flush()
os._exit(0)
