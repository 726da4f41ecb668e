"""Session 34: cumsum of 2^26 float32 as a warp-specialised, TMA-fed, look-ahead scan, prototyped
in CUDA C++ through CuPy (issue 19 §4: >= 90% of the device-to-device copy rate).

The structure is the one CUB's "warpspeed" scan uses on Blackwell, made deterministic and
without work stealing: persistent blocks (G = blocks resident on the device), block c takes
tiles c, c + G, c + 2G, ... A producer lane streams the block's tiles into S shared-memory
stages with `cp.async.bulk` (the TMA's 1-D copy), completing on mbarriers. Consumer warps
reduce a tile as soon as it lands and publish its total (a 64-bit word: epoch, bits) at once:
no inclusive prefix is ever published, so there is no chain between tiles. A look-ahead warp
computes the block's exclusive prefix of each of its tiles as the prefix of its previous tile
plus the totals of the G tiles between them, waiting until all G are published and summing
them in a fixed order (the same bits on every run). Consumers scan a tile one step after
reducing it (lag 1), so the look-ahead's round trip is hidden behind the next tile's reduce.

Usage: python3 scan-ws.py [reps]
"""
import os, statistics, sys
import numpy as np
import cupy as cp

SRC = r'''
#define FULL 0xffffffffu
#define NTHR ((2 + CWARPS) * 32)
#define SEG (TILE / CWARPS)          // floats a consumer warp owns in a tile
#define JV (SEG / 128)        // float4 steps a lane takes in its warp's segment

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mb_init(unsigned long long* b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(b)), "r"(count));
}
__device__ __forceinline__ void mb_arrive(unsigned long long* b) {
    asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" :: "r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ void mb_arrive_tx(unsigned long long* b, unsigned bytes) {
    asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }"
                 :: "r"(smem_u32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mb_wait(unsigned long long* b, unsigned parity) {
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }"
                 :: "r"(smem_u32(b)), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load(void* dst, const void* src, unsigned bytes, unsigned long long* b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ void st_word(unsigned long long* p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_word(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void bar_consumers() {
    asm volatile("bar.sync 1, %0;" :: "n"(CWARPS * 32) : "memory");
}
__device__ __forceinline__ float sq(float v) { return SQUARE ? v * v : v; }

extern "C" __global__ void __launch_bounds__(NTHR)
scan_ws(const float* __restrict__ x, float* __restrict__ y, unsigned long long* words,
        int n_tiles, unsigned epoch)
{
    extern __shared__ __align__(128) float4 buf4[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES], pfull[STAGES];
    __shared__ float wsum[STAGES][CWARPS];
    __shared__ float pref[STAGES];
    float* buf = (float*)buf4;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int G = gridDim.x, c = blockIdx.x;
    const int my_tiles = c < n_tiles ? (n_tiles - 1 - c) / G + 1 : 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) { mb_init(&full[s], 1); mb_init(&empty[s], TMA_STORE ? 1 : CWARPS); mb_init(&pfull[s], 1); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warp == 0) {                       // producer: one lane streams the tiles in
        if (lane == 0) {
            for (int k = 0; k < my_tiles; k++) {
                const int s = k % STAGES;
                if (k >= STAGES) mb_wait(&empty[s], ((k / STAGES) - 1) & 1);
                mb_arrive_tx(&full[s], TILE * 4);
                tma_load(buf + s * TILE, x + (long long)(c + (long long)k * G) * TILE, TILE * 4, &full[s]);
            }
        }
        return;
    }
    if (warp == 1) {                       // look-ahead: the block's exclusive prefix of each tile
        float prev = 0.0f;                 // P(t_{k-1}), then P(t_k)
        int lo = 0;                        // first tile not in prev
        for (int k = 0; k < my_tiles; k++) {
            const int t = c + k * G;
            float acc = 0.0f;
#if LA_BATCH
            // the window's words loaded at once (up to 32 * 8 tiles), then only the missing
            // ones polled again: one round trip when every total is out
            unsigned long long w[8];
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int j = lo + i * 32 + lane;
                w[i] = j < t ? ld_word(&words[j]) : 0ull;
            }
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int j = lo + i * 32 + lane;
                if (j < t) {
                    while ((unsigned)(w[i] >> 32) != epoch) w[i] = ld_word(&words[j]);
                    acc += __uint_as_float((unsigned)w[i]);
                }
            }
            for (int base = lo + 256; base < t; base += 32) {
#else
            for (int base = lo; base < t; base += 32) {
#endif
                const int j = base + lane;
                float v = 0.0f;
                if (j < t) {
                    unsigned long long w;
                    do { w = ld_word(&words[j]); } while ((unsigned)(w >> 32) != epoch);
                    v = __uint_as_float((unsigned)w);
                }
                acc += v;
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(FULL, acc, o);
            prev += acc;
            lo = t;
            const int s = k % STAGES;
            if (lane == 0) { pref[s] = prev; mb_arrive(&pfull[s]); }
        }
        return;
    }
    // consumers: warps 2 .. CWARPS+1; warp w owns floats [w*SEG, (w+1)*SEG) of a tile
    const int cw = warp - 2;
    for (int k = 0; k <= my_tiles; k++) {
        if (k < my_tiles) {                // reduce tile k, publish its total
            const int s = k % STAGES;
            mb_wait(&full[s], (k / STAGES) & 1);
            const float4* seg = (const float4*)(buf + s * TILE + cw * SEG);
            float a = 0.0f;
#pragma unroll
            for (int j = 0; j < JV; j++) {
                float4 v = seg[j * 32 + lane];
                a += (sq(v.x) + sq(v.y)) + (sq(v.z) + sq(v.w));
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(FULL, a, o);
            if (lane == 0) wsum[s][cw] = a;
        }
        bar_consumers();
        if (k < my_tiles && threadIdx.x == 64) {
            const int s = k % STAGES;
            float tot = 0.0f;
            for (int w = 0; w < CWARPS; w++) tot += wsum[s][w];
            const int t = c + k * G;
            st_word(&words[t], ((unsigned long long)epoch << 32) | __float_as_uint(tot));
        }
        if (k >= 1) {                      // scan tile k-1 and write it
            const int kk = k - 1, s = kk % STAGES;
            mb_wait(&pfull[s], (kk / STAGES) & 1);
            float carry = pref[s];
            for (int w = 0; w < cw; w++) carry += wsum[s][w];
            const float4* seg = (const float4*)(buf + s * TILE + cw * SEG);
            float4* out = (float4*)(y + (long long)(c + (long long)kk * G) * TILE + cw * SEG);
#pragma unroll
            for (int j = 0; j < JV; j++) {
                float4 v = seg[j * 32 + lane];
                v.x = sq(v.x); v.y = v.x + sq(v.y); v.z = v.y + sq(v.z); v.w = v.z + sq(v.w);
                float inc = v.w;
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    float u = __shfl_up_sync(FULL, inc, o);
                    if (lane >= o) inc += u;
                }
                const float ex = carry + (inc - v.w);
                v.x += ex; v.y += ex; v.z += ex; v.w += ex;
                if (TMA_STORE) ((float4*)seg)[j * 32 + lane] = v; else out[j * 32 + lane] = v;
                carry += __shfl_sync(FULL, inc, 31);
            }
            __syncwarp();
            if (TMA_STORE) {
                // the tile scanned in place: one bulk store of it, the stage released once read
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                asm volatile("bar.sync 2, %0;" :: "n"(CWARPS * 32) : "memory");
                if (threadIdx.x == 64) {
                    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                                 :: "l"(y + (long long)(c + (long long)kk * G) * TILE), "r"(smem_u32(buf + s * TILE)), "r"(TILE * 4) : "memory");
                    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
                    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
                    mb_arrive(&empty[s]);
                }
            } else if (lane == 0) mb_arrive(&empty[s]);
        }
    }
}


// Tiles by ticket (any grid size, no residency assumed) with a deterministic prefix: tile t of
// round r = t / ROUND has prefix PR(r) + (totals of round r's tiles before t, fixed tree), and
// PR(r) = PR(r-1) + (round r-1's totals, fixed tree), published once computed by whichever
// tile needs it first (the same bits whoever computes it). words: [0] the ticket, then
// n_tiles totals, then the rounds' prefixes.
__device__ __forceinline__ float spin_word(const unsigned long long* p, unsigned epoch) {
    unsigned long long w;
    do { w = ld_word(p); } while ((unsigned)(w >> 32) != epoch);
    return __uint_as_float((unsigned)w);
}
extern "C" __global__ void __launch_bounds__(NTHR)
scan_tk(const float* __restrict__ x, float* __restrict__ y, unsigned long long* words,
        int n_tiles, unsigned epoch)
{
    extern __shared__ __align__(128) float4 buf4[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES], pfull[STAGES];
    __shared__ float wsum[STAGES][CWARPS];
    __shared__ float pref[STAGES];
    __shared__ int tix[STAGES];
    float* buf = (float*)buf4;
    unsigned* ticket = (unsigned*)(words + 2 * n_tiles + 64);   // a word zeroed per run
    unsigned long long* agg = words;
    unsigned long long* prw = words + n_tiles;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) { mb_init(&full[s], 1); mb_init(&empty[s], CWARPS); mb_init(&pfull[s], 1); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == 0) {
        if (lane == 0) {
            for (int k = 0; ; k++) {
                const int s = k % STAGES;
                if (k >= STAGES) mb_wait(&empty[s], ((k / STAGES) - 1) & 1);
                const int t = (int)atomicAdd(ticket, 1u);
                tix[s] = t;
                if (t >= n_tiles) { mb_arrive(&full[s]); break; }
                mb_arrive_tx(&full[s], TILE * 4);
                tma_load(buf + s * TILE, x + (long long)t * TILE, TILE * 4, &full[s]);
            }
        }
        return;
    }
    if (warp == 1) {
        for (int k = 0; ; k++) {
            const int s = k % STAGES;
            mb_wait(&full[s], (k / STAGES) & 1);
            const int t = tix[s];
            if (t >= n_tiles) break;
            const int r = t / ROUND, base = r * ROUND;
            float pr = 0.0f;
            if (r > 0) {
                unsigned long long w = ld_word(&prw[r]);
                if ((unsigned)(w >> 32) == epoch) {
                    pr = __uint_as_float((unsigned)w);
                } else {
                    float a = 0.0f;
#pragma unroll
                    for (int i = 0; i < ROUND / 32; i++) a += spin_word(&agg[base - ROUND + i * 32 + lane], epoch);
#pragma unroll
                    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(FULL, a, o);
                    const float prev = r > 1 ? spin_word(&prw[r - 1], epoch) : 0.0f;
                    pr = prev + a;
                    if (lane == 0) st_word(&prw[r], ((unsigned long long)epoch << 32) | __float_as_uint(pr));
                }
            }
            float b = 0.0f;
            for (int i = 0; i < ROUND / 32; i++) {
                const int j = base + i * 32 + lane;
                if (j < t) b += spin_word(&agg[j], epoch);
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) b += __shfl_xor_sync(FULL, b, o);
            if (lane == 0) { pref[s] = pr + b; mb_arrive(&pfull[s]); }
        }
        return;
    }
    const int cw = warp - 2;
    bool ended = false, prev_have = false;
    int prev_t = 0;
    for (int k = 0; ; k++) {
        const int s = k % STAGES;
        bool have = false;
        int t = 0;
        if (!ended) {
            mb_wait(&full[s], (k / STAGES) & 1);
            t = tix[s];
            have = t < n_tiles;
            ended = !have;
        }
        if (have) {
            const float4* seg = (const float4*)(buf + s * TILE + cw * SEG);
            float a = 0.0f;
#pragma unroll
            for (int j = 0; j < JV; j++) {
                float4 v = seg[j * 32 + lane];
                a += (sq(v.x) + sq(v.y)) + (sq(v.z) + sq(v.w));
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(FULL, a, o);
            if (lane == 0) wsum[s][cw] = a;
        }
        bar_consumers();
        if (have && threadIdx.x == 64) {
            float tot = 0.0f;
            for (int w = 0; w < CWARPS; w++) tot += wsum[s][w];
            st_word(&agg[t], ((unsigned long long)epoch << 32) | __float_as_uint(tot));
        }
        if (prev_have) {
            const int kk = k - 1, ps = kk % STAGES;
            mb_wait(&pfull[ps], (kk / STAGES) & 1);
            float carry = pref[ps];
            for (int w = 0; w < cw; w++) carry += wsum[ps][w];
            const float4* seg = (const float4*)(buf + ps * TILE + cw * SEG);
            float4* out = (float4*)(y + (long long)prev_t * TILE + cw * SEG);
#pragma unroll
            for (int j = 0; j < JV; j++) {
                float4 v = seg[j * 32 + lane];
                v.x = sq(v.x); v.y = v.x + sq(v.y); v.z = v.y + sq(v.z); v.w = v.z + sq(v.w);
                float inc = v.w;
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    float u = __shfl_up_sync(FULL, inc, o);
                    if (lane >= o) inc += u;
                }
                const float ex = carry + (inc - v.w);
                v.x += ex; v.y += ex; v.z += ex; v.w += ex;
                out[j * 32 + lane] = v;
                carry += __shfl_sync(FULL, inc, 31);
            }
            __syncwarp();
            if (lane == 0) mb_arrive(&empty[ps]);
        }
        if (!have) break;
        prev_have = have; prev_t = t;
    }
}

// the bound: the same pipeline, each tile copied out (no reduce, no look-ahead)
extern "C" __global__ void __launch_bounds__(NTHR)
copy_ws(const float* __restrict__ x, float* __restrict__ y, unsigned long long* words,
        int n_tiles, unsigned epoch)
{
    extern __shared__ __align__(128) float4 buf4[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    float* buf = (float*)buf4;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int G = gridDim.x, c = blockIdx.x;
    const int my_tiles = c < n_tiles ? (n_tiles - 1 - c) / G + 1 : 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) { mb_init(&full[s], 1); mb_init(&empty[s], CWARPS); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == 0) {
        if (lane == 0) {
            for (int k = 0; k < my_tiles; k++) {
                const int s = k % STAGES;
                if (k >= STAGES) mb_wait(&empty[s], ((k / STAGES) - 1) & 1);
                mb_arrive_tx(&full[s], TILE * 4);
                tma_load(buf + s * TILE, x + (long long)(c + (long long)k * G) * TILE, TILE * 4, &full[s]);
            }
        }
        return;
    }
    if (warp == 1) return;
    const int cw = warp - 2;
    for (int k = 0; k < my_tiles; k++) {
        const int s = k % STAGES;
        mb_wait(&full[s], (k / STAGES) & 1);
        const float4* seg = (const float4*)(buf + s * TILE + cw * SEG);
        float4* out = (float4*)(y + (long long)(c + (long long)k * G) * TILE + cw * SEG);
#pragma unroll
        for (int j = 0; j < JV; j++) out[j * 32 + lane] = seg[j * 32 + lane];
        __syncwarp();
        if (lane == 0) mb_arrive(&empty[s]);
    }
}
'''

