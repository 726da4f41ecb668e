
#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

// out[i] = base + i * step (bytes): the addresses of a strided batch.
extern "C" __global__ void kiln_solver_pointers(unsigned long long* out, unsigned long long base,
                                                unsigned long long step, long long n) {
    GRID_STRIDE(i, n) { out[i] = base + (unsigned long long)i * step; }
}

// out[i] = base0 + i * step0, out[n + i] = base1 + i * step1: two batches' addresses at once.
extern "C" __global__ void kiln_solver_pointers2(unsigned long long* out, unsigned long long base0,
                                                 unsigned long long step0,
                                                 unsigned long long base1,
                                                 unsigned long long step1, long long n) {
    GRID_STRIDE(i, n) {
        out[i] = base0 + (unsigned long long)i * step0;
        out[n + i] = base1 + (unsigned long long)i * step1;
    }
}

// *flag = 1 when some of the n ints is not 0 (left as it was otherwise).
extern "C" __global__ void kiln_solver_any_nonzero(const int* info, long long n,
                                                   unsigned int* flag) {
    GRID_STRIDE(i, n) {
        if (info[i] != 0) *flag = 1u;
    }
}
