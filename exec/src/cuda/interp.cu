// kiln's bytecode interpreter (exec/src/cuda/interp.rs runs it): the programs of
// kiln_compiler::bytecode, one run per element, so a new elementwise kernel's first calls
// compute while its code compiles. Carried compiled for sm_90 (runtime/prebuilt, made by
// scripts/gpu/clang_modules.sh with clang and ptxas); NVRTC compiles it elsewhere.
//
// A block copies the program into shared memory, then each thread runs it for L elements
// (kiln_interp: LANES, kiln_interp_1: one) at once (each instruction decoded once for them, their loads issued together), over a file
// of 64-bit registers in shared memory (as many as the program uses): an instruction word's
// byte 0 is its op (OP_*, bytecode::Family), byte 1 its operands' type (T_*), byte 2 the
// register it writes, bytes 3-5 its operands. The math functions are libdevice's, as in
// kiln's compiled kernels; each op rounds once.

typedef unsigned char u8;
typedef unsigned int u32;
typedef int i32;
typedef long long i64;
typedef unsigned long long u64;

#ifdef __CUDACC_RTC__
#define SYNC_THREADS() __syncthreads()
#define THREAD_X threadIdx.x
#define BLOCK_X blockIdx.x
#define BLOCK_DIM_X blockDim.x
#define GRID_DIM_X gridDim.x
#else
// clang, device code only, without CUDA's headers.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __attribute__((always_inline)) inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(n) __attribute__((launch_bounds(n)))
#define SYNC_THREADS() __nvvm_barrier_sync(0)
#define THREAD_X __nvvm_read_ptx_sreg_tid_x()
#define BLOCK_X __nvvm_read_ptx_sreg_ctaid_x()
#define BLOCK_DIM_X __nvvm_read_ptx_sreg_ntid_x()
#define GRID_DIM_X __nvvm_read_ptx_sreg_nctaid_x()
#endif

#define LIBDEVICE_F(name) extern "C" __device__ float __nv_##name##f(float);
#define LIBDEVICE_D(name) extern "C" __device__ double __nv_##name(double);
#define LIBDEVICE(name) LIBDEVICE_F(name) LIBDEVICE_D(name)
LIBDEVICE(exp) LIBDEVICE(exp2) LIBDEVICE(expm1) LIBDEVICE(log) LIBDEVICE(log2) LIBDEVICE(log10)
LIBDEVICE(log1p) LIBDEVICE(sin) LIBDEVICE(cos) LIBDEVICE(tan) LIBDEVICE(asin) LIBDEVICE(acos)
LIBDEVICE(atan) LIBDEVICE(sinh) LIBDEVICE(cosh) LIBDEVICE(tanh) LIBDEVICE(asinh) LIBDEVICE(acosh)
LIBDEVICE(atanh) LIBDEVICE(floor) LIBDEVICE(ceil) LIBDEVICE(trunc) LIBDEVICE(rint) LIBDEVICE(cbrt)
LIBDEVICE(fabs)
extern "C" __device__ float __nv_copysignf(float, float);
extern "C" __device__ double __nv_copysign(double, double);
extern "C" __device__ float __nv_atan2f(float, float);
extern "C" __device__ double __nv_atan2(double, double);
extern "C" __device__ float __nv_hypotf(float, float);
extern "C" __device__ double __nv_hypot(double, double);
extern "C" __device__ float __nv_fsqrt_rn(float);
extern "C" __device__ double __nv_dsqrt_rn(double);
extern "C" __device__ float __nv_fdiv_rn(float, float);
extern "C" __device__ double __nv_ddiv_rn(double, double);
extern "C" __device__ float __nv_int_as_float(int);
extern "C" __device__ int __nv_float_as_int(float);
extern "C" __device__ double __nv_longlong_as_double(long long);
extern "C" __device__ long long __nv_double_as_longlong(double);

// Types (bytecode::Ty).
#define T_BOOL 0
#define T_I32 1
#define T_I64 2
#define T_F32 3
#define T_F64 4

