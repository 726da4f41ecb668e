//! Linear-algebra calls ([`LinalgCall`]) on the device, through cuSOLVER (and cuBLAS's batched
//! LU inverse) by way of `kiln_runtime::solver`, for float32, float64, complex64 and complex128,
//! on the current stream. What comes out matches the host executor (`cpu::vendor::linalg`):
//! C-order outputs, L with zeros above the diagonal, `s` descending, `w` ascending, `Vh = Vᴴ`,
//! det 0 and slogdet `(0, -inf)` for a singular matrix, and [`IrError::LinAlg`] with NumPy's
//! messages ("Matrix is not positive definite", "Singular matrix") for the failures the host
//! reports.
//!
//! **Operands.** Every operand is gathered (`kiln_runtime::gather`) into a fresh packed buffer
//! (cuSOLVER overwrites its input): broadcast batch axes become copies, one matrix after
//! another. cuSOLVER is column-major, and a C-order `m × n` matrix read column-major is its
//! transpose `Aᵀ` (`n × m`). Where the math allows, the routine runs on `Aᵀ` as it is; where it
//! does not, the gather reads the operand with its last two strides swapped, which gives `A`
//! column-major at the same cost (no separate transpose). The LU-based kinds factor `A` itself,
//! as NumPy's LAPACK calls do (its umath_linalg copies `A` into Fortran order), so a matrix with
//! equal rows has the same exactly zero pivot ("Singular matrix", det 0) as on the host; `Aᵀ`'s
//! LU could round it to a tiny nonzero one:
//!
//! | kind | on the device |
//! |---|---|
//! | cholesky | `A` gathered column-major, `potrf(Lower)` (cuSOLVER's faster path) reads its lower triangle (the one NumPy reads) and leaves `L` column-major; one tiled kernel transposes it into C order with zeros above the diagonal |
//! | solve | `A` and `b` gathered column-major, `getrf` + `getrs`, `x` gathered back into C order |
//! | inv | `A` gathered column-major; `n ≤ 32` and several matrices: `inv_batched` (cuBLAS getrf/getriBatched), `inv(A)` gathered back into C order; otherwise `getrf` + `getrs` with `op = T` against an identity: `inv(Aᵀ) = inv(A)ᵀ` column-major is `inv(A)` in C order, no transpose back |
//! | det, slogdet | `A` gathered column-major, `getrf`, then one kernel thread per matrix multiplies `U`'s diagonal and the pivots' sign (log|det| summed in double precision); a zero on the diagonal gives 0 and `(0, -inf)`. No read-back: nothing waits |
//! | qr | `A` gathered column-major, `geqrf` + `form_q` (reduced or complete), `Q` and `R` gathered back into C order (R: the upper triangle of the first `k` or `m` rows, a kernel zeroing below the diagonal) |
//! | svd | many small matrices (`m, n ≤ 32`): `gesvdj_batched` on `A` column-major, `U`'s first columns and `Vᴴ` (from `V`, conjugated by a kernel for complex types) gathered into C order. Otherwise, with vectors, `gesvdj` (one-sided Jacobi, torch's default driver) on `Aᵀ` as it is: `Aᵀ = U'·S·V'ᴴ` gives `A = conj(V')·S·U'ᵀ`, so its `U'` column-major is `Vh` in C order and `U` is its `V'` gathered into C order (conjugated for complex types); a matrix it does not converge on sends the call to `gesvd` on `Aᵀ`, whose `U'` is again `Vh` and whose `V'ᴴ` column-major is `U` in C order — no transposes. `s` alone: `gesvd`, no vectors computed |
//! | eigh | `A` gathered column-major, `syevd(Lower)` (or `syevj_batched` for many matrices of `n ≤ 32`) reads its lower triangle; `w` as it comes, the eigenvectors (columns) gathered into C order; `w` alone: no vectors |
//!
//! **Errors and waits.** cholesky, solve, inv, eigh and svd read cuSOLVER's `info` back
//! (`Info::check`, one wait per call) to report a failure as the host does; det, slogdet and qr
//! wait for nothing. Empty operands (no matrices, or a zero dimension) are left to the host
//! path (see [`supported`]).
//!
//! The small kernels (zeroing a triangle, an identity, conjugation, the determinant from the
//! LU factors) are one CUDA C source compiled by NVRTC for the device on first use and cached
//! per device.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use kiln_compiler::vendor::{LinalgCall, LinalgKind, Strided};
use kiln_ir::shape::numel;
use kiln_ir::{DType, IrError};
use kiln_runtime::solver::{self, FailureKind, Info, QMode, SolverType, SvdJob, Transpose, Uplo};
use kiln_runtime::{gather, Device, DeviceBuffer, Function, KernelArg, LaunchConfig};

use super::{DeviceArray, Result};
use crate::ExecError as Error;

/// The largest matrices the batched Jacobi and batched-inverse routines take.
const BATCHED_MAX: usize = 32;

/// The solver type of a call's dtype, `None` for what cuSOLVER does not compute.
fn solver_type(dtype: DType) -> Option<SolverType> {
    Some(match dtype {
        DType::Float32 => SolverType::F32,
        DType::Float64 => SolverType::F64,
        DType::Complex64 => SolverType::C64,
        DType::Complex128 => SolverType::C128,
        _ => return None,
    })
}

/// Whether the device runs `call`: a cuSOLVER type, at least one matrix, no zero dimension (the
/// host handles empty operands), operands of the shapes the call describes, few enough axes for
/// a gather.
pub(super) fn supported(call: &LinalgCall) -> bool {
    let count: usize = call.batch.iter().product();
    let full = |rows: usize, cols: usize| -> Vec<usize> {
        call.batch.iter().copied().chain([rows, cols]).collect()
    };
    let a_ok = call.a.layout.shape.to_vec() == full(call.m, call.n)
        && call.a.layout.rank() <= gather::MAX_RANK;
    let b_ok = match (&call.b, call.kind) {
        (Some((b, k)), LinalgKind::Solve) => *k > 0 && b.layout.shape.to_vec() == full(call.n, *k),
        (None, LinalgKind::Solve) => false,
        _ => true,
    };
    solver_type(call.dtype).is_some()
        && count > 0
        && call.m > 0
        && call.n > 0
        && a_ok
        && b_ok
        && call.outputs.len() == call.out_types.len()
}

fn invalid(message: String) -> Error {
    Error::InvalidInput(message)
}

fn op_name(kind: LinalgKind) -> &'static str {
    match kind {
        LinalgKind::Cholesky => "cholesky",
        LinalgKind::Solve => "solve",
        LinalgKind::Inv => "inv",
        LinalgKind::Det => "det",
        LinalgKind::Slogdet => "slogdet",
        LinalgKind::Qr { .. } => "qr",
        LinalgKind::Svd { .. } => "svd",
        LinalgKind::Eigh => "eigh",
    }
}

/// The host's error for `call` (the operand's shape, NumPy's message).
fn linalg_error(call: &LinalgCall, message: &str) -> Error {
    let shape = call.batch.iter().copied().chain([call.m, call.n]).collect();
    Error::Ir(IrError::LinAlg { op: op_name(call.kind).into(), shape, message: message.into() })
}

/// Reads `info` back (waits for the stream) and reports a numerical failure as the host does.
fn checked(call: &LinalgCall, info: &Info) -> Result<()> {
    match info.check()? {
        Ok(()) => Ok(()),
        Err(f) => Err(linalg_error(
            call,
            match f.kind {
                FailureKind::NotPositiveDefinite => "Matrix is not positive definite",
                FailureKind::Singular => "Singular matrix",
                FailureKind::NotConverged if call.kind == LinalgKind::Eigh => {
                    "Eigenvalues did not converge"
                }
                FailureKind::NotConverged => "SVD did not converge",
                FailureKind::Other => return Err(invalid(format!("{}: {f}", op_name(call.kind)))),
            },
        )),
    }
}

