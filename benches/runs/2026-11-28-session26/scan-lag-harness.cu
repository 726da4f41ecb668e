// Session 24 (scan helper), round 6 (round 4: scan-r1-harness.cu, round 5: scan-r2-harness.cu): deterministic single-pass
// scans of 2^26 float32 against the device-to-device copy, every run the same bits (checked:
// first and last runs compared bit for bit). Two look-backs:
//   FEN     kiln's (scan_gpu.rs): tile t publishes T(t), a Fenwick node (its total after
//           T(t - 2^m) for m below t's trailing ones); its prefix is the combine of T(e) over
//           the blocks of t's binary form. A node of 2^k tiles is published k round trips after
//           its tiles' data: the tiles after a boundary of 2^9+ wait ~9 round trips.
//   CHUNK C chunks of C = 32·NW·R tiles: tile t publishes its total A(t); the last tile of chunk
//           k publishes P(k), the inclusive prefix to the chunk's end. Tile t's prefix is
//           P(k-1) + (the sum of A over the tiles before it in its chunk, read by warps 1..NW, R
//           words a lane, summed in a fixed order): one round trip after its predecessors'
//           data, two for the chunk's first tiles; P is a chain of one round trip a chunk.
// Kernels:
//   kfen    kiln's tiles (512 x 16 runs of 32 in registers, a block a tile), either look-back.
//   krf     kiln's tiles, chunk look-back, reduce first: the warps' totals by a reduction of the
//           loaded values (before the scan), the tile's total published and the look-back's
//           loads issued after the first barrier, the runs scanned while they are in flight.
//   knp     a block a tile, the tile staged in shared memory by cp.async (16-byte LDGSTS) and
//           scanned in place there: few registers, residency set by shared memory (more bytes
//           held per SM than 4 x 512 x 16 registers).
//   kstage  persistent blocks (grid = resident blocks, static turns t = b, b + grid, ... or a
//           ticket claimed one turn ahead), the tile in registers, the next NB tiles staged in
//           shared memory by cp.async before this tile's look-back.
// Build: nvcc -O3 -arch=sm_90 -o scan_harness6 scan_harness6.cu
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e = (x);                                                                       \
    if (e != cudaSuccess) {                                                                    \
      printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__);          \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

typedef unsigned long long u64;

enum { F_TICKET = 1, F_STREAM = 2, F_SQUARE = 4, F_NOLB = 16, F_SLEEP = 128 };
static bool g_noclear;

// A hang (a block waiting on one that is not resident) gives up after ~2^20 polls and flags it.
__device__ int g_abort;

__device__ __forceinline__ void publish(u64* w, float v) {
  u64 x = (1ull << 32) | (u64)__float_as_uint(v);
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(w), "l"(x) : "memory");
}
template <int SL = 0>
__device__ __forceinline__ float poll(const u64* w) {
  u64 x;
  unsigned n = 0;
  do {
    if (SL && n) __nanosleep(SL);
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(x) : "l"(w) : "memory");
    if ((++n & 4095) == 0) {
      if (*(volatile int*)&g_abort || n > (1u << 20)) {
        *(volatile int*)&g_abort = 1;
        return 0.f;
      }
    }
  } while ((x >> 32) == 0);
  return __uint_as_float((unsigned)x);
}
__device__ __forceinline__ float wscan(float v, int lane) {
#pragma unroll
  for (int s = 1; s < 32; s <<= 1) {
    float y = __shfl_up_sync(~0u, v, s);
    if (lane >= s) v = y + v;
  }
  return v;
}
template <int FL>
__device__ __forceinline__ float ld1(const float* p) {
  if (FL & F_STREAM) return __ldcs(p);
  return *p;
}
template <int FL>
__device__ __forceinline__ void st1(float* p, float v) {
  if (FL & F_STREAM) __stcs(p, v);
  else *p = v;
}

__device__ __forceinline__ u64 ldv(const u64* w) {
  u64 x;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(x) : "l"(w) : "memory");
  return x;
}

// The block's look-back state in shared memory.
struct Look {
  float pre;
  float part[16];
};

