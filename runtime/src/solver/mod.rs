//! cuSOLVER dense: Cholesky, LU, QR, symmetric/Hermitian eigensolvers and SVDs on the current
//! stream, plus cuBLAS's batched LU inverse. Thin wrappers over cudarc's raw bindings: device
//! addresses in, a typed error naming the call out, in the manner of [`crate::blas`].
//!
//! Every matrix is **column-major** with its leading dimension equal to its row count (columns
//! packed one after another). A batch is `batch` matrices, matrix `i` starting `i * stride`
//! elements after the first ([`Strided`]); the vectors that go with them (pivots, `tau`,
//! eigenvalues, singular values) are batched the same way. Where cuSOLVER has a batched form
//! (`potrfBatched`, `syevjBatched`, `gesvdjBatched`, cuBLAS's `getrfBatched`/`getriBatched`) it
//! is used; elsewhere the wrapper loops over the batch, queueing one call per matrix (the
//! 64-bit generic API, `cusolverDnX*` with a `cusolverDnParams_t`, where it exists).
//!
//! | call | wrapper |
//! |---|---|
//! | `cusolverDnXpotrf`, `cusolverDn{S,D,C,Z}potrfBatched` | [`potrf`] |
//! | `cusolverDnXgetrf`, `cusolverDnXgetrs` | [`getrf`], [`getrs`] |
//! | `cusolverDnXgeqrf`, `cusolverDn{S,D}orgqr`, `cusolverDn{C,Z}ungqr` | [`geqrf`], [`orgqr`], [`form_q`] |
//! | `cusolverDnXsyevd`, `cusolverDn{S,D}syevjBatched`, `cusolverDn{C,Z}heevjBatched` | [`syevd`], [`syevj_batched`] |
//! | `cusolverDnXgesvd`, `cusolverDn{S,D,C,Z}gesvdjBatched` | [`gesvd`], [`gesvdj_batched`] |
//! | `cublas{S,D,C,Z}getrfBatched` + `getriBatched` | [`inv_batched`] |
//!
//! Each call returns an [`Info`]: cuSOLVER's per-matrix `info` array, on the device. Nothing
//! here waits for the GPU except [`Info::read`] and [`Info::check`], which copy that array back
//! (and so wait for the stream), and a call whose host workspace is not empty, which waits for
//! its stream before freeing it (cuSOLVER asks none of these calls for host workspace today).
//! A numerical failure (`info > 0`: not positive definite, singular, no convergence) comes out
//! of [`Info::check`] as a [`SolverFailure`], distinct from the runtime's errors.
//!
//! One cuSOLVER handle per device (with a cuBLAS handle for the transposes and batched
//! inverses), made on first use and kept for the process; each call binds it to the current
//! [`Stream`]. Device workspaces come from kiln's caching pool ([`DeviceBuffer`]), freed in
//! stream order after the call's work.

use std::ffi::c_void;
use std::fmt;
use std::sync::OnceLock;

use cudarc::cublas::sys as cb;
use cudarc::cusolver::sys as cs;

use crate::error::{LibraryError, Result, RuntimeError};
use crate::libs::{ensure_loaded, Handles};
use crate::memory::DeviceBuffer;
use crate::stream::Stream;

mod eigen;
mod factor;
mod kernels;
mod lu;
mod svd;
mod svdj;

use kernels::{pointer_array, pointer_arrays};

pub use eigen::{syevd, syevj_batched};
pub use factor::{form_q, geqrf, orgqr, potrf, q_columns};
pub use lu::{getrf, getrs, inv_batched};
pub use svd::{gesvd, gesvdj_batched};
pub use svdj::gesvdj;

/// The element type of a solver call's matrices. Eigenvalues and singular values are real:
/// of [`SolverType::real`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SolverType {
    F32,
    F64,
    C64,
    C128,
}

impl SolverType {
    /// Bytes of an element.
    pub fn size(self) -> usize {
        match self {
            SolverType::F32 => 4,
            SolverType::F64 | SolverType::C64 => 8,
            SolverType::C128 => 16,
        }
    }

    /// Whether the elements are complex.
    pub fn is_complex(self) -> bool {
        matches!(self, SolverType::C64 | SolverType::C128)
    }

    /// The real type of the same precision (of eigenvalues and singular values).
    pub fn real(self) -> SolverType {
        match self {
            SolverType::F32 | SolverType::C64 => SolverType::F32,
            SolverType::F64 | SolverType::C128 => SolverType::F64,
        }
    }

