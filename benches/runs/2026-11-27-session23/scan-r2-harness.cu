// Session 23 (scan helper): deterministic single-pass scans of 2^26 float32, against the
// device-to-device copy. Every variant combines tiles' published totals in a fixed order (a
// radix-32 tree: a tile's prefix is the sum of its level-2, level-1 and level-0 predecessors'
// published words, each level summed by a fixed butterfly), so every run gives the same bits;
// checked by comparing the first and last runs' outputs bit for bit.
// Build: nvcc -O3 -arch=sm_90 -o scan_harness scan_harness.cu
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

enum { RUN = 0, VEC = 1, BLOCKED = 2 };
enum { LB_NONE = 0, LB_R32 = 1, LB_FENWICK = 2 };
enum { F_TICKET = 1, F_STREAM = 2, F_SQUARE = 4 };

__device__ __forceinline__ void publish(u64* w, float v) {
  u64 x = (1ull << 32) | (u64)__float_as_uint(v);
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(w), "l"(x) : "memory");
}
__device__ __forceinline__ float poll(const u64* w) {
  u64 x;
  do {
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(x) : "l"(w) : "memory");
  } while ((x >> 32) == 0);
  return __uint_as_float((unsigned)x);
}
__device__ __forceinline__ float wsum(float v) {
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(~0u, v, s);
  return v;
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
__device__ __forceinline__ float4 ld4(const float* p) {
  if (FL & F_STREAM) return __ldcs((const float4*)p);
  return *(const float4*)p;
}
template <int FL>
__device__ __forceinline__ void st4(float* p, float4 v) {
  if (FL & F_STREAM) __stcs((float4*)p, v);
  else *(float4*)p = v;
}

struct Levels {
  long off[4];
  int levels;
};

template <int T, int G, int LAYOUT, int LB, int FL, int MINB>
__global__ void __launch_bounds__(T, MINB)
    kscan(const float* __restrict__ x, float* __restrict__ y, long n, u64* words,
          unsigned* ticket, Levels lv) {
  constexpr int W = T / 32;
  constexpr int TILE = T * G;
  __shared__ float wtot[W];
  __shared__ float lvl[4];
  __shared__ int s_tile;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int t;
  if (FL & F_TICKET) {
    if (tid == 0) s_tile = atomicAdd(ticket, 1u);
    __syncthreads();
    t = s_tile;
  } else {
    t = blockIdx.x;
  }
  const long base = (long)t * TILE;
  const bool full = base + TILE <= n;
  float v[G];
  // Loads.
  if (LAYOUT == RUN) {
#pragma unroll
    for (int j = 0; j < G; j++) {
      long i = base + warp * 32 * G + 32 * j + lane;
      v[j] = (full || i < n) ? ((FL & F_STREAM) ? __ldcs(x + i) : x[i]) : 0.f;
    }
  } else {
#pragma unroll
    for (int j = 0; j < G / 4; j++) {
      long i = LAYOUT == VEC ? base + ((long)(warp * (G / 4) + j) * 32 + lane) * 4
                             : base + (long)tid * G + 4 * j;
      if (full) {
        float4 q = ld4<FL>(x + i);
        v[4 * j] = q.x, v[4 * j + 1] = q.y, v[4 * j + 2] = q.z, v[4 * j + 3] = q.w;
      } else {
#pragma unroll
        for (int k = 0; k < 4; k++) v[4 * j + k] = i + k < n ? x[i + k] : 0.f;
      }
    }
  }
  if (FL & F_SQUARE) {
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = v[j] * v[j];
  }
  // Scan in the warp; the warp's total.
  float wt;
  if (LAYOUT == RUN) {
    float carry = 0.f;
#pragma unroll
    for (int j = 0; j < G; j++) {
      float s = wscan(v[j], lane);
      s = j ? carry + s : s;
      carry = __shfl_sync(~0u, s, 31);
      v[j] = s;
    }
    wt = carry;
  } else if (LAYOUT == VEC) {
    float carry = 0.f;
#pragma unroll
    for (int j = 0; j < G / 4; j++) {
      float* q = v + 4 * j;
      q[1] = q[0] + q[1];
      q[2] = q[1] + q[2];
      q[3] = q[2] + q[3];
      float inc = wscan(q[3], lane);
      float ex = __shfl_up_sync(~0u, inc, 1);
      float head = lane ? ex : 0.f;
      head = j ? carry + head : head;
#pragma unroll
      for (int k = 0; k < 4; k++) q[k] = head + q[k];
      carry = __shfl_sync(~0u, q[3], 31);
    }
    wt = carry;
  } else {
#pragma unroll
    for (int j = 1; j < G; j++) v[j] = v[j - 1] + v[j];
    float inc = wscan(v[G - 1], lane);
    float ex = __shfl_up_sync(~0u, inc, 1);
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = lane ? ex + v[j] : v[j];
    wt = __shfl_sync(~0u, inc, 31);
  }
  if (lane == 31) wtot[warp] = wt;
  __syncthreads();
  float wp = 0.f;
  for (int w = 0; w < warp; w++) wp = w ? wp + wtot[w] : wtot[w];
  float prefix = 0.f;
  if (LB == LB_R32 && lv.levels > 0) {
    if (warp < lv.levels) {
      float total = 0.f;
      if (warp == 0) {
        for (int w = 0; w < W; w++) total = w ? total + wtot[w] : wtot[w];
        if (lane == 0) publish(words + t, total);
      }
      const int k = warp;
      const long idx = (long)t >> (5 * k);
      const int digit = (int)(idx & 31);
      const long gbase = idx & ~31L;
      float a = 0.f;
      if (lane < digit) a = poll(words + lv.off[k] + gbase + lane);
      float s = wsum(a);
      if (lane == 0) {
        lvl[k] = s;
        // The last tile of a group of 32^(k+1) publishes the group's word: the level's sum
        // before it, then its own level-k word.
        long low = (1L << (5 * (k + 1))) - 1;
        if (k + 1 < lv.levels && ((long)t & low) == low) {
          float own = k == 0 ? total : poll(words + lv.off[k] + idx);
          publish(words + lv.off[k + 1] + (idx >> 5), s + own);
        }
      }
    }
    __syncthreads();
    prefix = lvl[lv.levels - 1];
    for (int k = lv.levels - 2; k >= 0; k--) prefix = prefix + lvl[k];
  }
  const float head = prefix + wp;
  // Stores.
  if (LAYOUT == RUN) {
#pragma unroll
    for (int j = 0; j < G; j++) {
      long i = base + warp * 32 * G + 32 * j + lane;
      if (full || i < n) {
        if (FL & F_STREAM) __stcs(y + i, head + v[j]);
        else y[i] = head + v[j];
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < G / 4; j++) {
      long i = LAYOUT == VEC ? base + ((long)(warp * (G / 4) + j) * 32 + lane) * 4
                             : base + (long)tid * G + 4 * j;
      float4 q = make_float4(head + v[4 * j], head + v[4 * j + 1], head + v[4 * j + 2],
                             head + v[4 * j + 3]);
      if (full) {
        st4<FL>(y + i, q);
      } else {
        float qq[4] = {q.x, q.y, q.z, q.w};
        for (int k = 0; k < 4; k++)
          if (i + k < n) y[i + k] = qq[k];
      }
    }
  }
}

// kiln's current scheme for comparison: 512 threads x 16 runs of 32 (RUN layout), a Fenwick
// tree of published totals (warp 0: T(t); warp 1: the prefix), as scan_gpu.rs.
template <int T, int G>
__global__ void __launch_bounds__(T) kfenwick(const float* __restrict__ x, float* __restrict__ y,
                                              long n, u64* words, int levels) {
  constexpr int W = T / 32;
  constexpr int TILE = T * G;
  __shared__ float wtot[W];
  __shared__ float pre;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int t = blockIdx.x;
  const long base = (long)t * TILE;
  float v[G];
  float carry = 0.f;
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    v[j] = i < n ? x[i] : 0.f;
  }
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
  if (warp == 0) {
    float total = 0.f;
    for (int w = 0; w < W; w++) total = w ? total + wtot[w] : wtot[w];
    unsigned t1 = t + 1;
    bool needs = ((t1 & ((2u << lane) - 1)) == 0) && lane < levels;
    float got = needs ? poll(words + (t - (1 << lane))) : 0.f;
    int z = __ffs(t1) - 1;
    float acc = total;
    for (int m = 0; m < z; m++) acc = __shfl_sync(~0u, got, m) + acc;
    if (lane == 0) publish(words + t, acc);
  } else if (warp == 1) {
    bool has = ((t >> lane) & 1) && lane < levels;
    unsigned start = t & ~((2u << lane) - 1);
    float got = has ? poll(words + (start + (1u << lane) - 1)) : 0.f;
    unsigned bits = t;
    float acc = 0.f;
    while (bits) {
      int i = 31 - __clz(bits);
      acc = acc + __shfl_sync(~0u, got, i);
      bits ^= 1u << i;
    }
    if (lane == 0) pre = acc;
  }
  __syncthreads();
  float head = pre + wp;
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    if (i < n) y[i] = head + v[j];
  }
}