// The tile's prefix (after the barrier that made the warps' totals `wtot` visible; ends with a
// barrier). NW == 0: kiln's Fenwick tree; else chunks of C = 32·NW·R tiles (module comment).
template <int W, int NW, int R, int FL = 0>
__device__ __forceinline__ float lookback(int warp, int lane, long t, long ntiles, int levels,
                                          u64* words, const float* wtot, Look* sm) {
  if constexpr (NW == 0) {
    const unsigned tu = (unsigned)t;
    if (warp == 0) {
      float got = 0.f;
      unsigned t1 = tu + 1;
      bool needs = lane < levels && ((t1 & ((2u << lane) - 1)) == 0);
      if (needs) got = poll(words + (tu - (1u << lane)));
      float total = 0.f;
      for (int w = 0; w < W; w++) total = w ? total + wtot[w] : wtot[w];
      int z = __ffs(t1) - 1;
      float acc = total;
      for (int m = 0; m < z; m++) acc = __shfl_sync(~0u, got, m) + acc;
      if (lane == 0) publish(words + tu, acc);
    } else if (warp == 1) {
      float got = 0.f;
      bool has = lane < levels && ((tu >> lane) & 1);
      unsigned start = tu & ~((2u << lane) - 1);
      if (has) got = poll(words + (start + (1u << lane) - 1));
      unsigned bits = tu;
      float acc = 0.f;
      while (bits) {
        int i = 31 - __clz(bits);
        acc = acc + __shfl_sync(~0u, got, i);
        bits ^= 1u << i;
      }
      if (lane == 0) sm->pre = acc;
    }
    __syncthreads();
    return sm->pre;
  } else {
    constexpr int C = 32 * NW * R;
    const long k = t / C;
    const int j = (int)(t - k * C);
    float total = 0.f;
    if (warp == 0) {
      for (int w = 0; w < W; w++) total = w ? total + wtot[w] : wtot[w];
      if (lane == 0) {
        if (j != C - 1) publish(words + t, total);
        sm->part[0] = k > 0 ? poll<(FL & F_SLEEP) ? 100 : 0>(words + ntiles + (k - 1)) : 0.f;
      }
    } else if (warp <= NW) {
      const u64* a = words + k * C + 32 * R * (warp - 1) + lane;
      const int i0 = 32 * R * (warp - 1) + lane;
      u64 x[R];
#pragma unroll
      for (int r = 0; r < R; r++) x[r] = i0 + 32 * r < j ? ldv(a + 32 * r) : (1ull << 32);
      unsigned spins = 0;
#pragma unroll
      for (int r = 0; r < R; r++) {
        while ((x[r] >> 32) == 0) {
          if (FL & F_SLEEP) __nanosleep(100);
          x[r] = ldv(a + 32 * r);
          if ((++spins & 4095) == 0 && (*(volatile int*)&g_abort || spins > (1u << 20))) {
            *(volatile int*)&g_abort = 1;
            x[r] = 1ull << 32;
          }
        }
      }
      float s = __uint_as_float((unsigned)x[0]);
#pragma unroll
      for (int r = 1; r < R; r++) s = s + __uint_as_float((unsigned)x[r]);
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(~0u, s, d);
      if (lane == 0) sm->part[warp] = s;
    }
    __syncthreads();
    float prefix = sm->part[0];
#pragma unroll
    for (int w = 1; w <= NW; w++) prefix = prefix + sm->part[w];
    if (threadIdx.x == 0 && j == C - 1) publish(words + ntiles + k, prefix + total);
    return prefix;
  }
}

// A tile held in registers (lane l of warp w: elements w·32·G + 32·j + l): scan, look-back,
// stores.
template <int T, int G, int FL, int NW, int R>
__device__ __forceinline__ void scan_tile(float* __restrict__ y, long n, long t, long ntiles,
                                          float (&v)[G], u64* words, int levels, float* wtot,
                                          Look* sm) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  constexpr int TILE = T * G;
  if (FL & F_SQUARE) {
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = v[j] * v[j];
  }
  float carry = 0.f;
#pragma unroll
  for (int j = 0; j < G; j++) {
    float s = wscan(v[j], lane);
    s = j ? carry + s : s;
    carry = __shfl_sync(~0u, s, 31);
    v[j] = s;
  }
  if (lane == 31) wtot[warp] = carry;
  __syncthreads();
  float wp = 0.f;
  for (int w = 0; w < warp; w++) wp = w ? wp + wtot[w] : wtot[w];
  float prefix = 0.f;
  if (!(FL & F_NOLB) && ntiles > 1)
    prefix = lookback<T / 32, NW, R, FL>(warp, lane, t, ntiles, levels, words, wtot, sm);
  const float head = prefix + wp;
  const long base = t * TILE;
  const bool full = base + TILE <= n;
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    if (full || i < n) st1<FL>(y + i, head + v[j]);
  }
}

