// kiln's LSD radix sort of whole lines on the GPU (exec/src/cuda/radix.rs runs it; compiled by
// NVRTC, kept in the disk kernel cache).
//
// Keys are sorted by 8-bit digits of their order-preserving bits, least significant digit
// first: unsigned integers as they are, signed ones with the sign bit flipped, floats (float16,
// bfloat16, float32, float64) with -0.0 taken as 0.0, negative values' bits inverted, positive
// values' sign bit set and every NaN the largest key (NumPy's order: NaN last). The keys moved
// are the elements' own bits (sort keeps -0.0 and NaN payloads); each pass is stable, so equal
// keys keep their order (argsort's positions ride along as 32-bit values, written as int64 by
// the last pass).
//
// One pass over the keys counts every digit's histogram (`kiln_radix_hist_*`), a block per
// digit scans its counts (`kiln_radix_scan`), then each digit is one "onesweep" pass
// (`kiln_radix_pass_*`, Adinets & Merrill 2022, ranked as CUB's BlockRadixRankMatchEarlyCounts
// does): a block takes the next tile (an atomic counter, so tiles start in order), counts its
// digits (each warp its own counters in shared memory) and publishes the counts at once, then
// ranks its keys stably by their digit (a warp's equal digits by a shared mask word each, or
// argsort's by eight ballots, its counters
// advanced item by item from the warps' offsets in order) and stages them in shared memory in
// sorted order (argsort's values are loaded only then, so that ranking holds no values in
// registers), looks back over the tiles before it for their
// prefixes (decoupled look-back: a tile's word holds its count flagged "aggregate" until its
// inclusive prefix is known, then that prefix flagged "inclusive"), and writes the staged keys
// (and values) to consecutive places of each digit's run. A pass in which every key has the
// same digit (the scan marks it) is skipped: each pass finds its buffers from the marks
// (`pass_plan`), and where every pass is trivial the last one copies. Nothing depends on
// timing: the result is the same bits every run.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define RADIX 256
// Threads of the histogram and scan blocks (the scan's: one per digit).
#define THREADS 256
#define WARPS (THREADS / 32)
// Threads of a digit pass's block (at least RADIX: thread t < RADIX is digit t), and keys a
// thread ranks: of keys of four bytes or fewer (sort, argsort), of 8-byte keys (the host's
// `tile_of` agrees). CUB's tuning for sm_90 (384 threads, 19 and 23 keys).
#ifndef KILN_PASS_THREADS
#define KILN_PASS_THREADS 384
#endif
#define PASS_THREADS KILN_PASS_THREADS
#define PASS_WARPS (PASS_THREADS / 32)
static_assert(PASS_THREADS >= 256 && PASS_THREADS % 32 == 0, "a pass's thread per digit");
#ifndef KILN_RADIX_ITEMS
#define KILN_RADIX_ITEMS 19
#endif
#ifndef KILN_RADIX_ITEMS_PAIRS
#define KILN_RADIX_ITEMS_PAIRS 23
#endif
#ifndef KILN_RADIX_ITEMS8
#define KILN_RADIX_ITEMS8 12
#endif
// Blocks of a digit pass an SM should hold (caps its registers), keys of four bytes or fewer:
// sort, argsort.
// On an H200, 2^26 float32 keys: sort's passes 0.47 ms at 3 blocks (56 registers) against
// 0.51 at 2 (80); argsort's 0.55 at 2 (3: 56 registers, spills; no faster). 256 threads of 16
// keys: 0.50 and 0.55; 512 of 16: 0.50 and 0.57 (session 25's harness).
#ifndef KILN_RADIX_MIN_BLOCKS
#define KILN_RADIX_MIN_BLOCKS 3
#endif
#ifndef KILN_RADIX_MIN_BLOCKS_PAIRS
#define KILN_RADIX_MIN_BLOCKS_PAIRS 2
#endif
#define BOUNDS_PASS __launch_bounds__(PASS_THREADS, KILN_RADIX_MIN_BLOCKS)
#define BOUNDS_PAIRS __launch_bounds__(PASS_THREADS, KILN_RADIX_MIN_BLOCKS_PAIRS)
// 8-byte keys' passes.
#define BOUNDS_PASS8 __launch_bounds__(PASS_THREADS, 2)
#define BOUNDS_PAIRS8 __launch_bounds__(PASS_THREADS, 2)
// Status words of earlier tiles a look-back step loads at once (8 measured slower than 1 on
// an H200: 0.87 against 0.79 ms a pass of 2^26 float32 keys).
#define LOOKBACK 1
// Keys a histogram thread loads before counting them (loads in flight: 8 took 0.19 ms for
// 2^26 float32 keys against 0.26 for 1, on an H200).
#ifndef HIST_LOADS
#define HIST_LOADS 8
#endif
#define FLAG_AGG 0x40000000u
#define FLAG_INC 0x80000000u
#define VALUE_MASK 0x3fffffffu
// Argsort's passes (`kiln_radix_pairs_*`): the first makes the positions, the last writes
// them as int64 and no keys.
#define MODE_FIRST 2
#define MODE_NO_KEYS 4
#define MODE_INDEX64 8

