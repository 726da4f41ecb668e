//! The linear-algebra ops (`cholesky`, `solve`, `inv`, `det`, `slogdet`, `qr`, `svd`, `eigh`)
//! in the evaluator: each matrix of the batch is widened to float64 or complex128, computed by
//! the textbook algorithms of [`super::linalg`], and the node's output is rounded to its dtype
//! once. A matrix the op cannot take (not positive definite, singular) is
//! [`IrError::LinAlg`], NumPy's `LinAlgError` messages.

use num_complex::Complex64;

use super::linalg::{self, Failure, Scalar};
use super::value::Value;
use super::Tensor;
use crate::dtype::DTypeKind;
use crate::error::IrError;
use crate::graph::{Attrs, Node};
use crate::ops::OpKind;
use crate::shape::numel;

/// A scalar the evaluator's values convert to and from.
trait Elem: Scalar {
    fn get(v: Value) -> Self;
    fn put(self) -> Value;
}

impl Elem for f64 {
    fn get(v: Value) -> f64 {
        match v {
            Value::Float(x) => x,
            other => unreachable!("a float operand holds floats, got {other:?}"),
        }
    }
    fn put(self) -> Value {
        Value::Float(self)
    }
}

impl Elem for Complex64 {
    fn get(v: Value) -> Complex64 {
        match v {
            Value::Complex(z) => z,
            other => unreachable!("a complex operand holds complex values, got {other:?}"),
        }
    }
    fn put(self) -> Value {
        Value::Complex(self)
    }
}

/// NumPy's `LinAlgError` for `failure` of `op` on an operand of shape `shape`.
pub(crate) fn failure_error(op: OpKind, shape: &[usize], failure: Failure) -> IrError {
    let message = match failure {
        Failure::NotPositiveDefinite => "Matrix is not positive definite",
        Failure::Singular => "Singular matrix",
    };
    IrError::LinAlg { op: op.name().into(), shape: shape.into(), message: message.into() }
}

/// `node` (a linear-algebra op) applied to `args`.
pub(super) fn apply(node: &Node, args: &[&Tensor]) -> Result<Tensor, IrError> {
    let vals = match args[0].dtype.kind() {
        DTypeKind::Complex => run::<Complex64>(node, args)?,
        _ => run::<f64>(node, args)?,
    };
    debug_assert_eq!(vals.len(), numel(&node.shape));
    Ok(Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }.cast_to(node.dtype))
}

fn run<T: Elem>(node: &Node, args: &[&Tensor]) -> Result<Vec<Value>, IrError> {
    let a = args[0];
    let r = a.shape.len();
    let (m, n) = (a.shape[r - 2], a.shape[r - 1]);
    let batch = numel(&a.shape[..r - 2]);
    let (output, full) = match node.attrs {
        Attrs::Linalg { output, full_matrices } => (output, full_matrices),
        _ => (0, false),
    };
    let matrix = |t: &Tensor, i: usize, len: usize| -> Vec<T> {
        t.vals[i * len..(i + 1) * len].iter().map(|&v| T::get(v)).collect()
    };
    let fail = |f: Failure| failure_error(node.op, &a.shape, f);
    let mut out: Vec<Value> = Vec::with_capacity(numel(&node.shape));
    let put = |out: &mut Vec<Value>, xs: Vec<T>| out.extend(xs.into_iter().map(T::put));
    let put_real =
        |out: &mut Vec<Value>, xs: Vec<f64>| out.extend(xs.into_iter().map(Value::Float));
    for i in 0..batch {
        let x = matrix(a, i, m * n);
        match node.op {
            OpKind::Cholesky => put(&mut out, linalg::cholesky(n, &x).map_err(fail)?),
            OpKind::Inv => put(&mut out, linalg::inv(n, &x).map_err(fail)?),
            OpKind::Solve => {
                let k = args[1].shape[r - 1];
                let b = matrix(args[1], i, n * k);
                put(&mut out, linalg::solve(n, k, &x, &b).map_err(fail)?)
            }
            OpKind::Det => out.push(linalg::det(n, &x).put()),
            OpKind::Slogdet => {
                let (sign, logabs) = linalg::slogdet(n, &x);
                out.push(if output == 0 { sign.put() } else { Value::Float(logabs) })
            }
            OpKind::Qr => {
                let (q, rr) = linalg::qr(m, n, &x, full);
                put(&mut out, if output == 0 { q } else { rr })
            }
            OpKind::Svd => {
                let (u, s, vh) = linalg::svd(m, n, &x, full);
                match output {
                    0 => put(&mut out, u),
                    1 => put_real(&mut out, s),
                    _ => put(&mut out, vh),
                }
            }
            OpKind::Eigh => {
                let (w, v) = linalg::eigh(n, &x);
                match output {
                    0 => put_real(&mut out, w),
                    _ => put(&mut out, v),
                }
            }
            _ => unreachable!("{} is not a linear-algebra op", node.op.name()),
        }
    }
    Ok(out)
}
