//! cuBLAS and cuBLASLt: column-major strided-batched matrix products on the current stream,
//! a vector scale, and GEMMs with a cuBLASLt epilogue (bias, relu, gelu). Thin wrappers over
//! cudarc's raw bindings: device addresses in, a typed error naming the call out.
//!
//! Every product goes through `cublasGemmStridedBatchedEx_64` (one entry point for all element
//! types; `cublasSgemm` and friends dispatch to the same kernels): float32, float64, complex64,
//! complex128 compute in their own precision, float16 and bfloat16 accumulate in float32
//! (`CUBLAS_COMPUTE_32F`). TF32 tensor cores are **off** by default (the handle's math mode is
//! `CUBLAS_DEFAULT_MATH` and float32 products ask for `CUBLAS_COMPUTE_32F`); [`set_allow_tf32`]
//! opts in (`CUBLAS_COMPUTE_32F_FAST_TF32`, like `torch.backends.cuda.matmul.allow_tf32`).
//!
//! Handles are made per device on first use and kept for the process; each call sets the
//! handle's stream to the current [`Stream`].

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use cudarc::cublas::sys as cb;
use cudarc::cublaslt::sys as lt;

use crate::error::{Result, RuntimeError};
use crate::libs::{ensure_loaded, Handles};
use crate::memory::DeviceBuffer;
use crate::stream::Stream;

static ALLOW_TF32: AtomicBool = AtomicBool::new(false);

/// Lets float32 (and complex64) products use TF32 tensor cores: faster, with 10-bit mantissas
/// for the products' inputs. Off by default. Process-wide; applies to products started after
/// the call.
pub fn set_allow_tf32(allow: bool) {
    ALLOW_TF32.store(allow, Ordering::Relaxed);
}

/// Whether float32 products may use TF32 ([`set_allow_tf32`]).
pub fn allow_tf32() -> bool {
    ALLOW_TF32.load(Ordering::Relaxed)
}

/// The element type of a product (inputs and output alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmType {
    F16,
    BF16,
    F32,
    F64,
    C64,
    C128,
}

impl GemmType {
    fn data_type(self) -> cb::cudaDataType {
        use cb::cudaDataType::*;
        match self {
            GemmType::F16 => CUDA_R_16F,
            GemmType::BF16 => CUDA_R_16BF,
            GemmType::F32 => CUDA_R_32F,
            GemmType::F64 => CUDA_R_64F,
            GemmType::C64 => CUDA_C_32F,
            GemmType::C128 => CUDA_C_64F,
        }
    }

    fn compute_type(self) -> cb::cublasComputeType_t {
        use cb::cublasComputeType_t::*;
        match self {
            GemmType::F64 | GemmType::C128 => CUBLAS_COMPUTE_64F,
            GemmType::F32 | GemmType::C64 if allow_tf32() => CUBLAS_COMPUTE_32F_FAST_TF32,
            _ => CUBLAS_COMPUTE_32F,
        }
    }

    /// Whether the scale factors (alpha, beta) are float64 (else float32), as the compute type
    /// requires; complex types take complex scale factors.
    fn double_scale(self) -> bool {
        matches!(self, GemmType::F64 | GemmType::C128)
    }
}

/// One column-major strided-batched product: for `i < batch`,
/// `C[i] = op(A[i]) · op(B[i])` with `op(A[i])` of `m × k`, `op(B[i])` of `k × n`, `C[i]` of
/// `m × n`. `A[i]` starts `i * stride_a` elements after `a` and is stored `lda`-strided by
/// columns (`k × m` stored when `trans_a`); likewise `B` and `C`. Strides may be 0 (a matrix
/// broadcast over the batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmDesc {
    pub ty: GemmType,
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
    pub batch: usize,
}

impl GemmDesc {
    /// The stored shapes (rows, columns) of A and B.
    fn stored(&self) -> ((usize, usize), (usize, usize)) {
        let a = if self.trans_a { (self.k, self.m) } else { (self.m, self.k) };
        let b = if self.trans_b { (self.n, self.k) } else { (self.k, self.n) };
        (a, b)
    }

