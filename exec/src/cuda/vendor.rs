//! The GPU executor of library calls ([`VendorCall`]): matrix products through cuBLAS (and
//! cuBLASLt for epilogues), FFTs through cuFFT, on device arrays, on the current stream.
//!
//! **Matrix products** (`kiln_runtime::blas`). A row-major product `C = A @ B` is computed as
//! the column-major `Cᵀ = Bᵀ Aᵀ`: a row-major operand with unit column stride is its transpose,
//! column-major, with the row stride as leading dimension (op `N`); one with unit row stride
//! (a transposed view) is op `T` with the column stride as leading dimension. So transposed and
//! sliced operands are read in place; batches are one strided-batched call per run of batch
//! axes that step evenly (broadcast batch axes have stride 0, so a broadcast operand is not
//! copied either). An operand with no unit stride along its rows or columns (a step slice on
//! both, a flip, a broadcast inside the matrix) is first gathered to a contiguous buffer on the
//! device by `kiln_runtime::gather` (a small NVRTC kernel), its broadcast batch axes left
//! broadcast. float16/bfloat16 accumulate in float32; TF32 is off unless
//! [`kiln_runtime::blas::set_allow_tf32`] (`kiln::set_allow_tf32`). Integer and bool products
//! never come here: the pipeline lowers them to reductions that kiln's code generation compiles
//! (`kiln_compiler::int_matmul`; no cuBLAS GEMM computes NumPy's wrapping integer products).
//!
//! **Epilogues.** A matmul region that absorbed a bias/relu consumer (see
//! `kiln_compiler::fusion::Epilogue`) is one `cublasLtMatmul` with `CUBLASLT_EPILOGUE_BIAS`,
//! `_RELU`, `_RELU_BIAS`, `_GELU` or `_GELU_BIAS` (the tanh GELU): the bias runs along the rows of the row-major product, i.e. along
//! the columns of the column-major `Cᵀ`, which is cuBLASLt's bias vector of the op's `m` (the
//! product's `n`) elements broadcast over its columns and, with the bias batch stride left at
//! 0, over every batch; its type is the output's (cuBLASLt's default). Where cuBLASLt offers no
//! algorithm for the epilogue (its heuristic finds none), or the sum is empty, the host
//! computes the call between copies. Rounding differs from the host's within the dtype's
//! tolerance (cuBLASLt adds the bias before rounding float16/bfloat16 products, and computes
//! the GELU's tanh its own way). **NaN and relu:** NumPy's `maximum(x, 0)` (kiln's `relu`, and
//! the host's epilogue) keeps NaN; cuBLASLt's relu epilogue is `max(x, 0)` and may give 0 for
//! a NaN product: an absorbed relu does not promise NaN propagation on the GPU (the suite's
//! `gpu_absorbed_relu_of_nan_products` prints which one the device gives). A product that is
//! also read elsewhere (a result itself, say) is not absorbed: its relu is a kernel keeping NaN.
//!
//! **FFTs** (`kiln_runtime::fft`). The call's steps come from
//! `kiln_compiler::vendor::fft_steps` (which says what each transform kind does): batched 1-D
//! transforms in cuFFT's advanced layout, the first reading the operand through its strides,
//! so a contiguous operand's 1-D transform is one out-of-place cuFFT execution from the input
//! buffer to the fresh output (a plan in cuFFT's basic layout), nothing else; the operand is
//! gathered (by `kiln_runtime::gather`) only for a reversed transform axis, batch axes needing
//! many calls, and one-axis complex-to-real transforms (cuFFT overwrites their input). Plans run
//! on the current stream. The norm's factor, where it is not 1 (`"backward"` forward and
//! `"forward"` inverse transforms have none), is one cuBLAS scale of the output
//! (`cublas*scal`) after the transform. float16/bfloat16 inputs and operands whose halved axis
//! is not `n/2+1` (or `n`) long run on the host.
//!
//! **Linear algebra** (`kiln_runtime::solver`, cuSOLVER): cholesky, solve, inv, det, slogdet,
//! qr, svd and eigh of float32/float64/complex64/complex128 operands, see `super::linalg`;
//! operands with no matrix or a zero dimension run on the host.

use std::sync::Arc;

use kiln_compiler::fusion::Region;
use kiln_compiler::fusion::{LtEpilogue, RegionKind};
use kiln_compiler::vendor::blas_layout::{batch_runs, transposed_view};
use kiln_compiler::vendor::fft_steps::{self, Buffer, Scratch, StepKind};
use kiln_compiler::vendor::{self, FftCall, FftKind, MatMulCall, VendorCall};
use kiln_ir::shape::numel;
use kiln_ir::{DType, Layout};
use kiln_runtime::blas::{self, Epilogue, GemmDesc, GemmType, ScaleType};
use kiln_runtime::fft::{self as cufft, FftLayout, FftType};
use kiln_runtime::{gather, DeviceBuffer, RuntimeError};