// Ops (bytecode::Family).
#define OP_LOAD 1
#define OP_STORE 2
#define OP_CONST 3
#define OP_CAST 4
#define OP_WHERE 5
#define OP_NEG 10
#define OP_ABS 11
#define OP_SQRT 12
#define OP_SQUARE 13
#define OP_RECIP 14
#define OP_EXP 15
#define OP_EXP2 16
#define OP_EXPM1 17
#define OP_LOG 18
#define OP_LOG2 19
#define OP_LOG10 20
#define OP_LOG1P 21
#define OP_SIN 22
#define OP_COS 23
#define OP_TAN 24
#define OP_ASIN 25
#define OP_ACOS 26
#define OP_ATAN 27
#define OP_SINH 28
#define OP_COSH 29
#define OP_TANH 30
#define OP_ASINH 31
#define OP_ACOSH 32
#define OP_ATANH 33
#define OP_FLOOR 34
#define OP_CEIL 35
#define OP_TRUNC 36
#define OP_RINT 37
#define OP_SIGN 38
#define OP_CBRT 40
#define OP_ISNAN 41
#define OP_ISINF 42
#define OP_ISFINITE 43
#define OP_NOT 44
#define OP_ADD 60
#define OP_SUB 61
#define OP_MUL 62
#define OP_DIV 63
#define OP_MAX 64
#define OP_MIN 65
#define OP_FMAX 66
#define OP_FMIN 67
#define OP_COPYSIGN 68
#define OP_ATAN2 69
#define OP_HYPOT 70
#define OP_AND 71
#define OP_OR 72
#define OP_XOR 73
#define OP_EQ 74
#define OP_NE 75
#define OP_LT 76
#define OP_LE 77
#define OP_GT 78
#define OP_GE 79

#define MAX_REGISTERS 32
#define MAX_CODE 384
#define MAX_INPUTS 12
#define MAX_OUTPUTS 4

// The buffers of a launch, by value.
struct Buffers {
  const void* in[MAX_INPUTS];
  void* out[MAX_OUTPUTS];
};

static __device__ __forceinline__ float f32_of(u64 r) { return __nv_int_as_float((int)(u32)r); }
static __device__ __forceinline__ double f64_of(u64 r) { return __nv_longlong_as_double((i64)r); }
static __device__ __forceinline__ u64 of_f32(float x) { return (u64)(u32)__nv_float_as_int(x); }
static __device__ __forceinline__ u64 of_f64(double x) { return (u64)__nv_double_as_longlong(x); }
static __device__ __forceinline__ u64 of_i32(i32 x) { return (u64)(u32)x; }

// A register of type `ty` as a double (exact for every type but int64 beyond 2^53, which
// `cast` handles apart).
static __device__ __forceinline__ double as_f64(int ty, u64 r) {
  switch (ty) {
    case T_BOOL: return (double)r;
    case T_I32: return (double)(i32)(u32)r;
    case T_I64: return (double)(i64)r;
    case T_F32: return (double)f32_of(r);
    default: return f64_of(r);
  }
}

static __device__ __forceinline__ u64 cast(int from, int to, u64 r) {
  if (to == T_BOOL) {
    if (from == T_F32) return f32_of(r) != 0.0f;
    if (from == T_F64) return f64_of(r) != 0.0;
    if (from == T_I32) return (u32)r != 0;
    return r != 0;
  }
  if (from == T_F32 || from == T_F64) {
    double t = __nv_trunc(as_f64(from, r));
    if (to == T_I32) return of_i32(t >= -2147483648.0 && t <= 2147483647.0 ? (i32)t : (i32)0x80000000);
    if (to == T_I64)
      return (u64)(t >= -9223372036854775808.0 && t < 9223372036854775808.0 ? (i64)t : (i64)0x8000000000000000ull);
    if (to == T_F32) return of_f32((float)as_f64(from, r));
    return of_f64(as_f64(from, r));
  }
  // From bool or an integer.
  i64 v = from == T_I32 ? (i64)(i32)(u32)r : (i64)r;
  switch (to) {
    case T_I32: return of_i32((i32)v);
    case T_I64: return (u64)v;
    case T_F32: return of_f32((float)v);
    default: return of_f64((double)v);
  }
}