    fn data_type(self) -> cs::cudaDataType {
        use cs::cudaDataType::*;
        match self {
            SolverType::F32 => CUDA_R_32F,
            SolverType::F64 => CUDA_R_64F,
            SolverType::C64 => CUDA_C_32F,
            SolverType::C128 => CUDA_C_64F,
        }
    }
}

/// Which triangle of a symmetric/Hermitian matrix is read (and, for [`potrf`], written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Uplo {
    Lower,
    Upper,
}

impl Uplo {
    fn raw(self) -> cs::cublasFillMode_t {
        match self {
            Uplo::Lower => cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
            Uplo::Upper => cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        }
    }
}

/// `op(A)` of [`getrs`]: `A`, `Aᵀ` or `Aᴴ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transpose {
    None,
    Transpose,
    ConjugateTranspose,
}

impl Transpose {
    fn raw(self) -> cs::cublasOperation_t {
        match self {
            Transpose::None => cs::cublasOperation_t::CUBLAS_OP_N,
            Transpose::Transpose => cs::cublasOperation_t::CUBLAS_OP_T,
            Transpose::ConjugateTranspose => cs::cublasOperation_t::CUBLAS_OP_C,
        }
    }
}

/// Which singular vectors [`gesvd`] computes, for `U` (`jobu`) and `Vᴴ` (`jobvt`) alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SvdJob {
    /// All of them: `U` is `m × m`, `Vᴴ` is `n × n` (`'A'`).
    Full,
    /// The first `k = min(m, n)`: `U` is `m × k`, `Vᴴ` is `k × n` (`'S'`).
    Reduced,
    /// None (`'N'`): the matrix is not referenced.
    None,
}

impl SvdJob {
    /// cuSOLVER's letter for the job.
    pub fn letter(self) -> u8 {
        match self {
            SvdJob::Full => b'A',
            SvdJob::Reduced => b'S',
            SvdJob::None => b'N',
        }
    }
}

/// Which `Q` [`form_q`] forms from an `m × n` QR factorisation (`k = min(m, n)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QMode {
    /// `m × k` (numpy's `mode='reduced'`).
    Reduced,
    /// `m × m` (numpy's `mode='complete'`).
    Complete,
}

/// The shapes (rows, columns) of an SVD's factors: `A (m × n) = U · diag(S) · Vᴴ` with `k`
/// singular values. A factor that is not computed is `(0, 0)`. Each is stored column-major with
/// its leading dimension equal to its row count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SvdShapes {
    pub k: usize,
    pub u: (usize, usize),
    pub vt: (usize, usize),
}

/// The factor shapes of an `m × n` SVD with `jobu` and `jobvt` ([`gesvd`]).
pub fn svd_shapes(m: usize, n: usize, jobu: SvdJob, jobvt: SvdJob) -> SvdShapes {
    let k = m.min(n);
    let u = match jobu {
        SvdJob::Full => (m, m),
        SvdJob::Reduced => (m, k),
        SvdJob::None => (0, 0),
    };
    let vt = match jobvt {
        SvdJob::Full => (n, n),
        SvdJob::Reduced => (k, n),
        SvdJob::None => (0, 0),
    };
    SvdShapes { k, u, vt }
}

/// A batch operand: the first matrix (or vector) at device address `ptr`, each next one `stride`
/// elements further (elements of the operand's own type: the matrix type, its real type for
/// eigenvalues and singular values, `i64` for [`getrf`]'s pivots).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub ptr: u64,
    pub stride: usize,
}

impl Strided {
    pub fn new(ptr: u64, stride: usize) -> Self {
        Strided { ptr, stride }
    }

    /// The address of item `i`, of `elem` bytes an element.
    fn at(self, i: usize, elem: usize) -> u64 {
        self.ptr + (i * self.stride * elem) as u64
    }

    /// Item `i` as a typed pointer (null when `ptr` is 0).
    fn ptr_at<T>(self, i: usize, elem: usize) -> *mut T {
        if self.ptr == 0 {
            std::ptr::null_mut()
        } else {
            self.at(i, elem) as *mut T
        }
    }
}

/// What a positive `info` means for the call that wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// Cholesky: the leading minor of order `info` is not positive definite.
    NotPositiveDefinite,
    /// LU: `U(info, info)` is exactly zero (1-based), the matrix is singular.
    Singular,
    /// An eigensolver or SVD did not converge.
    NotConverged,
    /// A call that documents no positive `info` (QR, `getrs`) returned one.
    Other,
}

