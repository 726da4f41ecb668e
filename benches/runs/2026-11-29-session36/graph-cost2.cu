// Session 36: what kiln's look-ahead scan launch costs the host as a CUDA graph, by node shape:
// its memset of 32 KiB of counters (not 256 bytes), its 192 KiB of dynamic shared memory, its
// 128 blocks of 320 threads, cooperative or not. Host time of cuGraphLaunch after a stream
// sync, and launch + sync, medians of 2000.
// Build and run: nvcc -O2 -arch=sm_90 -o graph-cost2 graph-cost2.cu -lcuda && ./graph-cost2
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
extern "C" __global__ void work(float* a, float* b, unsigned* c, long long n, long long m) {
    extern __shared__ float sm[];
    if (n < 0) { sm[threadIdx.x] = b[0]; a[0] = sm[threadIdx.x ^ 1] + c[0] + (float)m; }
}
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { printf("%s failed %d\n", #x, r); return 1; } } while (0)
int main() {
    cudaFree(0);
    CUcontext ctx; CK(cuCtxGetCurrent(&ctx));
    CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    cudaFunction_t f0; cudaGetFuncBySymbol(&f0, (const void*)work); CUfunction fw = (CUfunction)f0;
    CK(cuFuncSetAttribute(fw, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
    float *a, *b; unsigned *c;
    cudaMalloc(&a, 1 << 20); cudaMalloc(&b, 1 << 20); cudaMalloc(&c, 1 << 20);
    long long n = 1024, m = 4;
    void* params[] = {&a, &b, &c, &n, &m};
    auto bench = [&](const char* name, size_t memset_bytes, unsigned smem, bool coop) {
        CUgraph g; cuGraphCreate(&g, 0);
        CUgraphNode last = nullptr, *dep = nullptr;
        if (memset_bytes) {
            CUDA_MEMSET_NODE_PARAMS mp = {};
            mp.dst = (CUdeviceptr)c; mp.value = 0; mp.elementSize = 1; mp.width = memset_bytes; mp.height = 1;
            cuGraphAddMemsetNode(&last, g, nullptr, 0, &mp, ctx); dep = &last;
        }
        CUDA_KERNEL_NODE_PARAMS kp = {};
        kp.func = fw; kp.gridDimX = 128; kp.gridDimY = 1; kp.gridDimZ = 1;
        kp.blockDimX = 320; kp.blockDimY = 1; kp.blockDimZ = 1; kp.kernelParams = params; kp.sharedMemBytes = smem;
        CUgraphNode node;
        if (cuGraphAddKernelNode(&node, g, dep, dep ? 1 : 0, &kp) != CUDA_SUCCESS) { printf("%s: add failed\n", name); return; }
        if (coop) { CUkernelNodeAttrValue v = {}; v.cooperative = 1; cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v); }
        CUgraphExec e;
        if (cuGraphInstantiateWithFlags(&e, g, 0) != CUDA_SUCCESS) { printf("%s: instantiate failed\n", name); return; }
        std::vector<double> tl, tw;
        for (int rep = 0; rep < 2000; rep++) {
            cuStreamSynchronize(s);
            auto t0 = std::chrono::steady_clock::now();
            cuGraphLaunch(e, s);
            auto t1 = std::chrono::steady_clock::now();
            cuStreamSynchronize(s);
            auto t2 = std::chrono::steady_clock::now();
            tl.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            tw.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
        }
        std::sort(tl.begin(), tl.end()); std::sort(tw.begin(), tw.end());
        printf("%-52s launch %.2f us (p10 %.2f, p90 %.2f)  launch+sync %.2f us (p10 %.2f, p90 %.2f)\n", name,
               tl[1000], tl[200], tl[1800], tw[1000], tw[200], tw[1800]);
        cuGraphExecDestroy(e); cuGraphDestroy(g);
    };
    for (int round = 0; round < 2; round++) {
        bench("kernel, no smem", 0, 0, false);
        bench("kernel, 192 KiB smem", 0, 192 * 1024, false);
        bench("coop kernel, 192 KiB smem", 0, 192 * 1024, true);
        bench("memset 256 B + coop kernel, 192 KiB", 256, 192 * 1024, true);
        bench("memset 32 KiB + coop kernel, 192 KiB", 32768, 192 * 1024, true);
        bench("memset 32 KiB + kernel, no smem", 32768, 0, false);
    }
    return 0;
}
