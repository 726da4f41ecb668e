// kiln's `sort_take` on the GPU (exec/src/cuda/select.rs runs it; compiled by NVRTC after
// radix_sort.cu, whose order_key and block_exclusive_sum it uses, into the same module).
//
// kiln_select_<dtype>: one block per line held in shared memory (its order-preserving keys),
// for each position k of the line's list the element the stable sort puts there, without
// sorting: a radix select, 8 bits a pass from the top, each pass a histogram (shared atomics)
// of the keys that share the digits chosen so far, whose running count finds the digit of the
// k-th key; what is left of k at the end is the key's rank among its equals (they keep their
// order). Once the keys sharing the digits chosen so far are few (at most `cand_cap`), they are
// copied out and the later passes count only them. A position right after the previous one is
// found from it (one pass, over those candidates where it lies among them): the same key while
// its equals last, else the smallest larger key; the first and last positions are the smallest
// and largest keys, found while the line is loaded. The element's bits are the key's
// inverse, but for the keys several bit patterns share (a float's ±0, its NaNs): there the
// rank-th element holding the key, in line order, is read back from global memory. The result
// is the same bits every run.
//
// kiln_sort_pick_<bytes>: the lines already sorted (longer lines, by the radix sort), read at
// their positions.

#ifndef KILN_SELECT_MATCH
#define KILN_SELECT_MATCH 0
#endif

// The element bits of key `k` (the inverse of order_key but for a float's zero and NaN keys).
template <typename K, int KIND>
__device__ __forceinline__ K key_bits(K k) {
    const K sign = (K)((K)1 << (sizeof(K) * 8 - 1));
    if (KIND == 1) return (K)(k ^ sign);
    if (KIND == 2) return (k & sign) ? (K)(k ^ sign) : (K)~k;
    return k;
}

// Adds one to hist[d] for every lane whose `on` holds (lanes of one digit add once together
// when KILN_SELECT_MATCH).
__device__ __forceinline__ void count_digit(u32* hist, u32 d, bool on) {
#if KILN_SELECT_MATCH
    u32 active = __ballot_sync(0xffffffffu, on);
    if (on) {
        u32 same = __match_any_sync(active, d);
        if ((threadIdx.x & 31) == (u32)(__ffs(same) - 1)) atomicAdd(&hist[d], (u32)__popc(same));
    }
#else
    if (on) atomicAdd(&hist[d], 1u);
#endif
}

// Warp then block reduction of (smallest value, how many hold it) over the block: thread 0's
// result in sel[0] (value) and sel[1] (count). Every thread calls it.
__device__ __forceinline__ void block_min_count(u64 best, u32 cnt, u64* redk, u32* red, u64* sel) {
    const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5, nwarps = (blockDim.x + 31) / 32;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        u64 ob = __shfl_xor_sync(0xffffffffu, best, o);
        u32 oc = __shfl_xor_sync(0xffffffffu, cnt, o);
        if (ob < best) best = ob, cnt = oc;
        else if (ob == best) cnt += oc;
    }
    if (lane == 0) redk[warp] = best, red[warp] = cnt;
    __syncthreads();
    if (t == 0) {
        u64 b = ~0ull;
        u32 c = 0;
        for (u32 w = 0; w < nwarps; ++w) {
            if (redk[w] < b) b = redk[w], c = red[w];
            else if (redk[w] == b) c += red[w];
        }
        sel[0] = b, sel[1] = c;
    }
    __syncthreads();
}

// Called by the block's first warp (lane `lane`): the digit of `hist` (RADIX counts) holding
// the key of rank `rem` in digit order, into sel[0], the keys of smaller digits into sel[1] and
// the digit's count into sel[2].
template <typename S>
__device__ __forceinline__ void find_digit(const u32* hist, u32 rem, u32 lane, S* sel) {
    u32 c[RADIX / 32], s = 0;
#pragma unroll
    for (int q = 0; q < RADIX / 32; ++q) c[q] = hist[lane * (RADIX / 32) + q], s += c[q];
    u32 incl = s;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        u32 y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= (u32)o) incl += y;
    }
    u32 before = incl - s;
    if (before <= rem && rem < incl) {
#pragma unroll
        for (int q = 0; q < RADIX / 32; ++q) {
            if (rem >= before && rem < before + c[q]) {
                sel[0] = lane * (RADIX / 32) + q, sel[1] = before, sel[2] = c[q];
            }
            before += c[q];
        }
    }
}

// Rank "the last of its equals" (a line's largest key).
#define LAST 0xffffffffu

