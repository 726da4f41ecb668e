
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
        for (int s = 0; s < STAGES; s++) { mb_init(&full[s], 1); mb_init(&empty[s], CWARPS); mb_init(&pfull[s], 1); }
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
            for (int base = lo; base < t; base += 32) {
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
                out[j * 32 + lane] = v;
                carry += __shfl_sync(FULL, inc, 31);
            }
            __syncwarp();
            if (lane == 0) mb_arrive(&empty[s]);
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

#define D(f, v) (dbg[blockIdx.x * 16 + (f)] = (v))
__device__ __forceinline__ float spin_dbg(volatile int* me, const unsigned long long* p, unsigned epoch) {
    unsigned long long w;
    if ((threadIdx.x & 31) == 0) me[5] = (int)(((unsigned long long)p >> 3) & 0xfffffff);
    do { w = ld_word(p); } while ((unsigned)(w >> 32) != epoch);
    return __uint_as_float((unsigned)w);
}
extern "C" __global__ void __launch_bounds__(NTHR)
scan_dbg(const float* __restrict__ x, float* __restrict__ y, unsigned long long* words,
        int n_tiles, unsigned epoch, volatile int* dbg)
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
                D(0, k);
                if (k >= STAGES) mb_wait(&empty[s], ((k / STAGES) - 1) & 1);
                const int t = (int)atomicAdd(ticket, 1u);
                D(1, t);
                tix[s] = t;
                D(9 + s, t);
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
            if (lane == 0) { D(2, k); D(4, 1); }
            mb_wait(&full[s], (k / STAGES) & 1);
            const int t = tix[s];
            if (lane == 0) { D(3, t); D(4, 2); }
            if (t >= n_tiles) { if (lane == 0) D(4, 9); break; }
            const int r = t / ROUND, base = r * ROUND;
            float pr = 0.0f;
            if (r > 0) {
                if (lane == 0) D(4, 3);
                unsigned long long w = ld_word(&prw[r]);
                if ((unsigned)(w >> 32) == epoch) {
                    pr = __uint_as_float((unsigned)w);
                } else {
                    float a = 0.0f;
#pragma unroll
                    for (int i = 0; i < ROUND / 32; i++) a += spin_dbg(dbg + blockIdx.x * 16, &agg[base - ROUND + i * 32 + lane], epoch);
#pragma unroll
                    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(FULL, a, o);
                    const float prev = r > 1 ? spin_dbg(dbg + blockIdx.x * 16, &prw[r - 1], epoch) : 0.0f;
                    pr = prev + a;
                    if (lane == 0) st_word(&prw[r], ((unsigned long long)epoch << 32) | __float_as_uint(pr));
                }
            }
            if (lane == 0) D(4, 6);
            float b = 0.0f;
            for (int i = 0; i < ROUND / 32; i++) {
                const int j = base + i * 32 + lane;
                if (j < t) b += spin_dbg(dbg + blockIdx.x * 16, &agg[j], epoch);
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) b += __shfl_xor_sync(FULL, b, o);
            if (lane == 0) { pref[s] = pr + b; mb_arrive(&pfull[s]); D(4, 5); }
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
            if (threadIdx.x == 64) { D(6, k); D(7, 1); }
            mb_wait(&full[s], (k / STAGES) & 1);
            t = tix[s];
            if (threadIdx.x == 64) D(8, t);
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
        if (threadIdx.x == 64) D(7, 2);
        bar_consumers();
        if (threadIdx.x == 64) D(7, 3);
        if (have && threadIdx.x == 64) {
            float tot = 0.0f;
            for (int w = 0; w < CWARPS; w++) tot += wsum[s][w];
            st_word(&agg[t], ((unsigned long long)epoch << 32) | __float_as_uint(tot));
        }
        if (prev_have) {
            const int kk = k - 1, ps = kk % STAGES;
            if (threadIdx.x == 64) D(7, 4);
            mb_wait(&pfull[ps], (kk / STAGES) & 1);
            if (threadIdx.x == 64) D(7, 5);
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
        if (!have) { if (threadIdx.x == 64) D(7, 9); break; }
        prev_have = have; prev_t = t;
    }
}

