// Session 24 (scan helper), round 5 (round 4: scan-r1-harness.cu): deterministic single-pass
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
//   knp     a block a tile, the tile staged in shared memory by cp.async (16-byte LDGSTS) and
//           scanned in place there: few registers, residency set by shared memory (more bytes
//           held per SM than 4 x 512 x 16 registers).
//   kstage  persistent blocks (grid = resident blocks, static turns t = b, b + grid, ... or a
//           ticket claimed one turn ahead), the tile in registers, the next NB tiles staged in
//           shared memory by cp.async before this tile's look-back.
// Build: nvcc -O3 -arch=sm_90 -o scan_harness5 scan_harness5.cu
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

enum { F_TICKET = 1, F_STREAM = 2, F_SQUARE = 4, F_NOLB = 16 };

// A hang (a block waiting on one that is not resident) gives up after ~2^20 polls and flags it.
__device__ int g_abort;

__device__ __forceinline__ void publish(u64* w, float v) {
  u64 x = (1ull << 32) | (u64)__float_as_uint(v);
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(w), "l"(x) : "memory");
}
__device__ __forceinline__ float poll(const u64* w) {
  u64 x;
  unsigned n = 0;
  do {
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
template <int W, int NW, int R>
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
        sm->part[0] = k > 0 ? poll(words + ntiles + (k - 1)) : 0.f;
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
    prefix = lookback<T / 32, NW, R>(warp, lane, t, ntiles, levels, words, wtot, sm);
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

// A block a tile, staged in shared memory by cp.async and scanned in place there.
template <int T, int G, int FL, int NW, int R>
__global__ void __launch_bounds__(T) knp(const float* __restrict__ x, float* __restrict__ y,
                                         long n, u64* words, unsigned*, int levels, long ntiles) {
  extern __shared__ __align__(16) float buf[];
  __shared__ float wtot[T / 32];
  __shared__ Look sm;
  constexpr int TILE = T * G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long t = blockIdx.x;
  stage_tile<T, G>(x, n, t, ntiles, buf);
  cp_wait<0>();
  __syncthreads();
  float* mine = buf + warp * 32 * G + lane;
  float carry = 0.f;
#pragma unroll 8
  for (int j = 0; j < G; j++) {
    float v = mine[32 * j];
    if (FL & F_SQUARE) v = v * v;
    float s = wscan(v, lane);
    s = j ? carry + s : s;
    carry = __shfl_sync(~0u, s, 31);
    mine[32 * j] = s;
  }
  if (lane == 31) wtot[warp] = carry;
  __syncthreads();
  float wp = 0.f;
  for (int w = 0; w < warp; w++) wp = w ? wp + wtot[w] : wtot[w];
  float prefix = 0.f;
  if (ntiles > 1) prefix = lookback<T / 32, NW, R>(warp, lane, t, ntiles, levels, words, wtot, &sm);
  const float head = prefix + wp;
  const long base = t * TILE + warp * 32 * G + lane;
  const bool full = (t + 1) * TILE <= n;
#pragma unroll 8
  for (int j = 0; j < G; j++) {
    long i = base + 32 * j;
    if (full || i < n) st1<FL>(y + i, head + mine[32 * j]);
  }
}

// Persistent: the tile in registers, the next NB tiles in shared memory (NB buffers).
template <int T, int G, int FL, int NB, int MINB, int NW, int R>
__global__ void __launch_bounds__(T, MINB)
    kstage(const float* __restrict__ x, float* __restrict__ y, long n, u64* words,
           unsigned* ticket, int levels, long ntiles) {
  extern __shared__ __align__(16) float buf[];
  __shared__ float wtot[T / 32];
  __shared__ Look sm;
  __shared__ long tk[2];
  constexpr int TILE = T * G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  long t;
  if (FL & F_TICKET) {
    if (tid == 0) tk[0] = atomicAdd(ticket, 1u);
    __syncthreads();
    t = tk[0];
    stage_tile<T, G>(x, n, t, ntiles, buf);
  } else {
    t = blockIdx.x;
#pragma unroll
    for (int k = 0; k < NB; k++) stage_tile<T, G>(x, n, t + k * (long)gridDim.x, ntiles, buf + k * TILE);
  }
  int turn = 0;
  while (t < ntiles) {
    if ((FL & F_TICKET) && tid == 0) tk[(turn + 1) & 1] = atomicAdd(ticket, 1u);
    cp_wait<NB - 1>();
    __syncthreads();
    float* b = buf + (turn % NB) * TILE;
    float v[G];
#pragma unroll
    for (int j = 0; j < G; j++) v[j] = b[warp * 32 * G + 32 * j + lane];
    __syncthreads();
    long tn;
    if (FL & F_TICKET) {
      tn = tk[(turn + 1) & 1];
      stage_tile<T, G>(x, n, tn, ntiles, b);
    } else {
      tn = t + gridDim.x;
      stage_tile<T, G>(x, n, t + NB * (long)gridDim.x, ntiles, b);
    }
    scan_tile<T, G, FL, NW, R>(y, n, t, ntiles, v, words, levels, wtot, &sm);
    t = tn;
    turn++;
  }
  cp_wait<0>();
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

typedef void (*Kern)(const float*, float*, long, u64*, unsigned*, int, long);

// One variant: `persistent` launches occupancy x SMs blocks, else a block a tile.
static void run(const char* name, Kern fn, int threads, int tile, int dsmem, bool persistent,
                bool square, bool ticket, int reps) {
  long ntiles = (N + tile - 1) / tile;
  int levels = 0;
  while ((1L << levels) < ntiles + 1) levels++;
  if (ntiles <= 1) levels = 0;
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
  auto once = [&]() {
    CK(cudaMemsetAsync(dwords, 0, wbytes));
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
#define NP(NAME, T, G, FL, NW, R) \
  run(NAME, knp<T, G, FL, NW, R>, T, T * G, T * G * 4, false, ((FL) & F_SQUARE) != 0, false, reps)
#define ST(NAME, T, G, FL, NB, MINB, NW, R)                                                    \
  run(NAME, kstage<T, G, FL, NB, MINB, NW, R>, T, T * G, NB * T * G * 4, true,                 \
      ((FL) & F_SQUARE) != 0, ((FL) & F_TICKET) != 0, reps)

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
  FEN("kiln: fen 512x16", 512, 16, 0, 0, 1);
  FEN("bound: 512x16 no look-back (wrong)", 512, 16, F_NOLB, 0, 1);
  FEN("chunk128 512x16 (NW 4)", 512, 16, 0, 4, 1);
  FEN("chunk256 512x16 (NW 8)", 512, 16, 0, 8, 1);
  FEN("chunk480 512x16 (NW 15)", 512, 16, 0, 15, 1);
  FEN("chunk512 512x16 (NW 8, R 2)", 512, 16, 0, 8, 2);
  FEN("chunk256 512x16 stream", 512, 16, F_STREAM, 8, 1);
  FEN("kiln: fen 512x16 square", 512, 16, F_SQUARE, 0, 1);
  FEN("chunk256 512x16 square", 512, 16, F_SQUARE, 8, 1);
  FEN("chunk480 512x16 square", 512, 16, F_SQUARE, 15, 1);
  NP("np 128x32 fen (round 4 best)", 128, 32, 0, 0, 1);
  NP("np 128x32 chunk192 (NW 3, R 2)", 128, 32, 0, 3, 2);
  NP("np 128x32 chunk384 (NW 3, R 4)", 128, 32, 0, 3, 4);
  NP("np 256x32 chunk224 (NW 7)", 256, 32, 0, 7, 1);
  NP("np 256x32 chunk448 (NW 7, R 2)", 256, 32, 0, 7, 2);
  NP("np 256x16 chunk448 (NW 7, R 2)", 256, 16, 0, 7, 2);
  ST("st 512x16 NB1 static chunk256", 512, 16, 0, 1, 4, 8, 1);
  ST("st 512x16 NB1 static chunk480", 512, 16, 0, 1, 4, 15, 1);
  ST("st 256x16 NB2 static chunk224", 256, 16, 0, 2, 8, 7, 1);
  FEN("kiln: fen 512x16 (again)", 512, 16, 0, 0, 1);
  FEN("chunk256 512x16 (again)", 512, 16, 0, 8, 1);
  return 0;
}
