// kiln's strided gather (runtime/src/gather.rs runs it): elements read through a layout
// (offset, extents, strides in elements) written C-contiguously, one kernel per element size.
// Carried compiled for sm_90 (runtime/prebuilt, made by scripts/gpu/clang_modules.sh with clang and
// ptxas); NVRTC compiles it elsewhere.

#ifdef __CUDACC_RTC__
#define THREAD_X threadIdx.x
#define BLOCK_X blockIdx.x
#define BLOCK_DIM_X blockDim.x
#define GRID_DIM_X gridDim.x
#define ALIGN16 __align__(16)
#else
// clang, device code only, without CUDA's headers.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define THREAD_X __nvvm_read_ptx_sreg_tid_x()
#define BLOCK_X __nvvm_read_ptx_sreg_ctaid_x()
#define BLOCK_DIM_X __nvvm_read_ptx_sreg_ntid_x()
#define GRID_DIM_X __nvvm_read_ptx_sreg_nctaid_x()
#define ALIGN16 __attribute__((aligned(16)))
#endif

struct Dims { long long shape[8]; long long strides[8]; };
struct ALIGN16 V16 { unsigned long long a, b; };

template <typename T>
__device__ void gather(const T* src, T* dst, long long n, int rank, long long offset, Dims d) {
    for (long long i = BLOCK_X * (long long)BLOCK_DIM_X + THREAD_X; i < n;
         i += (long long)GRID_DIM_X * BLOCK_DIM_X) {
        long long rem = i, pos = offset;
        for (int ax = rank - 1; ax >= 0; --ax) {
            long long q = rem / d.shape[ax];
            pos += (rem - q * d.shape[ax]) * d.strides[ax];
            rem = q;
        }
        dst[i] = src[pos];
    }
}
extern "C" __global__ void kiln_gather_1(const unsigned char* s, unsigned char* d, long long n, int r, long long o, Dims x) { gather(s, d, n, r, o, x); }
extern "C" __global__ void kiln_gather_2(const unsigned short* s, unsigned short* d, long long n, int r, long long o, Dims x) { gather(s, d, n, r, o, x); }
extern "C" __global__ void kiln_gather_4(const unsigned int* s, unsigned int* d, long long n, int r, long long o, Dims x) { gather(s, d, n, r, o, x); }
extern "C" __global__ void kiln_gather_8(const unsigned long long* s, unsigned long long* d, long long n, int r, long long o, Dims x) { gather(s, d, n, r, o, x); }
extern "C" __global__ void kiln_gather_16(const V16* s, V16* d, long long n, int r, long long o, Dims x) { gather(s, d, n, r, o, x); }