    /// Errors unless every leading dimension covers its stored matrix's rows (cuBLAS's rule).
    fn check(&self, call: &'static str) -> Result<()> {
        let ((ar, _), (br, _)) = self.stored();
        for (name, ld, rows) in
            [("lda", self.lda, ar), ("ldb", self.ldb, br), ("ldc", self.ldc, self.m)]
        {
            if ld < rows.max(1) {
                return Err(RuntimeError::InvalidArgument(format!(
                    "{call}: {name} = {ld} < {} rows ({self:?})",
                    rows.max(1)
                )));
            }
        }
        Ok(())
    }
}

fn op(trans: bool) -> cb::cublasOperation_t {
    if trans {
        cb::cublasOperation_t::CUBLAS_OP_T
    } else {
        cb::cublasOperation_t::CUBLAS_OP_N
    }
}

/// `(alpha, beta)` = (1, 0) in the scale type of `ty`, as 16 bytes each (enough for a complex
/// double), read through `*const c_void` by the call.
fn one_zero(ty: GemmType) -> ([u8; 16], [u8; 16]) {
    let mut one = [0u8; 16];
    if ty.double_scale() {
        one[..8].copy_from_slice(&1.0f64.to_ne_bytes());
    } else {
        one[..4].copy_from_slice(&1.0f32.to_ne_bytes());
    }
    (one, [0u8; 16])
}

struct Blas(cb::cublasHandle_t);
static CUBLAS: OnceLock<bool> = OnceLock::new();
fn blas_handles() -> &'static Handles<Blas> {
    static H: OnceLock<Handles<Blas>> = OnceLock::new();
    H.get_or_init(Handles::new)
}

fn check_blas(call: &'static str, status: cb::cublasStatus_t) -> Result<()> {
    if status == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::library(call, status))
    }
}

/// Starts loading cuBLAS and cuBLASLt on a thread of their own, once per process (see
/// `kiln_exec`'s GPU runs: before a plan with a matrix product first runs), so that the first
/// product does not wait for the loader. Never fails: a library that does not load is reported
/// by the first call, as without a preload.
pub fn preload() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    crate::libs::preload(&STARTED, || {
        let _ = ensure_loaded("libcublas", &CUBLAS, &["cublas"]);
        let _ = ensure_loaded("libcublasLt", &CUBLASLT, &["cublasLt"]);
    });
}

/// Runs `f` with the current device's cuBLAS handle bound to the current stream.
fn with_blas<T>(f: impl FnOnce(cb::cublasHandle_t) -> Result<T>) -> Result<T> {
    ensure_loaded("libcublas", &CUBLAS, &["cublas"])?;
    crate::host_trace::point("blas: library loaded");
    let stream = Stream::current()?;
    blas_handles().with(
        "cublasCreate_v2",
        Some(&stream),
        || {
            let mut h = std::ptr::null_mut();
            // SAFETY: writes a new handle into `h`; the device's context is current.
            check_blas("cublasCreate_v2", unsafe { cb::cublasCreate_v2(&mut h) })?;
            // SAFETY: `h` was just created.
            check_blas("cublasSetMathMode", unsafe {
                cb::cublasSetMathMode(h, cb::cublasMath_t::CUBLAS_DEFAULT_MATH)
            })?;
            crate::host_trace::point("blas: handle made");
            Ok(Blas(h))
        },
        |h| {
            // SAFETY: a live handle and a live stream of the same device.
            check_blas("cublasSetStream_v2", unsafe {
                cb::cublasSetStream_v2(h.0, stream.raw() as cb::cudaStream_t)
            })?;
            f(h.0)
        },
    )
}

