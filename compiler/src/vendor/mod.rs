//! Vendor regions: matrix products and FFTs handed to a library.
//!
//! A vendor region is one `matmul`, `fft`, `rfft` or `irfft` node whose operands are the
//! region's inputs seen through views (the partitioner puts an operand's chain of views in the
//! region, see [`crate::fusion`]), a matmul possibly followed by the cuBLASLt epilogue
//! (bias, relu, bias then relu) the partitioner absorbed into it. [`plan`] turns it into a [`VendorCall`]: a backend-neutral
//! description whose operands are *strided layouts* over the input buffers, so a transposed,
//! sliced, flipped or broadcast operand reaches the library as strides rather than as a copy.
//! An executor runs calls:
//!
//! - the host executor (`kiln-exec`'s `cpu::vendor`): GEMM through the `gemm` crate (float32, float64, complex64,
//!   complex128 with any strides; float16 and bfloat16 gathered to float32, accumulated in
//!   float32 and rounded once; integers and bools by a plain loop that wraps as NumPy does), FFTs
//!   through `rustfft` and `realfft` (float16/bfloat16 computed in float32); a GEMM's epilogue
//!   applied to its result afterwards, in the evaluator's arithmetic (module `epilogue`).
//! - the GPU executor (cuBLAS/cuBLASLt, cuFFT through `kiln-runtime`) takes the same calls: a
//!   unit stride along rows or columns becomes an op flag and a leading dimension, batches a
//!   strided-batched GEMM, an epilogue one `cublasLtMatmul` with it.

pub mod blas_layout;

/// The linear-algebra ops, as a pattern.
macro_rules! linalg_ops {
    () => {
        OpKind::Cholesky
            | OpKind::Solve
            | OpKind::Inv
            | OpKind::Det
            | OpKind::Slogdet
            | OpKind::Qr
            | OpKind::Svd
            | OpKind::Eigh
    };
}
pub mod fft_callback;
pub mod fft_callback_sites;
pub mod fft_steps;

use kiln_ir::graph::Axes;
use kiln_ir::strided::layout_over_base;
use kiln_ir::{Attrs, DType, FftNorm, Layout, NodeId, OpKind, Shape};

use crate::codegen::Unsupported;
use crate::fusion::{absorbed_form, LtEpilogue, Region};

/// An operand of a library call: region input `input` read through `layout` (offset and strides
/// in elements over that input's C-contiguous buffer; strides may be 0 or negative).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    pub input: usize,
    pub layout: Layout,
}

/// A batched matrix product: for every index `i` of `batch`, `out[i] = a[i] @ b[i]`, `a[i]`
/// of shape `(m, k)` and `b[i]` of shape `(k, n)`; the output is C-contiguous
/// `batch + (m, n)`. Both operands' layouts have shape `batch + (m, k)` / `batch + (k, n)`
/// (broadcast batch axes have stride 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatMulCall {
    pub dtype: DType,
    pub batch: Shape,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Strided,
    pub b: Strided,
    /// What the product goes through before it is stored, if the region absorbed an epilogue.
    pub epilogue: Option<GemmEpilogue>,
}

/// A GEMM epilogue absorbed by the partitioner ([`crate::fusion::Epilogue`]): `form` applied to every product element, its
/// bias (for the bias forms) region input `bias`, a C-contiguous vector of `n` elements of the
/// product's dtype (shape `(n,)` or `(1, .., 1, n)`), added along each row of every matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmEpilogue {
    pub form: LtEpilogue,
    pub bias: Option<usize>,
}

/// Which transform an [`FftCall`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftKind {
    /// Complex to complex, forward or inverse, over every axis.
    C2C { inverse: bool },
    /// Real to complex (forward): the last axis of length `n` keeps n/2+1 terms.
    R2C { n: usize },
    /// Complex to real (inverse): the last axis's n/2+1 terms give `n` real values.
    C2R { n: usize },
}

/// An FFT over `axes` of one operand, scaled for `norm`; the output is C-contiguous of
/// `out_dtype` and `out_shape`. For the real transforms the last axis is the halved one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FftCall {
    pub kind: FftKind,
    pub axes: Axes,
    pub norm: FftNorm,
    pub input: Strided,
    pub in_dtype: DType,
    pub out_dtype: DType,
    pub out_shape: Shape,
}