template <typename K, int KIND, u64 INF>
__device__ void select_line(const K* in, u32 n, const long long* ks, u32 k_stride, u32 m, K* out,
                            u32 cand_cap) {
    const int BITS = sizeof(K) * 8;
    const K sign = (K)((K)1 << (BITS - 1));
    extern __shared__ __align__(16) u8 smem[];
    K* keys = (K*)smem;
    // Candidates: the keys of one digit prefix, once few enough (at most cand_cap).
    K* cand = (K*)(smem + ((n * sizeof(K) + 15) & ~(size_t)15));
    __shared__ u32 hist[RADIX];
    __shared__ u32 red[32];
    __shared__ u64 redk[32];
    __shared__ u64 sel[4];
    __shared__ u32 cand_n;
    const u32 t = threadIdx.x, T = blockDim.x, lane = t & 31;
    const K* line = in + (u64)blockIdx.x * n;
    // The line's keys into shared memory, 16 bytes a load where the line is aligned; the
    // smallest and (inverted) largest key on the way.
    const u32 PER = 16 / sizeof(K);
    u64 lo = ~0ull, hi = ~0ull;
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
            for (u32 q = 0; q < PER; ++q) {
                K x = order_key<K, KIND, INF>(u.k[q]);
                keys[j * PER + q] = x;
                lo = (u64)x < lo ? (u64)x : lo;
                hi = (u64)(K)~x < hi ? (u64)(K)~x : hi;
            }
        }
    }
    for (u32 j = head + t; j < n; j += T) {
        K x = order_key<K, KIND, INF>(line[j]);
        keys[j] = x;
        lo = (u64)x < lo ? (u64)x : lo;
        hi = (u64)(K)~x < hi ? (u64)(K)~x : hi;
    }
    block_min_count(lo, 0, redk, red, sel);
    const K kmin = (K)sel[0];
    __syncthreads();
    block_min_count(hi, 0, redk, red, sel);
    const K kmax = (K)~(K)sel[0];
    __syncthreads();

    K prev = 0;
    u32 prev_k = 0, prev_r = 0;
    // The candidates' group of the previous position: its rank there and the group's size.
    bool grp = false;
    u32 grank = 0, gsize = 0;
    for (u32 j = 0; j < m; ++j) {
        long long kk = ks[(u64)blockIdx.x * k_stride + j] % (long long)n;
        u32 k = (u32)(kk < 0 ? kk + (long long)n : kk);
        K key;
        u32 r;
        if (j > 0 && k == prev_k) {
            key = prev, r = prev_r;
        } else if (j > 0 && k == prev_k + 1) {
            // Next to the previous position: its key while its equals last, else the smallest
            // larger key; among the candidates when the previous one was not their last.
            const bool in_grp = grp && grank + 1 < gsize;
            const K* src = in_grp ? cand : keys;
            const u32 ns = in_grp ? gsize : n;
            u64 best = ~0ull;
            u32 cnt = 0, eq = 0;
            for (u32 i = t; i < ns; i += T) {
                K x = src[i];
                eq += x == prev;
                if (x > prev) {
                    if ((u64)x < best) best = x, cnt = 1;
                    else if ((u64)x == best) ++cnt;
                }
            }
            u32 eq_before = block_exclusive_sum(eq, red);
            if (t == T - 1) sel[2] = eq_before + eq;
            __syncthreads();
            block_min_count(best, cnt, redk, red, sel);
            if (prev_r + 1 < (u32)sel[2]) key = prev, r = prev_r + 1;
            else key = (K)sel[0], r = 0;
            __syncthreads();
            grp = in_grp, grank = grank + 1;
        } else if (k + 1 == n) {
            key = kmax, r = LAST, grp = false;
        } else if (k == 0) {
            key = kmin, r = 0, grp = false;
        } else {
            // Radix select, the top digit first; once the keys of the digits chosen so far are
            // few, they are copied out and the later passes count only them.
            K prefix = 0, mask = 0;
            u32 rem = k;
            const K* src = keys;
            u32 ns = n;
            grp = false;
#pragma unroll 1
            for (int shift = BITS - 8; shift >= 0; shift -= 8) {
                for (u32 b = t; b < RADIX; b += T) hist[b] = 0;
                __syncthreads();
                for (u32 i0 = 0; i0 < ns; i0 += T) {
                    u32 i = i0 + t;
                    K x = i < ns ? src[i] : (K)0;
                    bool on = i < ns && ((K)(x ^ prefix) & mask) == 0;
                    count_digit(hist, (u32)(x >> shift) & (RADIX - 1), on);
                }
                __syncthreads();
                if (t < 32) find_digit(hist, rem, lane, sel);
                __syncthreads();
                prefix |= (K)((K)sel[0] << shift);
                mask |= (K)((K)(RADIX - 1) << shift);
                rem -= (u32)sel[1];
                const u32 ce = (u32)sel[2];
                __syncthreads();
                if (!grp && shift > 0 && ce <= cand_cap) {
                    if (t == 0) cand_n = 0;
                    __syncthreads();
                    for (u32 i0 = 0; i0 < n; i0 += T) {
                        u32 i = i0 + t;
                        K x = i < n ? keys[i] : (K)0;
                        bool on = i < n && ((K)(x ^ prefix) & mask) == 0;
                        u32 b = __ballot_sync(0xffffffffu, on);
                        if (b) {
                            u32 leader = __ffs(b) - 1, base = 0;
                            if (lane == leader) base = atomicAdd(&cand_n, (u32)__popc(b));
                            base = __shfl_sync(0xffffffffu, base, leader);
                            if (on) cand[base + __popc(b & ((1u << lane) - 1u))] = x;
                        }
                    }
                    __syncthreads();
                    src = cand, ns = ce, grp = true, grank = rem, gsize = ce;
                }
            }
            key = prefix, r = rem;
        }
        K bits = key_bits<K, KIND>(key);
        if (KIND == 2 && (key == sign || key == (K)~(K)0)) {
            // ±0 or a NaN: the r-th element holding the key (LAST: the last), in line order (a
            // chunk a thread).
            u32 per = (n + T - 1) / T, a = t * per < n ? t * per : n, e = a + per < n ? a + per : n;
            u32 c = 0;
            for (u32 i = a; i < e; ++i) c += keys[i] == key;
            u32 before = block_exclusive_sum(c, red);
            if (t == T - 1) sel[2] = before + c;
            __syncthreads();
            u32 rr = r == LAST ? (u32)sel[2] - 1 : r;
            if (before <= rr && rr < before + c) {
                u32 left = rr - before;
                for (u32 i = a; i < e; ++i) {
                    if (keys[i] == key) {
                        if (left == 0) {
                            sel[3] = (u64)line[i];
                            break;
                        }
                        --left;
                    }
                }
            }
            __syncthreads();
            bits = (K)sel[3];
            __syncthreads();
        }
        if (t == 0) out[(u64)blockIdx.x * m + j] = bits;
        prev = key, prev_k = k, prev_r = r;
    }
}

