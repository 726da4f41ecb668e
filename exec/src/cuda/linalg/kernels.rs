//! The small CUDA kernels of the decompositions (NVRTC, compiled once per device):
//! triangles zeroed, batched transposes, identities, conjugation, determinants from LU.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use kiln_runtime::solver::SolverType;
use kiln_runtime::{Device, DeviceBuffer, Function, KernelArg, LaunchConfig};

use super::{alloc, invalid, BATCHED_MAX};
use crate::cuda::Result;

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

/// Kernel `name` of [`SOURCE`] on `device`: the module compiled once per device (and kept in
/// the disk cache, [`kiln_runtime::kiln_modules`]), its functions kept by name.
fn kernel(device: Device, name: &str) -> Result<Function> {
    static FUNCTIONS: OnceLock<Mutex<HashMap<(usize, String), Function>>> = OnceLock::new();
    let map = FUNCTIONS.get_or_init(Default::default);
    let key = (device.id(), name.to_string());
    if let Some(f) = map.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(f.clone());
    }
    let gpu = crate::cuda::Gpu::get(device.id())?;
    let module =
        kiln_runtime::kiln_modules::kiln_module(device, "kiln_linalg", SOURCE, gpu.disk())?;
    let f = module.function(name)?;
    map.lock().unwrap_or_else(|p| p.into_inner()).insert(key, f.clone());
    Ok(f)
}

/// The suffix of the typed kernels.
pub(super) fn suffix(ty: SolverType) -> &'static str {
    match ty {
        SolverType::F32 => "f32",
        SolverType::F64 => "f64",
        SolverType::C64 => "c64",
        SolverType::C128 => "c128",
    }
}

pub(super) fn launch(device: Device, name: &str, n: usize, args: &[&dyn KernelArg]) -> Result<()> {
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
pub(super) fn zero_triangle(
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
pub(super) fn transposed(
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
pub(super) fn identities(ty: SolverType, count: usize, n: usize) -> Result<DeviceBuffer> {
    let buf = alloc(count * n * n * ty.size())?;
    let (c, k) = (count as i64, n as i64);
    let args: [&dyn KernelArg; 3] = [&buf, &c, &k];
    launch(buf.device(), &format!("kiln_la_eye_{}", suffix(ty)), count * n * n, &args)?;
    Ok(buf)
}

/// Conjugates the first `n` elements of `buf` (complex types; nothing for real ones).
pub(super) fn conjugate(buf: &DeviceBuffer, ty: SolverType, n: usize) -> Result<()> {
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

#[cfg(test)]
mod tests {
    /// The library's prebuilt cubin of this module was made from this very source.
    #[test]
    fn the_prebuilt_module_is_of_this_source() {
        kiln_runtime::kiln_modules::assert_prebuilt_current("kiln_linalg", super::SOURCE);
    }
}
