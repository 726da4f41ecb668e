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

use crate::error::{check, LibraryError, Result, RuntimeError};
use crate::libs::{ensure_loaded, Handles};
use crate::memory::DeviceBuffer;
use crate::stream::Stream;

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
    /// `len` zeroed entries on `stream`.
    fn new(stream: &Stream, call: &'static str, kind: FailureKind, len: usize) -> Result<Info> {
        let mut buffer = DeviceBuffer::alloc_on(stream, 4 * len)?;
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

    /// The device buffer (its stream is the call's).
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
        self.buffer.to_vec::<i32>()
    }

    /// Reads the array ([`Info::read`], which waits) and sorts it ([`classify_info`]): `Ok(Ok(()))`
    /// when every matrix succeeded, `Ok(Err(failure))` on a numerical failure, `Err` on a runtime
    /// error or an invalid parameter.
    pub fn check(&self) -> Result<std::result::Result<(), SolverFailure>> {
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
        ensure_loaded("libcublas", &CUBLAS, cb::is_culib_present)?;
        if self.blas.is_null() {
            let mut h = std::ptr::null_mut();
            // SAFETY: writes a new handle into `h`; the device's context is current (we run
            // under `Handles::with`).
            check_blas("cublasCreate_v2", unsafe { cb::cublasCreate_v2(&mut h) })?;
            self.blas = h;
        }
        // SAFETY: a live handle and a live stream of the same device.
        check_blas("cublasSetStream_v2", unsafe {
            cb::cublasSetStream_v2(self.blas, stream.raw() as cb::cudaStream_t)
        })?;
        Ok(self.blas)
    }
}