/// A packed copy of operand `s` (of `x`): its matrices one after another, in C order, or with
/// `transpose` each one transposed (so the copy read column-major is the matrix itself).
fn packed(x: &DeviceArray, s: &Strided, dtype: DType, transpose: bool) -> Result<DeviceBuffer> {
    if x.dtype != dtype {
        return Err(invalid(format!("linalg call of {dtype}: an operand of dtype {}", x.dtype)));
    }
    let l = &s.layout;
    let r = l.rank();
    let es = dtype.itemsize();
    let (rows, cols) = (l.shape[r - 2], l.shape[r - 1]);
    let count: usize = l.shape[..r - 2].iter().product();
    let end = (l.offset.max(0) as usize + count * rows * cols) * es;
    if transpose && l.offset >= 0 && end <= x.buf.len() && c_contiguous(&l.shape, &l.strides) {
        let src = x.buf.ptr() + (l.offset as usize * es) as u64;
        return transposed(x.buf.device(), src, es, count, cols, rows, false);
    }
    let (mut shape, mut strides) = (l.shape.to_vec(), l.strides.to_vec());
    if transpose {
        shape.swap(r - 2, r - 1);
        strides.swap(r - 2, r - 1);
    }
    Ok(gather::gather(&x.buf, dtype.itemsize(), l.offset, &shape, &strides)?)
}

/// A new buffer of `shape` read from the packed `buf` through `strides` (a transpose, the first
/// rows or columns of each matrix).
fn relayout(
    buf: &DeviceBuffer,
    es: usize,
    shape: &[usize],
    strides: &[isize],
) -> Result<DeviceBuffer> {
    // Every matrix transposed whole (the C-order copy of packed column-major matrices): one
    // transposing kernel.
    if let ([count, rows, cols], [bs, 1, cs]) = (shape, strides) {
        let (count, rows, cols) = (*count, *rows, *cols);
        if *bs == (rows * cols) as isize
            && *cs == rows as isize
            && buf.len() >= count * rows * cols * es
        {
            return transposed(buf.device(), buf.ptr(), es, count, rows, cols, false);
        }
    }
    Ok(gather::gather(buf, es, 0, shape, strides)?)
}

/// Whether `strides` are the C-contiguous ones of `shape` (axes of extent 1 aside).
fn c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    let mut want = 1isize;
    for (&n, &st) in shape.iter().zip(strides).rev() {
        if n != 1 && st != want {
            return false;
        }
        want *= n as isize;
    }
    true
}

fn alloc(bytes: usize) -> Result<DeviceBuffer> {
    Ok(DeviceBuffer::alloc(bytes)?)
}

fn mats(buf: &DeviceBuffer, stride: usize) -> solver::Strided {
    solver::Strided::new(buf.ptr(), stride)
}

// ------------------------------------------------------------------------------------------------
// The small kernels
// ------------------------------------------------------------------------------------------------

const SOURCE: &str = r#"
struct __align__(8) c64 { float x, y; };
struct __align__(16) c128 { double x, y; };
struct __align__(16) v16 { unsigned long long a, b; };

#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

// Zeroes, in `count` C-order rows x cols matrices, the elements above (upper) or below the
// diagonal.
template <typename T>
__device__ void tri_zero(T* a, long long count, long long rows, long long cols, int upper) {
    GRID_STRIDE(i, count * rows * cols) {
        long long c = i % cols, r = (i / cols) % rows;
        if (upper ? c > r : r > c) a[i] = T{};
    }
}
extern "C" __global__ void kiln_la_tri_zero_4(unsigned int* a, long long b, long long r, long long c, int u) { tri_zero(a, b, r, c, u); }
extern "C" __global__ void kiln_la_tri_zero_8(unsigned long long* a, long long b, long long r, long long c, int u) { tri_zero(a, b, r, c, u); }
extern "C" __global__ void kiln_la_tri_zero_16(v16* a, long long b, long long r, long long c, int u) { tri_zero(a, b, r, c, u); }

// Batched transposes: dst (count R x C matrices, C order) [r][c] = src (count C x R, C order)
// [c][r]. `tiled`: 32 x 32 tiles through shared memory, blocks of 32 x 8 threads; with `lower`,
// zeros above dst's diagonal (a tile wholly above it is only zeroed): the C-order L of
// potrf(Lower)'s column-major factor in one pass.
template <typename T>
__device__ void tiled(const T* src, T* dst, long long count, long long R, long long C, int lower) {
    __shared__ T tile[32][33];
    long long tr = (R + 31) / 32, tc = (C + 31) / 32, per = tr * tc;
    long long total = count * per;
    for (long long t = blockIdx.x; t < total; t += gridDim.x) {
        long long b = t / per, rem = t % per;
        long long r0 = (rem / tc) * 32, c0 = (rem % tc) * 32;
        const T* s = src + b * R * C;
        T* d = dst + b * R * C;
        if (lower && c0 > r0 + 31) {
            for (int y = threadIdx.y; y < 32; y += 8) {
                long long r = r0 + y, c = c0 + threadIdx.x;
                if (r < R && c < C) d[r * C + c] = T{};
            }
            continue;
        }
        for (int y = threadIdx.y; y < 32; y += 8) {
            long long c = c0 + y, r = r0 + threadIdx.x;
            if (r < R && c < C) tile[y][threadIdx.x] = s[c * R + r];
        }
        __syncthreads();
        for (int y = threadIdx.y; y < 32; y += 8) {
            long long r = r0 + y, c = c0 + threadIdx.x;
            if (r < R && c < C) d[r * C + c] = (!lower || r >= c) ? tile[threadIdx.x][y] : T{};
        }
        __syncthreads();
    }
}
extern "C" __global__ void kiln_la_tiled_4(const unsigned int* s, unsigned int* d, long long b, long long r, long long c, int l) { tiled(s, d, b, r, c, l); }
extern "C" __global__ void kiln_la_tiled_8(const unsigned long long* s, unsigned long long* d, long long b, long long r, long long c, int l) { tiled(s, d, b, r, c, l); }
extern "C" __global__ void kiln_la_tiled_16(const v16* s, v16* d, long long b, long long r, long long c, int l) { tiled(s, d, b, r, c, l); }

// The same for many small matrices (total < 2^31 elements): one thread an element, 32-bit
// index arithmetic.
template <typename T>
__device__ void small_t(const T* src, T* dst, unsigned int total, unsigned int R, unsigned int C) {
    unsigned int rc = R * C;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += gridDim.x * blockDim.x) {
        unsigned int b = i / rc, rem = i - b * rc, r = rem / C, c = rem - r * C;
        dst[i] = src[b * rc + c * R + r];
    }
}
extern "C" __global__ void kiln_la_small_t_4(const unsigned int* s, unsigned int* d, unsigned int t, unsigned int r, unsigned int c) { small_t(s, d, t, r, c); }
extern "C" __global__ void kiln_la_small_t_8(const unsigned long long* s, unsigned long long* d, unsigned int t, unsigned int r, unsigned int c) { small_t(s, d, t, r, c); }
extern "C" __global__ void kiln_la_small_t_16(const v16* s, v16* d, unsigned int t, unsigned int r, unsigned int c) { small_t(s, d, t, r, c); }

