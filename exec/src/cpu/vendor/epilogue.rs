//! A GEMM epilogue on the host: the absorbed form applied to the GEMM's result, element by
//! element, in the reference evaluator's arithmetic (`add` rounded once to the dtype: float16
//! and bfloat16 through float32, which rounds their sums exactly once; `maximum(x, 0)` keeps
//! NaN; the tanh GELU op by op, each rounded to the dtype), so the host's results are those the
//! unabsorbed kernel computes in the evaluator.

use half::{bf16, f16};
use kiln_ir::host::Data;
use kiln_ir::HostArray;
use rayon::prelude::*;

use crate::ExecError;
use kiln_compiler::fusion::{Activation, GELU_C1, GELU_C2};
use kiln_compiler::vendor::GemmEpilogue;

/// Applies `e` to `out`, the C-contiguous product (rows of `n` elements); `bias` is the
/// epilogue's bias input for the bias forms. Errors: a bias missing, extra, or not `n` elements
/// of the product's dtype; a product of a dtype without epilogues.
pub(super) fn apply(
    e: &GemmEpilogue,
    n: usize,
    out: HostArray,
    bias: Option<&HostArray>,
) -> Result<HostArray, ExecError> {
    let invalid = |what: String| {
        ExecError::InvalidInput(format!("matmul epilogue {}: {what}", e.form.name()))
    };
    let bias = match (e.form.has_bias(), bias) {
        (true, Some(b)) if b.dtype() == out.dtype() && b.len() == n => Some(b.data()),
        (false, None) => None,
        (_, b) => {
            let b = b.map(|b| format!("{} {:?}", b.dtype(), b.shape()));
            return Err(invalid(format!(
                "a bias of {b:?} for a {} product of rows of {n}",
                out.dtype()
            )));
        }
    };
    let act = e.form.activation();
    let (shape, dtype) = (out.shape().to_vec(), out.dtype());
    let mut data = out.into_data();
    match (&mut data, bias) {
        (Data::Float32(p), Some(Data::Float32(b))) => rows(p, Some(b.as_slice()), n, act),
        (Data::Float64(p), Some(Data::Float64(b))) => rows(p, Some(b.as_slice()), n, act),
        (Data::Float16(p), Some(Data::Float16(b))) => rows(p, Some(b.as_slice()), n, act),
        (Data::BFloat16(p), Some(Data::BFloat16(b))) => rows(p, Some(b.as_slice()), n, act),
        (Data::Float32(p), None) => rows(p, None, n, act),
        (Data::Float64(p), None) => rows(p, None, n, act),
        (Data::Float16(p), None) => rows(p, None, n, act),
        (Data::BFloat16(p), None) => rows(p, None, n, act),
        _ => return Err(invalid(format!("a product of {dtype}"))),
    }
    Ok(HostArray::new(&shape, data)?)
}

/// A float element computed as the evaluator does: in f64, rounded to its type after each op
/// (exact for sums and products of float16, bfloat16 and float32, whose f64 results round
/// once).
trait Float: Copy + Send + Sync {
    fn to_f64(self) -> f64;
    fn of_f64(x: f64) -> Self;
}

impl Float for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn of_f64(x: f64) -> Self {
        x as f32
    }
}
impl Float for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn of_f64(x: f64) -> Self {
        x
    }
}
impl Float for f16 {
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn of_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
}
impl Float for bf16 {
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn of_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
}

/// `x` rounded to `T`.
fn round<T: Float>(x: f64) -> f64 {
    T::of_f64(x).to_f64()
}

/// The activation of one element, op by op as the graph computes it: `maximum(x, 0)` keeps NaN;
/// the tanh GELU is `(0.5 * x) * (1 + tanh(c1 * (x + c2 * (square(x) * x))))` with its
/// constants rounded to `T`.
fn activate<T: Float>(act: Activation, x: T) -> T {
    let v = x.to_f64();
    match act {
        Activation::None => x,
        Activation::Relu if v > 0.0 || v.is_nan() => x,
        Activation::Relu => T::of_f64(0.0),
        Activation::GeluTanh => {
            let r = round::<T>;
            let (c1, c2) = (r(GELU_C1), r(GELU_C2));
            let cube = r(r(v * v) * v);
            let inner = r(v + r(c2 * cube));
            let t = r(r(c1 * inner).tanh());
            T::of_f64(r(0.5 * v) * r(1.0 + t))
        }
    }
}

/// Each row of `n` elements of `p`: `p + bias` (with a bias), then the activation.
fn rows<T: Float>(p: &mut [T], bias: Option<&[T]>, n: usize, act: Activation) {
    if n == 0 || p.is_empty() {
        return;
    }
    // Tasks of whole rows, about 16K elements each.
    let per_task = ((1 << 14) / n).max(1) * n;
    p.par_chunks_mut(per_task).for_each(|chunk| {
        for row in chunk.chunks_mut(n) {
            if let Some(b) = bias {
                for (x, &y) in row.iter_mut().zip(b) {
                    *x = T::of_f64(x.to_f64() + y.to_f64());
                }
            }
            if act != Activation::None {
                for x in row.iter_mut() {
                    *x = activate(act, *x);
                }
            }
        }
    });
}