template <typename K>
__device__ void sort_pick(const K* sorted, u32 n, const long long* ks, u32 k_stride, u32 m, K* out,
                          u32 lines) {
    u64 at = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (at >= (u64)lines * m) return;
    u64 l = at / m, j = at % m;
    long long kk = ks[l * k_stride + j] % (long long)n;
    u64 k = (u64)(kk < 0 ? kk + (long long)n : kk);
    out[at] = sorted[l * n + k];
}

#define KILN_SELECT(NAME, K, KIND, INF)                                                          \
    extern "C" __global__ void __launch_bounds__(256) kiln_select_##NAME(                        \
        const K* in, u32 n, const long long* ks, u32 k_stride, u32 m, K* out, u32 cand_cap) {    \
        select_line<K, KIND, INF>(in, n, ks, k_stride, m, out, cand_cap);                        \
    }

KILN_SELECT(u8, u8, 0, 0)
KILN_SELECT(i8, u8, 1, 0)
KILN_SELECT(u16, u16, 0, 0)
KILN_SELECT(i16, u16, 1, 0)
KILN_SELECT(f16, u16, 2, 0x7c00ull)
KILN_SELECT(bf16, u16, 2, 0x7f80ull)
KILN_SELECT(u32, u32, 0, 0)
KILN_SELECT(i32, u32, 1, 0)
KILN_SELECT(f32, u32, 2, 0x7f800000ull)
KILN_SELECT(u64, u64, 0, 0)
KILN_SELECT(i64, u64, 1, 0)
KILN_SELECT(f64, u64, 2, 0x7ff0000000000000ull)

#define KILN_PICK(BYTES, K)                                                                      \
    extern "C" __global__ void kiln_sort_pick_##BYTES(const K* sorted, u32 n, const long long* ks, \
                                                      u32 k_stride, u32 m, K* out, u32 lines) {  \
        sort_pick<K>(sorted, n, ks, k_stride, m, out, lines);                                    \
    }

KILN_PICK(1, u8)
KILN_PICK(2, u16)
KILN_PICK(4, u32)
KILN_PICK(8, u64)
