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