use super::DeviceArray;
use super::Result;
use crate::ExecError as Error;

/// Starts loading the CUDA libraries the library steps of `plan` call (each once per process,
/// on a thread of its own: `kiln_runtime::blas::preload` and its kin), so that a plan's first
/// run loads them beside its compiles and its context's creation rather than at the step; and
/// remembers them in `disk` for this program's next process ([`super::remembered`]).
pub(crate) fn preload_libraries(
    plan: &kiln_compiler::pipeline::Compiled,
    disk: Option<&kiln_cache::DiskCache>,
) {
    use super::remembered::Library;
    use kiln_ir::OpKind;
    let mut libraries = 0;
    for step in &plan.schedule.steps {
        let region = &plan.partition.regions[step.region];
        if region.kind != RegionKind::Vendor {
            continue;
        }
        let Some(&out) = region.body.outputs().first() else { continue };
        libraries |= match region.body.node(out).op {
            OpKind::MatMul => Library::Blas as u8,
            // A norm's scale is a cuBLAS call.
            OpKind::Fft | OpKind::Rfft | OpKind::Irfft => Library::Fft as u8 | Library::Blas as u8,
            OpKind::Cholesky
            | OpKind::Solve
            | OpKind::Inv
            | OpKind::Det
            | OpKind::Slogdet
            | OpKind::Qr
            | OpKind::Svd
            | OpKind::Eigh => Library::Solver as u8,
            // A product with an absorbed epilogue: its output is the epilogue's op.
            kiln_ir::ops_not_of!(Vendor) => Library::Blas as u8,
        };
    }
    super::remembered::preload(libraries);
    super::remembered::used(libraries, disk);
}

/// The call of a vendor region the GPU executor takes, `None` for what runs on the host.
pub(super) fn plan(region: &Region) -> Option<VendorCall> {
    if region.kind != RegionKind::Vendor {
        return None;
    }
    let call = vendor::plan(region).ok()?;
    let ok = match &call {
        // An epilogue over an empty sum (k = 0) is the bias alone: the host computes it.
        VendorCall::MatMul(mm) => {
            gemm_type(mm.dtype).is_some() && !(mm.epilogue.is_some() && mm.k == 0)
        }
        VendorCall::Fft(f) => fft_supported(f),
        // Decompositions through cuSOLVER (`super::linalg`); empty operands on the host.
        VendorCall::Linalg(l) => super::linalg::supported(l),
    };
    ok.then_some(call)
}

/// Runs `call` on region inputs `inputs`: one array per region output (a decomposition's
/// several outputs are one call).
pub(super) fn run(call: &VendorCall, inputs: &[Arc<DeviceArray>]) -> Result<Vec<DeviceArray>> {
    let input = |k: usize| {
        inputs
            .get(k)
            .ok_or_else(|| invalid(format!("vendor call: no input {k} ({} given)", inputs.len())))
    };
    match call {
        VendorCall::MatMul(mm) => {
            let Some(e) = &mm.epilogue else {
                return Ok(vec![matmul(mm, input(mm.a.input)?, input(mm.b.input)?, None)?]);
            };
            let bias = e.bias.map(input).transpose()?;
            match matmul(
                mm,
                input(mm.a.input)?,
                input(mm.b.input)?,
                Some((lt_epilogue(e.form), bias.map(|b| &**b))),
            ) {
                // No cuBLASLt algorithm for this epilogue, type and shape: nothing was queued;
                // the host computes the call between copies.
                Err(Error::Runtime(RuntimeError::Library(l)))
                    if l.call == "cublasLtMatmulAlgoGetHeuristic" =>
                {
                    tracing::warn!(call = %l, "no cuBLASLt algorithm for the epilogue; the host runs the product");
                    on_host(call, inputs)
                }
                r => Ok(vec![r?]),
            }
        }
        VendorCall::Fft(f) => Ok(vec![run_fft(f, input(f.input.input)?, true, false)?]),
        VendorCall::Linalg(l) => super::linalg::run(l, inputs),
    }
}

/// The runtime's epilogue of an absorbed form.
fn lt_epilogue(form: LtEpilogue) -> Epilogue {
    match form {
        LtEpilogue::Bias => Epilogue::Bias,
        LtEpilogue::Relu => Epilogue::Relu,
        LtEpilogue::BiasRelu => Epilogue::BiasRelu,
        LtEpilogue::Gelu => Epilogue::Gelu,
        LtEpilogue::BiasGelu => Epilogue::BiasGelu,
    }
}