// kiln's tiles: a block a tile.
template <int T, int G, int FL, int NW, int R>
__global__ void __launch_bounds__(T, 2048 / T) kfen(const float* __restrict__ x, float* __restrict__ y,
                                                    long n, u64* words, unsigned*, int levels,
                                                    long ntiles) {
  __shared__ float wtot[T / 32];
  __shared__ Look sm;
  constexpr int TILE = T * G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long t = blockIdx.x;
  const long base = t * TILE;
  float v[G];
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    v[j] = i < n ? ld1<FL>(x + i) : 0.f;
  }
  scan_tile<T, G, FL, NW, R>(y, n, t, ntiles, v, words, levels, wtot, &sm);
}


// The chunk look-back's words loaded at the block's start, before the tile's loads (each lane
// of warps 1..NW its chunk-mate's word, lane 0 of warp 0 the chunk before's prefix): where
// they are published by then the look-back costs no round trip after the scan; else polled.
template <int T, int G, int FL, int NW>
__global__ void __launch_bounds__(T, 2048 / T) kearly(const float* __restrict__ x, float* __restrict__ y,
                                                      long n, u64* words, unsigned*, int, long ntiles) {
  constexpr int W = T / 32;
  constexpr int TILE = T * G;
  constexpr int C = 32 * NW;
  __shared__ float wtot[W];
  __shared__ Look sm;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long t = blockIdx.x;
  const long base = t * TILE;
  const long k = t / C;
  const int j0 = (int)(t - k * C);
  u64 xw = 1ull << 32;
  const u64* src = nullptr;
  if (warp == 0) {
    if (lane == 0 && k > 0) src = words + ntiles + (k - 1);
  } else if (warp <= NW) {
    const int i = 32 * (warp - 1) + lane;
    if (i < j0) src = words + k * C + i;
  }
  if (src) xw = ldv(src);
  float v[G];
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    v[j] = i < n ? x[i] : 0.f;
  }
  if (FL & F_SQUARE) {
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = v[j] * v[j];
  }
  float carry = 0.f;
#pragma unroll
  for (int j = 0; j < G; j++) {
    float s = wscan(v[j], lane);
    s = j ? carry + s : s;
    carry = __shfl_sync(~0u, s, 31);
    v[j] = s;
  }
  if (lane == 31) wtot[warp] = carry;
  __syncthreads();
  float total = wtot[0];
  for (int w = 1; w < W; w++) total = total + wtot[w];
  if (tid == 0 && j0 != C - 1) publish(words + t, total);
  float wp = 0.f;
  for (int w = 0; w < warp; w++) wp = w ? wp + wtot[w] : wtot[w];
  if (warp <= NW) {
    unsigned spins = 0;
    while ((xw >> 32) == 0) {
      if (FL & F_SLEEP) __nanosleep(100);
      xw = ldv(src);
      if ((++spins & 4095) == 0 && (*(volatile int*)&g_abort || spins > (1u << 22))) {
        *(volatile int*)&g_abort = 1;
        xw = 1ull << 32;
      }
    }
    float s = src ? __uint_as_float((unsigned)xw) : 0.f;
    if (warp > 0) {
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(~0u, s, d);
    }
    if (lane == 0) sm.part[warp] = s;
  }
  __syncthreads();
  float prefix = sm.part[0];
#pragma unroll
  for (int w = 1; w <= NW; w++) prefix = prefix + sm.part[w];
  if (tid == 0 && j0 == C - 1) publish(words + ntiles + k, prefix + total);
  const float head = prefix + wp;
  const bool full = base + TILE <= n;
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    if (full || i < n) st1<FL>(y + i, head + v[j]);
  }
}

// ---- Session 26 (lead): look-ahead totals. ----
// The chunk look-back's waits are the skew between a tile and its chunk's earlier tiles (their
// totals are published only after their own loads) and the chain of chunk prefixes. Here a
// tile's total A(t) is published long before tile t is scanned:
//   kahead  a block a tile; block b first reduces tile b + D (D about the resident blocks: that
//           tile's block starts about when block b ends) and publishes A(b + D); tiles below D
//           publish their own. Then it scans its own tile, read again (from L2 where block
//           b - D's read left it), and its prefix is P(k - 1) and its chunk's earlier A's, all
//           published a wave earlier. Waits only on lower blocks.
//   klag    persistent blocks, tiles by a ticket: claim t', reduce it, publish A(t'), then scan
//           the tile claimed before (read again from L2).
// Cache hints: the first read evict_last, the second evict_first, the stores streaming.
enum { H_HINT = 32, H_OVERLAP = 64 };