/// Queues `d` on the current stream.
///
/// # Safety
/// `a`, `b` and `c` are device addresses of the current device holding every element `d`
/// addresses, of `d.ty`; `c` does not overlap `a` or `b`; they stay allocated until the
/// stream has run the product.
pub unsafe fn gemm(d: &GemmDesc, a: u64, b: u64, c: u64) -> Result<()> {
    const CALL: &str = "cublasGemmStridedBatchedEx_64";
    d.check(CALL)?;
    if d.m == 0 || d.n == 0 || d.batch == 0 {
        return Ok(());
    }
    let (alpha, beta) = one_zero(d.ty);
    let t = d.ty.data_type();
    with_blas(|h| {
        // SAFETY: the caller's contract covers the buffers; the scale factors are of the
        // compute type's scale type and live across the call (cuBLAS reads host scalars
        // before returning in the default pointer mode).
        let status = unsafe {
            cb::cublasGemmStridedBatchedEx_64(
                h,
                op(d.trans_a),
                op(d.trans_b),
                d.m as i64,
                d.n as i64,
                d.k as i64,
                alpha.as_ptr().cast(),
                a as *const c_void,
                t,
                d.lda as i64,
                d.stride_a,
                b as *const c_void,
                t,
                d.ldb as i64,
                d.stride_b,
                beta.as_ptr().cast(),
                c as *mut c_void,
                t,
                d.ldc as i64,
                d.stride_c,
                d.batch as i64,
                d.ty.compute_type(),
                cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        check_blas(CALL, status)
    })
}

/// The element type of [`scale`]: the vector's, the factor being real.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleType {
    F32,
    F64,
    C64,
    C128,
}

/// `x[i] *= alpha` for the `n` contiguous elements at `x`, on the current stream
/// (`cublas{S,D,Cs,Zd}scal_v2_64`; complex vectors by a real factor).
///
/// # Safety
/// `x` is a device address of the current device holding `n` elements of `ty`, alive until the
/// stream has run the call.
pub unsafe fn scale(ty: ScaleType, n: usize, alpha: f64, x: u64) -> Result<()> {
    if n == 0 || alpha == 1.0 {
        return Ok(());
    }
    let (a32, a64) = (alpha as f32, alpha);
    with_blas(|h| {
        // SAFETY: the caller's contract; the factor lives across the call.
        let (call, status) = unsafe {
            match ty {
                ScaleType::F32 => (
                    "cublasSscal_v2_64",
                    cb::cublasSscal_v2_64(h, n as i64, &a32, x as *mut f32, 1),
                ),
                ScaleType::F64 => (
                    "cublasDscal_v2_64",
                    cb::cublasDscal_v2_64(h, n as i64, &a64, x as *mut f64, 1),
                ),
                ScaleType::C64 => (
                    "cublasCsscal_v2_64",
                    cb::cublasCsscal_v2_64(h, n as i64, &a32, x as *mut cb::cuComplex, 1),
                ),
                ScaleType::C128 => (
                    "cublasZdscal_v2_64",
                    cb::cublasZdscal_v2_64(h, n as i64, &a64, x as *mut cb::cuDoubleComplex, 1),
                ),
            }
        };
        check_blas(call, status)
    })
}

/// A cuBLASLt epilogue: what the product's output goes through before it is stored. `bias`
/// adds a vector of `m` elements (one per row of the column-major output), `relu` and `gelu`
/// (tanh approximation, as cuBLASLt computes it) follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    Bias,
    Relu,
    BiasRelu,
    Gelu,
    BiasGelu,
}

impl Epilogue {
    fn raw(self) -> lt::cublasLtEpilogue_t {
        use lt::cublasLtEpilogue_t::*;
        match self {
            Epilogue::Bias => CUBLASLT_EPILOGUE_BIAS,
            Epilogue::Relu => CUBLASLT_EPILOGUE_RELU,
            Epilogue::BiasRelu => CUBLASLT_EPILOGUE_RELU_BIAS,
            Epilogue::Gelu => CUBLASLT_EPILOGUE_GELU,
            Epilogue::BiasGelu => CUBLASLT_EPILOGUE_GELU_BIAS,
        }
    }

    /// Whether it reads a bias vector.
    pub fn has_bias(self) -> bool {
        matches!(self, Epilogue::Bias | Epilogue::BiasRelu | Epilogue::BiasGelu)
    }
}

struct BlasLt(lt::cublasLtHandle_t);
static CUBLASLT: OnceLock<bool> = OnceLock::new();
fn lt_handles() -> &'static Handles<BlasLt> {
    static H: OnceLock<Handles<BlasLt>> = OnceLock::new();
    H.get_or_init(Handles::new)
}

fn check_lt(call: &'static str, status: lt::cublasStatus_t) -> Result<()> {
    if status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::library(call, status))
    }
}

/// Bytes of workspace offered to cuBLASLt (NVIDIA's recommendation for Hopper).
const LT_WORKSPACE: usize = 32 << 20;

/// Descriptors destroyed on drop.
struct LtObjects {
    desc: lt::cublasLtMatmulDesc_t,
    layouts: Vec<lt::cublasLtMatrixLayout_t>,
    pref: lt::cublasLtMatmulPreference_t,
}