/// `call` run by the host executor on copies of `inputs`, its outputs uploaded.
fn on_host(call: &VendorCall, inputs: &[Arc<DeviceArray>]) -> Result<Vec<DeviceArray>> {
    let host: Vec<kiln_ir::HostArray> =
        inputs.iter().map(|a| a.download()).collect::<Result<_>>()?;
    let refs: Vec<&kiln_ir::HostArray> = host.iter().collect();
    crate::cpu::vendor::host::run_all(call, &refs)?.iter().map(DeviceArray::upload).collect()
}

fn invalid(message: String) -> Error {
    Error::InvalidInput(message)
}

fn gemm_type(dtype: DType) -> Option<GemmType> {
    Some(match dtype {
        DType::Float16 => GemmType::F16,
        DType::BFloat16 => GemmType::BF16,
        DType::Float32 => GemmType::F32,
        DType::Float64 => GemmType::F64,
        DType::Complex64 => GemmType::C64,
        DType::Complex128 => GemmType::C128,
        _ => return None,
    })
}

/// An operand as cuBLAS reads it: a buffer (the input's, or a gathered copy), the element
/// offset of matrix 0 and its layout (batch axes then rows, columns).
struct Operand {
    /// The gathered copy, if one was made (freed in stream order after the product).
    _copy: Option<DeviceBuffer>,
    ptr: u64,
    layout: Layout,
    trans: bool,
    ld: usize,
}

/// Reads `x` through `layout` (shape `batch + (rows, cols)`), gathering it when its matrices
/// have no unit stride or a batch axis steps backwards.
fn operand(x: &DeviceArray, layout: &Layout) -> Result<Operand> {
    let r = layout.rank();
    let (rows, cols) = (layout.shape[r - 2], layout.shape[r - 1]);
    let batch_ok = layout.strides[..r - 2].iter().all(|&s| s >= 0);
    if let (true, Some((trans, ld))) =
        (batch_ok, transposed_view(rows, cols, layout.strides[r - 2], layout.strides[r - 1]))
    {
        return Ok(Operand { _copy: None, ptr: x.buf.ptr(), layout: layout.clone(), trans, ld });
    }
    // Gather the distinct elements: broadcast batch axes once.
    let compact: Vec<usize> = layout
        .shape
        .iter()
        .zip(&layout.strides)
        .enumerate()
        .map(|(i, (&n, &s))| if s == 0 && i < r - 2 { 1 } else { n })
        .collect();
    let buf = gather::gather(&x.buf, x.dtype.itemsize(), layout.offset, &compact, &layout.strides)?;
    let mut gathered = Layout::contiguous(&compact);
    for (i, (&n, &c)) in layout.shape.iter().zip(&compact).enumerate() {
        if n != c {
            gathered.strides[i] = 0;
            gathered.shape[i] = n;
        }
    }
    let (trans, ld) = transposed_view(rows, cols, gathered.strides[r - 2], gathered.strides[r - 1])
        .expect("a C-contiguous matrix has unit column stride");
    Ok(Operand { ptr: buf.ptr(), _copy: Some(buf), layout: gathered, trans, ld })
}