/// A numerical failure reported by a solver's `info` array: the first failing matrix of the
/// batch, its `info`, and how many failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SolverFailure {
    /// The call that wrote the array.
    pub call: &'static str,
    pub kind: FailureKind,
    /// The first failing matrix of the batch (0-based).
    pub index: usize,
    /// Its `info` (> 0).
    pub info: i32,
    /// How many matrices of the batch failed.
    pub failed: usize,
}

impl fmt::Display for SolverFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (call, i, info) = (self.call, self.index, self.info);
        match self.kind {
            FailureKind::NotPositiveDefinite => write!(
                f,
                "{call}: matrix {i} is not positive definite (its leading minor of order {info} \
                 is not)"
            )?,
            FailureKind::Singular => {
                write!(f, "{call}: matrix {i} is singular (U({info}, {info}) is exactly zero)")?
            }
            FailureKind::NotConverged => {
                write!(f, "{call}: matrix {i} did not converge (info = {info})")?
            }
            FailureKind::Other => write!(f, "{call}: matrix {i} failed (info = {info})")?,
        }
        if self.failed > 1 {
            write!(f, "; {} matrices of the batch failed", self.failed)?;
        }
        Ok(())
    }
}

impl std::error::Error for SolverFailure {}

/// A failure as a runtime error ([`RuntimeError::Library`] naming the call, the message as
/// status), for callers with no use for the distinction.
impl From<SolverFailure> for RuntimeError {
    fn from(f: SolverFailure) -> Self {
        let status = f.to_string();
        let status = status.strip_prefix(&format!("{}: ", f.call)).unwrap_or(&status).to_string();
        RuntimeError::Library(LibraryError { call: f.call, status })
    }
}

/// Sorts an `info` array read back from the device: a negative entry (an invalid parameter, a
/// bug of the caller's or of this module) is a runtime error; positive entries are a
/// [`SolverFailure`].
pub fn classify_info(
    call: &'static str,
    kind: FailureKind,
    infos: &[i32],
) -> Result<std::result::Result<(), SolverFailure>> {
    if let Some((i, &v)) = infos.iter().enumerate().find(|(_, &v)| v < 0) {
        return Err(RuntimeError::Library(LibraryError {
            call,
            status: format!("parameter {} is invalid (info = {v} for matrix {i})", -v),
        }));
    }
    let failed = infos.iter().filter(|&&v| v > 0).count();
    match infos.iter().position(|&v| v > 0) {
        None => Ok(Ok(())),
        Some(index) => Ok(Err(SolverFailure { call, kind, index, info: infos[index], failed })),
    }
}

/// The per-matrix `info` array a call writes on the device (`int32`, one per matrix of the
/// batch, zeroed before the call). Reading it back waits for the call.
#[derive(Debug)]
pub struct Info {
    buffer: DeviceBuffer,
    len: usize,
    call: &'static str,
    kind: FailureKind,
}

impl Info {
    /// From how many entries [`Info::check`] reads a flag first.
    pub const FLAG_FROM: usize = 1024;

    /// `len` zeroed entries on `stream`.
    /// One more entry after them: the flag of [`Info::check`], zeroed with them.
    fn new(stream: &Stream, call: &'static str, kind: FailureKind, len: usize) -> Result<Info> {
        let mut buffer = DeviceBuffer::alloc_on(stream, 4 * (len + 1))?;
        buffer.memset(0)?;
        Ok(Info { buffer, len, call, kind })
    }

    /// The device address of entry `i`.
    fn at(&self, i: usize) -> *mut i32 {
        (self.buffer.ptr() + 4 * i as u64) as *mut i32
    }

    /// The device address of the array.
    pub fn ptr(&self) -> u64 {
        self.buffer.ptr()
    }

    /// The device buffer (its stream is the call's): the [`Info::len`] entries, then one more
    /// (scratch for [`Info::check`]).
    pub fn buffer(&self) -> &DeviceBuffer {
        &self.buffer
    }