// Persistent, pipelined: a block takes tiles in turn (static: t = b, b + grid, ...; or from a
// ticket counter, claimed two tiles ahead), and issues the loads of the tile D turns ahead before
// its look-back, so that every block keeps loads in flight while it waits.
template <int T, int G, int LAYOUT, int FL>
__device__ __forceinline__ void load_tile(const float* __restrict__ x, long n, long t, float (&v)[G]) {
  constexpr int TILE = T * G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long base = t * TILE;
  const bool full = base + TILE <= n;
  if (LAYOUT == RUN) {
#pragma unroll
    for (int j = 0; j < G; j++) {
      long i = base + warp * 32 * G + 32 * j + lane;
      v[j] = (full || i < n) ? ((FL & F_STREAM) ? __ldcs(x + i) : x[i]) : 0.f;
    }
  } else {
#pragma unroll
    for (int j = 0; j < G / 4; j++) {
      long i = base + ((long)(warp * (G / 4) + j) * 32 + lane) * 4;
      if (full) {
        float4 q = ld4<FL>(x + i);
        v[4 * j] = q.x, v[4 * j + 1] = q.y, v[4 * j + 2] = q.z, v[4 * j + 3] = q.w;
      } else {
#pragma unroll
        for (int k = 0; k < 4; k++) v[4 * j + k] = i + k < n ? x[i + k] : 0.f;
      }
    }
  }
}

