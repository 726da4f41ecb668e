// Times rowsort.cu's block radix sort of the rows of an R x C float32 matrix (sort and argsort)
// with CUDA events (median of REPS after warm-up) and checks every row against a stable sort
// on the host by NumPy's order (NaN last, -0.0 == 0.0). nvcc -O3 -arch=sm_90.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "radix_sort.cu"
#include "rowsort.cu"

static unsigned okey(unsigned b) {
    if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
    if (b == 0x80000000u) b = 0;
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

int main(int argc, char** argv) {
    const unsigned R = 8192, C = argc > 1 ? atoi(argv[1]) : 8192;
    const int REPS = 20;
    std::vector<float> h((size_t)R * C);
    unsigned long long s = 12345;
    for (size_t i = 0; i < h.size(); ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(s >> 33);
        h[i] = (r % 97 == 0) ? (float)(r % 5) : (float)((double)r / 2147483648.0 * 2.0 - 1.0);
        if (r % 1009 == 0) h[i] = NAN;
        if (r % 1013 == 0) h[i] = -0.0f;
    }
    float *din, *dout;
    long long* didx;
    cudaMalloc(&din, h.size() * 4);
    cudaMalloc(&dout, h.size() * 4);
    cudaMalloc(&didx, h.size() * 8);
    cudaMemcpy(din, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
    const unsigned T = 512, CAP = T * 16;
    size_t sh_sort = CAP * 4 + (T / 32) * 256 * 4 + 256 * 4;
    size_t sh_arg = sh_sort + CAP * 4;
    cudaFuncSetAttribute(kiln_rowsort_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh_sort);
    cudaFuncSetAttribute(kiln_rowargsort_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh_arg);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int which = 0; which < 2; ++which) {
        std::vector<float> ms;
        for (int r = 0; r < REPS + 3; ++r) {
            cudaEventRecord(a);
            if (which == 0)
                kiln_rowsort_f32<<<R, T, sh_sort>>>((const u32*)din, (u32*)dout, C);
            else
                kiln_rowargsort_f32<<<R, T, sh_arg>>>((const u32*)din, didx, C);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            float x;
            cudaEventElapsedTime(&x, a, b);
            if (r >= 3) ms.push_back(x);
        }
        cudaError_t e = cudaGetLastError();
        std::sort(ms.begin(), ms.end());
        printf("%s_rows_%ux%u block radix: %.3f ms (min %.3f) %s\n", which ? "argsort" : "sort", R, C,
               ms[ms.size() / 2], ms[0], cudaGetErrorString(e));
    }
    // Check every row: stable order by key.
    std::vector<float> got(h.size());
    std::vector<long long> gi(h.size());
    cudaMemcpy(got.data(), dout, h.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(gi.data(), didx, h.size() * 8, cudaMemcpyDeviceToHost);
    size_t bad = 0;
    std::vector<unsigned> pos(C);
    for (unsigned r = 0; r < R; ++r) {
        const float* row = &h[(size_t)r * C];
        for (unsigned j = 0; j < C; ++j) pos[j] = j;
        std::stable_sort(pos.begin(), pos.end(), [&](unsigned x, unsigned y) {
            unsigned bx, by;
            memcpy(&bx, &row[x], 4);
            memcpy(&by, &row[y], 4);
            return okey(bx) < okey(by);
        });
        for (unsigned j = 0; j < C; ++j) {
            unsigned want, g;
            memcpy(&want, &row[pos[j]], 4);
            memcpy(&g, &got[(size_t)r * C + j], 4);
            if (want != g || gi[(size_t)r * C + j] != (long long)pos[j]) ++bad;
        }
    }
    printf("rows %ux%u: %zu mismatches\n", R, C, bad);
    return bad != 0;
}