#define FLOAT_BINARY(T, S, x, y)                                          \
  switch (op) {                                                           \
    case OP_ADD: return x + y;                                            \
    case OP_SUB: return x - y;                                            \
    case OP_MUL: return x * y;                                            \
    case OP_DIV: return DIV(x, y);                                        \
    case OP_MAX: return (x != x || x > y) ? x : y;                        \
    case OP_MIN: return (x != x || x < y) ? x : y;                        \
    case OP_FMAX: return (y != y || x >= y) ? x : y;                      \
    case OP_FMIN: return (y != y || x <= y) ? x : y;                      \
    case OP_COPYSIGN: return __nv_copysign##S(x, y);                      \
    case OP_ATAN2: return __nv_atan2##S(x, y);                            \
    case OP_HYPOT: return __nv_hypot##S(x, y);                            \
    default: return x;                                                    \
  }

#define SQRT __nv_fsqrt_rn
#define DIV __nv_fdiv_rn
static __device__ __noinline__ float f32_binary(int op, float x, float y) { FLOAT_BINARY(float, f, x, y) }
#undef SQRT
#undef DIV
#define SQRT __nv_dsqrt_rn
#define DIV __nv_ddiv_rn
static __device__ __noinline__ double f64_binary(int op, double x, double y) { FLOAT_BINARY(double, , x, y) }
#undef SQRT
#undef DIV

#define COMPARE(x, y)            \
  switch (op) {                  \
    case OP_EQ: return x == y;   \
    case OP_NE: return x != y;   \
    case OP_LT: return x < y;    \
    case OP_LE: return x <= y;   \
    case OP_GT: return x > y;    \
    case OP_GE: return x >= y;   \
    default: return 0;           \
  }

static __device__ __noinline__ u64 compare(int op, int ty, u64 a, u64 b) {
  switch (ty) {
    case T_I32: { i32 x = (i32)(u32)a, y = (i32)(u32)b; COMPARE(x, y) }
    case T_I64: { i64 x = (i64)a, y = (i64)b; COMPARE(x, y) }
    case T_F32: { float x = f32_of(a), y = f32_of(b); COMPARE(x, y) }
    case T_F64: { double x = f64_of(a), y = f64_of(b); COMPARE(x, y) }
    default: { u64 x = a, y = b; COMPARE(x, y) }
  }
}

// Integer ops wrap: computed on unsigned values.
#define INT_OP(S, U, x, y)                                    \
  switch (op) {                                               \
    case OP_NEG: return (S)(0 - (U)x);                        \
    case OP_ABS: return x < 0 ? (S)(0 - (U)x) : x;            \
    case OP_SQUARE: return (S)((U)x * (U)x);                  \
    case OP_SIGN: return (S)((x > 0) - (x < 0));              \
    case OP_NOT: return ~x;                                   \
    case OP_ADD: return (S)((U)x + (U)y);                     \
    case OP_SUB: return (S)((U)x - (U)y);                     \
    case OP_MUL: return (S)((U)x * (U)y);                     \
    case OP_MAX: return x > y ? x : y;                        \
    case OP_MIN: return x < y ? x : y;                        \
    case OP_AND: return x & y;                                \
    case OP_OR: return x | y;                                 \
    case OP_XOR: return x ^ y;                                \
    default: return x;                                        \
  }

static __device__ __noinline__ i32 i32_op(int op, i32 x, i32 y) { INT_OP(i32, u32, x, y) }
static __device__ __noinline__ i64 i64_op(int op, i64 x, i64 y) { INT_OP(i64, u64, x, y) }

static __device__ __forceinline__ u64 load(const void* p, int ty, u64 i) {
  switch (ty) {
    case T_BOOL: return ((const u8*)p)[i];
    case T_I32:
    case T_F32: return ((const u32*)p)[i];
    default: return ((const u64*)p)[i];
  }
}

static __device__ __forceinline__ void store(void* p, int ty, u64 i, u64 r) {
  switch (ty) {
    case T_BOOL: ((u8*)p)[i] = r != 0; break;
    case T_I32:
    case T_F32: ((u32*)p)[i] = (u32)r; break;
    default: ((u64*)p)[i] = r;
  }
}

