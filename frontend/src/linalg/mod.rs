//! `kiln::linalg` (`numpy.linalg`): matrix products (`matmul`, `a @ b`, and `dot`, NumPy's
//! rules for 1-D operands and batches, here), decompositions and solvers (module
//! `decompositions`).
//!
//! The operands are promoted to one dtype (`np.result_type`) and become one IR `matmul` node,
//! a vendor op: cuBLAS on the GPU, the `gemm` crate on the host, transposed and other strided
//! views passed as strides rather than copied (see `kiln_compiler::vendor`).

mod decompositions;
mod derived;

pub use decompositions::{
    cholesky, det, eigh, eigvalsh, inv, linalg_dtype, qr, slogdet, solve, svd, svdvals,
    try_cholesky, try_det, try_eigh, try_eigvalsh, try_inv, try_qr, try_slogdet, try_solve,
    try_svd, try_svdvals, QrMode,
};
pub use derived::{
    cond, lstsq, matrix_power, matrix_rank, norm, pinv, trace, try_cond, try_lstsq,
    try_matrix_power, try_matrix_rank, try_norm, try_pinv, try_trace, NormOrd,
};

use kiln_ir::promote::result_type;
use kiln_ir::shape::broadcast_shapes;
use kiln_ir::{Attrs, IrError, OpKind, Shape};

use crate::array::Array;
use crate::elementwise::binary;
use crate::error::Result;

mod axes;
pub use axes::{matmul_axes, try_matmul_axes, CoreAxes, MatmulAxes};
mod einsum;
pub use einsum::{einsum, try_einsum};
mod products;
pub use products::{
    inner, kron, outer, tensordot, try_inner, try_kron, try_outer, try_tensordot, try_vdot,
    try_vecdot, vdot, vecdot, TensordotAxes,
};

/// NumPy's message for a matmul operand of rank 0.
fn rank0(op: &str, operand: usize, shape: &[usize]) -> IrError {
    IrError::InvalidShape {
        op: op.into(),
        shape: shape.into(),
        message: format!(
            "input operand {operand} does not have enough dimensions (has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)"
        ),
    }
}

/// `np.matmul(a, b)` (`a @ b`): the product over the last axis of `a` and the second-to-last of
/// `b` (the last, for 1-D `b`); batch axes broadcast. A 1-D `a` is a row (its axis is removed
/// from the result), a 1-D `b` a column (likewise): two 1-D operands give their inner product,
/// rank 0.
///
/// Shapes: `(.., m, k) @ (.., k, n) -> broadcast(..) + (m, n)`. Dtypes: `result_type(a, b)`, any
/// dtype (integers wrap as NumPy's; bools give `any(a and b)`); float16 and bfloat16 accumulate
/// in float32.
///
/// Errors: a rank-0 operand ([`IrError::InvalidShape`]); inner extents that differ
/// ([`IrError::MatMulShape`], naming both shapes); batch axes that do not broadcast
/// ([`IrError::Broadcast`], naming both shapes).
pub fn try_matmul(a: &Array, b: &Array) -> Result<Array> {
    product("matmul", a, b)
}

/// [`try_matmul`], panicking on error.
#[track_caller]
pub fn matmul(a: &Array, b: &Array) -> Array {
    crate::unwrap(try_matmul(a, b))
}