// The order-preserving bits of `b`. KIND 0: unsigned, 1: signed, 2: a float whose infinity's
// bits are INF.
template <typename K, int KIND, u64 INF>
__device__ __forceinline__ K order_key(K b) {
    const K sign = (K)((K)1 << (sizeof(K) * 8 - 1));
    if (KIND == 1) return (K)(b ^ sign);
    if (KIND == 2) {
        if ((K)(b & (K)~sign) > (K)INF) return (K)~(K)0;
        if (b == sign) b = 0;
        return (b & sign) ? (K)~b : (K)(b | sign);
    }
    return b;
}

template <typename K, int KIND, u64 INF>
__device__ __forceinline__ u32 digit_of(K b, u32 shift) {
    return (u32)(order_key<K, KIND, INF>(b) >> shift) & (RADIX - 1);
}

__device__ __forceinline__ void store_volatile(u32* p, u32 v) { *(volatile u32*)p = v; }
__device__ __forceinline__ u32 load_volatile(const u32* p) { return *(const volatile u32*)p; }

// Exclusive prefix sum over the block's threads; `warp_sums` holds a word per warp (the caller
// synchronises the block before reusing them).
__device__ __forceinline__ u32 block_exclusive_sum(u32 v, u32* warp_sums) {
    u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u32 x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= (u32)o) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    u32 before = 0;
    for (u32 j = 0; j < warp; ++j) before += warp_sums[j];
    return before + x - v;
}

// Every digit's histogram of the n keys: hist[pass * RADIX + digit] (zeroed by the caller),
// sizeof(K) passes. Counted in shared memory, in PARTS copies (lane % PARTS) so that lanes of a
// warp counting the same digit mostly add to different words.
template <typename K, int KIND, u64 INF>
__device__ void histogram(const K* keys, u32 n, u32* hist) {
    const int PASSES = sizeof(K);
    const int PARTS = PASSES >= 4 ? 32 / PASSES : 8;
    __shared__ u32 counts[PARTS * PASSES * RADIX];
    for (u32 j = threadIdx.x; j < PARTS * PASSES * RADIX; j += blockDim.x) counts[j] = 0;
    __syncthreads();
    u32* mine = counts + (threadIdx.x % PARTS) * PASSES * RADIX;
    const u32 stride = gridDim.x * blockDim.x;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    // HIST_LOADS keys a thread loads before counting them (loads in flight).
    for (; (u64)i + (u64)(HIST_LOADS - 1) * stride < n; i += HIST_LOADS * stride) {
        K b[HIST_LOADS];
#pragma unroll
        for (int u = 0; u < HIST_LOADS; ++u) b[u] = keys[i + u * stride];
#pragma unroll
        for (int u = 0; u < HIST_LOADS; ++u) {
            K o = order_key<K, KIND, INF>(b[u]);
#pragma unroll
            for (int p = 0; p < PASSES; ++p)
                atomicAdd(&mine[p * RADIX + (u32)((o >> (8 * p)) & 0xff)], 1u);
        }
    }
    for (; i < n; i += stride) {
        K o = order_key<K, KIND, INF>(keys[i]);
#pragma unroll
        for (int p = 0; p < PASSES; ++p) atomicAdd(&mine[p * RADIX + (u32)((o >> (8 * p)) & 0xff)], 1u);
    }
    __syncthreads();
    for (u32 j = threadIdx.x; j < PASSES * RADIX; j += blockDim.x) {
        u32 c = 0;
        for (int part = 0; part < PARTS; ++part) c += counts[part * PASSES * RADIX + j];
        if (c) atomicAdd(&hist[j], c);
    }
}