impl Drop for LtObjects {
    fn drop(&mut self) {
        // SAFETY: each object was created by cuBLASLt and is destroyed once; null ones were
        // never created.
        unsafe {
            for &l in &self.layouts {
                let _ = lt::cublasLtMatrixLayoutDestroy(l);
            }
            if !self.desc.is_null() {
                let _ = lt::cublasLtMatmulDescDestroy(self.desc);
            }
            if !self.pref.is_null() {
                let _ = lt::cublasLtMatmulPreferenceDestroy(self.pref);
            }
        }
    }
}

/// Sets attribute `attr` of a matmul descriptor to `value`.
///
/// # Safety
/// `desc` is live and `T` is the attribute's type.
unsafe fn set_desc<T>(
    desc: lt::cublasLtMatmulDesc_t,
    attr: lt::cublasLtMatmulDescAttributes_t,
    value: &T,
) -> Result<()> {
    // SAFETY: the caller's contract; `value` is read during the call.
    check_lt("cublasLtMatmulDescSetAttribute", unsafe {
        lt::cublasLtMatmulDescSetAttribute(
            desc,
            attr,
            (value as *const T).cast(),
            std::mem::size_of::<T>(),
        )
    })
}

/// A layout of `rows × cols` stored `ld`-strided by columns, `batch` of them `stride` apart.
fn lt_layout(
    objects: &mut LtObjects,
    ty: GemmType,
    rows: usize,
    cols: usize,
    ld: usize,
    batch: usize,
    stride: i64,
) -> Result<lt::cublasLtMatrixLayout_t> {
    let mut l = std::ptr::null_mut();
    // SAFETY: the data type values of cuBLAS and cuBLASLt are the same `cudaDataType` numbers.
    let t: lt::cudaDataType =
        unsafe { std::mem::transmute::<u32, lt::cudaDataType>(ty.data_type() as u32) };
    // SAFETY: writes a new layout into `l`.
    check_lt("cublasLtMatrixLayoutCreate", unsafe {
        lt::cublasLtMatrixLayoutCreate(&mut l, t, rows as u64, cols as u64, ld as i64)
    })?;
    objects.layouts.push(l);
    if batch > 1 {
        let count = batch as i32;
        // SAFETY: `l` is live; BATCH_COUNT is an int32, STRIDED_BATCH_OFFSET an int64.
        unsafe {
            check_lt(
                "cublasLtMatrixLayoutSetAttribute",
                lt::cublasLtMatrixLayoutSetAttribute(
                    l,
                    lt::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                    (&count as *const i32).cast(),
                    4,
                ),
            )?;
            check_lt(
                "cublasLtMatrixLayoutSetAttribute",
                lt::cublasLtMatrixLayoutSetAttribute(
                    l,
                    lt::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    (&stride as *const i64).cast(),
                    8,
                ),
            )?;
        }
    }
    Ok(l)
}

