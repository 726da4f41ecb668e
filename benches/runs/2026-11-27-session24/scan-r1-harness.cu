// Session 24 (scan helper), round 4: deterministic single-pass scans of 2^26 float32 against
// the device-to-device copy. Every variant takes kiln's look-back (scan_gpu.rs): tile t
// publishes T(t), a Fenwick node (its total after T(t - 2^m) for m below t's trailing ones),
// and its prefix is the combine of T(e) over the blocks of t's binary form, in a fixed order,
// so every run gives the same bits (checked: first and last runs compared bit for bit).
// Variants:
//   kfen    kiln's scheme (512 x 16 runs of 32 in registers, a block a tile); flags: E (early:
//           warps 0/1 poll their words right after issuing the loads, before the scan),
//           S (streaming loads/stores: ld.global.cs / st.global.cs), Q (square prologue).
//   knp     a block a tile, the tile staged in shared memory by cp.async (16-byte LDGSTS) and
//           scanned in place there: few registers, residency set by shared memory (more bytes
//           held per SM than 4 x 512 x 16 registers).
//   kstage  persistent blocks (grid = resident blocks, static turns t = b, b + grid, ... or a
//           ticket claimed one turn ahead), the tile in registers, the next NB tiles staged in
//           shared memory by cp.async before this tile's look-back.
// Build: nvcc -O3 -arch=sm_90 -o scan_harness4 scan_harness4.cu
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

enum { F_TICKET = 1, F_STREAM = 2, F_SQUARE = 4, F_EARLY = 8, F_NOLB = 16 };

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

// kiln's look-back, split: the words a lane of warp 0 (T(t - 2^lane)) or warp 1 (T(e) for bit
// lane of t) reads, polled; then the combines (warp 0 publishes T(t), warp 1 writes the prefix).
__device__ __forceinline__ float fen_poll(int warp, int lane, unsigned t, int levels,
                                          const u64* words) {
  float got = 0.f;
  if (warp == 0) {
    unsigned t1 = t + 1;
    bool needs = lane < levels && ((t1 & ((2u << lane) - 1)) == 0);
    if (needs) got = poll(words + (t - (1u << lane)));
  } else if (warp == 1) {
    bool has = lane < levels && ((t >> lane) & 1);
    unsigned start = t & ~((2u << lane) - 1);
    if (has) got = poll(words + (start + (1u << lane) - 1));
  }
  return got;
}
template <int W>
__device__ __forceinline__ void fen_finish(int warp, int lane, unsigned t, float got, u64* words,
                                           const float* wtot, float* pre) {
  if (warp == 0) {
    float total = 0.f;
    for (int w = 0; w < W; w++) total = w ? total + wtot[w] : wtot[w];
    int z = __ffs(t + 1) - 1;
    float acc = total;
    for (int m = 0; m < z; m++) acc = __shfl_sync(~0u, got, m) + acc;
    if (lane == 0) publish(words + t, acc);
  } else if (warp == 1) {
    unsigned bits = t;
    float acc = 0.f;
    while (bits) {
      int i = 31 - __clz(bits);
      acc = acc + __shfl_sync(~0u, got, i);
      bits ^= 1u << i;
    }
    if (lane == 0) *pre = acc;
  }
}

// A tile held in registers (lane l of warp w: elements w·32·G + 32·j + l): scan, look-back,
// stores. `got` was polled already when `polled`.
template <int T, int G, int FL>
__device__ __forceinline__ void scan_tile(float* __restrict__ y, long n, unsigned t, float (&v)[G],
                                          u64* words, int levels, float* wtot, float* pre,
                                          float got, bool polled) {
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
  if (!(FL & F_NOLB) && levels > 0) {
    if (!polled && warp < 2) got = fen_poll(warp, lane, t, levels, words);
    fen_finish<T / 32>(warp, lane, t, got, words, wtot, pre);
    __syncthreads();
    prefix = *pre;
  }
  const float head = prefix + wp;
  const long base = (long)t * TILE;
  const bool full = base + TILE <= n;
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    if (full || i < n) st1<FL>(y + i, head + v[j]);
  }
}

