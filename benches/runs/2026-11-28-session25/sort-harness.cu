// Standalone timing of radix_sort.cu's digit passes against cub::DeviceRadixSort (session 25,
// nvcc on the device): 2^26 float32. Data A: standard normal (the bench's); data B: heavy ties,
// ±0.0 and 1% NaN (kiln variants only: CUB's NaN order is not NumPy's). Each run timed by
// events, best of 10; every output checked on the host: sorted in NumPy's order and the same
// multiset (keys), a permutation, sorted and stable (argsort).
// Build: -DKILN_SRC='"rs_new.cu"' (or rs_old.cu with -DKILN_OLD), or -DWITH_CUB for CUB alone.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <random>
#include <cmath>
#include <cuda_runtime.h>
#ifdef WITH_CUB
#include <cub/device/device_radix_sort.cuh>
typedef unsigned int u32;
typedef unsigned long long u64;
#else
#include KILN_SRC
#endif
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
static u32 okey(float f) {
  u32 b; memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
  if (b == 0x80000000u) b = 0;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
static bool check_keys(const std::vector<float>& h, const std::vector<float>& got) {
  u64 hs = 0, hg = 0; bool ok = true;
  for (size_t i = 0; i < h.size(); ++i) {
    u32 x, y; memcpy(&x, &h[i], 4); memcpy(&y, &got[i], 4);
    hs += (u64)x * 2654435761u ^ x; hg += (u64)y * 2654435761u ^ y;
    if (i && okey(got[i - 1]) > okey(got[i])) ok = false;
  }
  return ok && hs == hg;
}
template <typename I> static bool check_index(const std::vector<float>& h, const std::vector<I>& gi) {
  size_t n = h.size(); std::vector<char> seen(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (gi[i] < 0 || (size_t)gi[i] >= n || seen[gi[i]]) return false;
    seen[gi[i]] = 1;
    if (i) { u32 p = okey(h[gi[i - 1]]), q = okey(h[gi[i]]); if (p > q || (p == q && gi[i - 1] > gi[i])) return false; }
  }
  return true;
}
int main(int argc, char** argv) {
  const char* tag = argc > 1 ? argv[1] : "?";
  const int n = 1 << 26;
  std::vector<float> hA(n), hB(n);
  std::mt19937 g(1); std::normal_distribution<float> nd;
  for (auto& x : hA) x = nd(g);
  for (int i = 0; i < n; ++i) {
    float x = std::round(hA[i] * 50.0f) / 50.0f;
    if (x == 0.0f) x = (i & 1) ? -0.0f : 0.0f;
    if (i % 97 == 5) x = NAN;
    hB[i] = x;
  }
  float* in; CK(cudaMalloc(&in, (size_t)n * 4));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
#ifdef WITH_CUB
  float *out; u32 *vin, *vout; CK(cudaMalloc(&out, (size_t)n * 4)); CK(cudaMalloc(&vin, (size_t)n * 4)); CK(cudaMalloc(&vout, (size_t)n * 4));
  std::vector<u32> iota(n); for (int i = 0; i < n; ++i) iota[i] = i;
  CK(cudaMemcpy(vin, iota.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(in, hA.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
  size_t tk = 0, tp = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, tk, in, out, n);
  cub::DeviceRadixSort::SortPairs(nullptr, tp, in, out, vin, vout, n);
  void* temp; CK(cudaMalloc(&temp, std::max(tk, tp)));
  for (int pairs = 0; pairs < 2; ++pairs) {
    float best = 1e9;
    for (int rep = 0; rep < 10; ++rep) {
      cudaEventRecord(e0);
      if (!pairs) cub::DeviceRadixSort::SortKeys(temp, tk, in, out, n);
      else cub::DeviceRadixSort::SortPairs(temp, tp, in, out, vin, vout, n);
      cudaEventRecord(e1); CK(cudaEventSynchronize(e1)); CK(cudaGetLastError());
      float ms; cudaEventElapsedTime(&ms, e0, e1); best = std::min(best, ms);
    }
    bool ok;
    if (!pairs) { std::vector<float> got(n); CK(cudaMemcpy(got.data(), out, (size_t)n * 4, cudaMemcpyDeviceToHost)); ok = check_keys(hA, got); }
    else { std::vector<int> gi(n); CK(cudaMemcpy(gi.data(), vout, (size_t)n * 4, cudaMemcpyDeviceToHost)); ok = check_index(hA, gi); }
    printf("%-9s A %s total %.3f ms | %s\n", tag, pairs ? "pairs" : "keys ", best, ok ? "OK" : "WRONG");
  }
#else
#ifdef KILN_OLD
  const int PT = 256; const int WORDS = (8 + 2) * 256 + 9;
#else
  const int PT = PASS_THREADS; int WORDS = (PASS_WARPS + 1) * 256 + PASS_WARPS + 1;
#ifdef KILN_MATCH_OR
  WORDS += PASS_WARPS * 256;
#endif
#endif
  u32 *a, *b, *out, *va, *vb, *scratch; long long* idx;
  CK(cudaMalloc(&a, (size_t)n * 4)); CK(cudaMalloc(&b, (size_t)n * 4)); CK(cudaMalloc(&out, (size_t)n * 4));
  CK(cudaMalloc(&va, (size_t)n * 4)); CK(cudaMalloc(&vb, (size_t)n * 4)); CK(cudaMalloc(&idx, (size_t)n * 8));
  const int passes = 4;
  int maxtiles = (n + 256 * 8 - 1) / (256 * 8);
  size_t words = passes * 256 + 2 * passes + 4 + (size_t)passes * maxtiles * 256;
  CK(cudaMalloc(&scratch, words * 4));
  CK(cudaFuncSetAttribute(kiln_radix_pass_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, 160000));
  CK(cudaFuncSetAttribute(kiln_radix_pairs_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, 160000));
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int hb = std::min((n + 2047) / 2048, sms * 8);
  cudaEvent_t ev[8]; for (auto& e : ev) cudaEventCreate(&e);
  // A second argument "A": data A only.
  const int datasets = argc > 2 && argv[2][0] == 'A' ? 1 : 2;
  for (int data = 0; data < datasets; ++data) {
    const std::vector<float>& h = data ? hB : hA;
    CK(cudaMemcpy(in, h.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
    for (int pairs = 0; pairs < 2; ++pairs) {
      int tile = PT * (pairs ? KILN_RADIX_ITEMS_PAIRS : KILN_RADIX_ITEMS), tiles = (n + tile - 1) / tile;
      size_t head = (passes * 256 + 2 * passes + 3) / 4 * 4; size_t used = head + (size_t)passes * tiles * 256;
      size_t shared = (size_t)tile * 4 + (pairs ? tile * 4 : 0) + WORDS * 4;
      float best[8] = {1e9,1e9,1e9,1e9,1e9,1e9,1e9,1e9};
      for (int rep = 0; rep < (data ? 2 : 10); ++rep) {
        cudaEventRecord(ev[0]);
        CK(cudaMemsetAsync(scratch, 0, used * 4));
        u32* hist = scratch; u32* counters = hist + passes * 256; u32* status = scratch + head;
        u32* trivial = counters + passes;
        kiln_radix_hist_f32<<<hb, 256>>>((const u32*)in, n, hist);
        cudaEventRecord(ev[1]);
        kiln_radix_scan<<<passes, 256>>>(hist, n, trivial);
        cudaEventRecord(ev[2]);
        for (int p = 0; p < passes; ++p) {
          u32* st = status + (size_t)p * tiles * 256;
          if (!pairs) kiln_radix_pass_f32<<<tiles, PT, shared>>>((const u32*)in, a, out, n, p, passes, hist + p * 256, st, counters + p, trivial);
          else kiln_radix_pairs_f32<<<tiles, PT, shared>>>((const u32*)in, a, b, va, vb, idx, n, p, passes, hist + p * 256, st, counters + p, trivial);
          cudaEventRecord(ev[3 + p]);
        }
        CK(cudaEventSynchronize(ev[6])); CK(cudaGetLastError());
        for (int k = 1; k < 7; ++k) { float ms; cudaEventElapsedTime(&ms, ev[k - 1], ev[k]); best[k] = std::min(best[k], ms); }
        float tot; cudaEventElapsedTime(&tot, ev[0], ev[6]); best[0] = std::min(best[0], tot);
      }
      bool ok;
      if (!pairs) { std::vector<float> got(n); CK(cudaMemcpy(got.data(), out, (size_t)n * 4, cudaMemcpyDeviceToHost)); ok = check_keys(h, got); }
      else { std::vector<long long> gi(n); CK(cudaMemcpy(gi.data(), idx, (size_t)n * 8, cudaMemcpyDeviceToHost)); ok = check_index(h, gi); }
      printf("%-9s %c %s total %.3f ms | memset+hist %.3f scan %.3f passes %.3f %.3f %.3f %.3f | %s\n", tag, data ? 'B' : 'A', pairs ? "pairs" : "keys ",
             best[0], best[1], best[2], best[3], best[4], best[5], best[6], ok ? "OK" : "WRONG");
    }
  }
#endif
  return 0;
}