template <int T, int G, int LAYOUT, int FL>
__device__ __forceinline__ void scan_tile(float* __restrict__ y, long n, long t, float (&v)[G],
                                          u64* words, const Levels& lv, float* wtot, float* lvl) {
  constexpr int W = T / 32;
  constexpr int TILE = T * G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (FL & F_SQUARE) {
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = v[j] * v[j];
  }
  float wt;
  if (LAYOUT == RUN) {
    float carry = 0.f;
#pragma unroll
    for (int j = 0; j < G; j++) {
      float s = wscan(v[j], lane);
      s = j ? carry + s : s;
      carry = __shfl_sync(~0u, s, 31);
      v[j] = s;
    }
    wt = carry;
  } else {
    float carry = 0.f;
#pragma unroll
    for (int j = 0; j < G / 4; j++) {
      float* q = v + 4 * j;
      q[1] = q[0] + q[1];
      q[2] = q[1] + q[2];
      q[3] = q[2] + q[3];
      float inc = wscan(q[3], lane);
      float ex = __shfl_up_sync(~0u, inc, 1);
      float head = lane ? ex : 0.f;
      head = j ? carry + head : head;
#pragma unroll
      for (int k = 0; k < 4; k++) q[k] = head + q[k];
      carry = __shfl_sync(~0u, q[3], 31);
    }
    wt = carry;
  }
  if (lane == 31) wtot[warp] = wt;
  __syncthreads();
  float wp = 0.f;
  for (int w = 0; w < warp; w++) wp = w ? wp + wtot[w] : wtot[w];
  float prefix = 0.f;
  if (lv.levels > 0) {
    if (warp < lv.levels) {
      float total = 0.f;
      if (warp == 0) {
        for (int w = 0; w < W; w++) total = w ? total + wtot[w] : wtot[w];
        if (lane == 0) publish(words + t, total);
      }
      const int k = warp;
      const long idx = t >> (5 * k);
      const int digit = (int)(idx & 31);
      const long gbase = idx & ~31L;
      float a = 0.f;
      if (lane < digit) a = poll(words + lv.off[k] + gbase + lane);
      float s = wsum(a);
      if (lane == 0) {
        lvl[k] = s;
        long low = (1L << (5 * (k + 1))) - 1;
        if (k + 1 < lv.levels && (t & low) == low) {
          float own = k == 0 ? total : poll(words + lv.off[k] + idx);
          publish(words + lv.off[k + 1] + (idx >> 5), s + own);
        }
      }
    }
    __syncthreads();
    prefix = lvl[lv.levels - 1];
    for (int k = lv.levels - 2; k >= 0; k--) prefix = prefix + lvl[k];
  }
  const float head = prefix + wp;
  const long base = t * TILE;
  const bool full = base + TILE <= n;
  if (LAYOUT == RUN) {
#pragma unroll
    for (int j = 0; j < G; j++) {
      long i = base + warp * 32 * G + 32 * j + lane;
      if (full || i < n) {
        if (FL & F_STREAM) __stcs(y + i, head + v[j]);
        else y[i] = head + v[j];
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < G / 4; j++) {
      long i = base + ((long)(warp * (G / 4) + j) * 32 + lane) * 4;
      float4 q = make_float4(head + v[4 * j], head + v[4 * j + 1], head + v[4 * j + 2],
                             head + v[4 * j + 3]);
      if (full) {
        st4<FL>(y + i, q);
      } else {
        float qq[4] = {q.x, q.y, q.z, q.w};
        for (int k = 0; k < 4; k++)
          if (i + k < n) y[i + k] = qq[k];
      }
    }
  }
}

// D = 1: two buffers; D = 2: three. Static turns (no ticket): tile of turn i is b + i * grid.
template <int T, int G, int LAYOUT, int FL, int D, int MINB>
__global__ void __launch_bounds__(T, MINB)
    kpers(const float* __restrict__ x, float* __restrict__ y, long n, u64* words,
          unsigned* ticket, Levels lv, long ntiles) {
  __shared__ float wtot[T / 32];
  __shared__ float lvl[4];
  __shared__ int tk[4];
  const long stride = gridDim.x;
  float a[G], b[G], c[G];
  if (FL & F_TICKET) {
    // Tiles from a counter: claims made one turn before the loads that need them.
    int tid = threadIdx.x;
    if (tid == 0) {
      tk[0] = atomicAdd(ticket, 1u);
      tk[1] = atomicAdd(ticket, 1u);
    }
    __syncthreads();
    long t = tk[0], tn = tk[1];
    if (t < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t, a);
    int turn = 0;
    while (t < ntiles) {
      // Claim the tile after next (read after this turn's first barrier).
      if (tid == 0) tk[(turn + 2) & 3] = atomicAdd(ticket, 1u);
      if (tn < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, tn, b);
      scan_tile<T, G, LAYOUT, FL>(y, n, t, a, words, lv, wtot, lvl);
      __syncthreads();
      long tnn = tk[(turn + 2) & 3];
      turn++;
      t = tn, tn = tnn;
      if (t >= ntiles) break;
      if (tid == 0) tk[(turn + 2) & 3] = atomicAdd(ticket, 1u);
      if (tn < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, tn, a);
      scan_tile<T, G, LAYOUT, FL>(y, n, t, b, words, lv, wtot, lvl);
      __syncthreads();
      tnn = tk[(turn + 2) & 3];
      turn++;
      t = tn, tn = tnn;
    }
    return;
  }
  long t = blockIdx.x;
  if (t < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t, a);
  if (D == 2 && t + stride < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t + stride, b);
  if (D == 1) {
    while (t < ntiles) {
      if (t + stride < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t + stride, b);
      scan_tile<T, G, LAYOUT, FL>(y, n, t, a, words, lv, wtot, lvl);
      t += stride;
      if (t >= ntiles) break;
      if (t + stride < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t + stride, a);
      scan_tile<T, G, LAYOUT, FL>(y, n, t, b, words, lv, wtot, lvl);
      t += stride;
    }
  } else {
    while (t < ntiles) {
      if (t + 2 * stride < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t + 2 * stride, c);
      scan_tile<T, G, LAYOUT, FL>(y, n, t, a, words, lv, wtot, lvl);
      t += stride;
      if (t >= ntiles) break;
      if (t + 2 * stride < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t + 2 * stride, a);
      scan_tile<T, G, LAYOUT, FL>(y, n, t, b, words, lv, wtot, lvl);
      t += stride;
      if (t >= ntiles) break;
      if (t + 2 * stride < ntiles) load_tile<T, G, LAYOUT, FL>(x, n, t + 2 * stride, b);
      scan_tile<T, G, LAYOUT, FL>(y, n, t, c, words, lv, wtot, lvl);
      t += stride;
    }
  }
}

__global__ void kcopy4(const float4* __restrict__ a, float4* __restrict__ b, long n4) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x)
    b[i] = a[i];
}