/// Runs `f` with the current device's cuSOLVER handle bound to the current stream (passed to
/// `f`), the device's context current.
fn with_solver<T>(f: impl FnOnce(&mut Solver, &Stream) -> Result<T>) -> Result<T> {
    ensure_loaded("libcusolver", &CUSOLVER, cs::is_culib_present)?;
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
    fn new(stream: &Stream, device_bytes: usize, host_bytes: usize) -> Result<Workspace> {
        Ok(Workspace {
            device: DeviceBuffer::alloc_on(stream, device_bytes)?,
            host: vec![0u8; host_bytes],
            stream: stream.clone(),
        })
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

/// Uploads the addresses of the batch's matrices (for the pointer-array calls); the array is
/// freed in stream order.
fn pointer_array(stream: &Stream, s: Strided, batch: usize, elem: usize) -> Result<DeviceBuffer> {
    let ptrs: Vec<u64> = (0..batch).map(|i| s.at(i, elem)).collect();
    DeviceBuffer::from_slice_on(stream, &ptrs)
}

/// The scalars 1 and 0 of `ty`, aligned for any element type.
#[repr(C, align(16))]
struct Scalar([u8; 16]);

fn one(ty: SolverType) -> Scalar {
    let mut s = [0u8; 16];
    match ty.real() {
        SolverType::F32 => s[..4].copy_from_slice(&1.0f32.to_ne_bytes()),
        _ => s[..8].copy_from_slice(&1.0f64.to_ne_bytes()),
    }
    Scalar(s)
}

/// `dst (cols × rows) = srcᴴ` (the transpose for real types) for a `rows × cols` `src`, both
/// packed column-major, queued on the handle's stream (`cublas{S,D,C,Z}geam_64`).
///
/// # Safety
/// `src` and `dst` are device addresses of the handle's device holding the two matrices, of
/// `ty`, not overlapping, alive until the stream has run the call.
unsafe fn adjoint(
    h: cb::cublasHandle_t,
    ty: SolverType,
    rows: usize,
    cols: usize,
    src: u64,
    dst: u64,
) -> Result<()> {
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let (alpha, beta) = (one(ty), Scalar([0u8; 16]));
    let op = cb::cublasOperation_t::CUBLAS_OP_C;
    let (m, n, ld, ldc) = (cols as i64, rows as i64, rows as i64, cols as i64);
    let (a, b) = (alpha.0.as_ptr(), beta.0.as_ptr());
    // SAFETY: the caller's contract; `B` is `src` again, read with the same shape (and scaled by
    // zero); the scalars are host values of the element type, alive across the call (read
    // before it returns in the default pointer mode).
    let (call, status) = unsafe {
        match ty {
            SolverType::F32 => (
                "cublasSgeam_64",
                cb::cublasSgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
            SolverType::F64 => (
                "cublasDgeam_64",
                cb::cublasDgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
            SolverType::C64 => (
                "cublasCgeam_64",
                cb::cublasCgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
            SolverType::C128 => (
                "cublasZgeam_64",
                cb::cublasZgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
        }
    };
    check_blas(call, status)
}

/// Cholesky factorisations `A = L·Lᴴ` ([`Uplo::Lower`]) or `A = Uᴴ·U` ([`Uplo::Upper`]) of
/// `batch` Hermitian positive-definite `n × n` matrices, in place: the `uplo` triangle of each
/// matrix is read and overwritten with the factor; the other triangle is left as it was (not
/// zeroed). `cusolverDnXpotrf` for one matrix, `cusolverDn{S,D,C,Z}potrfBatched` for more.
/// [`Info`] entry `i > 0`: the leading minor of order `i` is not positive definite
/// ([`FailureKind::NotPositiveDefinite`]).
///
/// # Safety
/// `a` addresses `batch` matrices of `n × n` elements of `ty` on the current device, alive until
/// the stream has run the call.
pub unsafe fn potrf(
    ty: SolverType,
    uplo: Uplo,
    n: usize,
    a: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXpotrf";
    check_batch(CALL, "a", a, n * n, batch, false)?;
    let kind = FailureKind::NotPositiveDefinite;
    with_solver(|s, stream| {
        if batch > 1 && n > 0 {
            let call = match ty {
                SolverType::F32 => "cusolverDnSpotrfBatched",
                SolverType::F64 => "cusolverDnDpotrfBatched",
                SolverType::C64 => "cusolverDnCpotrfBatched",
                SolverType::C128 => "cusolverDnZpotrfBatched",
            };
            let info = Info::new(stream, call, kind, batch)?;
            let (ni, bi) = (int(call, "n", n)?, int(call, "batch", batch)?);
            let ptrs = pointer_array(stream, a, batch, ty.size())?;
            let (h, fill, arr, inf) = (s.dn, uplo.raw(), ptrs.ptr(), info.at(0));
            // SAFETY: the caller's contract covers the matrices; `ptrs` holds their `batch`
            // addresses and `info` `batch` ints, both ours, freed in stream order.
            let status = unsafe {
                match ty {
                    SolverType::F32 => {
                        cs::cusolverDnSpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                    SolverType::F64 => {
                        cs::cusolverDnDpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                    SolverType::C64 => {
                        cs::cusolverDnCpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                    SolverType::C128 => {
                        cs::cusolverDnZpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                }
            };
            check_status(call, status)?;
            return Ok(info);
        }
        let info = Info::new(stream, CALL, kind, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, ni) = (ty.data_type(), n as i64);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXpotrf_bufferSize", unsafe {
            cs::cusolverDnXpotrf_bufferSize(
                s.dn,
                s.params,
                uplo.raw(),
                ni,
                t,
                p(a.ptr),
                ni,
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i`; the workspaces hold the sizes
            // asked for and live past the call (the device one freed in stream order, the
            // host one kept until the stream is done); `info` holds `batch` ints.
            check_status(CALL, unsafe {
                cs::cusolverDnXpotrf(
                    s.dn,
                    s.params,
                    uplo.raw(),
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    ni,
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// LU factorisations with partial pivoting `P·A = L·U` of `batch` `m × n` matrices, in place
/// (`cusolverDnXgetrf`, once per matrix): `L` (unit diagonal, not stored) below the diagonal,
/// `U` on and above it. `ipiv` receives `min(m, n)` 1-based pivot rows per matrix, as `i64`.
/// [`Info`] entry `i > 0`: `U(i, i)` is exactly zero ([`FailureKind::Singular`]; the
/// factorisation is complete, but solving with it divides by zero).
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `ipiv` `batch` vectors of
/// `min(m, n)` `i64`, on the current device, alive until the stream has run the call.
pub unsafe fn getrf(
    ty: SolverType,
    m: usize,
    n: usize,
    a: Strided,
    ipiv: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgetrf";
    check_batch(CALL, "a", a, m * n, batch, false)?;
    check_batch(CALL, "ipiv", ipiv, m.min(n), batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::Singular, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, mi, ni) = (ty.data_type(), m as i64, n as i64);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXgetrf_bufferSize", unsafe {
            cs::cusolverDnXgetrf_bufferSize(
                s.dn,
                s.params,
                mi,
                ni,
                t,
                p(a.ptr),
                mi,
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i` and its pivots; the workspaces
            // hold the sizes asked for and outlive the call's work (see `Workspace`).
            check_status(CALL, unsafe {
                cs::cusolverDnXgetrf(
                    s.dn,
                    s.params,
                    mi,
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    mi,
                    ipiv.ptr_at(i, 8),
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// Solves `op(A)·X = B` for `nrhs` right-hand sides with the LU factors of [`getrf`] (`n × n`),
/// overwriting each `B` (`n × nrhs`) with `X` (`cusolverDnXgetrs`, once per matrix). `a` and
/// `ipiv` may have stride 0 (one factorisation for the whole batch). Its [`Info`] reports
/// invalid parameters only: check [`getrf`]'s for singular matrices.
///
/// # Safety
/// `a` addresses `batch` (or, with stride 0, one) `n × n` factorisations of `ty` with their
/// `ipiv` pivots (`n` `i64` each) from [`getrf`], `b` `batch` matrices of `n × nrhs` elements of
/// `ty`, not overlapping `a`, all on the current device and alive until the stream has run the
/// call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn getrs(
    ty: SolverType,
    trans: Transpose,
    n: usize,
    nrhs: usize,
    a: Strided,
    ipiv: Strided,
    b: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgetrs";
    check_batch(CALL, "a", a, n * n, batch, true)?;
    check_batch(CALL, "ipiv", ipiv, n, batch, true)?;
    check_batch(CALL, "b", b, n * nrhs, batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::Other, batch)?;
        if n == 0 || nrhs == 0 {
            return Ok(info);
        }
        let (t, ni) = (ty.data_type(), n as i64);
        for i in 0..batch {
            // SAFETY: the caller's contract covers factorisation `i`, its pivots and its
            // right-hand sides; `info` holds `batch` ints.
            check_status(CALL, unsafe {
                cs::cusolverDnXgetrs(
                    s.dn,
                    s.params,
                    trans.raw(),
                    ni,
                    nrhs as i64,
                    t,
                    a.ptr_at(i, ty.size()),
                    ni,
                    ipiv.ptr_at(i, 8),
                    t,
                    b.ptr_at(i, ty.size()),
                    ni,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// QR factorisations `A = Q·R` of `batch` `m × n` matrices, in place (`cusolverDnXgeqrf`, once
/// per matrix): `R` (`k × n`, `k = min(m, n)`) on and above the diagonal, the Householder
/// reflectors below it with their scalars in `tau` (`k` elements of `ty` per matrix). Form `Q`
/// with [`form_q`] (or [`orgqr`]); take `R` as the upper triangle of the first `k` rows.
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `tau` `batch` vectors of `k`
/// elements of `ty`, on the current device, alive until the stream has run the call.
pub unsafe fn geqrf(
    ty: SolverType,
    m: usize,
    n: usize,
    a: Strided,
    tau: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgeqrf";
    check_batch(CALL, "a", a, m * n, batch, false)?;
    check_batch(CALL, "tau", tau, m.min(n), batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::Other, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, mi, ni) = (ty.data_type(), m as i64, n as i64);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXgeqrf_bufferSize", unsafe {
            cs::cusolverDnXgeqrf_bufferSize(
                s.dn,
                s.params,
                mi,
                ni,
                t,
                p(a.ptr),
                mi,
                t,
                p(tau.ptr),
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i` and its `tau`; the workspaces
            // hold the sizes asked for and outlive the call's work (see `Workspace`).
            check_status(CALL, unsafe {
                cs::cusolverDnXgeqrf(
                    s.dn,
                    s.params,
                    mi,
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    mi,
                    t,
                    tau.ptr_at(i, ty.size()),
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// Forms, in place, the `m × ncols` matrix of orthonormal columns `Q` from the first `k`
/// Householder reflectors of [`geqrf`] stored in the first `k` columns of `q` (`m × ncols`),
/// with their `tau` (`k` per matrix): `cusolverDn{S,D}orgqr` / `cusolverDn{C,Z}ungqr`, once
/// per matrix. Requires `m ≥ ncols ≥ k`; the columns past `k` are set by the call.
///
/// # Safety
/// `q` addresses `batch` matrices of `m × ncols` elements of `ty`, `tau` `batch` vectors of
/// `k` elements of `ty`, on the current device, alive until the stream has run the call.
pub unsafe fn orgqr(
    ty: SolverType,
    m: usize,
    ncols: usize,
    k: usize,
    q: Strided,
    tau: Strided,
    batch: usize,
) -> Result<Info> {
    let (call, size_call) = match ty {
        SolverType::F32 => ("cusolverDnSorgqr", "cusolverDnSorgqr_bufferSize"),
        SolverType::F64 => ("cusolverDnDorgqr", "cusolverDnDorgqr_bufferSize"),
        SolverType::C64 => ("cusolverDnCungqr", "cusolverDnCungqr_bufferSize"),
        SolverType::C128 => ("cusolverDnZungqr", "cusolverDnZungqr_bufferSize"),
    };
    if !(m >= ncols && ncols >= k) {
        return Err(RuntimeError::InvalidArgument(format!(
            "{call}: needs m >= ncols >= k (m = {m}, ncols = {ncols}, k = {k})"
        )));
    }
    check_batch(call, "q", q, m * ncols, batch, false)?;
    check_batch(call, "tau", tau, k, batch, true)?;
    let (mi, ni, ki) = (int(call, "m", m)?, int(call, "ncols", ncols)?, int(call, "k", k)?);
    with_solver(|s, stream| {
        let info = Info::new(stream, call, FailureKind::Other, batch)?;
        if m == 0 || ncols == 0 || batch == 0 {
            return Ok(info);
        }
        let h = s.dn;
        let (a0, t0) = (q.ptr, tau.ptr);
        let mut lwork = 0i32;
        // SAFETY: a live handle; only `lwork` is written.
        let status = unsafe {
            match ty {
                SolverType::F32 => {
                    cs::cusolverDnSorgqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
                SolverType::F64 => {
                    cs::cusolverDnDorgqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
                SolverType::C64 => {
                    cs::cusolverDnCungqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
                SolverType::C128 => {
                    cs::cusolverDnZungqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
            }
        };
        check_status(size_call, status)?;
        let ws = Workspace::new(stream, lwork.max(0) as usize * ty.size(), 0)?;
        let w = ws.device.ptr();
        for i in 0..batch {
            let (a, t, inf) = (q.at(i, ty.size()), tau.at(i, ty.size()), info.at(i));
            // SAFETY: the caller's contract covers matrix `i` and its `tau`; the workspace
            // holds `lwork` elements, freed in stream order.
            let status = unsafe {
                match ty {
                    SolverType::F32 => {
                        cs::cusolverDnSorgqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                    SolverType::F64 => {
                        cs::cusolverDnDorgqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                    SolverType::C64 => {
                        cs::cusolverDnCungqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                    SolverType::C128 => {
                        cs::cusolverDnZungqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                }
            };
            check_status(call, status)?;
        }
        Ok(info)
    })
}

/// The columns of `Q` [`form_q`] makes: `k = min(m, n)` (reduced) or `m` (complete).
pub fn q_columns(mode: QMode, m: usize, n: usize) -> usize {
    match mode {
        QMode::Reduced => m.min(n),
        QMode::Complete => m,
    }
}

/// `Q` of the QR factorisations of [`geqrf`] (`a`: its `m × n` output, `tau` its scalars),
/// written to `q` (`m × q_columns(mode, m, n)` per matrix, leaving `a` as it is: `R` stays
/// there): copies the reflectors into `q`, then [`orgqr`].
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty` written by [`geqrf`], `tau` their
/// `min(m, n)` scalars each, `q` `batch` matrices of `m × q_columns(mode, m, n)` elements of
/// `ty` not overlapping `a`, all on the current device and alive until the stream has run the
/// call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn form_q(
    ty: SolverType,
    mode: QMode,
    m: usize,
    n: usize,
    a: Strided,
    tau: Strided,
    q: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cuMemcpyDtoDAsync";
    let (k, ncols) = (m.min(n), q_columns(mode, m, n));
    check_batch("form_q", "a", a, m * n, batch, false)?;
    check_batch("form_q", "q", q, m * ncols, batch, false)?;
    if m > 0 && k > 0 && batch > 0 {
        // The reflectors are the first k columns of a: m·k contiguous elements (leading
        // dimension m in both), the first k columns of q.
        let bytes = m * k * ty.size();
        with_solver(|_, stream| {
            for i in 0..batch {
                // SAFETY: both ranges lie in the caller's matrices (`k ≤ n` and `k ≤ ncols`
                // columns of `m` elements), which do not overlap; the context is current.
                check(CALL, unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        q.at(i, ty.size()),
                        a.at(i, ty.size()),
                        bytes,
                        stream.raw(),
                    )
                })?;
            }
            Ok(())
        })?;
    }
    // SAFETY: the caller's contract; q now holds the reflectors in its first k columns.
    unsafe { orgqr(ty, m, ncols, k, q, tau, batch) }
}

fn eig_mode(vectors: bool) -> cs::cusolverEigMode_t {
    if vectors {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
    } else {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
    }
}

/// Eigenvalues (ascending, into `w`: `n` elements of `ty.real()` per matrix) and, with
/// `vectors`, eigenvectors (overwriting `a`, one per column, orthonormal) of `batch` symmetric
/// or Hermitian `n × n` matrices, of which the `uplo` triangle is read (`cusolverDnXsyevd`,
/// divide and conquer, once per matrix). Without `vectors` `a` is destroyed. [`Info`] entry
/// `i > 0`: no convergence ([`FailureKind::NotConverged`]).
///
/// # Safety
/// `a` addresses `batch` matrices of `n × n` elements of `ty`, `w` `batch` vectors of `n`
/// elements of `ty.real()`, on the current device, alive until the stream has run the call.
pub unsafe fn syevd(
    ty: SolverType,
    uplo: Uplo,
    vectors: bool,
    n: usize,
    a: Strided,
    w: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXsyevd";
    check_batch(CALL, "a", a, n * n, batch, false)?;
    check_batch(CALL, "w", w, n, batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::NotConverged, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, tw, ni, job) = (ty.data_type(), ty.real().data_type(), n as i64, eig_mode(vectors));
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXsyevd_bufferSize", unsafe {
            cs::cusolverDnXsyevd_bufferSize(
                s.dn,
                s.params,
                job,
                uplo.raw(),
                ni,
                t,
                p(a.ptr),
                ni,
                tw,
                p(w.ptr),
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i` and its eigenvalues; the
            // workspaces hold the sizes asked for and outlive the call's work.
            check_status(CALL, unsafe {
                cs::cusolverDnXsyevd(
                    s.dn,
                    s.params,
                    job,
                    uplo.raw(),
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    ni,
                    tw,
                    w.ptr_at(i, ty.real().size()),
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// `syevjInfo_t`, destroyed on drop.
struct SyevjParams(cs::syevjInfo_t);

impl Drop for SyevjParams {
    fn drop(&mut self) {
        // SAFETY: made by `cusolverDnCreateSyevjInfo`, destroyed once (a host object: the
        // calls that used it have read it).
        let _ = unsafe { cs::cusolverDnDestroySyevjInfo(self.0) };
    }
}

/// `gesvdjInfo_t`, destroyed on drop.
struct GesvdjParams(cs::gesvdjInfo_t);

impl Drop for GesvdjParams {
    fn drop(&mut self) {
        // SAFETY: made by `cusolverDnCreateGesvdjInfo`, destroyed once.
        let _ = unsafe { cs::cusolverDnDestroyGesvdjInfo(self.0) };
    }
}

/// As [`syevd`] for many small matrices at once, by Jacobi rotations
/// (`cusolverDn{S,D}syevjBatched` / `cusolverDn{C,Z}heevjBatched`, one call): `n ≤ 32`, the
/// batch packed (`a.stride == n·n`, `w.stride == n`). Eigenvalues ascending (cuSOLVER's
/// default tolerance, machine precision, and at most 100 sweeps). [`Info`] entry `i > 0`:
/// matrix `i` did not converge.
///
/// # Safety
/// As [`syevd`].
pub unsafe fn syevj_batched(
    ty: SolverType,
    uplo: Uplo,
    vectors: bool,
    n: usize,
    a: Strided,
    w: Strided,
    batch: usize,
) -> Result<Info> {
    let (call, size_call) = match ty {
        SolverType::F32 => ("cusolverDnSsyevjBatched", "cusolverDnSsyevjBatched_bufferSize"),
        SolverType::F64 => ("cusolverDnDsyevjBatched", "cusolverDnDsyevjBatched_bufferSize"),
        SolverType::C64 => ("cusolverDnCheevjBatched", "cusolverDnCheevjBatched_bufferSize"),
        SolverType::C128 => ("cusolverDnZheevjBatched", "cusolverDnZheevjBatched_bufferSize"),
    };
    check_small(call, &[("n", n)])?;
    check_packed(call, "a", a, n * n, batch)?;
    check_packed(call, "w", w, n, batch)?;
    let (ni, bi) = (n as i32, int(call, "batch", batch)?);
    with_solver(|s, stream| {
        let info = Info::new(stream, call, FailureKind::NotConverged, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let mut params = SyevjParams(std::ptr::null_mut());
        // SAFETY: writes a new parameter object (default tolerance, sweeps and sorting).
        check_status("cusolverDnCreateSyevjInfo", unsafe {
            cs::cusolverDnCreateSyevjInfo(&mut params.0)
        })?;
        let (h, job, fill, pa, pw) = (s.dn, eig_mode(vectors), uplo.raw(), a.ptr, w.ptr);
        let prm = params.0;
        let mut lwork = 0i32;
        // SAFETY: a live handle and parameter object; only `lwork` is written.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSsyevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDsyevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCheevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZheevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
            }
        };
        check_status(size_call, status)?;
        let ws = Workspace::new(stream, lwork.max(0) as usize * ty.size(), 0)?;
        let (wk, inf) = (ws.device.ptr(), info.at(0));
        // SAFETY: the caller's contract covers the packed matrices and eigenvalues; the
        // workspace holds `lwork` elements and `info` `batch` ints, freed in stream order; the
        // parameter object outlives the call.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSsyevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDsyevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCheevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZheevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
            }
        };
        check_status(call, status)?;
        Ok(info)
    })
}

/// The jobs cuSOLVER runs for an `m × n` SVD with `jobu`/`jobvt`: `(transposed, jobu, jobvt)`.
/// cuSOLVER's gesvd needs `m ≥ n`; a wide matrix is decomposed through its adjoint
/// (`Aᴴ = V·S·Uᴴ`), whose `U` is the caller's `V` and whose `Vᴴ` is the caller's `Uᴴ`, so the
/// jobs swap.
fn gesvd_plan(m: usize, n: usize, jobu: SvdJob, jobvt: SvdJob) -> (bool, SvdJob, SvdJob) {
    if m >= n {
        (false, jobu, jobvt)
    } else {
        (true, jobvt, jobu)
    }
}

/// Singular value decompositions `A = U·diag(S)·Vᴴ` of `batch` `m × n` matrices
/// (`cusolverDnXgesvd`, once per matrix; `a` is destroyed). `s` receives `k = min(m, n)`
/// singular values (descending, `ty.real()`) per matrix, `u` and `vt` the factors `jobu` and
/// `jobvt` ask for, of the shapes [`svd_shapes`] gives (each packed, its leading dimension its
/// row count; ignored for [`SvdJob::None`]).
///
/// cuSOLVER's gesvd handles `m ≥ n` only; a wide matrix (`m < n`) is transposed here into a
/// temporary (cuBLAS `geam`), decomposed, and its factors conjugate-transposed into `u` and
/// `vt`: the caller sees no difference. [`Info`] entry `i > 0`: that many superdiagonals did
/// not converge ([`FailureKind::NotConverged`]).
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `s` `batch` vectors of `k`
/// elements of `ty.real()`, `u` and `vt` (unless not asked for) `batch` matrices of their
/// [`svd_shapes`] of `ty`, none overlapping, all on the current device and alive until the
/// stream has run the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gesvd(
    ty: SolverType,
    jobu: SvdJob,
    jobvt: SvdJob,
    m: usize,
    n: usize,
    a: Strided,
    s: Strided,
    u: Strided,
    vt: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgesvd";
    let shapes = svd_shapes(m, n, jobu, jobvt);
    let k = shapes.k;
    check_batch(CALL, "a", a, m * n, batch, false)?;
    check_batch(CALL, "s", s, k, batch, false)?;
    check_batch(CALL, "u", u, shapes.u.0 * shapes.u.1, batch, false)?;
    check_batch(CALL, "vt", vt, shapes.vt.0 * shapes.vt.1, batch, false)?;
    let (transposed, ju, jvt) = gesvd_plan(m, n, jobu, jobvt);
    // The shapes cuSOLVER sees: (rows, cols) ≥ 1 wide, its U and Vᴴ.
    let (rows, cols) = if transposed { (n, m) } else { (m, n) };
    let inner = svd_shapes(rows, cols, ju, jvt);
    let (ldu, ldvt) = (rows.max(1) as i64, cols.max(1) as i64);
    let size = ty.size();
    with_solver(|h, stream| {
        let info = Info::new(stream, CALL, FailureKind::NotConverged, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, tr) = (ty.data_type(), ty.real().data_type());
        let (ri, ci) = (rows as i64, cols as i64);
        let (cju, cjvt) = (ju.letter() as std::ffi::c_schar, jvt.letter() as std::ffi::c_schar);
        // The transposed path's temporaries: Aᴴ, and the U and Vᴴ of Aᴴ.
        let alloc = |elems: usize| DeviceBuffer::alloc_on(stream, elems * size);
        let (tmp_a, tmp_u, tmp_vt) = if transposed {
            (
                Some(alloc(rows * cols)?),
                Some(alloc(inner.u.0 * inner.u.1)?),
                Some(alloc(inner.vt.0 * inner.vt.1)?),
            )
        } else {
            (None, None, None)
        };
        let blas = if transposed { Some(h.blas(stream)?) } else { None };
        // Where matrix i goes in (a, u, vt) for cuSOLVER.
        let operands = |i: usize| -> (u64, u64, u64) {
            match (&tmp_a, &tmp_u, &tmp_vt) {
                (Some(ta), Some(tu), Some(tv)) => (ta.ptr(), tu.ptr(), tv.ptr()),
                _ => (
                    a.at(i, size),
                    if u.ptr == 0 { 0 } else { u.at(i, size) },
                    if vt.ptr == 0 { 0 } else { vt.at(i, size) },
                ),
            }
        };
        let null_if = |job: SvdJob, ptr: u64| -> *mut c_void {
            if job == SvdJob::None || ptr == 0 {
                std::ptr::null_mut()
            } else {
                ptr as *mut c_void
            }
        };
        let (a0, u0, vt0) = operands(0);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXgesvd_bufferSize", unsafe {
            cs::cusolverDnXgesvd_bufferSize(
                h.dn,
                h.params,
                cju,
                cjvt,
                ri,
                ci,
                t,
                p(a0),
                ri,
                tr,
                p(s.ptr),
                t,
                null_if(ju, u0),
                ldu,
                t,
                null_if(jvt, vt0),
                ldvt,
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            let (ai, ui, vti) = operands(i);
            if let Some(b) = blas {
                // SAFETY: matrix i of the caller (m × n) into the n × m temporary.
                unsafe { adjoint(b, ty, m, n, a.at(i, size), ai)? };
            }
            // SAFETY: the caller's contract (or our temporaries) covers matrix `i`, its
            // singular values and factors, of the shapes given; the workspaces hold the sizes
            // asked for and outlive the call's work.
            check_status(CALL, unsafe {
                cs::cusolverDnXgesvd(
                    h.dn,
                    h.params,
                    cju,
                    cjvt,
                    ri,
                    ci,
                    t,
                    p(ai),
                    ri,
                    tr,
                    s.ptr_at(i, ty.real().size()),
                    t,
                    null_if(ju, ui),
                    ldu,
                    t,
                    null_if(jvt, vti),
                    ldvt,
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
            if let Some(b) = blas {
                // The caller's U is (Vᴴ of Aᴴ)ᴴ, its Vᴴ is (U of Aᴴ)ᴴ.
                if jobu != SvdJob::None {
                    // SAFETY: our k × k temporary into the caller's m × m (k = m) U.
                    unsafe { adjoint(b, ty, inner.vt.0, inner.vt.1, vti, u.at(i, size))? };
                }
                if jobvt != SvdJob::None {
                    // SAFETY: our n × (n or k) temporary into the caller's (n or k) × n Vᴴ.
                    unsafe { adjoint(b, ty, inner.u.0, inner.u.1, ui, vt.at(i, size))? };
                }
            }
        }
        Ok(info)
    })
}

/// SVDs of many small matrices at once by Jacobi rotations (`cusolverDn{S,D,C,Z}gesvdjBatched`,
/// one call): `m, n ≤ 32`, any shape, the batch packed (`a.stride == m·n`, `s.stride == k`,
/// `u.stride == m·m`, `v.stride == n·n`; `a` is destroyed). `s` receives `k = min(m, n)`
/// singular values (descending) per matrix; with `vectors`, `u` the full `m × m` `U` and `v`
/// the full `n × n` **`V`** (not `Vᴴ`: `A = U·diag(S)·Vᴴ`; the reduced factors are their first
/// `k` columns); without `vectors`, `u` and `v` are not used (the wrapper gives cuSOLVER
/// scratch factors: it writes them even then). [`Info`] entry `i > 0`: matrix `i` did not
/// converge.
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `s` `batch` vectors of `k`
/// elements of `ty.real()`, with `vectors` `u` and `v` `batch` matrices of `m × m` and `n × n`
/// elements of `ty`, none overlapping, all on the current device and alive until the stream has
/// run the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gesvdj_batched(
    ty: SolverType,
    vectors: bool,
    m: usize,
    n: usize,
    a: Strided,
    s: Strided,
    u: Strided,
    v: Strided,
    batch: usize,
) -> Result<Info> {
    let (call, size_call) = match ty {
        SolverType::F32 => ("cusolverDnSgesvdjBatched", "cusolverDnSgesvdjBatched_bufferSize"),
        SolverType::F64 => ("cusolverDnDgesvdjBatched", "cusolverDnDgesvdjBatched_bufferSize"),
        SolverType::C64 => ("cusolverDnCgesvdjBatched", "cusolverDnCgesvdjBatched_bufferSize"),
        SolverType::C128 => ("cusolverDnZgesvdjBatched", "cusolverDnZgesvdjBatched_bufferSize"),
    };
    let k = m.min(n);
    check_small(call, &[("m", m), ("n", n)])?;
    check_packed(call, "a", a, m * n, batch)?;
    check_packed(call, "s", s, k, batch)?;
    if vectors {
        check_packed(call, "u", u, m * m, batch)?;
        check_packed(call, "v", v, n * n, batch)?;
    }
    let (mi, ni, bi) = (m as i32, n as i32, int(call, "batch", batch)?);
    let (ldu, ldv) = (mi.max(1), ni.max(1));
    with_solver(|h, stream| {
        let info = Info::new(stream, call, FailureKind::NotConverged, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let mut params = GesvdjParams(std::ptr::null_mut());
        // SAFETY: writes a new parameter object (default tolerance, sweeps and sorting).
        check_status("cusolverDnCreateGesvdjInfo", unsafe {
            cs::cusolverDnCreateGesvdjInfo(&mut params.0)
        })?;
        let (d, job, prm) = (h.dn, eig_mode(vectors), params.0);
        let (pa, ps) = (a.ptr, s.ptr);
        // Without vectors cuSOLVER still writes U and V (its batched_svd_qr kernels do, seen
        // with compute-sanitizer on an H100): scratch ones then, freed in stream order.
        let scratch = if vectors {
            None
        } else {
            let size = ty.size() * batch;
            Some((
                DeviceBuffer::alloc_on(stream, m * m * size)?,
                DeviceBuffer::alloc_on(stream, n * n * size)?,
            ))
        };
        let (pu, pv) = match &scratch {
            None => (u.ptr, v.ptr),
            Some((su, sv)) => (su.ptr(), sv.ptr()),
        };
        let mut lwork = 0i32;
        // SAFETY: a live handle and parameter object; only `lwork` is written.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
            }
        };
        check_status(size_call, status)?;
        let ws = Workspace::new(stream, lwork.max(0) as usize * ty.size(), 0)?;
        let (wk, inf) = (ws.device.ptr(), info.at(0));
        // SAFETY: the caller's contract covers the packed matrices, values and factors (or
        // our scratch factors, of the same shapes); the workspace holds `lwork` elements and
        // `info` `batch` ints, freed in stream order; the parameter object outlives the call.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
            }
        };
        check_status(call, status)?;
        Ok(info)
    })
}

/// Inverses of `batch` `n × n` matrices through cuBLAS's batched LU
/// (`cublas{S,D,C,Z}getrfBatched`, then `getriBatched` out of place into `c`; any `n`, meant
/// for many small matrices). `a` is overwritten with its LU factors. [`Info`] entry `i > 0`:
/// `U(i, i)` is exactly zero, the matrix is singular and its `c` is not an inverse.
///
/// # Safety
/// `a` and `c` address `batch` matrices each of `n × n` elements of `ty`, not overlapping, on
/// the current device, alive until the stream has run the call.
pub unsafe fn inv_batched(
    ty: SolverType,
    n: usize,
    a: Strided,
    c: Strided,
    batch: usize,
) -> Result<Info> {
    let (getrf, getri) = match ty {
        SolverType::F32 => ("cublasSgetrfBatched", "cublasSgetriBatched"),
        SolverType::F64 => ("cublasDgetrfBatched", "cublasDgetriBatched"),
        SolverType::C64 => ("cublasCgetrfBatched", "cublasCgetriBatched"),
        SolverType::C128 => ("cublasZgetrfBatched", "cublasZgetriBatched"),
    };
    check_batch(getrf, "a", a, n * n, batch, false)?;
    check_batch(getri, "c", c, n * n, batch, false)?;
    let (ni, bi) = (int(getrf, "n", n)?, int(getrf, "batch", batch)?);
    // getriBatched reads getrfBatched's info too: both write the same array (the same
    // singular matrices set it).
    with_solver(|s, stream| {
        let info = Info::new(stream, getrf, FailureKind::Singular, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let h = s.blas(stream)?;
        let ptrs_a = pointer_array(stream, a, batch, ty.size())?;
        let ptrs_c = pointer_array(stream, c, batch, ty.size())?;
        let pivots = DeviceBuffer::alloc_on(stream, 4 * n * batch)?;
        let (pa, pc, piv, inf) = (ptrs_a.ptr(), ptrs_c.ptr(), pivots.ptr(), info.at(0));
        // SAFETY: the pointer arrays hold the caller's `batch` matrices (its contract), the
        // pivots `n` ints per matrix and `info` `batch` ints, ours, freed in stream order.
        let status = unsafe {
            match ty {
                SolverType::F32 => cb::cublasSgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
                SolverType::F64 => cb::cublasDgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
                SolverType::C64 => cb::cublasCgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
                SolverType::C128 => cb::cublasZgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
            }
        };
        check_blas(getrf, status)?;
        // SAFETY: as above; `c`'s matrices do not overlap `a`'s (the caller's contract).
        let status = unsafe {
            match ty {
                SolverType::F32 => {
                    cb::cublasSgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
                SolverType::F64 => {
                    cb::cublasDgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
                SolverType::C64 => {
                    cb::cublasCgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
                SolverType::C128 => {
                    cb::cublasZgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
            }
        };
        check_blas(getri, status)?;
        Ok(info)
    })
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
    fn wide_svds_go_through_the_adjoint_with_the_jobs_swapped() {
        use SvdJob::*;
        assert_eq!(gesvd_plan(3, 2, Full, None), (false, Full, None));
        assert_eq!(gesvd_plan(2, 2, Reduced, Full), (false, Reduced, Full));
        assert_eq!(gesvd_plan(2, 3, Full, None), (true, None, Full));
        // The caller's factors come from the adjoint's: U (m × m) from its k × k Vᴴ, Vᴴ from
        // its U, of the caller's shape transposed.
        let (m, n) = (2, 5);
        for (ju, jvt) in [(Full, Full), (Reduced, Reduced), (Full, Reduced), (Reduced, Full)] {
            let (t, iu, ivt) = gesvd_plan(m, n, ju, jvt);
            assert!(t);
            let outer = svd_shapes(m, n, ju, jvt);
            let inner = svd_shapes(n, m, iu, ivt);
            assert_eq!((inner.vt.1, inner.vt.0), outer.u, "{ju:?} {jvt:?}");
            assert_eq!((inner.u.1, inner.u.0), outer.vt, "{ju:?} {jvt:?}");
        }
    }

    #[test]
    fn q_columns_by_mode() {
        assert_eq!(q_columns(QMode::Reduced, 4, 3), 3);
        assert_eq!(q_columns(QMode::Complete, 4, 3), 4);
        assert_eq!(q_columns(QMode::Reduced, 3, 4), 3);
        assert_eq!(q_columns(QMode::Complete, 3, 4), 3);
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
