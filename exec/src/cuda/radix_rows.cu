// kiln's sort of short lines on the GPU (exec/src/cuda/rows.rs runs it; compiled by NVRTC after
// radix_sort.cu, whose order_key, RADIX and typedefs it uses, into the same module).
//
// kiln_rowsort_<dtype> (sort) and kiln_rowargsort_<dtype> (argsort): one block a line of n <=
// blockDim.x * ROW_ITEMS elements (blockDim.x a multiple of 32, at most ROW_THREADS), an LSD
// radix sort of the line in shared memory, 8 bits a pass, least significant first, of the keys'
// order-preserving bits (radix_sort.cu's order_key: NumPy's order, NaN last, -0.0 equal to
// 0.0). A thread holds ROW_ITEMS keys in registers, warp w the line's positions [w * 32 *
// ROW_ITEMS, (w + 1) * 32 * ROW_ITEMS), key i of lane l at w * 32 * ROW_ITEMS + i * 32 + l. Per
// digit: a warp ranks its keys in position order by eight ballots (as radix_sort.cu's onesweep
// pass ranks a tile), the warps' counts are combined in warp order and the digits' counts
// scanned, and every key (argsort: its 32-bit position beside it) is stored at its rank in
// shared memory, where the next pass reads it; so every pass is stable and so is the sort.
// Slots past n are padding that ranks last in every pass (the largest digit, positions after
// the line's). Passes whose digit is the same for every key of the line (found by the OR and
// AND of the keys) are skipped. The keys moved are the elements' own bits (sort keeps -0.0 and
// NaN payloads); the last pass's order is written out (argsort: the positions as int64).
// Nothing depends on timing: the result is the same bits every run.

#define ROW_THREADS 512
#define ROW_ITEMS 16
// Blocks of ROW_THREADS an SM should hold (caps the registers), and ROW_MATCH_ANY (a warp's
// equal digits by __match_any_sync, not eight ballots): tuning knobs of a standalone harness.
#ifndef ROW_MIN_BLOCKS
#define ROW_MIN_BLOCKS 1
#endif