static long N;
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

typedef void (*Launch)(long ntiles, Levels lv);

static int g_grid;
static void run(const char* name, int tile, bool square, bool ticket, void (*launch)(long, Levels),
                const void* fn, int threads, int reps, int grid_mult = 0) {
  long ntiles = (N + tile - 1) / tile;
  Levels lv;
  lv.levels = 0;
  long c = ntiles, off = 0;
  while (lv.levels < 4) {
    lv.off[lv.levels] = off;
    off += c;
    lv.levels++;
    if (c <= 32) break;
    c = (c + 31) / 32;
  }
  if (ntiles <= 1) lv.levels = 0;
  size_t wbytes = 8 * (size_t)(off + 64);
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, fn));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, threads, 0));
  g_grid = grid_mult > 0 ? occ * nsm * grid_mult : occ * nsm;
  auto once = [&]() {
    CK(cudaMemsetAsync(dwords, 0, wbytes));
    if (ticket) CK(cudaMemsetAsync(dticket, 0, 4));
    launch(ntiles, lv);
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
  printf("%-44s tile %5d tiles %6ld levels %d regs %3d blocks/SM %d grid %5d median %.4f ms  min %.4f"
         "  err %.2e  bits-differ %ld\n",
         name, tile, ntiles, lv.levels, at.numRegs, occ, grid_mult ? g_grid : (int)ntiles, med, mn, err, diff);
  fflush(stdout);
}