__device__ __forceinline__ unsigned long long pol_last() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ unsigned long long pol_first() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float ldh(const float* p, unsigned long long pol) {
  float v;
  asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(pol));
  return v;
}
__device__ __forceinline__ void sth(float* p, float v, unsigned long long pol) {
  asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" ::"l"(p), "f"(v), "l"(pol) : "memory");
}

// Block total of tile t (every thread returns it after the block's barrier).
template <int T, int G, int FL>
__device__ __forceinline__ float tile_reduce(const float* __restrict__ x, long n, long t,
                                             float* red, unsigned long long pol) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long base = t * (long)(T * G);
  float v[G];
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    v[j] = i < n ? ((FL & H_HINT) ? ldh(x + i, pol) : x[i]) : 0.f;
  }
  if (FL & F_SQUARE) {
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = v[j] * v[j];
  }
  float s = v[0];
#pragma unroll
  for (int j = 1; j < G; j++) s = s + v[j];
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(~0u, s, d);
  __syncthreads();
  if (lane == 0) red[warp] = s;
  __syncthreads();
  float tot = red[0];
  for (int w = 1; w < T / 32; w++) tot = tot + red[w];
  return tot;
}

// The scan of tile t whose chunk-mates' totals are (or soon will be) published: words[t'] = A(t')
// for every tile, words[ntiles + k] = P(k). `own`: publish A(t) too (no one reduced it ahead).
template <int T, int G, int FL, int NW>
__device__ __forceinline__ void scan_ahead(const float* __restrict__ x, float* __restrict__ y, long n,
                                           long t, long ntiles, u64* words, bool own, float* wtot,
                                           Look* sm, unsigned long long pol) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  constexpr int W = T / 32;
  constexpr int TILE = T * G;
  constexpr int C = 32 * NW;
  const long base = t * TILE;
  float v[G];
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    v[j] = i < n ? ((FL & H_HINT) ? ldh(x + i, pol) : x[i]) : 0.f;
  }
  // The look-back's loads, issued before the scan (all totals are published ahead but the
  // first wave's; P(k-1) may still be coming).
  const long k = t / C;
  const int j0 = (int)(t - k * C);
  u64 xw = 1ull << 32;
  const u64* src = nullptr;
  if (ntiles > 1) {
    if (warp == 0) {
      if (lane == 0 && k > 0) {
        src = words + ntiles + (k - 1);
        xw = ldv(src);
      }
    } else if (warp <= NW) {
      const int i = 32 * (warp - 1) + lane;
      if (i < j0) {
        src = words + k * C + i;
        xw = ldv(src);
      }
    }
  }
  if (FL & F_SQUARE) {
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = v[j] * v[j];
  }
  float carry = 0.f;
#pragma unroll
  for (int j = 0; j < G; j++) {
    float s = wscan(v[j], lane);
    s = j ? carry + s : s;
    carry = __shfl_sync(~0u, s, 31);
    v[j] = s;
  }
  __syncthreads();  // wtot / sm reuse after the reduce phase
  if (lane == 31) wtot[warp] = carry;
  __syncthreads();
  float total = wtot[0];
  for (int w = 1; w < W; w++) total = total + wtot[w];
  if (own && tid == 0) publish(words + t, total);
  float wp = 0.f;
  for (int w = 0; w < warp; w++) wp = w ? wp + wtot[w] : wtot[w];
  float prefix = 0.f;
  if (ntiles > 1) {
    if (warp <= NW) {
      unsigned spins = 0;
      while ((xw >> 32) == 0) {
        xw = ldv(src);
        if ((++spins & 4095) == 0 && (*(volatile int*)&g_abort || spins > (1u << 22))) {
          *(volatile int*)&g_abort = 1;
          xw = 1ull << 32;
        }
      }
      float s = __uint_as_float((unsigned)xw);
      if (warp > 0) {
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(~0u, s, d);
      }
      if (lane == 0) sm->part[warp] = s;
    }
    __syncthreads();
    prefix = sm->part[0];
#pragma unroll
    for (int w = 1; w <= NW; w++) prefix = prefix + sm->part[w];
    if (tid == 0 && (j0 == C - 1 || t == ntiles - 1)) publish(words + ntiles + k, prefix + total);
  }
  const float head = prefix + wp;
  const bool full = base + TILE <= n;
  unsigned long long sp = 0;
  if (FL & H_HINT) sp = pol_first();
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    if (full || i < n) {
      if (FL & H_HINT) sth(y + i, head + v[j], sp);
      else st1<FL>(y + i, head + v[j]);
    }
  }
}