// One instruction for one element.
static __device__ __forceinline__ u64 compute(int op, int ty, int c, u64 x, u64 y, u64 z) {
  if (op == OP_CAST) return cast(ty, c, x);
  if (op == OP_WHERE) return x ? y : z;
  if (op == OP_ISNAN || op == OP_ISINF || op == OP_ISFINITE) {
    double f = as_f64(ty, x);
    return op == OP_ISNAN ? f != f : op == OP_ISINF ? (f == 1.0 / 0.0 || f == -1.0 / 0.0)
                                                    : (f == f && f != 1.0 / 0.0 && f != -1.0 / 0.0);
  }
  if (op >= OP_EQ && op <= OP_GE) return compare(op, ty, x, y);
  if (ty == T_BOOL) return op == OP_NOT ? (x == 0) : op == OP_AND ? (x & y) : op == OP_OR ? (x | y) : (x ^ y);
  if (ty == T_I32) return of_i32(i32_op(op, (i32)(u32)x, (i32)(u32)y));
  if (ty == T_I64) return (u64)i64_op(op, (i64)x, (i64)y);
  // Float unary ops never reach here: `run` decodes them once for a thread's lanes.
  if (ty == T_F32) return of_f32(f32_binary(op, f32_of(x), f32_of(y)));
  return of_f64(f64_binary(op, f64_of(x), f64_of(y)));
}

// The register file: `registers` registers of L lanes for each thread of the block, in
// dynamic shared memory (the launch gives registers * L * 8 bytes a thread), lane-major so that
// a warp's accesses fall in distinct banks.
#define FILE(r, l) file[((r) * L + (l)) * BLOCK_DIM_X + THREAD_X]