#define PERS(NAME, T, G, LAYOUT, FL, D, MINB, GM)                                                 \
  do {                                                                                         \
    auto fn = kpers<T, G, LAYOUT, FL, D, MINB>;                                                 \
    run(NAME, T * G, ((FL) & F_SQUARE) != 0, ((FL) & F_TICKET) != 0,                               \
        [](long ntiles, Levels lv) {                                                           \
          kpers<T, G, LAYOUT, FL, D, MINB><<<g_grid, T>>>(dx, dy, N, dwords, dticket, lv, ntiles); \
        },                                                                                     \
        (const void*)fn, T, reps, GM);                                                         \
  } while (0)

#define VARIANT(NAME, T, G, LAYOUT, LB, FL, MINB)                                              \
  do {                                                                                         \
    auto fn = kscan<T, G, LAYOUT, LB, FL, MINB>;                                                \
    run(NAME, T * G, ((FL) & F_SQUARE) != 0, ((FL) & F_TICKET) != 0,                               \
        [](long ntiles, Levels lv) {                                                           \
          kscan<T, G, LAYOUT, LB, FL, MINB><<<ntiles, T>>>(dx, dy, N, dwords, dticket, lv);    \
        },                                                                                     \
        (const void*)fn, T, reps);                                                             \
  } while (0)