// A block a tile; block b reduces tile b + D first. `levels` carries D.
template <int T, int G, int FL, int NW>
__global__ void __launch_bounds__(T, 2048 / T) kahead(const float* __restrict__ x, float* __restrict__ y,
                                                      long n, u64* words, unsigned*, int D, long ntiles) {
  __shared__ float wtot[T / 32];
  __shared__ Look sm;
  const long t = blockIdx.x;
  unsigned long long pl = 0, pf = 0;
  if (FL & H_HINT) pl = pol_last(), pf = pol_first();
  if (t + D < ntiles) {
    float a = tile_reduce<T, G, FL>(x, n, t + D, wtot, pl);
    if (threadIdx.x == 0) publish(words + t + D, a);
  }
  scan_ahead<T, G, FL, NW>(x, y, n, t, ntiles, words, t < D, wtot, &sm, pf);
}

// Persistent, tiles by a ticket: reduce the next, then scan the one before.
template <int T, int G, int FL, int MINB, int NW>
__global__ void __launch_bounds__(T, MINB) klag(const float* __restrict__ x, float* __restrict__ y,
                                                long n, u64* words, unsigned* ticket, int, long ntiles) {
  __shared__ float wtot[T / 32];
  __shared__ Look sm;
  __shared__ long tk;
  unsigned long long pl = 0, pf = 0;
  if (FL & H_HINT) pl = pol_last(), pf = pol_first();
  if (threadIdx.x == 0) tk = atomicAdd(ticket, 1u);
  __syncthreads();
  long t = tk;
  if (t < ntiles) {
    float a = tile_reduce<T, G, FL>(x, n, t, wtot, pl);
    if (threadIdx.x == 0) publish(words + t, a);
  }
  while (t < ntiles) {
    __syncthreads();
    if (threadIdx.x == 0) tk = atomicAdd(ticket, 1u);
    __syncthreads();
    long tn = tk;
    if (tn < ntiles) {
      float a = tile_reduce<T, G, FL>(x, n, tn, wtot, pl);
      if (threadIdx.x == 0) publish(words + tn, a);
    }
    scan_ahead<T, G, FL, NW>(x, y, n, t, ntiles, words, false, wtot, &sm, pf);
    t = tn;
  }
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int K>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(K) : "memory");
}

// The tile's elements to shared memory (16-byte copies; a partial tile by plain loads, zeros
// past the end), then a commit (an empty group where there is no tile, so that counts of
// groups stay in step).
template <int T, int G>
__device__ __forceinline__ void stage_tile(const float* __restrict__ x, long n, long t, long ntiles,
                                           float* buf) {
  constexpr int TILE = T * G;
  if (t < ntiles) {
    const long base = t * TILE;
    if (base + TILE <= n) {
#pragma unroll
      for (int q = 0; q < G / 4; q++) {
        int c = q * T + threadIdx.x;
        cp_async16(buf + 4 * c, x + base + 4 * c);
      }
    } else {
      for (int i = threadIdx.x; i < TILE; i += T) buf[i] = base + i < n ? x[base + i] : 0.f;
    }
  }
  cp_commit();
}