// A float unary op for the L lanes of a thread (`EACH(e)`: each lane's register set to `e` of
// its `x`): the op decoded once for them, where `compute` decodes it again for every lane.
#define FLOAT_UNARY_LANES(T, S)                                             \
  switch (op) {                                                             \
    case OP_NEG: EACH(-x) case OP_ABS: EACH(__nv_fabs##S(x))               \
    case OP_SQRT: EACH(SQRT(x)) case OP_SQUARE: EACH(x * x)                \
    case OP_RECIP: EACH(DIV((T)1, x)) case OP_EXP: EACH(__nv_exp##S(x))    \
    case OP_EXP2: EACH(__nv_exp2##S(x)) case OP_EXPM1: EACH(__nv_expm1##S(x)) \
    case OP_LOG: EACH(__nv_log##S(x)) case OP_LOG2: EACH(__nv_log2##S(x))  \
    case OP_LOG10: EACH(__nv_log10##S(x)) case OP_LOG1P: EACH(__nv_log1p##S(x)) \
    case OP_SIN: EACH(__nv_sin##S(x)) case OP_COS: EACH(__nv_cos##S(x))    \
    case OP_TAN: EACH(__nv_tan##S(x)) case OP_ASIN: EACH(__nv_asin##S(x))  \
    case OP_ACOS: EACH(__nv_acos##S(x)) case OP_ATAN: EACH(__nv_atan##S(x)) \
    case OP_SINH: EACH(__nv_sinh##S(x)) case OP_COSH: EACH(__nv_cosh##S(x)) \
    case OP_TANH: EACH(__nv_tanh##S(x)) case OP_ASINH: EACH(__nv_asinh##S(x)) \
    case OP_ACOSH: EACH(__nv_acosh##S(x)) case OP_ATANH: EACH(__nv_atanh##S(x)) \
    case OP_FLOOR: EACH(__nv_floor##S(x)) case OP_CEIL: EACH(__nv_ceil##S(x)) \
    case OP_TRUNC: EACH(__nv_trunc##S(x)) case OP_RINT: EACH(__nv_rint##S(x)) \
    case OP_CBRT: EACH(__nv_cbrt##S(x))                                     \
    case OP_SIGN: EACH(x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x)   \
    default: EACH(x)                                                        \
  }

// The program run for L elements a thread at once (their loads issued together, each
// instruction decoded once for them): lane l of thread t takes element tile + l * threads + t.
template <int L>
static __device__ __forceinline__ void run(const u64* code, u32 ncode, u64 n, Buffers bufs,
                                           u64* program, const void** ins, void** outs, u64* file) {
  for (u32 k = THREAD_X; k < ncode; k += BLOCK_DIM_X) program[k] = code[k];
  if (THREAD_X == 0) {
#pragma unroll
    for (int k = 0; k < MAX_INPUTS; k++) ins[k] = bufs.in[k];
#pragma unroll
    for (int k = 0; k < MAX_OUTPUTS; k++) outs[k] = bufs.out[k];
  }
  SYNC_THREADS();
  u64 tile_size = (u64)BLOCK_DIM_X * L;
  for (u64 tile = (u64)BLOCK_X * tile_size; tile < n; tile += (u64)GRID_DIM_X * tile_size) {
    u64 first = tile + THREAD_X;
    for (u32 pc = 0; pc < ncode; pc++) {
      u64 w = program[pc];
      int op = (int)(w & 0xff), ty = (int)((w >> 8) & 0xff);
      int dst = (int)((w >> 16) & 0xff) & (MAX_REGISTERS - 1), a = (int)((w >> 24) & 0xff) & (MAX_REGISTERS - 1);
      int b = (int)((w >> 32) & 0xff) & (MAX_REGISTERS - 1), c = (int)((w >> 40) & 0xff);
      if (op == OP_LOAD) {
        const void* p = ins[(w >> 24) & 0xff];
        u64 v[L];
#pragma unroll
        for (int l = 0; l < L; l++) {
          u64 e = first + (u64)l * BLOCK_DIM_X;
          v[l] = b ? load(p, ty, 0) : e < n ? load(p, ty, e) : 0;
        }
#pragma unroll
        for (int l = 0; l < L; l++) FILE(dst, l) = v[l];
      } else if (op == OP_STORE) {
        void* p = outs[(w >> 16) & 0xff];
#pragma unroll
        for (int l = 0; l < L; l++) {
          u64 e = first + (u64)l * BLOCK_DIM_X;
          if (e < n) store(p, ty, e, FILE(a, l));
        }
      } else if (op == OP_CONST) {
        u64 k = program[++pc];
#pragma unroll
        for (int l = 0; l < L; l++) FILE(dst, l) = k;
      } else if (op >= OP_ADD && op <= OP_MUL && ty == T_F32) {
        // The commonest ops in line, without the calls of `compute` (each rounds once, as the
        // evaluator's).
#pragma unroll
        for (int l = 0; l < L; l++) {
          float x = f32_of(FILE(a, l)), y = f32_of(FILE(b, l));
          FILE(dst, l) = of_f32(op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y);
        }
      } else if (op >= OP_ADD && op <= OP_MUL && ty == T_F64) {
#pragma unroll
        for (int l = 0; l < L; l++) {
          double x = f64_of(FILE(a, l)), y = f64_of(FILE(b, l));
          FILE(dst, l) = of_f64(op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y);
        }
      } else if (op >= OP_NEG && op <= OP_CBRT && ty == T_F32) {
#define EACH(e) for (int l = 0; l < L; l++) { float x = f32_of(FILE(a, l)); FILE(dst, l) = of_f32(e); } break;
#define SQRT __nv_fsqrt_rn
#define DIV __nv_fdiv_rn
        FLOAT_UNARY_LANES(float, f)
#undef SQRT
#undef DIV
#undef EACH
      } else if (op >= OP_NEG && op <= OP_CBRT && ty == T_F64) {
#define EACH(e) for (int l = 0; l < L; l++) { double x = f64_of(FILE(a, l)); FILE(dst, l) = of_f64(e); } break;
#define SQRT __nv_dsqrt_rn
#define DIV __nv_ddiv_rn
        FLOAT_UNARY_LANES(double, )
#undef SQRT
#undef DIV
#undef EACH
      } else {
        int z = c & (MAX_REGISTERS - 1);
#pragma unroll
        for (int l = 0; l < L; l++) FILE(dst, l) = compute(op, ty, c, FILE(a, l), FILE(b, l), FILE(z, l));
      }
    }
  }
}

// Four elements a thread (arrays that fill the device), and one (small arrays: a thread's
// program is then a quarter as long, and more threads share the work).
#define LANES 4

#define KERNEL(name, lanes)                                                                        \
  extern "C" __global__ void __launch_bounds__(256) name(const u64* code, u32 ncode, u64 n, Buffers bufs) { \
    __shared__ u64 program[MAX_CODE];                                                              \
    __shared__ const void* ins[MAX_INPUTS];                                                        \
    __shared__ void* outs[MAX_OUTPUTS];                                                            \
    extern __shared__ u64 file[];                                                                  \
    run<lanes>(code, ncode, n, bufs, program, ins, outs, file);                                    \
  }
KERNEL(kiln_interp, LANES)
KERNEL(kiln_interp_1, 1)
