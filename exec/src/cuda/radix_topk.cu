// kiln's `argtopk` on the GPU (exec/src/cuda/select.rs runs it; compiled by NVRTC after
// radix_sort.cu and radix_select.cu, whose order_key and find_digit it uses, into the same
// module).
//
// kiln_topk_<dtype>: one block per line held in shared memory as order-preserving keys (for
// `largest` their complement, so that the largest come first and NaN, the largest key, first
// of all), the positions of the line's m smallest keys, equal keys in line order, without
// sorting the line:
// 1. a radix select, 8 bits a pass from the top, of the key at sorted position m - 1 (the
//    threshold) and its rank r among its equals (each pass a histogram of the keys sharing the
//    digits chosen so far, in shared memory, and a warp's scan of it);
// 2. one pass collects the keys below the threshold (there are m - 1 - r of them; a warp's
//    ballot and one atomic a warp give their slots, in no particular order) and counts the
//    threshold's equals per warp, each warp over a contiguous segment of the line; a second
//    pass places the first r + 1 equals, in line order, after them;
// 3. the keys below the threshold are ordered by (key, position), a rank count each (at most
//    1024 of them: a thread's share of m^2 comparisons), and the positions written as int64.
// The candidates' (key, position) pairs are distinct, so the result is the same every run.

template <typename K, int KIND, u64 INF>
__device__ void topk_line(const K* in, u32 n, u32 m, u32 largest, long long* out) {
    const int BITS = sizeof(K) * 8;
    extern __shared__ __align__(16) u8 smem[];
    K* keys = (K*)smem;
    // Candidates: m keys, then m positions.
    K* ck = (K*)(smem + ((n * sizeof(K) + 15) & ~(size_t)15));
    u32* cp = (u32*)(smem + ((n * sizeof(K) + 15) & ~(size_t)15) +
                     ((m * sizeof(K) + 15) & ~(size_t)15));
    __shared__ u32 hist[RADIX];
    __shared__ u32 red[32];
    __shared__ u32 sel[3];
    __shared__ u32 n_less;
    const u32 t = threadIdx.x, T = blockDim.x, lane = t & 31, warp = t >> 5;
    const u32 nwarps = (T + 31) / 32;
    const K flip = largest ? (K)~(K)0 : (K)0;
    const K* line = in + (u64)blockIdx.x * n;
    // The line's keys into shared memory, 16 bytes a load where the line is aligned.
    const u32 PER = 16 / sizeof(K);
    u32 head = 0;
    if ((((unsigned long long)line) & 15) == 0) {
        head = n / PER * PER;
        const uint4* src = (const uint4*)line;
        for (u32 j = t; j < n / PER; j += T) {
            union {
                uint4 v;
                K k[16 / sizeof(K)];
            } u;
            u.v = __ldg(src + j);
#pragma unroll
            for (u32 q = 0; q < PER; ++q) keys[j * PER + q] = (K)(order_key<K, KIND, INF>(u.k[q]) ^ flip);
        }
    }
    for (u32 j = head + t; j < n; j += T) keys[j] = (K)(order_key<K, KIND, INF>(line[j]) ^ flip);
    if (t == 0) n_less = 0;
    __syncthreads();

    // 1. The threshold: the key at sorted position m - 1, and its rank among its equals.
    K prefix = 0, mask = 0;
    u32 rem = m - 1;
#pragma unroll 1
    for (int shift = BITS - 8; shift >= 0; shift -= 8) {
        for (u32 b = t; b < RADIX; b += T) hist[b] = 0;
        __syncthreads();
        for (u32 i = t; i < n; i += T) {
            K x = keys[i];
            if (((K)(x ^ prefix) & mask) == 0) atomicAdd(&hist[(u32)(x >> shift) & (RADIX - 1)], 1u);
        }
        __syncthreads();
        if (t < 32) find_digit(hist, rem, lane, sel);
        __syncthreads();
        prefix |= (K)((K)sel[0] << shift);
        mask |= (K)((K)(RADIX - 1) << shift);
        rem -= sel[1];
        __syncthreads();
    }
    const K thr = prefix;
    const u32 less = m - 1 - rem;

    // 2. The keys below the threshold (any order), and the threshold's equals per warp segment.
    const u32 seg = ((n + nwarps - 1) / nwarps + 31) & ~31u;
    const u32 a = warp * seg < n ? warp * seg : n, e = a + seg < n ? a + seg : n;
    const u32 below = (1u << lane) - 1u;
    u32 eq = 0;
    for (u32 i0 = a; i0 < e; i0 += 32) {
        const u32 i = i0 + lane;
        const K x = i < e ? keys[i] : thr;
        const bool lt = i < e && x < thr;
        eq += (u32)__popc(__ballot_sync(0xffffffffu, i < e && x == thr));
        const u32 bl = __ballot_sync(0xffffffffu, lt);
        if (bl) {
            const u32 leader = __ffs(bl) - 1;
            u32 base = 0;
            if (lane == leader) base = atomicAdd(&n_less, (u32)__popc(bl));
            base = __shfl_sync(0xffffffffu, base, leader);
            if (lt) {
                const u32 at = base + __popc(bl & below);
                ck[at] = x, cp[at] = i;
            }
        }
    }
    if (lane == 0) red[warp] = eq;
    __syncthreads();
    u32 eq_before = 0;
    for (u32 w = 0; w < warp; ++w) eq_before += red[w];
    // The first rem + 1 equals, in line order, after the keys below.
    for (u32 i0 = a; i0 < e && eq_before <= rem; i0 += 32) {
        const u32 i = i0 + lane;
        const bool on = i < e && keys[i] == thr;
        const u32 b = __ballot_sync(0xffffffffu, on);
        const u32 r = eq_before + __popc(b & below);
        if (on && r <= rem) out[(u64)blockIdx.x * m + less + r] = (long long)i;
        eq_before += __popc(b);
    }

    // 3. The keys below, ranked by (key, position).
    __syncthreads();
    for (u32 c = t; c < less; c += T) {
        const K x = ck[c];
        const u32 p = cp[c];
        u32 r = 0;
        for (u32 d = 0; d < less; ++d) {
            const K y = ck[d];
            r += y < x || (y == x && cp[d] < p);
        }
        out[(u64)blockIdx.x * m + r] = (long long)p;
    }
}

#define KILN_TOPK(NAME, K, KIND, INF)                                                            \
    extern "C" __global__ void __launch_bounds__(256)                                            \
        kiln_topk_##NAME(const K* in, u32 n, u32 m, u32 largest, long long* out) {               \
        topk_line<K, KIND, INF>(in, n, m, largest, out);                                         \
    }

KILN_TOPK(u8, u8, 0, 0)
KILN_TOPK(i8, u8, 1, 0)
KILN_TOPK(u16, u16, 0, 0)
KILN_TOPK(i16, u16, 1, 0)
KILN_TOPK(f16, u16, 2, 0x7c00ull)
KILN_TOPK(bf16, u16, 2, 0x7f80ull)
KILN_TOPK(u32, u32, 0, 0)
KILN_TOPK(i32, u32, 1, 0)
KILN_TOPK(f32, u32, 2, 0x7f800000ull)
KILN_TOPK(u64, u64, 0, 0)
KILN_TOPK(i64, u64, 1, 0)
KILN_TOPK(f64, u64, 2, 0x7ff0000000000000ull)