// ---- Session 26 (lead): a pipelined persistent scan. ----
// One block a multiprocessor; block b takes tiles t = b, b + G, b + 2G... (G the grid), staged
// S tiles ahead in shared memory by cp.async. A tile's total A(t) is published from shared
// memory L steps before the tile is scanned, so the look-back finds every total ready: tile t's
// prefix is I(t - 512) (the inclusive prefix tile t - 512 published when it was scanned, ~4
// rounds earlier) combined with A(t - 511 .. t - 1), a word a thread, one round trip, loaded a
// step ahead. No tile waits on a chain; every wait is on a strictly earlier step of some block
// (all blocks resident). Words: A(t) at words[t], I(t) at words[ntiles + t].
template <int T, int G, int S, int L, int FL>
__global__ void __launch_bounds__(T, 1) kpipe(const float* __restrict__ x, float* __restrict__ y,
                                              long n, u64* words, unsigned*, int, long ntiles) {
  static_assert(T == 512, "the look-back takes a word a thread: 511 totals and a prefix");
  extern __shared__ __align__(16) float buf[];
  __shared__ float red[T / 32];
  __shared__ float bc;
  constexpr int TILE = T * G;
  constexpr int W = T / 32;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long GB = gridDim.x, b = blockIdx.x;
  const long mine = b < ntiles ? (ntiles - b + GB - 1) / GB : 0;
  for (int s = 0; s < S; s++) stage_tile<T, G>(x, n, s < mine ? b + s * GB : ntiles, ntiles, buf + s * TILE);
  // The block's sum of its striped elements of a staged tile (fixed order), to every thread.
  auto total_of = [&](const float* tb) -> float {
    const float* mine_p = tb + warp * 32 * G + lane;
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < G; j++) {
      float v = mine_p[32 * j];
      if (FL & F_SQUARE) v = v * v;
      s = j ? s + v : v;
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(~0u, s, d);
    __syncthreads();
    if (lane == 0) red[warp] = s;
    __syncthreads();
    float tot = red[0];
#pragma unroll
    for (int w = 1; w < W; w++) tot = tot + red[w];
    return tot;
  };
  // The look-back words of tile t: thread k < 511 A(t - 511 + k), thread 511 I(t - 512).
  auto lb_src = [&](long t) -> const u64* {
    if (tid < T - 1) {
      long s = t - (T - 1) + tid;
      return s >= 0 ? words + s : nullptr;
    }
    return t - T >= 0 ? words + ntiles + (t - T) : nullptr;
  };
  // Totals of the first L tiles.
  for (int j = 0; j < L && j < mine; j++) {
    // groups committed: S; group j complete when at most S - 1 - j are pending.
    if (j == 0) cp_wait<S - 1>();
    else if (j == 1) cp_wait<S - 2>();
    else if (j == 2) cp_wait<S - 3>();
    else cp_wait<0>();
    __syncthreads();
    float a = total_of(buf + j * TILE);
    if (tid == 0) publish(words + b + j * GB, a);
  }
  const u64* src = mine > 0 ? lb_src(b) : nullptr;
  u64 xw = src ? ldv(src) : (1ull << 32);
  for (long i = 0; i < mine; i++) {
    const long t = b + i * GB;
    // Tile i + L's data (and tile i's) are in: committed S + i groups, tile i + L is group i + L.
    cp_wait<S - 1 - L>();
    __syncthreads();
    if (i + L < mine) {
      float a = total_of(buf + ((i + L) % S) * TILE);
      if (tid == 0) publish(words + t + L * GB, a);
    }
    // The look-back (its word loaded a step ago).
    {
      unsigned spins = 0;
      while ((xw >> 32) == 0) {
        xw = ldv(src);
        if ((++spins & 4095) == 0 && (*(volatile int*)&g_abort || spins > (1u << 22))) {
          *(volatile int*)&g_abort = 1;
          xw = 1ull << 32;
        }
      }
    }
    float pv = src ? __uint_as_float((unsigned)xw) : 0.f;
    // Fixed order: the warps' butterflies, then warps in order.
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) pv += __shfl_xor_sync(~0u, pv, d);
    __syncthreads();
    if (lane == 0) red[warp] = pv;
    __syncthreads();
    float prefix = red[0];
#pragma unroll
    for (int w = 1; w < W; w++) prefix = prefix + red[w];
    // The tile's scan from shared memory.
    float* tb = buf + (i % S) * TILE;
    const float* mp = tb + warp * 32 * G + lane;
    float v[G];
    float carry = 0.f;
#pragma unroll
    for (int j = 0; j < G; j++) {
      float e = mp[32 * j];
      if (FL & F_SQUARE) e = e * e;
      float s = wscan(e, lane);
      s = j ? carry + s : s;
      carry = __shfl_sync(~0u, s, 31);
      v[j] = s;
    }
    __syncthreads();
    if (lane == 31) red[warp] = carry;
    __syncthreads();
    float wp = 0.f;
    for (int w = 0; w < warp; w++) wp = w ? wp + red[w] : red[w];
    if (tid == 0) {
      float tot = red[0];
      for (int w = 1; w < W; w++) tot = tot + red[w];
      publish(words + ntiles + t, prefix + tot);
    }
    const float head = prefix + wp;
    const long base = t * TILE + warp * 32 * G + lane;
    const bool full = (t + 1) * TILE <= n;
#pragma unroll
    for (int j = 0; j < G; j++) {
      long k = base + 32 * j;
      if (full || k < n) st1<FL>(y + k, head + v[j]);
    }
    // The stage is free: the tile S steps on goes into it; the next tile's look-back loads.
    __syncthreads();
    stage_tile<T, G>(x, n, i + S < mine ? t + S * GB : ntiles, ntiles, tb);
    if (i + 1 < mine) {
      src = lb_src(t + GB);
      xw = src ? ldv(src) : (1ull << 32);
    }
  }
  cp_wait<0>();
}