template <typename T> struct Num;
template <> struct Num<float> {
    typedef float R;
    static __device__ float one() { return 1.0f; }
    static __device__ float zero() { return 0.0f; }
    static __device__ double mag(float v) { return fabs((double)v); }
    static __device__ float mul(float a, float b) { return a * b; }
    static __device__ float unit(float v) { return v < 0.0f ? -1.0f : 1.0f; }
    static __device__ float neg(float v) { return -v; }
};
template <> struct Num<double> {
    typedef double R;
    static __device__ double one() { return 1.0; }
    static __device__ double zero() { return 0.0; }
    static __device__ double mag(double v) { return fabs(v); }
    static __device__ double mul(double a, double b) { return a * b; }
    static __device__ double unit(double v) { return v < 0.0 ? -1.0 : 1.0; }
    static __device__ double neg(double v) { return -v; }
};
template <> struct Num<c64> {
    typedef float R;
    static __device__ c64 one() { c64 r; r.x = 1.0f; r.y = 0.0f; return r; }
    static __device__ c64 zero() { c64 r; r.x = 0.0f; r.y = 0.0f; return r; }
    static __device__ double mag(c64 v) { return hypot((double)v.x, (double)v.y); }
    static __device__ c64 mul(c64 a, c64 b) { c64 r; r.x = a.x * b.x - a.y * b.y; r.y = a.x * b.y + a.y * b.x; return r; }
    static __device__ c64 unit(c64 v) { float m = hypotf(v.x, v.y); c64 r; r.x = v.x / m; r.y = v.y / m; return r; }
    static __device__ c64 neg(c64 v) { c64 r; r.x = -v.x; r.y = -v.y; return r; }
};
template <> struct Num<c128> {
    typedef double R;
    static __device__ c128 one() { c128 r; r.x = 1.0; r.y = 0.0; return r; }
    static __device__ c128 zero() { c128 r; r.x = 0.0; r.y = 0.0; return r; }
    static __device__ double mag(c128 v) { return hypot(v.x, v.y); }
    static __device__ c128 mul(c128 a, c128 b) { c128 r; r.x = a.x * b.x - a.y * b.y; r.y = a.x * b.y + a.y * b.x; return r; }
    static __device__ c128 unit(c128 v) { double m = hypot(v.x, v.y); c128 r; r.x = v.x / m; r.y = v.y / m; return r; }
    static __device__ c128 neg(c128 v) { c128 r; r.x = -v.x; r.y = -v.y; return r; }
};

// `count` n x n identities.
template <typename T>
__device__ void eye(T* a, long long count, long long n) {
    GRID_STRIDE(i, count * n * n) {
        long long c = i % n, r = (i / n) % n;
        a[i] = r == c ? Num<T>::one() : Num<T>::zero();
    }
}
extern "C" __global__ void kiln_la_eye_f32(float* a, long long b, long long n) { eye(a, b, n); }
extern "C" __global__ void kiln_la_eye_f64(double* a, long long b, long long n) { eye(a, b, n); }
extern "C" __global__ void kiln_la_eye_c64(c64* a, long long b, long long n) { eye(a, b, n); }
extern "C" __global__ void kiln_la_eye_c128(c128* a, long long b, long long n) { eye(a, b, n); }

// Conjugates `n` complex numbers in place (negates every second real).
template <typename R>
__device__ void conj(R* a, long long n) {
    GRID_STRIDE(i, n) { a[2 * i + 1] = -a[2 * i + 1]; }
}
extern "C" __global__ void kiln_la_conj_c64(float* a, long long n) { conj(a, n); }
extern "C" __global__ void kiln_la_conj_c128(double* a, long long n) { conj(a, n); }

// From `count` n x n LU factors (column-major, as getrf leaves them) and their 1-based pivots:
// the determinant, the sign (modulus 1) and log|det| (summed in double), each written where its
// pointer is not null; a zero on U's diagonal gives det 0, sign 0, log -inf.
template <typename T>
__device__ void det(const T* lu, const long long* ipiv, long long count, long long n, T* det,
                    T* sign, typename Num<T>::R* logabs) {
    GRID_STRIDE(b, count) {
        const T* a = lu + b * n * n;
        const long long* p = ipiv + b * n;
        T s = Num<T>::one(), prod = Num<T>::one();
        double lg = 0.0;
        bool singular = false, odd = false;
        for (long long i = 0; i < n; ++i) {
            if (p[i] != i + 1) odd = !odd;
        }
        for (long long i = 0; i < n; ++i) {
            T d = a[i * n + i];
            double m = Num<T>::mag(d);
            if (m == 0.0) { singular = true; break; }
            lg += log(m);
            s = Num<T>::mul(s, Num<T>::unit(d));
            prod = Num<T>::mul(prod, d);
        }
        if (odd) { s = Num<T>::neg(s); prod = Num<T>::neg(prod); }
        if (singular) {
            s = Num<T>::zero();
            prod = Num<T>::zero();
            lg = __longlong_as_double(0xfff0000000000000ULL);
        }
        if (det) det[b] = prod;
        if (sign) sign[b] = s;
        if (logabs) logabs[b] = (typename Num<T>::R)lg;
    }
}
extern "C" __global__ void kiln_la_det_f32(const float* a, const long long* p, long long b, long long n, float* d, float* s, float* l) { det(a, p, b, n, d, s, l); }
extern "C" __global__ void kiln_la_det_f64(const double* a, const long long* p, long long b, long long n, double* d, double* s, double* l) { det(a, p, b, n, d, s, l); }
extern "C" __global__ void kiln_la_det_c64(const c64* a, const long long* p, long long b, long long n, c64* d, c64* s, float* l) { det(a, p, b, n, d, s, l); }
extern "C" __global__ void kiln_la_det_c128(const c128* a, const long long* p, long long b, long long n, c128* d, c128* s, double* l) { det(a, p, b, n, d, s, l); }
"#;

/// Kernel `name` of [`SOURCE`] on `device`, compiled and loaded on first use.
fn kernel(device: Device, name: &str) -> Result<Function> {
    static FUNCTIONS: OnceLock<Mutex<HashMap<(usize, String), Function>>> = OnceLock::new();
    let map = FUNCTIONS.get_or_init(Default::default);
    let key = (device.id(), name.to_string());
    if let Some(f) = map.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(f.clone());
    }
    let (major, minor) = device.compute_capability()?;
    let program = kiln_runtime::nvrtc::Program {
        name: "kiln_linalg",
        source: SOURCE,
        options: &[],
        headers: &[],
        name_expressions: &[],
    };
    let compiled = kiln_runtime::nvrtc::compile(&program, major * 10 + minor)?;
    let module = device.load_module("kiln_linalg", compiled.image()?)?;
    let f = module.function(name)?;
    map.lock().unwrap_or_else(|p| p.into_inner()).insert(key, f.clone());
    Ok(f)
}

/// The suffix of the typed kernels.
fn suffix(ty: SolverType) -> &'static str {
    match ty {
        SolverType::F32 => "f32",
        SolverType::F64 => "f64",
        SolverType::C64 => "c64",
        SolverType::C128 => "c128",
    }
}

fn launch(device: Device, name: &str, n: usize, args: &[&dyn KernelArg]) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let f = kernel(device, name)?;
    // SAFETY: every caller passes the arguments of its kernel in [`SOURCE`], with buffers
    // holding the elements the kernel addresses for `n` work items.
    unsafe { f.launch(LaunchConfig::grid_stride(n, 256, 65535), args)? };
    Ok(())
}

/// Zeroes the elements above (`upper`) or below the diagonal of the `count` packed C-order
/// `rows × cols` matrices of `buf`.
fn zero_triangle(
    buf: &DeviceBuffer,
    ty: SolverType,
    count: usize,
    rows: usize,
    cols: usize,
    upper: bool,
) -> Result<()> {
    let total = count * rows * cols;
    if buf.len() < total * ty.size() {
        return Err(invalid(format!("zero_triangle: {} bytes for {total} elements", buf.len())));
    }
    let (c, r, k, u) = (count as i64, rows as i64, cols as i64, upper as i32);
    let args: [&dyn KernelArg; 5] = [buf, &c, &r, &k, &u];
    launch(buf.device(), &format!("kiln_la_tri_zero_{}", ty.size()), total, &args)
}