/// Which routine a [`LinalgCall`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinalgKind {
    /// Outputs: 0 L.
    Cholesky,
    /// Outputs: 0 x with a·x = b.
    Solve,
    /// Outputs: 0 the inverse.
    Inv,
    /// Outputs: 0 the determinant.
    Det,
    /// Outputs: 0 sign, 1 log|det|.
    Slogdet,
    /// Outputs: 0 Q, 1 R; `full`: NumPy's mode "complete".
    Qr { full: bool },
    /// Outputs: 0 U, 1 s, 2 Vh; `full`: full_matrices.
    Svd { full: bool },
    /// Outputs: 0 w, 1 v.
    Eigh,
}

/// A linear-algebra routine over a batch of matrices (the ops `cholesky` ... `eigh` of the op
/// table): operand `a` of shape `batch + (m, n)` (square where the routine needs it), `solve`'s
/// right-hand sides `b` of shape `batch + (n, k)`. `outputs[j]` is the routine's output that
/// the region's output `j` is (several outputs of one decomposition are one call); each output
/// is C-contiguous, of the node's dtype and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinalgCall {
    pub kind: LinalgKind,
    pub dtype: DType,
    pub batch: Shape,
    pub m: usize,
    pub n: usize,
    pub a: Strided,
    /// `solve`'s right-hand sides and their column count `k`.
    pub b: Option<(Strided, usize)>,
    pub outputs: Vec<u8>,
    /// The dtype and shape of each region output.
    pub out_types: Vec<(DType, Shape)>,
}

/// One library call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VendorCall {
    MatMul(MatMulCall),
    Fft(FftCall),
    Linalg(LinalgCall),
}

/// The routine of a linear-algebra node, `None` for the other ops.
pub fn linalg_kind(op: OpKind, attrs: &Attrs) -> Option<LinalgKind> {
    let full = matches!(attrs, Attrs::Linalg { full_matrices: true, .. });
    Some(match op {
        OpKind::Cholesky => LinalgKind::Cholesky,
        OpKind::Solve => LinalgKind::Solve,
        OpKind::Inv => LinalgKind::Inv,
        OpKind::Det => LinalgKind::Det,
        OpKind::Slogdet => LinalgKind::Slogdet,
        OpKind::Qr => LinalgKind::Qr { full },
        OpKind::Svd => LinalgKind::Svd { full },
        OpKind::Eigh => LinalgKind::Eigh,
        OpKind::MatMul | OpKind::Fft | OpKind::Rfft | OpKind::Irfft => return None,
        kiln_ir::ops_not_of!(Vendor) => return None,
    })
}