/// `mm` on device operands, with a cuBLASLt epilogue when `epilogue` is given (real types).
pub(super) fn matmul(
    mm: &MatMulCall,
    a: &DeviceArray,
    b: &DeviceArray,
    epilogue: Option<(Epilogue, Option<&DeviceArray>)>,
) -> Result<DeviceArray> {
    let ty =
        gemm_type(mm.dtype).ok_or_else(|| invalid(format!("matmul of {} on the GPU", mm.dtype)))?;
    if a.dtype != mm.dtype || b.dtype != mm.dtype {
        return Err(invalid(format!(
            "matmul of {}: operands of dtypes {} and {}",
            mm.dtype, a.dtype, b.dtype
        )));
    }
    let out_shape: Vec<usize> = mm.batch.iter().copied().chain([mm.m, mm.n]).collect();
    let mut out = DeviceArray::empty(mm.dtype, &out_shape)?;
    if numel(&out_shape) == 0 {
        return Ok(out);
    }
    if mm.k == 0 && epilogue.is_none() {
        out.buf.memset(0)?;
        return Ok(out);
    }
    let (pa, pb) = (operand(a, &mm.a.layout)?, operand(b, &mm.b.layout)?);
    let nb = mm.batch.len();
    let c_strides = Layout::contiguous(&out_shape).strides;
    let runs =
        batch_runs(&mm.batch, &pa.layout.strides[..nb], &pb.layout.strides[..nb], &c_strides[..nb]);
    // The innermost run is one strided-batched call; the outer runs are looped.
    let (inner, outer) = match runs.split_last() {
        Some((&(n, s), rest)) => ((n, s), rest.to_vec()),
        None => ((1, [0, 0, 0]), Vec::new()),
    };
    let desc = GemmDesc {
        ty,
        // Cᵀ (n × m) = op(B-side) (n × k) · op(A-side) (k × m).
        trans_a: pb.trans,
        trans_b: pa.trans,
        m: mm.n,
        n: mm.m,
        k: mm.k,
        lda: pb.ld,
        ldb: pa.ld,
        ldc: mm.n,
        stride_a: inner.1[1] as i64,
        stride_b: inner.1[0] as i64,
        stride_c: inner.1[2] as i64,
        batch: inner.0,
    };
    let es = mm.dtype.itemsize() as isize;
    let bias_ptr = match epilogue {
        Some((_, Some(bias))) => {
            if bias.dtype != mm.dtype || numel(&bias.shape) != mm.n {
                return Err(invalid(format!(
                    "matmul epilogue: a bias of {} {:?} for {} columns",
                    bias.dtype, bias.shape, mm.n
                )));
            }
            Some(bias.buf.ptr())
        }
        _ => None,
    };
    let outer_count: usize = outer.iter().map(|r| r.0).product();
    for o in 0..outer_count {
        // The element offsets of this outer index, in C order of the outer runs.
        let (mut rem, mut offs) = (o, [pa.layout.offset, pb.layout.offset, 0isize]);
        for &(n, s) in outer.iter().rev() {
            let i = (rem % n) as isize;
            rem /= n;
            for j in 0..3 {
                offs[j] += i * s[j];
            }
        }
        let (pa_ptr, pb_ptr) =
            (pa.ptr as i64 + (offs[0] * es) as i64, pb.ptr as i64 + (offs[1] * es) as i64);
        let c_ptr = out.buf.ptr() as i64 + (offs[2] * es) as i64;
        // SAFETY: the operands' layouts were checked in bounds of their buffers by the planner's
        // region inputs (same dtype and shape as the arrays) and by `gather`; `desc` reads
        // exactly the matrices of those layouts (leading dimensions and batch strides from
        // them) and writes the fresh output's elements; every buffer outlives this call and is
        // used on the current stream.
        unsafe {
            match epilogue {
                None => blas::gemm(&desc, pb_ptr as u64, pa_ptr as u64, c_ptr as u64)?,
                Some((e, _)) => blas::gemm_epilogue(
                    &desc,
                    e,
                    bias_ptr,
                    pb_ptr as u64,
                    pa_ptr as u64,
                    c_ptr as u64,
                )?,
            }
        }
    }
    Ok(out)
}

/// Whether cuFFT computes `f`: float32/float64 and complex64/complex128 operands, and a halved
/// axis of n/2+1 terms (or n reals).
fn fft_supported(f: &FftCall) -> bool {
    use DType::*;
    let types = matches!(
        (f.kind, f.in_dtype, f.out_dtype),
        (FftKind::C2C { .. }, Complex64, Complex64)
            | (FftKind::C2C { .. }, Complex128, Complex128)
            | (FftKind::R2C { .. }, Float32, Complex64)
            | (FftKind::R2C { .. }, Float64, Complex128)
            | (FftKind::C2R { .. }, Complex64, Float32)
            | (FftKind::C2R { .. }, Complex128, Float64)
    );
    let shape = &f.input.layout.shape;
    types
        && match (f.kind, f.axes.last()) {
            (FftKind::C2C { .. }, Some(_)) => true,
            (FftKind::R2C { n }, Some(&h)) => shape[h] == n,
            (FftKind::C2R { n }, Some(&h)) => shape[h] == n / 2 + 1 && f.out_shape[h] == n,
            (_, None) => false,
        }
}

/// The runtime's transform type of a step in the call's precision (`double`: complex128).
fn step_type(kind: StepKind, double: bool) -> FftType {
    match (kind, double) {
        (StepKind::C2C { .. }, false) => FftType::C2C,
        (StepKind::C2C { .. }, true) => FftType::Z2Z,
        (StepKind::R2C, false) => FftType::R2C,
        (StepKind::R2C, true) => FftType::D2Z,
        (StepKind::C2R, false) => FftType::C2R,
        (StepKind::C2R, true) => FftType::Z2D,
    }
}