__global__ void kcopy4(const float4* __restrict__ a, float4* __restrict__ b, long n4) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x)
    b[i] = a[i];
}

static long N;
static int g_occ_last;
static float *dx, *dy;
static u64* dwords;
static unsigned* dticket;
static std::vector<float> hx;
static std::vector<double> ref, ref2, absrun, absrun2;
static int nsm;

static void stats(std::vector<float>& ms, float& med, float& mn) {
  std::sort(ms.begin(), ms.end());
  med = ms[ms.size() / 2];
  mn = ms[0];
}

typedef void (*Kern)(const float*, float*, long, u64*, unsigned*, int, long);

// One variant: `persistent` launches occupancy x SMs blocks, else a block a tile.
static void run(const char* name, Kern fn, int threads, int tile, int dsmem, bool persistent,
                bool square, bool ticket, int reps, int dparam = -1) {
  long ntiles = (N + tile - 1) / tile;
  int levels = 0;
  while ((1L << levels) < ntiles + 1) levels++;
  if (ntiles <= 1) levels = 0;
  if (dparam >= 0) levels = dparam;
  size_t wbytes = 8 * (size_t)(2 * ntiles + 64);
  if (dsmem > 48 * 1024)
    CK(cudaFuncSetAttribute((const void*)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, dsmem));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, (const void*)fn));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, (const void*)fn, threads, dsmem));
  long grid = persistent ? std::min((long)occ * nsm, ntiles) : ntiles;
  int zero = 0;
  CK(cudaMemcpyToSymbol(g_abort, &zero, 4));
  bool first = true;
  auto once = [&]() {
    if (!g_noclear || first) CK(cudaMemsetAsync(dwords, 0, wbytes));
    first = false;
    if (ticket) CK(cudaMemsetAsync(dticket, 0, 4));
    fn<<<grid, threads, dsmem>>>(dx, dy, N, dwords, dticket, levels, ntiles);
  };
  once();
  CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
  std::vector<float> y0(N), y1(N);
  CK(cudaMemcpy(y0.data(), dy, 4 * N, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 3; i++) once();
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(e0));
    once();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float m;
    CK(cudaEventElapsedTime(&m, e0, e1));
    ms.push_back(m);
  }
  CK(cudaGetLastError());
  CK(cudaMemcpy(y1.data(), dy, 4 * N, cudaMemcpyDeviceToHost));
  int aborted = 0;
  CK(cudaMemcpyFromSymbol(&aborted, g_abort, 4));
  long diff = 0;
  for (long i = 0; i < N; i++) diff += memcmp(&y0[i], &y1[i], 4) != 0;
  double err = 0;
  const std::vector<double>& rf = square ? ref2 : ref;
  const std::vector<double>& ar = square ? absrun2 : absrun;
  for (long i = 0; i < N; i++) {
    double e = fabs((double)y0[i] - rf[i]) / std::max(1.0, ar[i]);
    if (!(e <= err)) err = e;  // NaN counts
  }
  float med, mn;
  stats(ms, med, mn);
  printf("%-44s tile %5d regs %3d smem %6d blocks/SM %2d grid %5ld median %.4f ms  min %.4f"
         "  err %.2e  bits-differ %ld%s\n",
         name, tile, at.numRegs, (int)at.sharedSizeBytes + dsmem, occ, grid, med, mn, err, diff,
         aborted ? "  ABORTED (a wait gave up: a hang)" : "");
  fflush(stdout);
}


#define FEN(NAME, T, G, FL, NW, R) \
  run(NAME, kfen<T, G, FL, NW, R>, T, T * G, 0, false, ((FL) & F_SQUARE) != 0, false, reps)
#define AHEAD(NAME, T, G, FL, NW, D) \
  run(NAME, kahead<T, G, FL, NW>, T, T * G, 0, false, ((FL) & F_SQUARE) != 0, false, reps, D)
#define EARLY(NAME, T, G, FL, NW) \
  run(NAME, kearly<T, G, FL, NW>, T, T * G, 0, false, ((FL) & F_SQUARE) != 0, false, reps)
