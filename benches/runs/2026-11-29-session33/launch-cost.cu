// Session 33: what a kernel launch costs the host on this machine, for issue 22's "host time
// per call of a cached expression <= 5 us": cuLaunchKernel of an empty kernel with kiln's
// argument shape (pointers and sizes), alone and with the calls kiln makes around it.
// Build and run: nvcc -O2 -o launch-cost launch-cost.cu -lcuda && ./launch-cost
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>

extern "C" __global__ void empty(float* a, float* b, float* c, long long n, long long m) {
    if (n < 0) a[0] = b[0] + c[0] + (float)m;
}

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { printf("%s failed %d\n", #x, r); return 1; } } while (0)

int main() {
    cudaFree(0);
    CUcontext ctx; CK(cuCtxGetCurrent(&ctx));
    CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUfunction f;
    cudaFunction_t rf; cudaGetFuncBySymbol(&rf, (const void*)empty); f = (CUfunction)rf;
    float *a, *b, *c; cudaMalloc(&a, 1024); cudaMalloc(&b, 1024); cudaMalloc(&c, 1024);
    long long n = 1024, m = 4;
    void* params[] = {&a, &b, &c, &n, &m};
    CUevent e0; CK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    auto bench = [&](const char* name, int mode) {
        std::vector<double> t;
        for (int rep = 0; rep < 2000; rep++) {
            cuStreamSynchronize(s);
            auto t0 = std::chrono::steady_clock::now();
            if (mode == 1) cuCtxSetCurrent(ctx);
            if (mode == 2) { CUcontext c2; cuCtxPushCurrent(ctx); cuCtxPopCurrent(&c2); }
            cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, params, nullptr);
            if (mode == 3) cuEventRecord(e0, s);
            auto t1 = std::chrono::steady_clock::now();
            t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(t.begin(), t.end());
        printf("%-44s median %.2f us, p10 %.2f, p90 %.2f\n", name, t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10]);
    };
    bench("cuLaunchKernel after a synchronize", 0);
    bench("cuCtxSetCurrent + cuLaunchKernel", 1);
    bench("cuCtxPush/Pop + cuLaunchKernel", 2);
    bench("cuLaunchKernel + cuEventRecord", 3);
    // Back to back (no synchronize between): the launch queue's own cost.
    {
        std::vector<double> t;
        for (int rep = 0; rep < 20; rep++) {
            cuStreamSynchronize(s);
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < 100; i++) cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, params, nullptr);
            auto t1 = std::chrono::steady_clock::now();
            t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 100);
        }
        std::sort(t.begin(), t.end());
        printf("%-44s median %.2f us\n", "cuLaunchKernel back to back (100)", t[t.size() / 2]);
    }
    // A one-node graph, launched.
    {
        CUgraph g; CUgraphExec ge;
        cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, params, nullptr);
        cuStreamEndCapture(s, &g);
        CK(cuGraphInstantiate(&ge, g, 0));
        std::vector<double> t;
        for (int rep = 0; rep < 2000; rep++) {
            cuStreamSynchronize(s);
            auto t0 = std::chrono::steady_clock::now();
            cuGraphLaunch(ge, s);
            auto t1 = std::chrono::steady_clock::now();
            t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(t.begin(), t.end());
        printf("%-44s median %.2f us, p10 %.2f, p90 %.2f\n", "cuGraphLaunch (one kernel node)", t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10]);
        // Its node's arguments changed, then launched.
        CUgraphNode nodes[1]; size_t nn = 1; cuGraphGetNodes(g, nodes, &nn);
        CUDA_KERNEL_NODE_PARAMS kp; cuGraphKernelNodeGetParams(nodes[0], &kp);
        t.clear();
        for (int rep = 0; rep < 2000; rep++) {
            cuStreamSynchronize(s);
            auto t0 = std::chrono::steady_clock::now();
            kp.kernelParams = params;
            cuGraphExecKernelNodeSetParams(ge, nodes[0], &kp);
            cuGraphLaunch(ge, s);
            auto t1 = std::chrono::steady_clock::now();
            t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(t.begin(), t.end());
        printf("%-44s median %.2f us, p10 %.2f, p90 %.2f\n", "SetParams + cuGraphLaunch", t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10]);
    }
    cuStreamSynchronize(s);
    return 0;
}