/// `f` on a device operand: the steps of [`fft_steps::plan`] queued on the current stream,
/// then, with `scale`, the norm's scale where it is not 1 (a generated store callback applies
/// it itself and writes elsewhere: the output is then left unscaled). `overwrite`: the operand
/// is a C-contiguous buffer nothing else reads (the unwritten output of a producer fused as a
/// generated load callback), so a one-axis complex-to-real transform runs on it in place of
/// the gathered scratch copy (cuFFT overwrites it; the load callback computes what it reads).
pub(super) fn run_fft(
    f: &FftCall,
    x: &DeviceArray,
    scale: bool,
    overwrite: bool,
) -> Result<DeviceArray> {
    if !fft_supported(f) {
        return Err(invalid(format!("{:?} of {} on the GPU", f.kind, f.in_dtype)));
    }
    if x.dtype != f.in_dtype {
        return Err(invalid(format!(
            "{:?}: an operand of {}, the call reads {}",
            f.kind, x.dtype, f.in_dtype
        )));
    }
    let l = &f.input.layout;
    crate::cpu::vendor::host::in_bounds(l, x.buf.len() / x.dtype.itemsize())?;
    let out = DeviceArray::empty(f.out_dtype, &f.out_shape)?;
    let plan = fft_steps::plan(f);
    let es = f.in_dtype.itemsize();
    let in_place = overwrite && l.offset == 0 && l.is_c_contiguous();
    let scratch = match plan.scratch {
        Some(Scratch::Gather) if in_place => None,
        Some(Scratch::Gather) => Some(gather::gather(&x.buf, es, l.offset, &l.shape, &l.strides)?),
        Some(Scratch::Empty) => Some(DeviceBuffer::alloc(l.numel() * es)?),
        None => None,
    };
    let double = matches!(f.out_dtype, DType::Float64 | DType::Complex128);
    let base = |b: Buffer| match b {
        Buffer::Input => x.buf.ptr(),
        Buffer::Scratch if scratch.is_none() && in_place => x.buf.ptr(),
        Buffer::Scratch => scratch.as_ref().expect("the plan has a scratch buffer").ptr(),
        Buffer::Output => out.buf.ptr(),
    };
    // The callbacks of a `set_cufft_callbacks` scope: the load callback on the step that reads
    // the operand, the store callback on the step that writes the output.
    let callbacks = cufft::callbacks::active();
    let last = plan.steps.len().saturating_sub(1);
    for (s, step) in plan.steps.iter().enumerate() {
        let load = callbacks.as_ref().and_then(|c| c.load.as_ref()).filter(|_| s == 0);
        let store = callbacks.as_ref().and_then(|c| c.store.as_ref()).filter(|_| s == last);
        let b = step.batched;
        let layout = FftLayout {
            ty: step_type(b.kind, double),
            n: b.n,
            batch: b.batch,
            istride: b.istride,
            idist: b.idist,
            ostride: b.ostride,
            odist: b.odist,
        };
        let (ies, oes) = layout.ty.element_sizes();
        let inverse = matches!(b.kind, StepKind::C2C { inverse: true } | StepKind::C2R);
        for &(io, oo) in &step.calls {
            let (i, o) = (base(step.from) + (io * ies) as u64, base(step.to) + (oo * oes) as u64);
            // SAFETY: `fft_steps::plan` addresses, from each call's offsets, exactly elements
            // of the arrays its buffers hold: the operand through its layout (checked inside
            // the input buffer above; never written: C2R steps read the scratch, or with
            // `overwrite` the operand in its place, a C-contiguous buffer of the operand's
            // shape from offset 0 that only this call reads), the
            // C-contiguous scratch of the operand's shape and dtype, the fresh output of
            // `out_shape`; in-place steps (C2C only) have identical input and output layouts.
            // Every buffer lives until the end of this function and is freed in stream order.
            // The callbacks are the user's code, run on the addresses cuFFT gives them
            // (`set_cufft_callbacks` documents that contract).
            unsafe { cufft::exec_with(&layout, inverse, i, o, load, store)? };
        }
    }
    if scale && plan.scale != 1.0 {
        let st = match f.out_dtype {
            DType::Float32 => ScaleType::F32,
            DType::Float64 => ScaleType::F64,
            DType::Complex64 => ScaleType::C64,
            _ => ScaleType::C128,
        };
        // SAFETY: the output holds numel(out_shape) elements of its dtype.
        unsafe { blas::scale(st, numel(&f.out_shape), plan.scale, out.buf.ptr())? };
    }
    // The scratch is freed in stream order after the transforms that read it.
    drop(scratch);
    Ok(out)
}