// Each pass's digit counts (block p: hist[p * RADIX ..]) to the first place of each digit's run:
// an exclusive sum, in place. THREADS == RADIX threads.
// A pass is trivial (`trivial[p]` set, zeroed by the caller) where every key has one digit.
extern "C" __global__ void kiln_radix_scan(u32* hist, u32 n, u32* trivial) {
    __shared__ u32 warp_sums[WARPS];
    u32* h = hist + blockIdx.x * RADIX;
    u32 v = h[threadIdx.x];
    if (v == n) trivial[blockIdx.x] = 1;
    h[threadIdx.x] = block_exclusive_sum(v, warp_sums);
}

// Where pass `pass` of `passes` stands among the passes that are not trivial: `index` of
// `count` (count 0: every pass is trivial, and the last one copies). False: skip the pass.
__device__ __forceinline__ bool pass_plan(const u32* trivial, u32 passes, u32 pass, u32& index,
                                          u32& count) {
    index = 0;
    count = 0;
    for (u32 q = 0; q < passes; ++q) {
        if (trivial[q] == 0) {
            index += q < pass;
            ++count;
        }
    }
    return trivial[pass] == 0 || (count == 0 && pass + 1 == passes);
}

// One digit pass (see the file's head). `bins`: the first place of each digit's run (this
// pass's scanned histogram); `status`: a zeroed word per (tile, digit); `counter`: a zeroed
// word handing out tiles. Dynamic shared memory: TILE keys, TILE values (argsort), then
// (PASS_WARPS + 1) * RADIX + PASS_WARPS + 1 words, then (sort: keys without values) a mask
// word per (warp, digit). Threads t < RADIX are digit t.