N = 1 << 26
REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
dev = cp.cuda.Device()
SMS = dev.attributes['MultiProcessorCount']
print(cp.cuda.runtime.getDeviceProperties(0)['name'].decode(), SMS, 'SMs')

rng = np.random.default_rng(7)
xh = rng.standard_normal(N).astype(np.float32)
x = cp.asarray(xh)
y = cp.empty_like(x)
words = cp.zeros(N // 256 + 64, dtype=cp.uint64)
ref = {0: np.cumsum(xh.astype(np.float64)), 1: np.cumsum(xh.astype(np.float64) ** 2)}


def timed(fn, reps=REPS):
    ts = []
    s, e = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        fn()
    for _ in range(reps):
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e))
    return statistics.median(ts), min(ts)


copy_ms = timed(lambda: cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, N * 4, 3, 0))
print(f'copy (cudaMemcpyAsync DtoD) median {copy_ms[0]:.4f} min {copy_ms[1]:.4f} ms')
cum_ms = timed(lambda: cp.cumsum(x, out=y))
print(f'cupy.cumsum median {cum_ms[0]:.4f} ms')

epoch = [0]
LA_BATCH = int(os.environ.get('SCAN_LA_BATCH', '0'))  # 1: scan_ws's look-ahead loads its window at once
TMA_STORE = int(os.environ.get('SCAN_TMA_STORE', '0'))  # 1: scan_ws stores each tile by one bulk copy
TICKET = int(os.environ.get('SCAN_TICKET', '0'))      # 1: scan_tk (tiles by ticket)
ROUND = int(os.environ.get('SCAN_ROUND', '128'))      # tiles a round of scan_tk
GRID_X = int(os.environ.get('SCAN_GRID_X', '1'))      # scan_tk's grid: this many times the resident blocks