    /// Entries (matrices of the batch).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The call that writes it (the last one, for calls made of several).
    pub fn call(&self) -> &'static str {
        self.call
    }

    /// What a positive entry means.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// Copies the array to the host: **waits** for the call's stream.
    pub fn read(&self) -> Result<Vec<i32>> {
        let mut v = self.buffer.to_vec::<i32>()?;
        v.truncate(self.len);
        Ok(v)
    }

    /// Reads the array ([`Info::read`], which waits) and sorts it ([`classify_info`]): `Ok(Ok(()))`
    /// when every matrix succeeded, `Ok(Err(failure))` on a numerical failure, `Err` on a runtime
    /// error or an invalid parameter.
    /// A long array (more than [`Info::FLAG_FROM`] entries) is first folded into one flag on the
    /// device (the entry after the array), so that a batch that succeeded reads four bytes back,
    /// not four a matrix.
    pub fn check(&self) -> Result<std::result::Result<(), SolverFailure>> {
        if self.len > Info::FLAG_FROM && !kernels::any_nonzero(&self.buffer, self.len)? {
            return Ok(Ok(()));
        }
        classify_info(self.call, self.kind, &self.read()?)
    }
}

struct Solver {
    dn: cs::cusolverDnHandle_t,
    params: cs::cusolverDnParams_t,
    /// Made on first use (transposes, batched inverses).
    blas: cb::cublasHandle_t,
}

static CUSOLVER: OnceLock<bool> = OnceLock::new();
static CUBLAS: OnceLock<bool> = OnceLock::new();
fn handles() -> &'static Handles<Solver> {
    static H: OnceLock<Handles<Solver>> = OnceLock::new();
    H.get_or_init(Handles::new)
}

fn check_status(call: &'static str, status: cs::cusolverStatus_t) -> Result<()> {
    if status == cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::library(call, status))
    }
}

fn check_blas(call: &'static str, status: cb::cublasStatus_t) -> Result<()> {
    if status == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::library(call, status))
    }
}

impl Solver {
    /// The device's cuBLAS handle (made on first use), bound to `stream`.
    fn blas(&mut self, stream: &Stream) -> Result<cb::cublasHandle_t> {
        ensure_loaded("libcublas", &CUBLAS, &["cublas"])?;
        if self.blas.is_null() {
            let mut h = std::ptr::null_mut();
            // SAFETY: writes a new handle into `h`; the device's context is current (we run
            // under `Handles::with`).
            check_blas("cublasCreate_v2", unsafe { cb::cublasCreate_v2(&mut h) })?;
            crate::host_trace::point("solver: cuBLAS handle made");
            self.blas = h;
        }
        // SAFETY: a live handle and a live stream of the same device.
        check_blas("cublasSetStream_v2", unsafe {
            cb::cublasSetStream_v2(self.blas, stream.raw() as cb::cudaStream_t)
        })?;
        Ok(self.blas)
    }
}

/// Starts loading cuSOLVER (with what it links: cuBLAS, cuBLASLt, cuSPARSE) on a thread of its
/// own, once per process (before a plan with a decomposition first runs), so that the first
/// call does not wait for the loader (~80-86 ms on an H200). Never fails: a library that does
/// not load is reported by the first call, as without a preload.
pub fn preload() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    crate::libs::preload(&STARTED, || {
        let _ = ensure_loaded("libcusolver", &CUSOLVER, &["cusolver"]);
        let _ = ensure_loaded("libcublas", &CUBLAS, &["cublas"]);
    });
}

/// Whether cuSOLVER was found loadable (`None`: not tried yet, or being loaded).
pub(crate) fn loaded() -> Option<bool> {
    CUSOLVER.get().copied()
}

/// Runs `f` with the current device's cuSOLVER handle bound to the current stream (passed to
/// `f`), the device's context current.
fn with_solver<T>(f: impl FnOnce(&mut Solver, &Stream) -> Result<T>) -> Result<T> {
    ensure_loaded("libcusolver", &CUSOLVER, &["cusolver"])?;
    crate::host_trace::point("solver: library loaded");
    let stream = Stream::current()?;
    handles().with(
        "cusolverDnCreate",
        Some(&stream),
        || {
            let mut dn = std::ptr::null_mut();
            // SAFETY: writes a new handle into `dn`; the device's context is current.
            check_status("cusolverDnCreate", unsafe { cs::cusolverDnCreate(&mut dn) })?;
            let mut params = std::ptr::null_mut();
            // SAFETY: writes a new parameter object (default algorithms) into `params`.
            check_status("cusolverDnCreateParams", unsafe {
                cs::cusolverDnCreateParams(&mut params)
            })?;
            crate::host_trace::point("solver: handle made");
            Ok(Solver { dn, params, blas: std::ptr::null_mut() })
        },
        |s| {
            // SAFETY: a live handle and a live stream of the same device.
            check_status("cusolverDnSetStream", unsafe {
                cs::cusolverDnSetStream(s.dn, stream.raw() as cs::cudaStream_t)
            })?;
            f(s, &stream)
        },
    )
}