// kiln's scheme: a block a tile.
template <int T, int G, int FL>
__global__ void __launch_bounds__(T, 2048 / T) kfen(const float* __restrict__ x, float* __restrict__ y,
                                          long n, u64* words, unsigned*, int levels, long) {
  __shared__ float wtot[T / 32];
  __shared__ float pre;
  constexpr int TILE = T * G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned t = blockIdx.x;
  const long base = (long)t * TILE;
  float v[G];
#pragma unroll
  for (int j = 0; j < G; j++) {
    long i = base + warp * 32 * G + 32 * j + lane;
    v[j] = i < n ? ld1<FL>(x + i) : 0.f;
  }
  float got = 0.f;
  const bool early = (FL & F_EARLY) && !(FL & F_NOLB) && levels > 0;
  if (early && warp < 2) got = fen_poll(warp, lane, t, levels, words);
  scan_tile<T, G, FL>(y, n, t, v, words, levels, wtot, &pre, got, early);
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

// A block a tile, staged in shared memory and scanned in place there.
template <int T, int G, int FL>
__global__ void __launch_bounds__(T) knp(const float* __restrict__ x, float* __restrict__ y,
                                         long n, u64* words, unsigned*, int levels, long ntiles) {
  extern __shared__ __align__(16) float buf[];
  __shared__ float wtot[T / 32];
  __shared__ float pre;
  constexpr int TILE = T * G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned t = blockIdx.x;
  stage_tile<T, G>(x, n, t, ntiles, buf);
  float got = 0.f;
  const bool early = (FL & F_EARLY) && levels > 0;
  if (early && warp < 2) got = fen_poll(warp, lane, t, levels, words);
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
  if (levels > 0) {
    if (!early && warp < 2) got = fen_poll(warp, lane, t, levels, words);
    fen_finish<T / 32>(warp, lane, t, got, words, wtot, &pre);
    __syncthreads();
    prefix = pre;
  }
  const float head = prefix + wp;
  const long base = (long)t * TILE + warp * 32 * G + lane;
  const bool full = (long)(t + 1) * TILE <= n;
#pragma unroll 8
  for (int j = 0; j < G; j++) {
    long i = base + 32 * j;
    if (full || i < n) st1<FL>(y + i, head + mine[32 * j]);
  }
}

// Persistent: the tile in registers, the next NB tiles in shared memory (NB buffers).
template <int T, int G, int FL, int NB, int MINB>
__global__ void __launch_bounds__(T, MINB)
    kstage(const float* __restrict__ x, float* __restrict__ y, long n, u64* words,
           unsigned* ticket, int levels, long ntiles) {
  extern __shared__ __align__(16) float buf[];
  __shared__ float wtot[T / 32];
  __shared__ float pre;
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
    float got = 0.f;
    const bool early = (FL & F_EARLY) && levels > 0;
    if (early && warp < 2) got = fen_poll(warp, lane, (unsigned)t, levels, words);
    scan_tile<T, G, FL>(y, n, (unsigned)t, v, words, levels, wtot, &pre, got, early);
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
  size_t wbytes = 8 * (size_t)(ntiles + 64);
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
  printf("%-40s tile %5d regs %3d smem %6d blocks/SM %2d grid %5ld median %.4f ms  min %.4f"
         "  err %.2e  bits-differ %ld%s\n",
         name, tile, at.numRegs, (int)at.sharedSizeBytes + dsmem, occ, grid, med, mn, err, diff,
         aborted ? "  ABORTED (a wait gave up: a hang)" : "");
  fflush(stdout);
}

#define FEN(NAME, T, G, FL) run(NAME, kfen<T, G, FL>, T, T * G, 0, false, ((FL) & F_SQUARE) != 0, false, reps)
#define NP(NAME, T, G, FL) \
  run(NAME, knp<T, G, FL>, T, T * G, T * G * 4, false, ((FL) & F_SQUARE) != 0, false, reps)
#define ST(NAME, T, G, FL, NB, MINB)                                                           \
  run(NAME, kstage<T, G, FL, NB, MINB>, T, T * G, NB * T * G * 4, true, ((FL) & F_SQUARE) != 0, \
      ((FL) & F_TICKET) != 0, reps)

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
  FEN("kiln: fen 512x16", 512, 16, 0);
  FEN("bound: fen 512x16 no look-back (wrong)", 512, 16, F_NOLB);
  FEN("fen 512x16 early", 512, 16, F_EARLY);
  FEN("fen 512x16 stream", 512, 16, F_STREAM);
  FEN("fen 512x16 early stream", 512, 16, F_EARLY | F_STREAM);
  FEN("kiln: fen 512x16 square", 512, 16, F_SQUARE);
  NP("np 512x16 (smem, 4/SM by threads)", 512, 16, 0);
  NP("np 256x32", 256, 32, 0);
  NP("np 256x32 early", 256, 32, F_EARLY);
  NP("np 256x32 early stream", 256, 32, F_EARLY | F_STREAM);
  NP("np 128x32", 128, 32, 0);
  NP("np 128x64 early", 128, 64, F_EARLY);
  NP("np 256x16 early", 256, 16, F_EARLY);
  ST("st 512x16 NB1 static", 512, 16, 0, 1, 4);
  ST("st 512x16 NB1 static early", 512, 16, F_EARLY, 1, 4);
  ST("st 512x16 NB1 static stream", 512, 16, F_STREAM, 1, 4);
  ST("st 512x16 NB1 ticket", 512, 16, F_TICKET, 1, 4);
  ST("st 256x16 NB2 static", 256, 16, 0, 2, 8);
  ST("st 512x16 NB2 static (3/SM)", 512, 16, 0, 2, 3);
  ST("st 256x16 NB1 static", 256, 16, 0, 1, 8);
  ST("st 1024x8 NB1 static", 1024, 8, 0, 1, 2);
  // The square prologue for the best-placed of each kind.
  NP("np 256x32 early square", 256, 32, F_EARLY | F_SQUARE);
  ST("st 512x16 NB1 static square", 512, 16, F_SQUARE, 1, 4);
  ST("st 256x16 NB2 static square", 256, 16, F_SQUARE, 2, 8);
  FEN("kiln: fen 512x16 (again)", 512, 16, 0);
  return 0;
}
