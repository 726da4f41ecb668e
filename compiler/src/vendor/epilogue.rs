//! A GEMM epilogue on the host: the absorbed form applied to the GEMM's result, element by
//! element, in the reference evaluator's arithmetic (`add` rounded once to the dtype: float16
//! and bfloat16 through float32, which rounds their sums exactly once; `maximum(x, 0)` keeps
//! NaN), so the host's results are those the unabsorbed kernel computed.

use half::{bf16, f16};
use kiln_ir::host::Data;
use kiln_ir::HostArray;
use rayon::prelude::*;

use super::GemmEpilogue;
use crate::fusion::LtEpilogue;
use crate::CompileError;

/// Applies `e` to `out`, the C-contiguous product (rows of `n` elements); `bias` is the
/// epilogue's bias input for the bias forms. Errors: a bias missing, extra, or not `n` elements
/// of the product's dtype; a product of a dtype without epilogues.
pub(super) fn apply(e: &GemmEpilogue, n: usize, out: HostArray, bias: Option<&HostArray>) -> Result<HostArray, CompileError> {
    let invalid = |what: String| CompileError::InvalidInput(format!("matmul epilogue {}: {what}", e.form.name()));
    let bias = match (e.form.has_bias(), bias) {
        (true, Some(b)) if b.dtype() == out.dtype() && b.len() == n => Some(b.data()),
        (false, None) => None,
        (_, b) => {
            let b = b.map(|b| format!("{} {:?}", b.dtype(), b.shape()));
            return Err(invalid(format!("a bias of {b:?} for a {} product of rows of {n}", out.dtype())));
        }
    };
    let relu = matches!(e.form, LtEpilogue::Relu | LtEpilogue::BiasRelu);
    let (shape, dtype) = (out.shape().to_vec(), out.dtype());
    let mut data = out.into_data();
    match (&mut data, bias) {
        (Data::Float32(p), None) => rows(p, None, n, relu, |x, y| x + y, |x| x > 0.0 || x.is_nan(), 0.0),
        (Data::Float32(p), Some(Data::Float32(b))) => rows(p, Some(b), n, relu, |x, y| x + y, |x| x > 0.0 || x.is_nan(), 0.0),
        (Data::Float64(p), None) => rows(p, None, n, relu, |x, y| x + y, |x| x > 0.0 || x.is_nan(), 0.0),
        (Data::Float64(p), Some(Data::Float64(b))) => rows(p, Some(b), n, relu, |x, y| x + y, |x| x > 0.0 || x.is_nan(), 0.0),
        (Data::Float16(p), b) => {
            let b = match b {
                Some(Data::Float16(b)) => Some(b.as_slice()),
                _ => None,
            };
            rows(p, b, n, relu, |x, y| f16::from_f32(x.to_f32() + y.to_f32()), |x| x > f16::ZERO || x.is_nan(), f16::ZERO)
        }
        (Data::BFloat16(p), b) => {
            let b = match b {
                Some(Data::BFloat16(b)) => Some(b.as_slice()),
                _ => None,
            };
            rows(p, b, n, relu, |x, y| bf16::from_f32(x.to_f32() + y.to_f32()), |x| x > bf16::ZERO || x.is_nan(), bf16::ZERO)
        }
        _ => return Err(invalid(format!("a product of {dtype}"))),
    }
    Ok(HostArray::new(&shape, data)?)
}

/// Each row of `n` elements of `p`: `p + bias` (with a bias), then `maximum(p, 0)` (`relu`:
/// `keep(x)` is `x > 0 || isnan(x)`, else `zero`).
fn rows<T: Copy + Send + Sync>(
    p: &mut [T],
    bias: Option<&[T]>,
    n: usize,
    relu: bool,
    add: impl Fn(T, T) -> T + Sync,
    keep: impl Fn(T) -> bool + Sync,
    zero: T,
) {
    if n == 0 || p.is_empty() {
        return;
    }
    // Tasks of whole rows, about 16K elements each.
    let per_task = ((1 << 14) / n).max(1) * n;
    p.par_chunks_mut(per_task).for_each(|chunk| {
        for row in chunk.chunks_mut(n) {
            if let Some(b) = bias {
                for (x, &y) in row.iter_mut().zip(b) {
                    *x = add(*x, y);
                }
            }
            if relu {
                for x in row.iter_mut() {
                    if !keep(*x) {
                        *x = zero;
                    }
                }
            }
        }
    });
}