def occupancy(kern, nthr, smem):
    import ctypes
    lib = ctypes.CDLL('libcuda.so.1')
    n = ctypes.c_int(0)
    rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), ctypes.c_void_p(kern.kernel.ptr),
                                                        ctypes.c_int(nthr), ctypes.c_size_t(smem))
    if rc != 0:
        raise RuntimeError(f'cuOccupancyMaxActiveBlocksPerMultiprocessor: {rc}')
    return n.value

CONFIGS = [  # (T floats a tile, S stages, CW consumer warps, blocks per SM)
    (4096, 4, 8, 2), (4096, 6, 8, 2), (4096, 4, 8, 3), (4096, 4, 4, 3),
    (8192, 3, 8, 2), (8192, 4, 8, 1), (8192, 6, 8, 1), (2048, 8, 4, 4),
    (4096, 8, 8, 1), (16384, 3, 8, 1),
]
import os
if os.environ.get('SCAN_CONFIGS'):   # "T,S,CW,B;T,S,CW,B..."
    CONFIGS = [tuple(int(v) for v in c.split(',')) for c in os.environ['SCAN_CONFIGS'].split(';')]
for (T, S, CW, B) in CONFIGS:
    smem = S * T * 4
    if smem > 227 * 1024 // B - 2048:
        print(f'T{T} S{S} CW{CW} B{B}: does not fit'); continue
    for square in (0, 1):
        opts = ('-std=c++17', f'-DLA_BATCH={LA_BATCH}', f'-DTMA_STORE={TMA_STORE}', f'-DROUND={ROUND}', f'-DTILE={T}', f'-DSTAGES={S}', f'-DCWARPS={CW}', f'-DSQUARE={square}')
        mod = cp.RawModule(code=SRC, options=opts)
        k = mod.get_function('scan_ws')
        kc = mod.get_function('copy_ws')
        nthr = (2 + CW) * 32
        G = SMS * B
        n_tiles = N // T
        k.max_dynamic_shared_size_bytes = smem
        kc.max_dynamic_shared_size_bytes = smem
        occ = occupancy(k, nthr, smem)
        if occ < B:
            print(f'T{T} S{S} CW{CW} B{B}: only {occ} blocks a multiprocessor fit, skipped'); break
        if TICKET:
            k = mod.get_function('scan_tk')
            k.max_dynamic_shared_size_bytes = smem
            G = min(n_tiles, SMS * B * GRID_X)
        def run(kern=k):
            epoch[0] += 1
            if TICKET:
                words[2 * n_tiles + 64] = 0
            kern((G,), (nthr,), (x, y, words, np.int32(n_tiles), np.uint32(epoch[0])), shared_mem=smem)
        name = f'T{T} S{S} CW{CW} B{B} sq{square}' + (' tma-store' if TMA_STORE else '') + (' la-batch' if LA_BATCH else '') + (f' ticket R{ROUND} grid {G}' if TICKET else '')
        try:
            if square == 0 and not TICKET:
                cm = timed(lambda: run(kc))
                ok = bool(cp.array_equal(y, x))
                print(f'{name}: pipeline copy {cm[0]:.4f} ms ({copy_ms[0] / cm[0] * 100:.0f}% of copy) equal {ok}')
            sm = timed(run)
            got = y.get()
            first = got.copy()
            run(); cp.cuda.Device().synchronize()
            same = bool(np.array_equal(first, y.get()))
            err = np.max(np.abs(got - ref[square]) / (1.0 + np.abs(ref[square])))
            print(f'{name}: scan median {sm[0]:.4f} min {sm[1]:.4f} ms ({copy_ms[0] / sm[0] * 100:.0f}% of copy) '
                  f'max rel err {err:.2e} same bits {same}', flush=True)
        except Exception as ex:  # a config the device refuses
            print(f'{name}: failed {type(ex).__name__}: {ex}')