#define PIPE(NAME, T, G, S, L, FL) \
  run(NAME, kpipe<T, G, S, L, FL>, T, T * G, S * T * G * 4, true, ((FL) & F_SQUARE) != 0, false, reps)
#define LAG(NAME, T, G, FL, MINB, NW) \
  run(NAME, klag<T, G, FL, MINB, NW>, T, T * G, 0, true, ((FL) & F_SQUARE) != 0, true, reps)

int main(int argc, char** argv) {
  N = argc > 1 ? atol(argv[1]) : (1L << 26);
  int reps = argc > 2 ? atoi(argv[2]) : 40;
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  nsm = p.multiProcessorCount;
  printf("device %s, %d SMs, L2 %d MB, n %ld, median of %d runs (each: memset of the words + kernel)\n",
         p.name, nsm, p.l2CacheSize >> 20, N, reps);
  hx.resize(N);
  ref.resize(N), ref2.resize(N), absrun.resize(N), absrun2.resize(N);
  unsigned s = 12345;
  double r = 0, r2 = 0, a = 0, a2 = 0;
  for (long i = 0; i < N; i++) {
    s = s * 1664525u + 1013904223u;
    hx[i] = (float)((s >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0);
    double v = hx[i], v2 = (double)(hx[i] * hx[i]);
    r += v, r2 += v2, a += fabs(v), a2 += v2;
    ref[i] = r, ref2[i] = r2, absrun[i] = a, absrun2[i] = a2;
  }
  CK(cudaMalloc(&dx, 4 * N));
  CK(cudaMalloc(&dy, 4 * N));
  CK(cudaMalloc(&dwords, 8 * (N / 512 + 4096)));
  CK(cudaMalloc(&dticket, 4));
  CK(cudaMemcpy(dx, hx.data(), 4 * N, cudaMemcpyHostToDevice));
  {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int kind = 0; kind < 2; kind++) {
      std::vector<float> ms;
      for (int r = 0; r < reps + 3; r++) {
        CK(cudaEventRecord(e0));
        if (kind == 0) CK(cudaMemcpyAsync(dy, dx, 4 * N, cudaMemcpyDeviceToDevice));
        else kcopy4<<<nsm * 8, 512>>>((const float4*)dx, (float4*)dy, N / 4);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float m;
        CK(cudaEventElapsedTime(&m, e0, e1));
        if (r >= 3) ms.push_back(m);
      }
      float med, mn;
      stats(ms, med, mn);
      printf("%-40s median %.4f ms  min %.4f  (90%% of copy: %.4f ms, 85%%: %.4f)\n",
             kind == 0 ? "copy cudaMemcpyAsync d2d" : "copy kernel float4 grid-stride", med, mn,
             med / 0.9, med / 0.85);
    }
  }
  FEN("chunk480 512x16 (kiln's default)", 512, 16, 0, 15, 1);
  FEN("bound: 512x16 no look-back (wrong)", 512, 16, F_NOLB, 0, 1);
  PIPE("pipe 512x16 S6 L2", 512, 16, 6, 2, 0);
  PIPE("pipe 512x16 S6 L3", 512, 16, 6, 3, 0);
  PIPE("pipe 512x16 S6 L2 stream", 512, 16, 6, 2, F_STREAM);
  PIPE("pipe 512x8 S12 L3", 512, 8, 12, 3, 0);
  PIPE("pipe 512x8 S12 L3 stream", 512, 8, 12, 3, F_STREAM);
  PIPE("pipe 512x8 S8 L2", 512, 8, 8, 2, 0);
  PIPE("pipe 512x4 S16 L3", 512, 4, 16, 3, 0);
  PIPE("pipe 512x16 S3 L1 (2 blocks/SM)", 512, 16, 3, 1, 0);
  PIPE("pipe 512x8 S6 L2 (2 blocks/SM)", 512, 8, 6, 2, 0);
  FEN("chunk480 512x16 square", 512, 16, F_SQUARE, 15, 1);
  PIPE("pipe 512x16 S6 L2 square", 512, 16, 6, 2, F_SQUARE);
  PIPE("pipe 512x8 S12 L3 square", 512, 8, 12, 3, F_SQUARE);
  FEN("chunk480 512x16 (again)", 512, 16, 0, 15, 1);
  PIPE("pipe 512x16 S6 L2 (again)", 512, 16, 6, 2, 0);
  PIPE("pipe 512x8 S12 L3 (again)", 512, 8, 12, 3, 0);
  return 0;
}