int main(int argc, char** argv) {
  N = argc > 1 ? atol(argv[1]) : (1L << 26);
  int reps = argc > 2 ? atoi(argv[2]) : 40;
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  nsm = p.multiProcessorCount;
  printf("device %s, %d SMs, n %ld, median of %d runs (each: memset of the words + kernel)\n",
         p.name, nsm, N, reps);
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
  CK(cudaMalloc(&dwords, 8 * (N / 1024 + 4096)));
  CK(cudaMalloc(&dticket, 4));
  CK(cudaMemcpy(dx, hx.data(), 4 * N, cudaMemcpyHostToDevice));
  // Copies.
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
      printf("%-44s median %.4f ms  min %.4f  (90%% of copy: %.4f ms)\n",
             kind == 0 ? "copy cudaMemcpyAsync d2d" : "copy kernel float4 grid-stride", med, mn,
             med / 0.9);
    }
  }
  {
    // kiln's current scheme (Fenwick), for comparison.
    auto fn = kfenwick<512, 16>;
    run("kiln replica: fenwick RUN 512x16", 8192, false, false,
        [](long ntiles, Levels) {
          int levels = 0;
          while ((1L << levels) < ntiles + 1) levels++;
          kfenwick<512, 16><<<ntiles, 512>>>(dx, dy, N, dwords, levels);
        },
        (const void*)fn, 512, reps);
  }
  VARIANT("bound: no look-back RUN 512x16 (wrong sums)", 512, 16, RUN, LB_NONE, 0, 1);
  VARIANT("R32 RUN 512x16 4 blocks/SM (round 1 best)", 512, 16, RUN, LB_R32, 0, 4);
  PERS("P1 RUN 512x16", 512, 16, RUN, 0, 1, 1, 1);
  PERS("P1 RUN 512x16 stream", 512, 16, RUN, F_STREAM, 1, 1, 1);
  PERS("P1 VEC 512x16", 512, 16, VEC, 0, 1, 1, 1);
  PERS("P1 VEC 512x16 stream", 512, 16, VEC, F_STREAM, 1, 1, 1);
  PERS("P1 RUN 256x16", 256, 16, RUN, 0, 1, 1, 1);
  PERS("P1 VEC 256x16 stream", 256, 16, VEC, F_STREAM, 1, 1, 1);
  PERS("P1 RUN 512x8", 512, 8, RUN, 0, 1, 1, 1);
  PERS("P1 VEC 512x8 stream", 512, 8, VEC, F_STREAM, 1, 1, 1);
  PERS("P1 RUN 1024x8", 1024, 8, RUN, 0, 1, 1, 1);
  PERS("P1 VEC 256x32 stream", 256, 32, VEC, F_STREAM, 1, 1, 1);
  PERS("P2 RUN 512x8", 512, 8, RUN, 0, 2, 1, 1);
  PERS("P2 VEC 512x8 stream", 512, 8, VEC, F_STREAM, 2, 1, 1);
  PERS("P2 RUN 256x16", 256, 16, RUN, 0, 2, 1, 1);
  PERS("P2 VEC 256x16 stream", 256, 16, VEC, F_STREAM, 2, 1, 1);
  PERS("P2 RUN 512x16", 512, 16, RUN, 0, 2, 1, 1);
  PERS("PT ticket RUN 512x16", 512, 16, RUN, F_TICKET, 1, 1, 1);
  PERS("PT ticket RUN 512x16 grid x4", 512, 16, RUN, F_TICKET, 1, 1, 4);
  PERS("PT ticket VEC 512x16 stream", 512, 16, VEC, F_TICKET | F_STREAM, 1, 1, 1);
  PERS("PT ticket RUN 256x16", 256, 16, RUN, F_TICKET, 1, 1, 1);
  PERS("P1 RUN 512x16 square", 512, 16, RUN, F_SQUARE, 1, 1, 1);
  PERS("P1 VEC 512x16 stream square", 512, 16, VEC, F_SQUARE | F_STREAM, 1, 1, 1);
  PERS("PT ticket RUN 512x16 square", 512, 16, RUN, F_TICKET | F_SQUARE, 1, 1, 1);
  return 0;
}