/// A call's workspaces: device memory from the pool (freed in stream order), host memory as
/// bytes (kept until the stream has run the call: dropping a non-empty one waits).
struct Workspace {
    device: DeviceBuffer,
    host: Vec<u8>,
    stream: Stream,
}

impl Workspace {
    /// Both workspaces zeroed: cuSOLVER copies parts of its device scratch to the host that it
    /// has not written (compute-sanitizer's initcheck reported `cusolverDnXgesvd`'s
    /// `cuMemcpyDtoHAsync` of 8 to 32 unwritten bytes); a memset on the stream costs a launch.
    fn new(stream: &Stream, device_bytes: usize, host_bytes: usize) -> Result<Workspace> {
        let mut device = DeviceBuffer::alloc_on(stream, device_bytes)?;
        if !device.is_empty() {
            device.memset(0)?;
        }
        Ok(Workspace { device, host: vec![0u8; host_bytes], stream: stream.clone() })
    }

    fn device_ptr(&self) -> *mut c_void {
        if self.device.is_empty() {
            std::ptr::null_mut()
        } else {
            self.device.ptr() as *mut c_void
        }
    }

    fn device_len(&self) -> usize {
        self.device.len()
    }

    fn host_ptr(&mut self) -> *mut c_void {
        if self.host.is_empty() {
            std::ptr::null_mut()
        } else {
            self.host.as_mut_ptr().cast()
        }
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        // The host workspace may be read by work still queued: keep it until the stream is
        // done, or leak it if the stream cannot tell.
        if !self.host.is_empty() && self.stream.synchronize().is_err() {
            std::mem::forget(std::mem::take(&mut self.host));
        }
    }
}

/// Errors unless `batch` items of `elems` elements `s.stride` apart do not overlap (an operand
/// only read may be shared by the batch: `shared_ok` allows stride 0).
fn check_batch(
    call: &'static str,
    name: &str,
    s: Strided,
    elems: usize,
    batch: usize,
    shared_ok: bool,
) -> Result<()> {
    if batch > 1 && s.stride < elems && !(shared_ok && s.stride == 0) {
        return Err(RuntimeError::InvalidArgument(format!(
            "{call}: {name}'s stride {} is less than its {elems} elements (batch of {batch})",
            s.stride
        )));
    }
    Ok(())
}

/// Errors unless the batch is packed as a cuSOLVER batched call reads it: `stride == elems`.
fn check_packed(
    call: &'static str,
    name: &str,
    s: Strided,
    elems: usize,
    batch: usize,
) -> Result<()> {
    if batch > 1 && s.stride != elems {
        return Err(RuntimeError::InvalidArgument(format!(
            "{call}: {name}'s stride {} is not {elems} (the batched call reads packed matrices)",
            s.stride
        )));
    }
    Ok(())
}

/// `v` as a C `int` for the 32-bit calls.
fn int(call: &'static str, name: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        RuntimeError::InvalidArgument(format!("{call}: {name} = {v} does not fit a 32-bit int"))
    })
}

/// Errors when `n` exceeds the 32 × 32 limit of the batched Jacobi calls.
fn check_small(call: &'static str, dims: &[(&str, usize)]) -> Result<()> {
    for &(name, v) in dims {
        if v > 32 {
            return Err(RuntimeError::InvalidArgument(format!("{call}: {name} = {v} > 32")));
        }
    }
    Ok(())
}

fn p<T>(addr: u64) -> *mut T {
    addr as *mut T
}

