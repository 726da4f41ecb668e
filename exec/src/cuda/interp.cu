// kiln's bytecode interpreter (exec/src/cuda/interp.rs runs it): the programs of
// kiln_compiler::bytecode, one run per element, so a new elementwise kernel's first calls
// compute while its code compiles. Carried compiled for sm_90 (runtime/prebuilt, made by
// scripts/gpu/clang_modules.sh with clang and ptxas); NVRTC compiles it elsewhere.
//
// A block copies the program into shared memory and decodes each word once (its (type, op)
// key and its registers' places in the file); each thread runs its prologue (values the same
// at every element: bytecode::Bytecode::prologue) with its first tile only, and the rest for
// L elements (kiln_interp: LANES, kiln_interp_1: one) at once: one jump on the key an
// instruction, then the op alone for each lane (their loads issued together), over a file of
// 64-bit registers in shared memory (as many as the program uses). An instruction word's
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
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
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
  // Float arithmetic never reaches here: `run`'s switch decodes it for a thread's lanes.
  return x;
}

// An instruction's switch key: its operands' type and its op.
#define KEY(ty, op) (((ty) << 7) | (op))

// The op for each of a thread's lanes: `fa`, `fb` its operands' registers, `fd` the one it
// writes (lane l at l * bd).
#define LANE_LOOP _Pragma("unroll") for (int l = 0; l < L; l++)
#define F32_UN(e) LANE_LOOP { float x = f32_of(fa[l * bd]); fd[l * bd] = of_f32(e); } break;
#define F64_UN(e) LANE_LOOP { double x = f64_of(fa[l * bd]); fd[l * bd] = of_f64(e); } break;
#define F32_BIN(e) LANE_LOOP { float x = f32_of(fa[l * bd]), y = f32_of(fb[l * bd]); fd[l * bd] = of_f32(e); } break;
#define F64_BIN(e) LANE_LOOP { double x = f64_of(fa[l * bd]), y = f64_of(fb[l * bd]); fd[l * bd] = of_f64(e); } break;
#define F32_CMP(e) LANE_LOOP { float x = f32_of(fa[l * bd]), y = f32_of(fb[l * bd]); fd[l * bd] = (u64)(e); } break;
#define F64_CMP(e) LANE_LOOP { double x = f64_of(fa[l * bd]), y = f64_of(fb[l * bd]); fd[l * bd] = (u64)(e); } break;