/// `np.dot(a, b)`: for operands of rank 0 `a * b`; for ranks up to 2 and for 1-D `b` as
/// [`try_matmul`]; otherwise the sum product over the last axis of `a` and the second-to-last of
/// `b`, every other axis kept: `dot(a, b)[i.., j.., m] = sum(a[i.., :] * b[j.., :, m])`, shape
/// `a.shape[:-1] + b.shape[:-2] + b.shape[-1:]` (no broadcasting, unlike matmul).
///
/// Errors: inner extents that differ ([`IrError::MatMulShape`] naming both shapes); the errors of
/// `multiply` for rank-0 operands.
pub fn try_dot(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return binary(OpKind::Mul, a.into(), b.into());
    }
    if (a.ndim() <= 2 && b.ndim() <= 2) || b.ndim() == 1 {
        return product("dot", a, b);
    }
    let k = a.shape()[a.ndim() - 1];
    let kb = b.shape()[b.ndim() - 2];
    if k != kb {
        return Err(IrError::MatMulShape {
            op: "dot".into(),
            a: a.shape().into(),
            b: b.shape().into(),
            k1: k,
            k2: kb,
        }
        .into());
    }
    // (P, k) @ (k, Q), with b's contracted axis moved first.
    let nb = b.ndim() as i64;
    let mut perm = vec![nb - 2];
    perm.extend(0..nb - 2);
    perm.push(nb - 1);
    let b2 = b.try_permute(&perm)?.try_reshape(&[k as i64, -1])?;
    let a2 = a.try_reshape(&[-1, k as i64])?;
    let mut out: Vec<i64> = a.shape()[..a.ndim() - 1].iter().map(|&d| d as i64).collect();
    out.extend(b.shape()[..b.ndim() - 2].iter().map(|&d| d as i64));
    out.push(b.shape()[b.ndim() - 1] as i64);
    product("dot", &a2, &b2)?.try_reshape(&out)
}

/// [`try_dot`], panicking on error.
#[track_caller]
pub fn dot(a: &Array, b: &Array) -> Array {
    crate::unwrap(try_dot(a, b))
}

/// The matmul of `a` and `b` with NumPy's 1-D promotion and removal, errors naming `op`.
fn product(op: &str, a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 {
        return Err(rank0(op, 0, a.shape()).into());
    }
    if b.ndim() == 0 {
        return Err(rank0(op, 1, b.shape()).into());
    }
    let (sa, sb) = (a.shape(), b.shape());
    let k1 = sa[sa.len() - 1];
    let k2 = if sb.len() == 1 { sb[0] } else { sb[sb.len() - 2] };
    if k1 != k2 {
        return Err(
            IrError::MatMulShape { op: op.into(), a: sa.into(), b: sb.into(), k1, k2 }.into()
        );
    }
    let batch = |s: &[usize]| -> Shape { s[..s.len().saturating_sub(2)].into() };
    broadcast_shapes(op, &batch(sa), &batch(sb))
        .map_err(|_| IrError::Broadcast { op: op.into(), shapes: vec![sa.into(), sb.into()] })?;
    let dtype = result_type(a.dtype(), b.dtype());
    let (mut a2, mut b2) = (a.cast_to(dtype), b.cast_to(dtype));
    if a.ndim() == 1 {
        a2 = a2.try_expand_dims(&[0])?;
    }
    if b.ndim() == 1 {
        b2 = b2.try_expand_dims(&[1])?;
    }
    let r = Array::apply(OpKind::MatMul, Attrs::None, &[&a2, &b2])?;
    let rank = r.ndim() as i64;
    let drop: Vec<i64> = [(a.ndim() == 1, rank - 2), (b.ndim() == 1, rank - 1)]
        .into_iter()
        .filter_map(|(one_d, axis)| one_d.then_some(axis))
        .collect();
    if drop.is_empty() {
        Ok(r)
    } else {
        r.try_squeeze(Some(&drop))
    }
}

impl Array {
    /// `a @ b` ([`try_matmul`]).
    pub fn try_matmul(&self, other: &Array) -> Result<Array> {
        try_matmul(self, other)
    }

    /// `a @ b`. Panics where [`try_matmul`] errs.
    #[track_caller]
    pub fn matmul(&self, other: &Array) -> Array {
        matmul(self, other)
    }

    /// `a.dot(b)` ([`try_dot`]).
    pub fn try_dot(&self, other: &Array) -> Result<Array> {
        try_dot(self, other)
    }

    /// `a.dot(b)`. Panics where [`try_dot`] errs.
    #[track_caller]
    pub fn dot(&self, other: &Array) -> Array {
        dot(self, other)
    }
}