template <typename K, int KIND, u64 INF, bool VALUES>
__device__ void row_sort(const K* in, K* out, long long* index, u32 n) {
    const u32 T = blockDim.x, W = T / 32, CAP = T * ROW_ITEMS;
    extern __shared__ __align__(16) u8 smem[];
    // Keys (16-byte aligned), positions (argsort), each warp's digit counts, the digits' sums.
    const u32 key_bytes = (CAP * (u32)sizeof(K) + 15u) & ~15u;
    K* s_keys = (K*)smem;
    u32* s_vals = (u32*)(smem + key_bytes);
    u32* s_warp = (u32*)(smem + key_bytes + (VALUES ? CAP * 4 : 0));
    u32* s_excl = s_warp + W * RADIX;
    __shared__ u64 s_or, s_and;
    const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const u64 line = blockIdx.x;
    const K* row = in + line * n;
    const u32 first = warp * 32 * ROW_ITEMS + lane;
    if (t == 0) s_or = 0, s_and = ~0ull;
    K k[ROW_ITEMS];
    u32 v[ROW_ITEMS];
    u32 d[ROW_ITEMS];
    u64 any = 0, all = ~0ull;
#pragma unroll
    for (int i = 0; i < ROW_ITEMS; ++i) {
        const u32 at = first + i * 32;
        k[i] = at < n ? row[at] : (K)0;
        v[i] = at;
        if (at < n) {
            const u64 key = (u64)order_key<K, KIND, INF>(k[i]);
            any |= key, all &= key;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        any |= __shfl_xor_sync(0xffffffffu, any, o);
        all &= __shfl_xor_sync(0xffffffffu, all, o);
    }
    __syncthreads();
    if (lane == 0) atomicOr(&s_or, any), atomicAnd(&s_and, all);
    __syncthreads();
    // The bits that differ between the line's keys: a pass whose byte of them is 0 is skipped.
    const u64 differ = s_or ^ s_and;
    if (differ == 0) {
        // No pass: the line as it is.
#pragma unroll
        for (int i = 0; i < ROW_ITEMS; ++i) {
            s_keys[first + i * 32] = k[i];
            if (VALUES) s_vals[first + i * 32] = v[i];
        }
        __syncthreads();
    }
    const u32 below_mask = (1u << lane) - 1u;
    bool loaded = true;
#pragma unroll 1
    for (u32 shift = 0; shift < sizeof(K) * 8; shift += 8) {
        if (((differ >> shift) & 0xffu) == 0) continue;
        if (!loaded) {
            // The keys (and positions) in the order of the digits so far.
#pragma unroll
            for (int i = 0; i < ROW_ITEMS; ++i) {
                k[i] = s_keys[first + i * 32];
                if (VALUES) v[i] = s_vals[first + i * 32];
            }
        }
        loaded = false;
        for (u32 j = t; j < W * RADIX; j += T) s_warp[j] = 0;
        __syncthreads();
        // Each key's rank among its warp's keys of its digit, in position order.
        u32* counts = s_warp + warp * RADIX;
#pragma unroll
        for (int i = 0; i < ROW_ITEMS; ++i) {
            const u32 at = first + i * 32;
            d[i] = at < n ? (u32)(order_key<K, KIND, INF>(k[i]) >> shift) & (RADIX - 1) : (RADIX - 1);
#ifdef ROW_MATCH_ANY
            const u32 peers = __match_any_sync(0xffffffffu, d[i]);
#else
            u32 peers = 0xffffffffu;
#pragma unroll
            for (int b = 0; b < 8; ++b) {
                const bool bit = (d[i] >> b) & 1u;
                const u32 ballot = __ballot_sync(0xffffffffu, bit);
                peers &= bit ? ballot : ~ballot;
            }
#endif
            const u32 below = __popc(peers & below_mask);
            const u32 before = counts[d[i]];
            __syncwarp();
            if (below == 0) counts[d[i]] = before + __popc(peers);
            __syncwarp();
            d[i] |= (before + below) << 8;
        }
        __syncthreads();
        // Digit dg: the warps' counts to offsets in warp order; the digits' exclusive sum.
        for (u32 dg = t; dg < RADIX; dg += T) {
            u32 c = 0;
            for (u32 w = 0; w < W; ++w) {
                const u32 x = s_warp[w * RADIX + dg];
                s_warp[w * RADIX + dg] = c;
                c += x;
            }
            s_excl[dg] = c;
        }
        __syncthreads();
        if (t < 32) {
            u32 c[RADIX / 32], s = 0;
#pragma unroll
            for (int q = 0; q < RADIX / 32; ++q) c[q] = s_excl[t * (RADIX / 32) + q], s += c[q];
            u32 incl = s;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const u32 y = __shfl_up_sync(0xffffffffu, incl, o);
                if (lane >= (u32)o) incl += y;
            }
            u32 before = incl - s;
#pragma unroll
            for (int q = 0; q < RADIX / 32; ++q) s_excl[t * (RADIX / 32) + q] = before, before += c[q];
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < ROW_ITEMS; ++i) {
            const u32 dg = d[i] & 0xffu;
            const u32 slot = s_excl[dg] + s_warp[warp * RADIX + dg] + (d[i] >> 8);
            s_keys[slot] = k[i];
            if (VALUES) s_vals[slot] = v[i];
        }
        __syncthreads();
    }
    for (u32 j = t; j < n; j += T) {
        if (VALUES) index[line * n + j] = (long long)s_vals[j];
        else out[line * n + j] = s_keys[j];
    }
}

#define KILN_ROWSORT(NAME, K, KIND, INF)                                                         \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS, ROW_MIN_BLOCKS)                    \
        kiln_rowsort_##NAME(const K* in, K* out, u32 n) {                                        \
        row_sort<K, KIND, INF, false>(in, out, 0, n);                                            \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(ROW_THREADS, ROW_MIN_BLOCKS)                    \
        kiln_rowargsort_##NAME(const K* in, long long* index, u32 n) {                           \
        row_sort<K, KIND, INF, true>(in, 0, index, n);                                           \
    }

KILN_ROWSORT(u8, u8, 0, 0)
KILN_ROWSORT(i8, u8, 1, 0)
KILN_ROWSORT(u16, u16, 0, 0)
KILN_ROWSORT(i16, u16, 1, 0)
KILN_ROWSORT(f16, u16, 2, 0x7c00ull)
KILN_ROWSORT(bf16, u16, 2, 0x7f80ull)
KILN_ROWSORT(u32, u32, 0, 0)
KILN_ROWSORT(i32, u32, 1, 0)
KILN_ROWSORT(f32, u32, 2, 0x7f800000ull)
KILN_ROWSORT(u64, u64, 0, 0)
KILN_ROWSORT(i64, u64, 1, 0)
KILN_ROWSORT(f64, u64, 2, 0x7ff0000000000000ull)