/// The library call of a vendor region. Unsupported: a region that is not one vendor op over
/// views of its inputs.
pub fn plan(region: &Region) -> Result<VendorCall, Unsupported> {
    let body = &region.body;
    let unsupported = |op: Option<&'static str>, why: &str| Unsupported::new(op, why.to_string());
    if let Some(first) = body.outputs().first() {
        let node = body.node(*first);
        if let Some(kind) = linalg_kind(node.op, &node.attrs) {
            return plan_linalg(region, kind);
        }
    }
    let [out] = body.outputs() else {
        return Err(unsupported(None, "a vendor region with several outputs"));
    };
    // A matmul with an absorbed epilogue: the call is the matmul's, carrying the epilogue.
    let (out, epilogue) = match absorbed_form(body) {
        Some((form, product, bias)) => {
            (product, Some(GemmEpilogue { form, bias: bias.map(|b| b as usize) }))
        }
        None => (*out, None),
    };
    let node = body.node(out);
    let name = Some(node.op.name());
    let operand = |id: NodeId| -> Result<Strided, Unsupported> {
        match layout_over_base(body, id) {
            Some((base, layout)) => match body.node(base).attrs {
                Attrs::Input { index } => Ok(Strided { input: index as usize, layout }),
                _ => Err(unsupported(name, "an operand that is not a view of a region input")),
            },
            None => Err(unsupported(name, "an operand reshaped in a way strides cannot express")),
        }
    };
    let call = match (node.op, &node.attrs) {
        (OpKind::MatMul, Attrs::None) => {
            let (a, b) = (operand(node.inputs[0])?, operand(node.inputs[1])?);
            let rank = node.shape.len();
            let batch: Shape = node.shape[..rank - 2].into();
            let (m, n) = (node.shape[rank - 2], node.shape[rank - 1]);
            let k = *a.layout.shape.last().expect("matmul operands have rank >= 2");
            let widen = |s: Strided, rows: usize, cols: usize| {
                let mut full = batch.clone();
                full.extend([rows, cols]);
                Strided { input: s.input, layout: s.layout.broadcast_to(&full) }
            };
            VendorCall::MatMul(MatMulCall {
                dtype: node.dtype,
                m,
                n,
                k,
                a: widen(a, m, k),
                b: widen(b, k, n),
                batch,
                epilogue,
            })
        }
        (OpKind::Fft | OpKind::Rfft | OpKind::Irfft, attrs) => {
            let (kind, axes, norm) = match (node.op, attrs) {
                (OpKind::Fft, Attrs::Fft { axes, inverse, norm }) => {
                    (FftKind::C2C { inverse: *inverse }, axes, *norm)
                }
                (OpKind::Rfft, Attrs::RealFft { axes, n, norm }) => {
                    (FftKind::R2C { n: *n }, axes, *norm)
                }
                (OpKind::Irfft, Attrs::RealFft { axes, n, norm }) => {
                    (FftKind::C2R { n: *n }, axes, *norm)
                }
                (OpKind::Fft | OpKind::Rfft | OpKind::Irfft | OpKind::MatMul, _)
                | (linalg_ops!(), _)
                | (kiln_ir::ops_not_of!(Vendor), _) => {
                    return Err(unsupported(name, "an FFT with attributes of another schema"))
                }
            };
            let input = operand(node.inputs[0])?;
            VendorCall::Fft(FftCall {
                kind,
                axes: axes.clone(),
                norm,
                in_dtype: body.node(node.inputs[0]).dtype,
                input,
                out_dtype: node.dtype,
                out_shape: node.shape.clone(),
            })
        }
        (OpKind::MatMul, _) | (linalg_ops!(), _) | (kiln_ir::ops_not_of!(Vendor), _) => {
            return Err(unsupported(name, "a vendor region whose output is not a library op"))
        }
    };
    Ok(call)
}

/// The strided operand `id` of a vendor region's body: a view chain over a region input.
fn operand_of(
    body: &kiln_ir::Graph,
    id: NodeId,
    name: &'static str,
) -> Result<Strided, Unsupported> {
    match layout_over_base(body, id) {
        Some((base, layout)) => match body.node(base).attrs {
            Attrs::Input { index } => Ok(Strided { input: index as usize, layout }),
            _ => Err(Unsupported::new(
                Some(name),
                "an operand that is not a view of a region input".to_string(),
            )),
        },
        None => Err(Unsupported::new(
            Some(name),
            "an operand reshaped in a way strides cannot express".to_string(),
        )),
    }
}

/// The call of a region whose outputs are outputs of one decomposition of one operand.
fn plan_linalg(region: &Region, kind: LinalgKind) -> Result<VendorCall, Unsupported> {
    let body = &region.body;
    let first = body.node(body.outputs()[0]);
    let name = first.op.name();
    let mut outputs = Vec::new();
    let mut out_types = Vec::new();
    for &o in body.outputs() {
        let node = body.node(o);
        if linalg_kind(node.op, &node.attrs) != Some(kind) || node.inputs != first.inputs {
            return Err(Unsupported::new(
                Some(name),
                "a region whose outputs are not of one decomposition".to_string(),
            ));
        }
        outputs.push(match node.attrs {
            Attrs::Linalg { output, .. } => output,
            _ => 0,
        });
        out_types.push((node.dtype, node.shape.clone()));
    }
    let a_id = first.inputs[0];
    let a_node = body.node(a_id);
    let r = a_node.shape.len();
    let a = operand_of(body, a_id, name)?;
    let b = match kind {
        LinalgKind::Solve => {
            let b_id = first.inputs[1];
            let k = body.node(b_id).shape[r - 1];
            Some((operand_of(body, b_id, name)?, k))
        }
        _ => None,
    };
    Ok(VendorCall::Linalg(LinalgCall {
        kind,
        dtype: a_node.dtype,
        batch: a_node.shape[..r - 2].into(),
        m: a_node.shape[r - 2],
        n: a_node.shape[r - 1],
        a,
        b,
        outputs,
        out_types,
    }))
}