/// A new buffer of `count` C-order `rows × cols` matrices, each the transpose of the packed
/// C-order `cols × rows` matrix at `src` (a device address on `device`, `es`-byte elements):
/// the C-order copy of column-major matrices, or the column-major copy of C-order ones. With
/// `lower` (square matrices), zeros above the diagonal. One kernel: a thread an element for
/// small matrices, 32 × 32 tiles through shared memory otherwise.
fn transposed(
    device: Device,
    src: u64,
    es: usize,
    count: usize,
    rows: usize,
    cols: usize,
    lower: bool,
) -> Result<DeviceBuffer> {
    let total = count * rows * cols;
    let dst = alloc(total * es)?;
    if total == 0 {
        return Ok(dst);
    }
    if !lower && rows <= BATCHED_MAX && cols <= BATCHED_MAX && total < 1 << 31 {
        let f = kernel(device, &format!("kiln_la_small_t_{es}"))?;
        let (t, r, c) = (total as u32, rows as u32, cols as u32);
        let args: [&dyn KernelArg; 5] = [&src, &dst, &t, &r, &c];
        // SAFETY: kiln_la_small_t_<es>(src, dst, total, rows, cols) reads the `total` elements
        // at `src` (the caller's) and writes those of `dst`.
        unsafe { f.launch(LaunchConfig::grid_stride(total, 256, 65535), &args)? };
        return Ok(dst);
    }
    let tiles = count * rows.div_ceil(32) * cols.div_ceil(32);
    let f = kernel(device, &format!("kiln_la_tiled_{es}"))?;
    let (c, r, k, l) = (count as i64, rows as i64, cols as i64, lower as i32);
    let args: [&dyn KernelArg; 6] = [&src, &dst, &c, &r, &k, &l];
    let config = LaunchConfig {
        grid: (tiles.min(65535) as u32, 1, 1),
        block: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: kiln_la_tiled_<es>(src, dst, count, rows, cols, lower) reads the `total` elements
    // at `src` (the caller's) and writes those of `dst`, 32 × 8 threads a block.
    unsafe { f.launch(config, &args)? };
    Ok(dst)
}

/// `count` packed `n × n` identities.
fn identities(ty: SolverType, count: usize, n: usize) -> Result<DeviceBuffer> {
    let buf = alloc(count * n * n * ty.size())?;
    let (c, k) = (count as i64, n as i64);
    let args: [&dyn KernelArg; 3] = [&buf, &c, &k];
    launch(buf.device(), &format!("kiln_la_eye_{}", suffix(ty)), count * n * n, &args)?;
    Ok(buf)
}

/// Conjugates the first `n` elements of `buf` (complex types; nothing for real ones).
fn conjugate(buf: &DeviceBuffer, ty: SolverType, n: usize) -> Result<()> {
    if !ty.is_complex() {
        return Ok(());
    }
    if buf.len() < n * ty.size() {
        return Err(invalid(format!("conjugate: {} bytes for {n} elements", buf.len())));
    }
    let k = n as i64;
    let args: [&dyn KernelArg; 2] = [buf, &k];
    launch(buf.device(), &format!("kiln_la_conj_{}", suffix(ty)), n, &args)
}

// ------------------------------------------------------------------------------------------------
// The routines
// ------------------------------------------------------------------------------------------------

/// The routine's outputs, by routine output index; `None` for those not asked for.
type Produced = Vec<Option<DeviceBuffer>>;

/// Runs `call` on region inputs `inputs`: one array per entry of `call.outputs`.
pub(super) fn run(call: &LinalgCall, inputs: &[Arc<DeviceArray>]) -> Result<Vec<DeviceArray>> {
    let ty = solver_type(call.dtype)
        .ok_or_else(|| invalid(format!("{} of {} on the GPU", op_name(call.kind), call.dtype)))?;
    if !supported(call) {
        return Err(invalid(format!("{call:?} on the GPU")));
    }
    let input = |k: usize| {
        inputs
            .get(k)
            .ok_or_else(|| invalid(format!("linalg call: no input {k} ({} given)", inputs.len())))
    };
    let a = input(call.a.input)?;
    let count: usize = call.batch.iter().product();
    let wants = |o: u8| call.outputs.contains(&o);
    let produced: Produced = match call.kind {
        LinalgKind::Cholesky => cholesky(call, ty, a, count)?,
        LinalgKind::Solve => {
            let (bs, k) = call.b.as_ref().expect("supported: solve has b");
            solve(call, ty, a, input(bs.input)?, bs, *k, count)?
        }
        LinalgKind::Inv => inv(call, ty, a, count)?,
        LinalgKind::Det | LinalgKind::Slogdet => determinant(call, ty, a, count, &wants)?,
        LinalgKind::Qr { full } => qr(call, ty, a, count, full, &wants)?,
        LinalgKind::Svd { full } => svd(call, ty, a, count, full, &wants)?,
        LinalgKind::Eigh => eigh(call, ty, a, count, &wants)?,
    };
    outputs(call, produced)
}

/// The region's outputs from the routine's.
fn outputs(call: &LinalgCall, mut produced: Produced) -> Result<Vec<DeviceArray>> {
    let mut outs = Vec::with_capacity(call.outputs.len());
    for (&o, (dtype, shape)) in call.outputs.iter().zip(&call.out_types) {
        let buf = produced.get_mut(o as usize).and_then(Option::take).ok_or_else(|| {
            invalid(format!("{}: output {o} not computed (or asked twice)", op_name(call.kind)))
        })?;
        let bytes = numel(shape) * dtype.itemsize();
        if buf.len() < bytes {
            return Err(invalid(format!(
                "{}: output {o} of {} bytes for {dtype} {shape:?}",
                op_name(call.kind),
                buf.len()
            )));
        }
        outs.push(DeviceArray { buf, dtype: *dtype, shape: shape.to_vec() });
    }
    Ok(outs)
}

fn cholesky(call: &LinalgCall, ty: SolverType, a: &DeviceArray, count: usize) -> Result<Produced> {
    let n = call.n;
    // A column-major (its lower triangle is the one NumPy reads): cuSOLVER's Lower path.
    let buf = packed(a, &call.a, call.dtype, true)?;
    // SAFETY: `buf` holds `count` packed n × n matrices of `ty`, alive past the check below
    // (which waits for the stream).
    let info = unsafe { solver::potrf(ty, Uplo::Lower, n, mats(&buf, n * n), count)? };
    let out = transposed(buf.device(), buf.ptr(), ty.size(), count, n, n, true)?;
    checked(call, &info)?;
    Ok(vec![Some(out)])
}

#[allow(clippy::too_many_arguments)]
fn solve(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    b: &DeviceArray,
    bs: &Strided,
    k: usize,
    count: usize,
) -> Result<Produced> {
    let n = call.n;
    // A and b column-major: each matrix transposed by the gather.
    let lu = packed(a, &call.a, call.dtype, true)?;
    let ipiv = alloc(count * n * 8)?;
    let x = packed(b, bs, call.dtype, true)?;
    // SAFETY: `lu` holds `count` packed column-major n × n matrices, `ipiv` `count` × n i64
    // pivots, `x` `count` packed column-major n × k right-hand sides, none overlapping, all
    // alive past the check (which waits).
    let info = unsafe {
        let info = solver::getrf(ty, n, n, mats(&lu, n * n), mats(&ipiv, n), count)?;
        solver::getrs(
            ty,
            Transpose::None,
            n,
            k,
            mats(&lu, n * n),
            mats(&ipiv, n),
            mats(&x, n * k),
            count,
        )?;
        info
    };
    // x column-major (k × n C order per matrix) back into C order n × k.
    let out = relayout(&x, ty.size(), &[count, n, k], &[(n * k) as isize, 1, n as isize])?;
    checked(call, &info)?;
    Ok(vec![Some(out)])
}

fn inv(call: &LinalgCall, ty: SolverType, a: &DeviceArray, count: usize) -> Result<Produced> {
    let n = call.n;
    // A column-major: the LU NumPy's LAPACK call factors (the same exact zero pivots).
    let lu = packed(a, &call.a, call.dtype, true)?;
    if n <= BATCHED_MAX && count > 1 {
        let c = alloc(count * n * n * ty.size())?;
        // SAFETY: `lu` and `c` hold `count` packed n × n matrices each, not overlapping, alive
        // past the check.
        let info = unsafe { solver::inv_batched(ty, n, mats(&lu, n * n), mats(&c, n * n), count)? };
        // inv(A) column-major, transposed into C order.
        let out = relayout(&c, ty.size(), &[count, n, n], &[(n * n) as isize, 1, n as isize])?;
        checked(call, &info)?;
        return Ok(vec![Some(out)]);
    }
    let ipiv = alloc(count * n * 8)?;
    let x = identities(ty, count, n)?;
    // SAFETY: as in `solve`, the right-hand sides `count` packed n × n identities. With `op = T`
    // the solution is inv(Aᵀ) = inv(A)ᵀ column-major, i.e. inv(A) in C order.
    let info = unsafe {
        let info = solver::getrf(ty, n, n, mats(&lu, n * n), mats(&ipiv, n), count)?;
        solver::getrs(
            ty,
            Transpose::Transpose,
            n,
            n,
            mats(&lu, n * n),
            mats(&ipiv, n),
            mats(&x, n * n),
            count,
        )?;
        info
    };
    checked(call, &info)?;
    Ok(vec![Some(x)])
}

fn determinant(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let n = call.n;
    // A column-major: the LU NumPy's LAPACK call factors (the same exact zero pivots).
    let lu = packed(a, &call.a, call.dtype, true)?;
    let ipiv = alloc(count * n * 8)?;
    // SAFETY: `lu` holds `count` packed n × n matrices, `ipiv` their pivots, alive until the
    // kernel below (queued after) has read them. A singular matrix is no error here: its info
    // is not read (the kernel sees the zero on the diagonal).
    let _info = unsafe { solver::getrf(ty, n, n, mats(&lu, n * n), mats(&ipiv, n), count)? };
    let is_det = call.kind == LinalgKind::Det;
    let full = |want: bool| -> Result<Option<DeviceBuffer>> {
        want.then(|| alloc(count * ty.size())).transpose()
    };
    let det = full(is_det && wants(0))?;
    let sign = full(!is_det && wants(0))?;
    let logabs = (!is_det && wants(1)).then(|| alloc(count * ty.real().size())).transpose()?;
    let ptr = |b: &Option<DeviceBuffer>| b.as_ref().map_or(0u64, DeviceBuffer::ptr);
    let (pd, ps, pl) = (ptr(&det), ptr(&sign), ptr(&logabs));
    let (c, k) = (count as i64, n as i64);
    let args: [&dyn KernelArg; 7] = [&lu, &ipiv, &c, &k, &pd, &ps, &pl];
    launch(lu.device(), &format!("kiln_la_det_{}", suffix(ty)), count, &args)?;
    Ok(if is_det { vec![det] } else { vec![sign, logabs] })
}

fn qr(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    full: bool,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let (m, n, es) = (call.m, call.n, ty.size());
    let k = m.min(n);
    // A column-major (m × n).
    let fac = packed(a, &call.a, call.dtype, true)?;
    let tau = alloc(count * k * es)?;
    // SAFETY: `fac` holds `count` packed column-major m × n matrices, `tau` k scalars each,
    // alive until the gathers below (queued after) have read them.
    let _info = unsafe { solver::geqrf(ty, m, n, mats(&fac, m * n), mats(&tau, k), count)? };
    let q = if wants(0) {
        let mode = if full { QMode::Complete } else { QMode::Reduced };
        let cols = solver::q_columns(mode, m, n);
        let q = alloc(count * m * cols * es)?;
        // SAFETY: `q` holds `count` packed m × cols matrices, not overlapping `fac`.
        let _info = unsafe {
            solver::form_q(
                ty,
                mode,
                m,
                n,
                mats(&fac, m * n),
                mats(&tau, k),
                mats(&q, m * cols),
                count,
            )?
        };
        Some(relayout(&q, es, &[count, m, cols], &[(m * cols) as isize, 1, m as isize])?)
    } else {
        None
    };
    let r = if wants(1) {
        let rows = if full { m } else { k };
        let r = relayout(&fac, es, &[count, rows, n], &[(m * n) as isize, 1, m as isize])?;
        zero_triangle(&r, ty, count, rows, n, false)?;
        Some(r)
    } else {
        None
    };
    Ok(vec![q, r])
}

fn svd(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    full: bool,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let (m, n, es) = (call.m, call.n, ty.size());
    let k = m.min(n);
    let vectors = wants(0) || wants(2);
    let s = alloc(count * k * ty.real().size())?;
    if m <= BATCHED_MAX && n <= BATCHED_MAX && count > 1 {
        // Jacobi on A column-major: full U (m × m) and V (n × n), column-major.
        let fac = packed(a, &call.a, call.dtype, true)?;
        let (u, v) = if vectors {
            (Some(alloc(count * m * m * es)?), Some(alloc(count * n * n * es)?))
        } else {
            (None, None)
        };
        let factor = |b: &Option<DeviceBuffer>, stride: usize| match b {
            Some(b) => mats(b, stride),
            None => solver::Strided::new(0, 0),
        };
        // SAFETY: `fac` holds `count` packed m × n matrices, `s` k reals each, with vectors
        // `u` and `v` packed m × m and n × n matrices, none overlapping, alive past the check.
        let info = unsafe {
            solver::gesvdj_batched(
                ty,
                vectors,
                m,
                n,
                mats(&fac, m * n),
                mats(&s, k),
                factor(&u, m * m),
                factor(&v, n * n),
                count,
            )?
        };
        let (ucols, vrows) = if full { (m, n) } else { (k, k) };
        let u_out = match (&u, wants(0)) {
            (Some(u), true) => {
                Some(relayout(u, es, &[count, m, ucols], &[(m * m) as isize, 1, m as isize])?)
            }
            _ => None,
        };
        let vh_out = if let (Some(v), true) = (&v, wants(2)) {
            // Vh[i][j] = conj(V(j, i)): V's column-major rows read in C order, conjugated.
            let vh = relayout(v, es, &[count, vrows, n], &[(n * n) as isize, n as isize, 1])?;
            conjugate(&vh, ty, count * vrows * n)?;
            Some(vh)
        } else {
            None
        };
        checked(call, &info)?;
        return Ok(vec![u_out, Some(s), vh_out]);
    }
    if vectors {
        if let Some(out) = svd_jacobi(call, ty, a, count, full, wants)? {
            return Ok(out);
        }
        // Jacobi did not converge (within its default tolerance and sweeps): gesvd.
    }
    // gesvd on Aᵀ as it lies (the C-order copy read column-major): Aᵀ = U'·S·V'ᴴ, so
    // A = conj(V')·S·U'ᵀ: U' (n × ·) column-major is Vh in C order, V'ᴴ (· × m) column-major
    // is U in C order.
    let fac = packed(a, &call.a, call.dtype, false)?;
    let job = match (vectors, full) {
        (false, _) => SvdJob::None,
        (true, true) => SvdJob::Full,
        (true, false) => SvdJob::Reduced,
    };
    let shapes = solver::svd_shapes(n, m, job, job);
    let (ue, ve) = (shapes.u.0 * shapes.u.1, shapes.vt.0 * shapes.vt.1);
    let factor = |elems: usize| -> Result<Option<DeviceBuffer>> {
        vectors.then(|| alloc(count * elems * es)).transpose()
    };
    let (vh, u) = (factor(ue)?, factor(ve)?);
    let strided = |b: &Option<DeviceBuffer>, elems: usize| match b {
        Some(b) => mats(b, elems),
        None => solver::Strided::new(0, 0),
    };
    // SAFETY: `fac` holds `count` packed column-major n × m matrices (Aᵀ), `s` k reals each,
    // `vh` and `u` (with vectors) the factors of `svd_shapes(n, m, job, job)`, none
    // overlapping, alive past the check.
    let info = unsafe {
        solver::gesvd(
            ty,
            job,
            job,
            n,
            m,
            mats(&fac, m * n),
            mats(&s, k),
            strided(&vh, ue),
            strided(&u, ve),
            count,
        )?
    };
    checked(call, &info)?;
    Ok(vec![u.filter(|_| wants(0)), Some(s), vh.filter(|_| wants(2))])
}

/// The SVD with vectors by `gesvdj` (one-sided Jacobi, as torch's default CUDA driver), `None`
/// when some matrix did not converge (the caller falls back to `gesvd`). On `Aᵀ` as it lies
/// (the C-order copy read column-major, `n × m`): `Aᵀ = U'·S·V'ᴴ` gives `A = conj(V')·S·U'ᵀ`,
/// so `U'` column-major (`n × n`, or `n × k`) is `Vh` in C order as it comes, and `U` is `V'`
/// (`m × m`, or `m × k`) column-major gathered into C order and conjugated.
fn svd_jacobi(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    full: bool,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Option<Produced>> {
    let (m, n, es) = (call.m, call.n, ty.size());
    let k = m.min(n);
    let s = alloc(count * k * ty.real().size())?;
    let fac = packed(a, &call.a, call.dtype, false)?;
    // U' (n × uc) and V' (m × vc) of Aᵀ.
    let (uc, vc) = if full { (n, m) } else { (k, k) };
    let up = alloc(count * n * uc * es)?;
    let vp = alloc(count * m * vc * es)?;
    // SAFETY: `fac` holds `count` packed column-major n × m matrices (Aᵀ), `s` k reals each,
    // `up` and `vp` packed n × uc and m × vc factors, none overlapping, alive past the check.
    let info = unsafe {
        solver::gesvdj(
            ty,
            !full,
            n,
            m,
            mats(&fac, m * n),
            mats(&s, k),
            mats(&up, n * uc),
            mats(&vp, m * vc),
            count,
            0.0,
            0,
        )?
    };
    let u = if wants(0) {
        // U[i][j] = conj(V'(i, j)), V' column-major m × vc.
        let u = relayout(&vp, es, &[count, m, vc], &[(m * vc) as isize, 1, m as isize])?;
        conjugate(&u, ty, count * m * vc)?;
        Some(u)
    } else {
        None
    };
    match info.check()? {
        Ok(()) => Ok(Some(vec![u, Some(s), wants(2).then_some(up)])),
        Err(f) if f.kind == FailureKind::NotConverged => Ok(None),
        Err(_) => checked(call, &info).map(|()| None),
    }
}

fn eigh(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let n = call.n;
    let vectors = wants(1);
    // A column-major: its lower triangle is what NumPy reads.
    let fac = packed(a, &call.a, call.dtype, true)?;
    let w = alloc(count * n * ty.real().size())?;
    // SAFETY: `fac` holds `count` packed n × n matrices, `w` n reals each, alive past the
    // check.
    let info = unsafe {
        if n <= BATCHED_MAX && count > 1 {
            solver::syevj_batched(
                ty,
                Uplo::Lower,
                vectors,
                n,
                mats(&fac, n * n),
                mats(&w, n),
                count,
            )?
        } else {
            solver::syevd(ty, Uplo::Lower, vectors, n, mats(&fac, n * n), mats(&w, n), count)?
        }
    };
    let v = if vectors {
        // The eigenvectors are fac's columns: transpose into C order.
        Some(relayout(&fac, ty.size(), &[count, n, n], &[(n * n) as isize, 1, n as isize])?)
    } else {
        None
    };
    checked(call, &info)?;
    Ok(vec![Some(w), v])
}

/// The device against the host executor (`cpu::vendor::linalg`), every kind and type, batched
/// and single matrices (both cuSOLVER paths), strided and broadcast operands; factors unique
/// only up to signs or phases by reconstruction. Skipped without a CUDA device.
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kiln_compiler::vendor::{LinalgCall, LinalgKind, Strided};
    use kiln_ir::host::Data;
    use kiln_ir::{DType, HostArray, IrError, Layout};
    use num_complex::{Complex32, Complex64 as C};

    use super::super::DeviceArray;
    use crate::ExecError;

    const TYPES: [DType; 4] = [DType::Float32, DType::Float64, DType::Complex64, DType::Complex128];

    fn gpu() -> bool {
        let ok = kiln_runtime::cuda_available();
        if !ok {
            eprintln!("no CUDA device: skipped");
        }
        ok
    }

    fn complex(d: DType) -> bool {
        matches!(d, DType::Complex64 | DType::Complex128)
    }

    fn tol(d: DType) -> f64 {
        match d {
            DType::Float32 | DType::Complex64 => 2e-3,
            _ => 1e-9,
        }
    }

    /// Deterministic values in [-1, 1).
    fn random(n: usize, seed: u64, cplx: bool) -> Vec<C> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        (0..n).map(|_| C::new(next(), if cplx { next() } else { 0.0 })).collect()
    }

    fn host(d: DType, shape: &[usize], v: &[C]) -> HostArray {
        let data = match d {
            DType::Float32 => Data::Float32(v.iter().map(|x| x.re as f32).collect()),
            DType::Float64 => Data::Float64(v.iter().map(|x| x.re).collect()),
            DType::Complex64 => Data::Complex64(
                v.iter().map(|x| Complex32::new(x.re as f32, x.im as f32)).collect(),
            ),
            _ => Data::Complex128(v.to_vec()),
        };
        HostArray::new(shape, data).unwrap()
    }

    fn values(h: &HostArray) -> Vec<C> {
        match h.data() {
            Data::Float32(v) => v.iter().map(|&x| C::new(x as f64, 0.0)).collect(),
            Data::Float64(v) => v.iter().map(|&x| C::new(x, 0.0)).collect(),
            Data::Complex64(v) => v.iter().map(|x| C::new(x.re as f64, x.im as f64)).collect(),
            Data::Complex128(v) => v.clone(),
            other => panic!("unexpected {:?}", other.dtype()),
        }
    }

    /// `a (m × k) · b (k × n)`, C order.
    fn mm(a: &[C], m: usize, k: usize, b: &[C], n: usize) -> Vec<C> {
        let mut c = vec![C::new(0.0, 0.0); m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
            }
        }
        c
    }

    fn adj(a: &[C], r: usize, c: usize) -> Vec<C> {
        let mut t = vec![C::new(0.0, 0.0); r * c];
        for i in 0..r {
            for j in 0..c {
                t[j * r + i] = a[i * c + j].conj();
            }
        }
        t
    }

    fn eye(n: usize) -> Vec<C> {
        (0..n * n).map(|i| C::new(if i / n == i % n { 1.0 } else { 0.0 }, 0.0)).collect()
    }

    fn close(what: &str, got: &[C], want: &[C], tol: f64) {
        assert_eq!(got.len(), want.len(), "{what}: lengths");
        let scale = want.iter().map(|x| x.norm()).fold(1.0f64, f64::max);
        let worst = got.iter().zip(want).map(|(g, w)| (g - w).norm()).fold(0.0f64, f64::max);
        assert!(
            worst <= tol * scale,
            "{what}: off by {worst} (scale {scale})\n got {got:?}\nwant {want:?}"
        );
    }

    fn matrix(v: &[C], i: usize, r: usize, c: usize) -> Vec<C> {
        v[i * r * c..(i + 1) * r * c].to_vec()
    }

    /// The call of `kind` over contiguous operands (`a` read through `a_layout` if given).
    #[allow(clippy::too_many_arguments)]
    fn call(
        kind: LinalgKind,
        dtype: DType,
        batch: &[usize],
        m: usize,
        n: usize,
        a_layout: Layout,
        b: Option<(Layout, usize)>,
        outputs: &[u8],
    ) -> LinalgCall {
        let real = match dtype {
            DType::Complex64 => DType::Float32,
            DType::Complex128 => DType::Float64,
            d => d,
        };
        let with = |tail: &[usize]| -> Vec<usize> { batch.iter().chain(tail).copied().collect() };
        let k = m.min(n);
        let out_types = outputs
            .iter()
            .map(|&o| match (kind, o) {
                (LinalgKind::Cholesky | LinalgKind::Inv, _) => (dtype, with(&[n, n])),
                (LinalgKind::Solve, _) => (dtype, with(&[n, b.as_ref().unwrap().1])),
                (LinalgKind::Det, _) | (LinalgKind::Slogdet, 0) => (dtype, with(&[])),
                (LinalgKind::Slogdet, _) => (real, with(&[])),
                (LinalgKind::Qr { full }, 0) => (dtype, with(&[m, if full { m } else { k }])),
                (LinalgKind::Qr { full }, _) => (dtype, with(&[if full { m } else { k }, n])),
                (LinalgKind::Svd { full }, 0) => (dtype, with(&[m, if full { m } else { k }])),
                (LinalgKind::Svd { .. }, 1) => (real, with(&[k])),
                (LinalgKind::Svd { full }, _) => (dtype, with(&[if full { n } else { k }, n])),
                (LinalgKind::Eigh, 0) => (real, with(&[n])),
                (LinalgKind::Eigh, _) => (dtype, with(&[n, n])),
            })
            .map(|(d, s)| (d, s.into()))
            .collect();
        LinalgCall {
            kind,
            dtype,
            batch: batch.into(),
            m,
            n,
            a: Strided { input: 0, layout: a_layout },
            b: b.map(|(layout, k)| (Strided { input: 1, layout }, k)),
            outputs: outputs.to_vec(),
            out_types,
        }
    }

    fn contiguous(batch: &[usize], r: usize, c: usize) -> Layout {
        let shape: Vec<usize> = batch.iter().copied().chain([r, c]).collect();
        Layout::contiguous(&shape)
    }

    /// The device's and the host's outputs of `call` on `inputs`.
    fn both(call: &LinalgCall, inputs: &[HostArray]) -> (Vec<Vec<C>>, Vec<Vec<C>>) {
        assert!(super::supported(call), "{call:?} not supported");
        let dev: Vec<Arc<DeviceArray>> =
            inputs.iter().map(|h| Arc::new(DeviceArray::upload(h).unwrap())).collect();
        let outs = super::run(call, &dev).unwrap_or_else(|e| panic!("{call:?}: {e}"));
        let got: Vec<Vec<C>> = outs
            .iter()
            .zip(&call.out_types)
            .map(|(o, (d, s))| {
                assert_eq!((o.dtype(), o.shape()), (*d, &s[..]));
                values(&o.download().unwrap())
            })
            .collect();
        let want = crate::cpu::vendor::linalg::run(call, &inputs[0], inputs.get(1)).unwrap();
        (got, want.iter().map(values).collect())
    }

    fn device_error(call: &LinalgCall, inputs: &[HostArray]) -> String {
        let dev: Vec<Arc<DeviceArray>> =
            inputs.iter().map(|h| Arc::new(DeviceArray::upload(h).unwrap())).collect();
        match super::run(call, &dev) {
            Err(ExecError::Ir(IrError::LinAlg { message, .. })) => message,
            other => panic!("{call:?}: {:?}", other.map(|o| o.len())),
        }
    }

    /// Hermitian positive-definite matrices, with garbage above the diagonal (only the lower
    /// triangle is read).
    fn spd(d: DType, count: usize, n: usize, seed: u64) -> Vec<C> {
        let mut out = Vec::new();
        for i in 0..count {
            let x = random(n * n, seed + i as u64, complex(d));
            let mut a = mm(&x, n, n, &adj(&x, n, n), n);
            for r in 0..n {
                a[r * n + r] += C::new(n as f64, 0.0);
                for c in r + 1..n {
                    a[r * n + c] = C::new(7.0, -3.0);
                }
            }
            out.extend(a);
        }
        out
    }

    #[test]
    fn cholesky_solve_inv_det_match_the_host() {
        if !gpu() {
            return;
        }
        for d in TYPES {
            let t = tol(d);
            for (count, n) in [(3usize, 4usize), (1, 40)] {
                let batch: &[usize] = if count == 1 { &[] } else { &[count] };
                let shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
                // cholesky
                let a = host(d, &shape, &spd(d, count, n, 1));
                let c =
                    call(LinalgKind::Cholesky, d, batch, n, n, contiguous(batch, n, n), None, &[0]);
                let (got, want) = both(&c, std::slice::from_ref(&a));
                close(&format!("cholesky {d} {shape:?}"), &got[0], &want[0], t);
                // inv and det of a general matrix, read transposed (strides swapped)
                let g = host(d, &shape, &random(count * n * n, 5, complex(d)));
                let mut tl = contiguous(batch, n, n);
                let r = tl.rank();
                tl.strides.swap(r - 2, r - 1);
                let c = call(LinalgKind::Inv, d, batch, n, n, tl.clone(), None, &[0]);
                let (got, want) = both(&c, std::slice::from_ref(&g));
                close(&format!("inv {d} {shape:?}"), &got[0], &want[0], t * n as f64);
                let c = call(LinalgKind::Det, d, batch, n, n, tl.clone(), None, &[0]);
                let (got, want) = both(&c, std::slice::from_ref(&g));
                close(&format!("det {d} {shape:?}"), &got[0], &want[0], t * n as f64);
                let c = call(LinalgKind::Slogdet, d, batch, n, n, tl.clone(), None, &[1, 0]);
                let (got, want) = both(&c, std::slice::from_ref(&g));
                close(&format!("slogdet log {d} {shape:?}"), &got[0], &want[0], t);
                close(&format!("slogdet sign {d} {shape:?}"), &got[1], &want[1], t * n as f64);
                // solve, b broadcast over the batch (stride 0)
                let k = 3;
                let b = host(d, &[n, k], &random(n * k, 9, complex(d)));
                let bl = Layout {
                    shape: batch.iter().copied().chain([n, k]).collect(),
                    strides: batch.iter().map(|_| 0).chain([k as isize, 1]).collect(),
                    offset: 0,
                };
                let c = call(LinalgKind::Solve, d, batch, n, n, tl, Some((bl, k)), &[0]);
                let (got, want) = both(&c, &[g, b]);
                close(&format!("solve {d} {shape:?}"), &got[0], &want[0], t * n as f64);
            }
        }
    }

    #[test]
    fn singular_and_indefinite_matrices_are_errors_det_zero() {
        if !gpu() {
            return;
        }
        for d in TYPES {
            for count in [1usize, 3] {
                let n = 3;
                let batch: &[usize] = if count == 1 { &[] } else { &[count] };
                let shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
                // The last matrix has two equal rows (real types: elimination leaves an exact
                // zero pivot; complex division x/x need not be exactly 1, so a zero row).
                let mut v = random(count * n * n, 3, complex(d));
                let last = (count - 1) * n * n;
                for j in 0..n {
                    v[last + n + j] = if complex(d) { C::new(0.0, 0.0) } else { v[last + j] };
                }
                let a = host(d, &shape, &v);
                let l = contiguous(batch, n, n);
                for kind in [LinalgKind::Inv, LinalgKind::Solve] {
                    let b = (kind == LinalgKind::Solve).then(|| (contiguous(batch, n, 1), 1));
                    let c = call(kind, d, batch, n, n, l.clone(), b, &[0]);
                    let mut inputs = vec![a.clone()];
                    if kind == LinalgKind::Solve {
                        inputs.push(host(
                            d,
                            &contiguous(batch, n, 1).shape,
                            &random(count * n, 4, false),
                        ));
                    }
                    assert_eq!(device_error(&c, &inputs), "Singular matrix", "{kind:?} {d}");
                }
                let c = call(LinalgKind::Slogdet, d, batch, n, n, l.clone(), None, &[0, 1]);
                let (got, _) = both(&c, std::slice::from_ref(&a));
                assert_eq!(got[0][count - 1], C::new(0.0, 0.0));
                assert_eq!(got[1][count - 1].re, f64::NEG_INFINITY);
                let c = call(LinalgKind::Det, d, batch, n, n, l.clone(), None, &[0]);
                let (got, _) = both(&c, std::slice::from_ref(&a));
                assert_eq!(got[0][count - 1], C::new(0.0, 0.0));
                // Indefinite: -I.
                let neg: Vec<C> = (0..count).flat_map(|_| eye(n)).map(|x| -x).collect();
                let c = call(LinalgKind::Cholesky, d, batch, n, n, l.clone(), None, &[0]);
                assert_eq!(
                    device_error(&c, &[host(d, &shape, &neg)]),
                    "Matrix is not positive definite"
                );
            }
        }
    }

    #[test]
    fn qr_svd_eigh_reconstruct_and_match_the_host() {
        if !gpu() {
            return;
        }
        for d in TYPES {
            let t = tol(d);
            for (count, m, n) in [(3usize, 6usize, 4usize), (3, 4, 6), (1, 40, 30), (1, 30, 40)] {
                let batch: &[usize] = if count == 1 { &[] } else { &[count] };
                let shape: Vec<usize> = batch.iter().copied().chain([m, n]).collect();
                let av = random(count * m * n, 11, complex(d));
                let a = host(d, &shape, &av);
                let l = contiguous(batch, m, n);
                let k = m.min(n);
                for full in [false, true] {
                    let what = format!("{d} {shape:?} full {full}");
                    // qr: Q·R = A, Qᴴ·Q = I, R upper triangular.
                    let c = call(LinalgKind::Qr { full }, d, batch, m, n, l.clone(), None, &[0, 1]);
                    let (got, _) = both(&c, std::slice::from_ref(&a));
                    let (qc, rr) = if full { (m, m) } else { (k, k) };
                    for i in 0..count {
                        let q = matrix(&got[0], i, m, qc);
                        let r = matrix(&got[1], i, rr, n);
                        for (p, x) in r.iter().enumerate() {
                            if p / n > p % n {
                                assert_eq!(*x, C::new(0.0, 0.0), "qr R {what}");
                            }
                        }
                        close(
                            &format!("qr Q·R {what}"),
                            &mm(&q, m, qc, &r, n),
                            &matrix(&av, i, m, n),
                            t,
                        );
                        close(
                            &format!("qr QᴴQ {what}"),
                            &mm(&adj(&q, m, qc), qc, m, &q, qc),
                            &eye(qc),
                            t,
                        );
                    }
                    // svd: U·diag(s)·Vh = A, s as the host's.
                    let c =
                        call(LinalgKind::Svd { full }, d, batch, m, n, l.clone(), None, &[0, 1, 2]);
                    let (got, want) = both(&c, std::slice::from_ref(&a));
                    close(&format!("svd s {what}"), &got[1], &want[1], t);
                    let (uc, vr) = if full { (m, n) } else { (k, k) };
                    for i in 0..count {
                        let u = matrix(&got[0], i, m, uc);
                        let s = matrix(&got[1], i, 1, k);
                        let vh = matrix(&got[2], i, vr, n);
                        // U[:, :k] · diag(s) · Vh[:k, :]
                        let mut us = vec![C::new(0.0, 0.0); m * k];
                        for r in 0..m {
                            for c in 0..k {
                                us[r * k + c] = u[r * uc + c] * s[c];
                            }
                        }
                        close(
                            &format!("svd U·S·Vh {what}"),
                            &mm(&us, m, k, &vh[..k * n], n),
                            &matrix(&av, i, m, n),
                            t,
                        );
                        close(
                            &format!("svd UᴴU {what}"),
                            &mm(&adj(&u, m, uc), uc, m, &u, uc),
                            &eye(uc),
                            t,
                        );
                        close(
                            &format!("svd VhVhᴴ {what}"),
                            &mm(&vh, vr, n, &adj(&vh, vr, n), vr),
                            &eye(vr),
                            t,
                        );
                    }
                }
                // s alone.
                let c =
                    call(LinalgKind::Svd { full: false }, d, batch, m, n, l.clone(), None, &[1]);
                let (got, want) = both(&c, std::slice::from_ref(&a));
                close(&format!("svdvals {d} {shape:?}"), &got[0], &want[0], t);
            }
            // eigh: the lower triangle's Hermitian matrix (garbage above).
            for (count, n) in [(3usize, 5usize), (1, 40)] {
                let batch: &[usize] = if count == 1 { &[] } else { &[count] };
                let shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
                let mut v = random(count * n * n, 21, complex(d));
                let mut herm = v.clone();
                for i in 0..count {
                    for r in 0..n {
                        v[i * n * n + r * n + r].im = 0.0;
                        for c in 0..n {
                            let (p, q) = (i * n * n + r * n + c, i * n * n + c * n + r);
                            herm[p] = if r >= c { v[p] } else { v[q].conj() };
                            if r == c {
                                herm[p] = C::new(v[p].re, 0.0);
                            }
                        }
                    }
                }
                let a = host(d, &shape, &v);
                let l = contiguous(batch, n, n);
                let c = call(LinalgKind::Eigh, d, batch, n, n, l.clone(), None, &[0, 1]);
                let (got, want) = both(&c, std::slice::from_ref(&a));
                close(&format!("eigh w {d} {shape:?}"), &got[0], &want[0], t);
                for i in 0..count {
                    let w = matrix(&got[0], i, 1, n);
                    let vv = matrix(&got[1], i, n, n);
                    let mut vw = vv.clone();
                    for r in 0..n {
                        for c in 0..n {
                            vw[r * n + c] *= w[c];
                        }
                    }
                    let h = matrix(&herm, i, n, n);
                    close(
                        &format!("eigh A·v {d} {shape:?}"),
                        &mm(&h, n, n, &vv, n),
                        &vw,
                        t * n as f64,
                    );
                    close(
                        &format!("eigh vᴴv {d} {shape:?}"),
                        &mm(&adj(&vv, n, n), n, n, &vv, n),
                        &eye(n),
                        t,
                    );
                }
                let c = call(LinalgKind::Eigh, d, batch, n, n, l, None, &[0]);
                let (got, want) = both(&c, &[a]);
                close(&format!("eigvalsh {d} {shape:?}"), &got[0], &want[0], t);
            }
        }
    }
}
