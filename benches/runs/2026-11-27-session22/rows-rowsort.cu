// A block radix sort per row in shared memory (issue 19's rows sort), standalone: one block a
// row of at most 32 * WARPS * ITEMS keys of 4 bytes or fewer, the keys in registers, per 8-bit
// digit (least significant first) a stable ranking of the row (a warp's keys by eight ballots,
// the warps' counts combined in order, as radix_sort.cu's onesweep ranks a tile), the keys
// (and int32 positions for argsort) scattered to their places in shared memory and read back
// for the next digit; the last digit writes the row out. Included after radix_sort.cu (its
// order_key / digit_of and typedefs).

template <typename K, int KIND, u64 INF, int ITEMS, bool VALUES>
__device__ void row_sort(const K* in, K* out, long long* index, u32 n) {
    extern __shared__ __align__(16) u8 smem[];
    const u32 T = blockDim.x, W = T / 32, CAP = T * ITEMS;
    K* s_keys = (K*)smem;
    u32* s_vals = (u32*)(smem + CAP * sizeof(K));
    u32* s_warp = (u32*)(smem + CAP * sizeof(K) + (VALUES ? CAP * 4 : 0));
    u32* s_excl = s_warp + W * RADIX;
    const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const K* row = in + (u64)blockIdx.x * n;
    const u32 first = warp * 32 * ITEMS + lane;
    K k[ITEMS];
    u32 v[ITEMS];
    u32 d[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        u32 at = first + i * 32;
        k[i] = at < n ? row[at] : (K)0;
        v[i] = at;
    }
    const u32 below_mask = (1u << lane) - 1u;
#pragma unroll 1
    for (u32 shift = 0; shift < sizeof(K) * 8; shift += 8) {
        for (u32 j = t; j < W * RADIX; j += T) s_warp[j] = 0;
        __syncthreads();
        u32* counts = s_warp + warp * RADIX;
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            u32 at = first + i * 32;
            d[i] = at < n ? digit_of<K, KIND, INF>(k[i], shift) : (RADIX - 1);
            u32 peers = 0xffffffffu;
#pragma unroll
            for (int b = 0; b < 8; ++b) {
                bool bit = (d[i] >> b) & 1u;
                u32 ballot = __ballot_sync(0xffffffffu, bit);
                peers &= bit ? ballot : ~ballot;
            }
            u32 below = __popc(peers & below_mask);
            u32 before = counts[d[i]];
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
                u32 x = s_warp[w * RADIX + dg];
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
                u32 y = __shfl_up_sync(0xffffffffu, incl, o);
                if (lane >= (u32)o) incl += y;
            }
            u32 before = incl - s;
#pragma unroll
            for (int q = 0; q < RADIX / 32; ++q) s_excl[t * (RADIX / 32) + q] = before, before += c[q];
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            u32 dg = d[i] & 0xffu;
            u32 slot = s_excl[dg] + s_warp[warp * RADIX + dg] + (d[i] >> 8);
            s_keys[slot] = k[i];
            if (VALUES) s_vals[slot] = v[i];
        }
        __syncthreads();
        if (shift + 8 < sizeof(K) * 8) {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                k[i] = s_keys[first + i * 32];
                if (VALUES) v[i] = s_vals[first + i * 32];
            }
            __syncthreads();
        }
    }
    for (u32 j = t; j < n; j += T) {
        if (VALUES) index[(u64)blockIdx.x * n + j] = (long long)s_vals[j];
        else out[(u64)blockIdx.x * n + j] = s_keys[j];
    }
}

extern "C" __global__ void __launch_bounds__(512) kiln_rowsort_f32(const u32* in, u32* out, u32 n) {
    row_sort<u32, 2, 0x7f800000ull, 16, false>(in, out, 0, n);
}
extern "C" __global__ void __launch_bounds__(512) kiln_rowargsort_f32(const u32* in, long long* index, u32 n) {
    row_sort<u32, 2, 0x7f800000ull, 16, true>(in, 0, index, n);
}