template <typename K, int KIND, u64 INF, int ITEMS, bool VALUES>
__device__ void onesweep(const K* keys_in, K* keys_out, const u32* vals_in, u32* vals_out,
                         long long* index_out, u32 n, u32 shift, const u32* bins, u32* status,
                         u32* counter, int mode, bool copy) {
    const u32 TILE = PASS_THREADS * ITEMS;
    extern __shared__ __align__(16) u8 smem[];
    K* s_keys = (K*)smem;
    u32* s_vals = (u32*)(smem + TILE * sizeof(K));
    u32* s_warp = (u32*)(smem + TILE * sizeof(K) + (VALUES ? TILE * 4 : 0));
    u32* s_glob = s_warp + PASS_WARPS * RADIX;
    u32* s_misc = s_glob + RADIX;
    const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5;

    u32* s_mask = s_misc + PASS_WARPS + 1;
    if (t == 0) s_misc[PASS_WARPS] = atomicAdd(counter, 1u);
    for (u32 j = t; j < PASS_WARPS * RADIX; j += PASS_THREADS) s_warp[j] = 0;
    if (!VALUES) {
        for (u32 j = t; j < PASS_WARPS * RADIX; j += PASS_THREADS) s_mask[j] = 0;
    }
    __syncthreads();
    const u32 tile = s_misc[PASS_WARPS];
    const u32 base = tile * TILE;

    // A pass in which every key has the same digit keeps their order: each tile is copied
    // (the last pass where every pass is trivial; the others are skipped).
    if (copy) {
        for (u32 j = t; j < TILE && base + j < n; j += PASS_THREADS) {
            u32 at = base + j;
            if (!VALUES || !(mode & MODE_NO_KEYS)) keys_out[at] = keys_in[at];
            if (VALUES) {
                u32 val = (mode & MODE_FIRST) ? at : vals_in[at];
                if (mode & MODE_INDEX64) index_out[at] = (long long)val;
                else vals_out[at] = val;
            }
        }
        return;
    }

    // A warp's keys are 32 * ITEMS consecutive ones, item i of lane l at i * 32 + l: loads are
    // coalesced and (warp, item, lane) is the keys' order. Past the end: a key whose order
    // bits are all ones (its digit the last in every pass), ranked after every key of the
    // tile and never written.
    const K sign = (K)((K)1 << (sizeof(K) * 8 - 1));
    const K past_end = KIND == 1 ? (K)~sign : (K)~(K)0;
    K k[ITEMS];
    const u32 first = base + warp * 32 * ITEMS + lane;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        u32 at = first + i * 32;
        k[i] = at < n ? keys_in[at] : past_end;
    }

    // The tile's digit counts first (each warp its own counters, shared atomics), published
    // before the keys are ranked, so that later tiles' look-backs find them early.
    u32* counts = s_warp + warp * RADIX;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) atomicAdd(&counts[digit_of<K, KIND, INF>(k[i], shift)], 1u);
    __syncthreads();
    u32 count = 0;
    u32* mine = status + (u64)tile * RADIX + t;
    if (t < RADIX) {
        for (u32 w = 0; w < PASS_WARPS; ++w) {
            u32 c = s_warp[w * RADIX + t];
            s_warp[w * RADIX + t] = count;
            count += c;
        }
        store_volatile(mine, (tile == 0 ? FLAG_INC : FLAG_AGG) | count);
    }
    // Each warp's counters become the first tile-sorted slot of its keys of each digit.
    const u32 local = block_exclusive_sum(count, s_misc);
    if (t < RADIX) {
        for (u32 w = 0; w < PASS_WARPS; ++w) s_warp[w * RADIX + t] += local;
    }
    __syncthreads();

    // Rank within the warp, item by item: the lanes holding the same digit (sort: each lane
    // sets its bit in its warp's mask word of its digit and reads the word back, CUB's
    // WARP_MATCH_ATOMIC_OR, 0.34 against 0.47 ms a pass of 2^26 float32 on an H100; argsort,
    // short of registers for it, by eight ballots);
    // the highest of them advances the warp's counter of that digit by their number; a key's
    // slot is the counter before, plus the lanes of its digit below it. Each key goes to its
    // slot of the tile's sorted order at once; argsort keeps the slot (d[i]).
    const u32 lanes_le = (2u << lane) - 1u;
    u32 d[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        u32 dg = digit_of<K, KIND, INF>(k[i], shift);
// KILN_MATCH_ANY (a tuning knob): by __match_any_sync, whose time grows with the distinct digits
// of the warp: on an H200 0.65 ms a pass of 2^26 random float32 digits against 0.47 by ballots,
// 0.37-0.39 where a warp holds few digits (the top byte of normal values).
#ifdef KILN_MATCH_ANY
        u32 peers = __match_any_sync(0xffffffffu, dg);
#else
        u32 peers = 0xffffffffu;
        u32* masks = s_mask + warp * RADIX;
        if (!VALUES) {
            atomicOr(&masks[dg], 1u << lane);
            __syncwarp();
            peers = masks[dg];
        } else {
#pragma unroll
            for (int b = 0; b < 8; ++b) {
                u32 ballot = __ballot_sync(0xffffffffu, (dg >> b) & 1u);
                peers &= ((dg >> b) & 1u) ? ballot : ~ballot;
            }
        }
#endif
        u32 leader = 31 - __clz(peers);
        u32 upto = __popc(peers & lanes_le);
        u32 before = 0;
        if (lane == leader) before = atomicAdd(&counts[dg], upto);
        before = __shfl_sync(0xffffffffu, before, leader);
#ifndef KILN_MATCH_ANY
        // Every lane has read its mask (its leader and the shuffle depend on it): the leader
        // clears it for the next item.
        if (!VALUES) {
            if (lane == leader) masks[dg] = 0;
            __syncwarp();
        }
#endif
        u32 slot = before + upto - 1;
        s_keys[slot] = k[i];
        d[i] = slot;
    }

    // Argsort's values are loaded now (not with the keys: fewer registers while ranking),
    // their latency hidden by the look-back.
    u32 v[ITEMS];
    if (VALUES) {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            u32 at = first + i * 32;
            v[i] = (mode & MODE_FIRST) ? at : (at < n ? vals_in[at] : 0u);
        }
    }

    // Decoupled look-back over the tiles before this one, for the keys of digit t before it:
    // LOOKBACK words loaded at once, taken in order up to the first not yet published (loaded
    // again) or inclusive one. Tile 0's word is inclusive: the walk ends there at the latest.
    if (t < RADIX) {
        u32 prefix = 0;
        if (tile > 0) {
            u32 j = tile;
            while (true) {
                u32 s[LOOKBACK];
#pragma unroll
                for (int q = 0; q < LOOKBACK; ++q)
                    s[q] = (u32)q < j ? load_volatile(status + (u64)(j - 1 - q) * RADIX + t) : 0u;
                u32 q = 0;
                bool done = false;
#pragma unroll
                for (int r = 0; r < LOOKBACK; ++r) {
                    if (done || q != (u32)r || (s[r] & (FLAG_AGG | FLAG_INC)) == 0) continue;
                    prefix += s[r] & VALUE_MASK;
                    done = (s[r] & FLAG_INC) != 0;
                    q = r + 1;
                }
                if (done) break;
                j -= q;
            }
            store_volatile(mine, FLAG_INC | (prefix + count));
        }
        // Tile-sorted slot j of digit t goes to s_glob[t] + j (wrapping arithmetic).
        s_glob[t] = bins[t] + prefix - local;
    }
    if (VALUES) {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) s_vals[d[i]] = v[i];
    }
    __syncthreads();

    const u32 valid = n - base < TILE ? n - base : TILE;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        u32 j = t + i * PASS_THREADS;
        if (j < valid) {
            K key = s_keys[j];
            u32 dest = s_glob[digit_of<K, KIND, INF>(key, shift)] + j;
            if (!VALUES || !(mode & MODE_NO_KEYS)) keys_out[dest] = key;
            if (VALUES && (mode & MODE_INDEX64)) index_out[dest] = (long long)s_vals[j];
            else if (VALUES) vals_out[dest] = s_vals[j];
        }
    }
}