// The float ops of one type, each a case of `run`'s switch.
#define FLOAT_CASES(T, TY, S, UN, BIN, CMP, SQRT_, DIV_)                                      \
  case KEY(TY, OP_NEG): UN(-x) case KEY(TY, OP_ABS): UN(__nv_fabs##S(x))                      \
  case KEY(TY, OP_SQRT): UN(SQRT_(x)) case KEY(TY, OP_SQUARE): UN(x * x)                      \
  case KEY(TY, OP_RECIP): UN(DIV_((T)1, x)) case KEY(TY, OP_EXP): UN(__nv_exp##S(x))          \
  case KEY(TY, OP_EXP2): UN(__nv_exp2##S(x)) case KEY(TY, OP_EXPM1): UN(__nv_expm1##S(x))     \
  case KEY(TY, OP_LOG): UN(__nv_log##S(x)) case KEY(TY, OP_LOG2): UN(__nv_log2##S(x))         \
  case KEY(TY, OP_LOG10): UN(__nv_log10##S(x)) case KEY(TY, OP_LOG1P): UN(__nv_log1p##S(x))   \
  case KEY(TY, OP_SIN): UN(__nv_sin##S(x)) case KEY(TY, OP_COS): UN(__nv_cos##S(x))           \
  case KEY(TY, OP_TAN): UN(__nv_tan##S(x)) case KEY(TY, OP_ASIN): UN(__nv_asin##S(x))         \
  case KEY(TY, OP_ACOS): UN(__nv_acos##S(x)) case KEY(TY, OP_ATAN): UN(__nv_atan##S(x))       \
  case KEY(TY, OP_SINH): UN(__nv_sinh##S(x)) case KEY(TY, OP_COSH): UN(__nv_cosh##S(x))       \
  case KEY(TY, OP_TANH): UN(__nv_tanh##S(x)) case KEY(TY, OP_ASINH): UN(__nv_asinh##S(x))     \
  case KEY(TY, OP_ACOSH): UN(__nv_acosh##S(x)) case KEY(TY, OP_ATANH): UN(__nv_atanh##S(x))   \
  case KEY(TY, OP_FLOOR): UN(__nv_floor##S(x)) case KEY(TY, OP_CEIL): UN(__nv_ceil##S(x))     \
  case KEY(TY, OP_TRUNC): UN(__nv_trunc##S(x)) case KEY(TY, OP_RINT): UN(__nv_rint##S(x))     \
  case KEY(TY, OP_CBRT): UN(__nv_cbrt##S(x))                                                  \
  case KEY(TY, OP_SIGN): UN(x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x)                 \
  case KEY(TY, OP_ADD): BIN(x + y) case KEY(TY, OP_SUB): BIN(x - y)                           \
  case KEY(TY, OP_MUL): BIN(x * y) case KEY(TY, OP_DIV): BIN(DIV_(x, y))                      \
  case KEY(TY, OP_MAX): BIN((x != x || x > y) ? x : y)                                        \
  case KEY(TY, OP_MIN): BIN((x != x || x < y) ? x : y)                                        \
  case KEY(TY, OP_FMAX): BIN((y != y || x >= y) ? x : y)                                      \
  case KEY(TY, OP_FMIN): BIN((y != y || x <= y) ? x : y)                                      \
  case KEY(TY, OP_COPYSIGN): BIN(__nv_copysign##S(x, y))                                      \
  case KEY(TY, OP_ATAN2): BIN(__nv_atan2##S(x, y)) case KEY(TY, OP_HYPOT): BIN(__nv_hypot##S(x, y)) \
  case KEY(TY, OP_EQ): CMP(x == y) case KEY(TY, OP_NE): CMP(x != y)                           \
  case KEY(TY, OP_LT): CMP(x < y) case KEY(TY, OP_LE): CMP(x <= y)                            \
  case KEY(TY, OP_GT): CMP(x > y) case KEY(TY, OP_GE): CMP(x >= y)

// The program run for L elements a thread at once: lane l of thread t takes element
// tile + l * threads + t. The register file: the program's registers, L lanes each for every
// thread of the block, in dynamic shared memory (the launch gives registers * L * 8 bytes a
// thread), lane-major so that a warp's accesses fall in distinct banks.
template <int L>
static __device__ __forceinline__ void run(const u64* code, u32 ncode, u32 nprologue, u64 n, Buffers bufs,
                                           u64* program, u64* decoded, const void** ins, void** outs, u64* file) {
  // Each word decoded once for the block: its key (type, op) and its registers' offsets in
  // the file (in registers of 8 bytes: below 32 * LANES * 256 = 2^15, so 16 bits each). A
  // constant's value word is decoded too, and never read.
  const u32 bd = BLOCK_DIM_X;
  for (u32 k = THREAD_X; k < ncode; k += bd) {
    u64 w = code[k];
    program[k] = w;
    u64 key = KEY((w >> 8) & 7, w & 0x7f);
    u64 d = ((w >> 16) & (MAX_REGISTERS - 1)) * (L * bd), a = ((w >> 24) & (MAX_REGISTERS - 1)) * (L * bd);
    u64 b = ((w >> 32) & (MAX_REGISTERS - 1)) * (L * bd);
    decoded[k] = key | d << 16 | a << 32 | b << 48;
  }
  if (THREAD_X == 0) {
#pragma unroll
    for (int k = 0; k < MAX_INPUTS; k++) ins[k] = bufs.in[k];
#pragma unroll
    for (int k = 0; k < MAX_OUTPUTS; k++) outs[k] = bufs.out[k];
  }
  SYNC_THREADS();
  u64* mine = file + THREAD_X;
  u64 tile_size = (u64)bd * L;
  // The prologue's words (values the same at every element, their registers not written
  // again) run with the block's first tile only.
  u32 from = 0;
  for (u64 tile = (u64)BLOCK_X * tile_size; tile < n; tile += (u64)GRID_DIM_X * tile_size, from = nprologue) {
    u64 first = tile + THREAD_X;
    bool whole = tile + tile_size <= n;
    for (u32 pc = from; pc < ncode; pc++) {
      u64 dw = decoded[pc];
      u32 lo = (u32)dw, hi = (u32)(dw >> 32);
      u64* fd = mine + (lo >> 16);
      const u64* fa = mine + (hi & 0xffff);
      const u64* fb = mine + (hi >> 16);
      switch (lo & 0xffff) {
        case KEY(T_F32, OP_LOAD):
        case KEY(T_I32, OP_LOAD): {
          u64 w = program[pc];
          const u32* p = (const u32*)ins[(w >> 24) & 0xff];
          if ((w >> 32) & 0xff) {
            u64 v = p[0];
            LANE_LOOP fd[l * bd] = v;
          } else if (whole) {
            u32 v[L];
            LANE_LOOP v[l] = p[first + (u64)l * bd];
            LANE_LOOP fd[l * bd] = v[l];
          } else {
            u32 v[L];
            LANE_LOOP { u64 e = first + (u64)l * bd; v[l] = e < n ? p[e] : 0; }
            LANE_LOOP fd[l * bd] = v[l];
          }
          break;
        }
        case KEY(T_F64, OP_LOAD):
        case KEY(T_I64, OP_LOAD): {
          u64 w = program[pc];
          const u64* p = (const u64*)ins[(w >> 24) & 0xff];
          if ((w >> 32) & 0xff) {
            u64 v = p[0];
            LANE_LOOP fd[l * bd] = v;
          } else {
            u64 v[L];
            LANE_LOOP { u64 e = first + (u64)l * bd; v[l] = whole || e < n ? p[e] : 0; }
            LANE_LOOP fd[l * bd] = v[l];
          }
          break;
        }
        case KEY(T_F32, OP_STORE):
        case KEY(T_I32, OP_STORE): {
          u32* p = (u32*)outs[(program[pc] >> 16) & 0xff];
          if (whole) {
            LANE_LOOP p[first + (u64)l * bd] = (u32)fa[l * bd];
          } else {
            LANE_LOOP { u64 e = first + (u64)l * bd; if (e < n) p[e] = (u32)fa[l * bd]; }
          }
          break;
        }
        case KEY(T_F64, OP_STORE):
        case KEY(T_I64, OP_STORE): {
          u64* p = (u64*)outs[(program[pc] >> 16) & 0xff];
          LANE_LOOP { u64 e = first + (u64)l * bd; if (whole || e < n) p[e] = fa[l * bd]; }
          break;
        }
        case KEY(T_BOOL, OP_CONST): case KEY(T_I32, OP_CONST): case KEY(T_I64, OP_CONST):
        case KEY(T_F32, OP_CONST): case KEY(T_F64, OP_CONST): {
          u64 k = program[++pc];
          LANE_LOOP fd[l * bd] = k;
          break;
        }
#define SQRT_F __nv_fsqrt_rn
#define DIV_F __nv_fdiv_rn
#define SQRT_D __nv_dsqrt_rn
#define DIV_D __nv_ddiv_rn
        FLOAT_CASES(float, T_F32, f, F32_UN, F32_BIN, F32_CMP, SQRT_F, DIV_F)
        FLOAT_CASES(double, T_F64, , F64_UN, F64_BIN, F64_CMP, SQRT_D, DIV_D)
        default: {
          u64 w = program[pc];
          int op = (int)(w & 0xff), ty = (int)((w >> 8) & 0xff), b = (int)((w >> 32) & 0xff), c = (int)((w >> 40) & 0xff);
          if (op == OP_LOAD) {
            const void* p = ins[(w >> 24) & 0xff];
            u64 v[L];
            LANE_LOOP { u64 e = first + (u64)l * bd; v[l] = b ? load(p, ty, 0) : e < n ? load(p, ty, e) : 0; }
            LANE_LOOP fd[l * bd] = v[l];
          } else if (op == OP_STORE) {
            void* p = outs[(w >> 16) & 0xff];
            LANE_LOOP { u64 e = first + (u64)l * bd; if (e < n) store(p, ty, e, fa[l * bd]); }
          } else {
            // `c` is a register for `where` only (a cast's target type otherwise).
            const u64* fc = op == OP_WHERE ? mine + (c & (MAX_REGISTERS - 1)) * (L * bd) : fa;
            LANE_LOOP fd[l * bd] = compute(op, ty, c, fa[l * bd], fb[l * bd], fc[l * bd]);
          }
        }
      }
    }
  }
}

// Four elements a thread (arrays that fill the device), and one (small arrays: a thread's
// program is then a quarter as long, and more threads share the work).
#define LANES 4
// Blocks of 256 threads a multiprocessor holds at once, at least: the registers' bound that
// lets the register file's shared memory be the limit (ptxas then keeps 40 registers;
// without it 64, and four blocks of 256 ran first_expr 6% slower, session 42).
#define MIN_BLOCKS 6

#define KERNEL(name, lanes)                                                                        \
  extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS) name(const u64* code, u32 ncode, u32 nprologue, u64 n, \
                                                                      Buffers bufs) {                      \
    __shared__ u64 program[MAX_CODE];                                                              \
    __shared__ u64 decoded[MAX_CODE];                                                              \
    __shared__ const void* ins[MAX_INPUTS];                                                        \
    __shared__ void* outs[MAX_OUTPUTS];                                                            \
    extern __shared__ u64 file[];                                                                  \
    run<lanes>(code, ncode, nprologue, n, bufs, program, decoded, ins, outs, file);                \
  }
KERNEL(kiln_interp, LANES)
KERNEL(kiln_interp_1, 1)