fn eig_mode(vectors: bool) -> cs::cusolverEigMode_t {
    if vectors {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
    } else {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_sizes_and_real_parts() {
        use SolverType::*;
        assert_eq!([F32, F64, C64, C128].map(SolverType::size), [4, 8, 8, 16]);
        assert_eq!([F32, F64, C64, C128].map(SolverType::real), [F32, F64, F32, F64]);
        assert_eq!([F32, F64, C64, C128].map(SolverType::is_complex), [false, false, true, true]);
        assert_eq!(C64.data_type(), cs::cudaDataType::CUDA_C_32F);
        assert_eq!(C128.real().data_type(), cs::cudaDataType::CUDA_R_64F);
    }

    #[test]
    fn svd_job_letters_and_shapes() {
        assert_eq!([SvdJob::Full, SvdJob::Reduced, SvdJob::None].map(SvdJob::letter), *b"ASN");
        let s = svd_shapes(3, 2, SvdJob::Reduced, SvdJob::Reduced);
        assert_eq!(s, SvdShapes { k: 2, u: (3, 2), vt: (2, 2) });
        let s = svd_shapes(2, 3, SvdJob::Full, SvdJob::Full);
        assert_eq!(s, SvdShapes { k: 2, u: (2, 2), vt: (3, 3) });
        let s = svd_shapes(2, 3, SvdJob::Reduced, SvdJob::None);
        assert_eq!(s, SvdShapes { k: 2, u: (2, 2), vt: (0, 0) });
    }

    #[test]
    fn info_arrays_sort_into_success_failures_and_errors() {
        let call = "cusolverDnXpotrf";
        let kind = FailureKind::NotPositiveDefinite;
        assert_eq!(classify_info(call, kind, &[0, 0]).unwrap(), Ok(()));
        assert_eq!(classify_info(call, kind, &[]).unwrap(), Ok(()));
        let f = classify_info(call, kind, &[0, 3, 0, 1]).unwrap().unwrap_err();
        assert_eq!(f, SolverFailure { call, kind, index: 1, info: 3, failed: 2 });
        assert_eq!(
            f.to_string(),
            "cusolverDnXpotrf: matrix 1 is not positive definite (its leading minor of order 3 is \
             not); 2 matrices of the batch failed"
        );
        let e = RuntimeError::from(f);
        assert!(matches!(&e, RuntimeError::Library(l) if l.call == call), "{e:?}");
        assert!(e.to_string().starts_with("cusolverDnXpotrf: matrix 1 is not positive"), "{e}");
        let e = classify_info(call, kind, &[0, 2, -4]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cusolverDnXpotrf: parameter 4 is invalid (info = -4 for matrix 2)"
        );
        let f = classify_info("cublasSgetrfBatched", FailureKind::Singular, &[2]).unwrap();
        assert_eq!(
            f.unwrap_err().to_string(),
            "cublasSgetrfBatched: matrix 0 is singular (U(2, 2) is exactly zero)"
        );
    }

    #[test]
    fn batches_must_not_overlap_and_batched_calls_need_packing() {
        let s = Strided::new(0x1000, 8);
        assert!(check_batch("x", "a", s, 9, 2, false).is_err());
        assert!(check_batch("x", "a", s, 9, 1, false).is_ok(), "one matrix: any stride");
        assert!(check_batch("x", "a", s, 8, 2, false).is_ok());
        assert!(check_batch("x", "a", Strided::new(0x1000, 0), 8, 2, true).is_ok());
        assert!(check_batch("x", "a", Strided::new(0x1000, 0), 8, 2, false).is_err());
        assert!(check_packed("x", "a", Strided::new(0, 10), 9, 2).is_err());
        assert!(check_packed("x", "a", Strided::new(0, 9), 9, 2).is_ok());
        assert!(check_small("x", &[("n", 32)]).is_ok());
        assert!(check_small("x", &[("m", 2), ("n", 33)]).is_err());
        assert!(int("x", "n", 1 << 31).is_err());
        assert_eq!(s.at(3, 4), 0x1000 + 96);
        assert!(Strided::new(0, 5).ptr_at::<f32>(2, 4).is_null());
    }

    #[test]
    fn argument_errors_come_before_the_device() {
        // No device is touched: these fail on their arguments everywhere.
        let a = Strided::new(0x1000, 4);
        // SAFETY: each call fails its checks before using an address.
        unsafe {
            let e = potrf(SolverType::F32, Uplo::Lower, 3, a, 2 /* stride 4 < 9 */).unwrap_err();
            assert!(e.to_string().contains("cusolverDnXpotrf: a's stride 4"), "{e}");
            let e = syevj_batched(SolverType::F64, Uplo::Upper, true, 33, a, a, 1).unwrap_err();
            assert!(e.to_string().contains("n = 33 > 32"), "{e}");
            let e = orgqr(SolverType::C64, 2, 3, 2, a, a, 1).unwrap_err();
            assert!(e.to_string().contains("m >= ncols >= k"), "{e}");
            let b = Strided::new(0x1000, 6);
            let e = gesvdj_batched(SolverType::F32, false, 3, 2, b, a, a, a, 2).unwrap_err();
            assert!(e.to_string().contains("s's stride 4 is not 2"), "{e}");
        }
    }
}