// The passes' kernels take every buffer and find theirs from the trivial passes (`pass_plan`):
// keys-only passes alternate between `tmp` and `dst`, ending in `dst`; argsort's between
// `ka`/`va` and `kb`/`vb`, the first making the positions, the last writing them to `index`.
#define KILN_RADIX(NAME, K, KIND, INF, ITEMS, PITEMS, PASS_BOUNDS, PAIRS_BOUNDS)                \
    extern "C" __global__ void __launch_bounds__(THREADS) kiln_radix_hist_##NAME(                \
        const K* keys, u32 n, u32* hist) {                                                       \
        histogram<K, KIND, INF>(keys, n, hist);                                                  \
    }                                                                                            \
    extern "C" __global__ void PASS_BOUNDS                                                       \
        kiln_radix_pass_##NAME(const K* src, K* tmp, K* dst, u32 n, u32 pass, u32 passes,        \
                               const u32* bins, u32* status, u32* counter,                       \
                               const u32* trivial) {                                             \
        u32 i, k;                                                                                \
        if (!pass_plan(trivial, passes, pass, i, k)) return;                                     \
        const K* in = k == 0 || i == 0 ? src : ((k - i) % 2 == 0 ? dst : tmp);                   \
        K* out = k == 0 || (k - 1 - i) % 2 == 0 ? dst : tmp;                                     \
        onesweep<K, KIND, INF, ITEMS, false>(in, out, 0, 0, 0, n, 8 * pass, bins, status,        \
                                             counter, 0, k == 0);                                \
    }                                                                                            \
    extern "C" __global__ void PAIRS_BOUNDS                                                      \
        kiln_radix_pairs_##NAME(const K* src, K* ka, K* kb, u32* va, u32* vb, long long* index, \
                                u32 n, u32 pass, u32 passes, const u32* bins, u32* status,       \
                                u32* counter, const u32* trivial) {                              \
        u32 i, k;                                                                                \
        if (!pass_plan(trivial, passes, pass, i, k)) return;                                     \
        int mode = (i == 0 ? MODE_FIRST : 0) |                                                   \
                   (k == 0 || i + 1 == k ? MODE_NO_KEYS | MODE_INDEX64 : 0);                     \
        const K* kin = i == 0 ? src : ((i - 1) % 2 == 0 ? ka : kb);                              \
        const u32* vin = i == 0 ? 0 : ((i - 1) % 2 == 0 ? va : vb);                              \
        onesweep<K, KIND, INF, PITEMS, true>(kin, i % 2 == 0 ? ka : kb, vin,                     \
                                             i % 2 == 0 ? va : vb, index, n, 8 * pass, bins,     \
                                             status, counter, mode, k == 0);                     \
    }