/// Queues `d` with `epilogue` as one `cublasLtMatmul` on the current stream: real types only
/// (float16, bfloat16, float32, float64); `bias` (of `d.ty`, `d.m` elements, shared by every
/// batch) for the bias forms.
///
/// # Safety
/// As [`gemm`]; `bias`, when given, holds `d.m` elements of `d.ty` on the current device.
pub unsafe fn gemm_epilogue(
    d: &GemmDesc,
    epilogue: Epilogue,
    bias: Option<u64>,
    a: u64,
    b: u64,
    c: u64,
) -> Result<()> {
    const CALL: &str = "cublasLtMatmul";
    d.check(CALL)?;
    if matches!(d.ty, GemmType::C64 | GemmType::C128) {
        return Err(RuntimeError::InvalidArgument(format!(
            "{CALL}: epilogues of complex products ({:?})",
            d.ty
        )));
    }
    if epilogue.has_bias() != bias.is_some() {
        return Err(RuntimeError::InvalidArgument(format!(
            "{CALL}: epilogue {epilogue:?} with bias {bias:?}"
        )));
    }
    if d.m == 0 || d.n == 0 || d.batch == 0 {
        return Ok(());
    }
    ensure_loaded("libcublasLt", &CUBLASLT, &["cublasLt"])?;
    crate::host_trace::point("blasLt: library loaded");
    let stream = Stream::current()?;
    let workspace = DeviceBuffer::alloc(LT_WORKSPACE)?;
    let (alpha, beta) = one_zero(d.ty);
    lt_handles().with(
        "cublasLtCreate",
        Some(&stream),
        || {
            let mut h = std::ptr::null_mut();
            // SAFETY: writes a new handle; the device's context is current.
            check_lt("cublasLtCreate", unsafe { lt::cublasLtCreate(&mut h) })?;
            Ok(BlasLt(h))
        },
        |h| {
            let mut o = LtObjects { desc: std::ptr::null_mut(), layouts: Vec::new(), pref: std::ptr::null_mut() };
            let scale_type = if d.ty.double_scale() { lt::cudaDataType::CUDA_R_64F } else { lt::cudaDataType::CUDA_R_32F };
            // SAFETY: the compute type values of cuBLAS and cuBLASLt are the same numbers.
            let compute: lt::cublasComputeType_t = unsafe { std::mem::transmute::<u32, lt::cublasComputeType_t>(d.ty.compute_type() as u32) };
            // SAFETY: writes a new descriptor.
            check_lt("cublasLtMatmulDescCreate", unsafe { lt::cublasLtMatmulDescCreate(&mut o.desc, compute, scale_type) })?;
            let (ta, tb) = (op(d.trans_a) as i32, op(d.trans_b) as i32);
            // SAFETY: a live descriptor; TRANSA/TRANSB are int32 `cublasOperation_t`, EPILOGUE a
            // uint32, BIAS_POINTER a device pointer.
            unsafe {
                set_desc(o.desc, lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA, &ta)?;
                set_desc(o.desc, lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB, &tb)?;
                set_desc(o.desc, lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE, &(epilogue.raw() as u32))?;
                if let Some(bias) = bias {
                    set_desc(o.desc, lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias)?;
                }
            }
            let ((ar, ac), (br, bc)) = d.stored();
            let la = lt_layout(&mut o, d.ty, ar, ac, d.lda, d.batch, d.stride_a)?;
            let lb = lt_layout(&mut o, d.ty, br, bc, d.ldb, d.batch, d.stride_b)?;
            let lc = lt_layout(&mut o, d.ty, d.m, d.n, d.ldc, d.batch, d.stride_c)?;
            // SAFETY: writes a new preference; then sets its uint64 workspace limit.
            unsafe {
                check_lt("cublasLtMatmulPreferenceCreate", lt::cublasLtMatmulPreferenceCreate(&mut o.pref))?;
                let size = LT_WORKSPACE as u64;
                check_lt(
                    "cublasLtMatmulPreferenceSetAttribute",
                    lt::cublasLtMatmulPreferenceSetAttribute(
                        o.pref,
                        lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                        (&size as *const u64).cast(),
                        8,
                    ),
                )?;
            }
            let mut heuristic = std::mem::MaybeUninit::<lt::cublasLtMatmulHeuristicResult_t>::zeroed();
            let mut found = 0i32;
            // SAFETY: live objects; room for one result.
            check_lt("cublasLtMatmulAlgoGetHeuristic", unsafe {
                lt::cublasLtMatmulAlgoGetHeuristic(h.0, o.desc, la, lb, lc, lc, o.pref, 1, heuristic.as_mut_ptr(), &mut found)
            })?;
            if found == 0 {
                return Err(RuntimeError::library("cublasLtMatmulAlgoGetHeuristic", lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED));
            }
            // SAFETY: one result was written.
            let heuristic = unsafe { heuristic.assume_init() };
            // SAFETY: the caller's contract covers a, b, c and bias; the workspace is ours, on
            // this stream, freed in stream order after the call's work.
            check_lt(CALL, unsafe {
                lt::cublasLtMatmul(
                    h.0,
                    o.desc,
                    alpha.as_ptr().cast(),
                    a as *const c_void,
                    la,
                    b as *const c_void,
                    lb,
                    beta.as_ptr().cast(),
                    c as *const c_void,
                    lc,
                    c as *mut c_void,
                    lc,
                    &heuristic.algo,
                    workspace.ptr() as *mut c_void,
                    LT_WORKSPACE,
                    stream.raw() as lt::cudaStream_t,
                )
            })
        },
    )
}
