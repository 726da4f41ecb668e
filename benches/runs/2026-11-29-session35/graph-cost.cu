// Session 35: what a launch list costs the host as a CUDA graph, by its nodes: one kernel
// node; a memset node before it (kiln clears a scan's or scatter's counters that way); three
// memsets; the memset done by a kernel node instead; a cooperative kernel node. Host time of
// cuGraphLaunch alone, and wall time of launch + stream sync (host and device), medians of 2000.
// Build and run: nvcc -O2 -arch=sm_90 -o graph-cost graph-cost.cu -lcuda && ./graph-cost
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>

extern "C" __global__ void work(float* a, float* b, unsigned* c, long long n, long long m) {
    if (n < 0) a[0] = b[0] + c[0] + (float)m;
}
extern "C" __global__ void zero(unsigned* c, long long n) {
    for (long long i = threadIdx.x; i < n; i += blockDim.x) c[i] = 0;
}

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { printf("%s failed %d\n", #x, r); return 1; } } while (0)

static CUfunction fn(const void* sym) { cudaFunction_t f; cudaGetFuncBySymbol(&f, sym); return (CUfunction)f; }

int main() {
    cudaFree(0);
    CUcontext ctx; CK(cuCtxGetCurrent(&ctx));
    CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUfunction fw = fn((const void*)work), fz = fn((const void*)zero);
    float *a, *b; unsigned *c, *c2, *c3;
    cudaMalloc(&a, 1024); cudaMalloc(&b, 1024); cudaMalloc(&c, 1024); cudaMalloc(&c2, 1024); cudaMalloc(&c3, 1024);
    long long n = 1024, m = 4, words = 64;
    void* params[] = {&a, &b, &c, &n, &m};
    void* zparams[] = {&c, &words};
    auto kernel_node = [&](CUgraph g, CUgraphNode* dep, CUfunction f, void** p, unsigned grid, unsigned block, bool coop) {
        CUDA_KERNEL_NODE_PARAMS kp = {};
        kp.func = f; kp.gridDimX = grid; kp.gridDimY = 1; kp.gridDimZ = 1;
        kp.blockDimX = block; kp.blockDimY = 1; kp.blockDimZ = 1; kp.kernelParams = p;
        CUgraphNode node;
        cuGraphAddKernelNode(&node, g, dep, dep ? 1 : 0, &kp);
        if (coop) {
            CUkernelNodeAttrValue v = {}; v.cooperative = 1;
            cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v);
        }
        return node;
    };
    auto memset_node = [&](CUgraph g, CUgraphNode* dep, unsigned* ptr) {
        CUDA_MEMSET_NODE_PARAMS mp = {};
        mp.dst = (CUdeviceptr)ptr; mp.value = 0; mp.elementSize = 1; mp.width = 256; mp.height = 1;
        CUgraphNode node;
        cuGraphAddMemsetNode(&node, g, dep, dep ? 1 : 0, &mp, ctx);
        return node;
    };
    auto bench = [&](const char* name, int kind) {
        CUgraph g; cuGraphCreate(&g, 0);
        CUgraphNode last = nullptr, *dep = nullptr;
        auto chain = [&](CUgraphNode nn) { last = nn; dep = &last; };
        if (kind == 1) chain(memset_node(g, dep, c));
        if (kind == 2) { chain(memset_node(g, dep, c)); chain(memset_node(g, dep, c2)); chain(memset_node(g, dep, c3)); }
        if (kind == 3) chain(kernel_node(g, dep, fz, zparams, 1, 64, false));
        if (kind == 6) chain(memset_node(g, dep, c));
        chain(kernel_node(g, dep, fw, params, 132, 320, kind == 4 || kind == 6));
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
        printf("%-44s launch %.2f us (p10 %.2f, p90 %.2f)  launch+sync %.2f us (p10 %.2f, p90 %.2f)\n", name,
               tl[1000], tl[200], tl[1800], tw[1000], tw[200], tw[1800]);
        cuGraphExecDestroy(e); cuGraphDestroy(g);
    };
    for (int round = 0; round < 2; round++) {
        bench("kernel", 0);
        bench("memset + kernel", 1);
        bench("3 memsets + kernel", 2);
        bench("zero kernel + kernel", 3);
        bench("cooperative kernel", 4);
        bench("memset + cooperative kernel", 6);
    }
    // Plain launches for reference.
    std::vector<double> tl;
    for (int rep = 0; rep < 2000; rep++) {
        cuStreamSynchronize(s);
        auto t0 = std::chrono::steady_clock::now();
        cuMemsetD8Async((CUdeviceptr)c, 0, 256, s);
        cuLaunchCooperativeKernel(fw, 132, 1, 1, 320, 1, 1, 0, s, params);
        auto t1 = std::chrono::steady_clock::now();
        tl.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(tl.begin(), tl.end());
    printf("%-44s launch %.2f us (p10 %.2f, p90 %.2f)\n", "plain cuMemsetD8Async + cuLaunchCooperativeKernel", tl[1000], tl[200], tl[1800]);
    return 0;
}