#ifndef KILN_RADIX_F32_ONLY
KILN_RADIX(u8, u8, 0, 0, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS, BOUNDS_PAIRS)
KILN_RADIX(i8, u8, 1, 0, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS, BOUNDS_PAIRS)
KILN_RADIX(u16, u16, 0, 0, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS, BOUNDS_PAIRS)
KILN_RADIX(i16, u16, 1, 0, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS, BOUNDS_PAIRS)
KILN_RADIX(f16, u16, 2, 0x7c00ull, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS,
           BOUNDS_PAIRS)
KILN_RADIX(bf16, u16, 2, 0x7f80ull, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS,
           BOUNDS_PAIRS)
KILN_RADIX(u32, u32, 0, 0, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS, BOUNDS_PAIRS)
KILN_RADIX(i32, u32, 1, 0, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS, BOUNDS_PAIRS)
#endif
KILN_RADIX(f32, u32, 2, 0x7f800000ull, KILN_RADIX_ITEMS, KILN_RADIX_ITEMS_PAIRS, BOUNDS_PASS,
           BOUNDS_PAIRS)
#ifndef KILN_RADIX_F32_ONLY
KILN_RADIX(u64, u64, 0, 0, KILN_RADIX_ITEMS8, KILN_RADIX_ITEMS8, BOUNDS_PASS8, BOUNDS_PAIRS8)
KILN_RADIX(i64, u64, 1, 0, KILN_RADIX_ITEMS8, KILN_RADIX_ITEMS8, BOUNDS_PASS8, BOUNDS_PAIRS8)
KILN_RADIX(f64, u64, 2, 0x7ff0000000000000ull, KILN_RADIX_ITEMS8, KILN_RADIX_ITEMS8, BOUNDS_PASS8,
           BOUNDS_PAIRS8)
#endif
