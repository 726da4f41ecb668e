// Standalone timing of radix_sort.cu's kernels (nvcc on the device machine): 2^26 float32
// (standard normal), keys only and pairs, each kernel timed by events (best of 10); the result
// checked in O(n): sorted in NumPy's order, the same multiset (keys), a stable permutation
// (argsort). With -DKILN_PROF: per pass, each tile's phase cycles and look-back steps.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>
#include "rs_var.cu"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
static u32 okey(float f) {
  u32 b; memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
  if (b == 0x80000000u) b = 0;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
int main(int argc, char** argv) {
  const char* tag = argc > 1 ? argv[1] : "?";
  int n = 1 << 26;
  std::vector<float> h(n);
  std::mt19937 g(1); std::normal_distribution<float> nd;
  for (auto& x : h) x = nd(g);
  u32 *in, *a, *b, *out, *va, *vb, *scratch; long long* idx;
  CK(cudaMalloc(&in, n * 4)); CK(cudaMalloc(&a, n * 4)); CK(cudaMalloc(&b, n * 4)); CK(cudaMalloc(&out, n * 4));
  CK(cudaMalloc(&va, n * 4)); CK(cudaMalloc(&vb, n * 4)); CK(cudaMalloc(&idx, n * 8));
  CK(cudaMemcpy(in, h.data(), n * 4, cudaMemcpyHostToDevice));
  int passes = 4;
  int maxtiles = (n + 256 * 8 - 1) / (256 * 8);
  size_t words = passes * 256 + 2 * passes + 4 + (size_t)passes * maxtiles * 256;
  CK(cudaMalloc(&scratch, words * 4));
  CK(cudaFuncSetAttribute(kiln_radix_pass_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000));
  CK(cudaFuncSetAttribute(kiln_radix_pairs_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000));
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int hb = std::min((n + 2047) / 2048, sms * 8);
  cudaEvent_t ev[8]; for (auto& e : ev) cudaEventCreate(&e);
#ifdef KILN_PROF
  unsigned long long* prof; CK(cudaMalloc(&prof, (size_t)maxtiles * 6 * 8));
  std::vector<unsigned long long> hp((size_t)maxtiles * 6);
#endif
  for (int pairs = 0; pairs < 2; ++pairs) {
    int tile = 256 * (pairs ? KILN_RADIX_ITEMS_PAIRS : KILN_RADIX_ITEMS), tiles = (n + tile - 1) / tile;
    size_t head = (passes * 256 + 2 * passes + 3) / 4 * 4; size_t used = head + (size_t)passes * tiles * 256;
    size_t shared = tile * 4 + (pairs ? tile * 4 : 0) + ((8 + 2) * 256 + 9) * 4;
    float best[8] = {1e9,1e9,1e9,1e9,1e9,1e9,1e9,1e9};
#ifdef KILN_PROF
    const int reps = 1;
#else
    const int reps = 10;
#endif
    for (int rep = 0; rep < reps; ++rep) {
      cudaEventRecord(ev[0]);
      CK(cudaMemsetAsync(scratch, 0, used * 4));
      u32* hist = scratch; u32* counters = hist + passes * 256; u32* status = scratch + head;
      u32* trivial = counters + passes;
      kiln_radix_hist_f32<<<hb, 256>>>(in, n, hist);
      cudaEventRecord(ev[1]);
      kiln_radix_scan<<<passes, 256>>>(hist, n, trivial);
      cudaEventRecord(ev[2]);
      for (int p = 0; p < passes; ++p) {
        u32* st = status + (size_t)p * tiles * 256;
#ifdef KILN_PROF
        CK(cudaMemset(prof, 0, (size_t)tiles * 6 * 8));
        CK(cudaMemcpyToSymbol(kiln_prof, &prof, sizeof(prof)));
#endif
        if (!pairs) {
          kiln_radix_pass_f32<<<tiles, 256, shared>>>(in, a, out, n, p, passes, hist + p * 256, st, counters + p, trivial);
        } else {
          kiln_radix_pairs_f32<<<tiles, 256, shared>>>(in, a, b, va, vb, idx, n, p, passes, hist + p * 256, st, counters + p, trivial);
        }
        cudaEventRecord(ev[3 + p]);
#ifdef KILN_PROF
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hp.data(), prof, (size_t)tiles * 6 * 8, cudaMemcpyDeviceToHost));
        double ph[6] = {0,0,0,0,0,0}; unsigned long long mx[4] = {0,0,0,0};
        for (int t = 0; t < tiles; ++t) for (int k = 0; k < 6; ++k) { ph[k] += hp[(size_t)t * 6 + k]; if (k < 4) mx[k] = std::max(mx[k], hp[(size_t)t*6+k]); }
        std::vector<unsigned long long> lb(tiles); for (int t = 0; t < tiles; ++t) lb[t] = hp[(size_t)t*6+2];
        std::sort(lb.begin(), lb.end());
        printf("%-9s %s pass %d prof: cycles/tile start %.0f rank %.0f lookback %.0f (p50 %llu p90 %llu max %llu) write %.0f | extra loads/digit %.2f digits walking %.1f%% | first 400 tiles lookback %.0f\n",
               tag, pairs ? "pairs" : "keys ", p, ph[0] / tiles, ph[1] / tiles, ph[2] / tiles, lb[tiles / 2], lb[tiles * 9 / 10], mx[2], ph[3] / tiles,
               ph[4] / tiles / 256, 100.0 * ph[5] / tiles / 256,
               [&]{ double s = 0; for (int t = 0; t < 400 && t < tiles; ++t) s += hp[(size_t)t*6+2]; return s / 400; }());
#endif
      }
      CK(cudaEventSynchronize(ev[6]));
      CK(cudaGetLastError());
      for (int k = 1; k < 7; ++k) { float ms; cudaEventElapsedTime(&ms, ev[k - 1], ev[k]); best[k] = std::min(best[k], ms); }
      float tot; cudaEventElapsedTime(&tot, ev[0], ev[6]); best[0] = std::min(best[0], tot);
    }
    bool ok = true;
    if (!pairs) {
      std::vector<float> got(n); CK(cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost));
      u64 hs = 0, hg = 0;
      for (int i = 0; i < n; ++i) {
        u32 x, y; memcpy(&x, &h[i], 4); memcpy(&y, &got[i], 4);
        hs += (u64)x * 2654435761u ^ x; hg += (u64)y * 2654435761u ^ y;
        if (i && okey(got[i - 1]) > okey(got[i])) ok = false;
      }
      ok = ok && hs == hg;
    } else {
      std::vector<long long> gi(n); CK(cudaMemcpy(gi.data(), idx, n * 8, cudaMemcpyDeviceToHost));
      std::vector<char> seen(n, 0);
      for (int i = 0; i < n; ++i) {
        if (gi[i] < 0 || gi[i] >= n || seen[gi[i]]) { ok = false; break; }
        seen[gi[i]] = 1;
        if (i) { u32 p = okey(h[gi[i - 1]]), q = okey(h[gi[i]]); if (p > q || (p == q && gi[i - 1] > gi[i])) ok = false; }
      }
    }
    printf("%-9s %s total %.3f ms | memset+hist %.3f scan %.3f passes %.3f %.3f %.3f %.3f | %s\n", tag, pairs ? "pairs" : "keys ",
           best[0], best[1], best[2], best[3], best[4], best[5], best[6], ok ? "OK" : "WRONG");
  }
  return 0;
}
