//! `numpy.linalg` functions built from the decompositions and ordinary array ops (so they fuse
//! with what surrounds them): `lstsq`, `pinv`, `matrix_rank`, `matrix_power`, `norm`, `cond`,
//! `trace`.

use kiln_ir::{DType, IrError};

use super::decompositions::{linalg_dtype, try_inv, try_svd, try_svdvals};
use super::{try_matmul, Array};
use crate::elementwise::try_where_;
use crate::error::{Error, Result};
use crate::reduce::AxisArg;

/// The machine epsilon of `dtype`'s real precision (float32 or float64).
fn eps(dtype: DType) -> f64 {
    match dtype.real_dtype() {
        DType::Float64 => f64::EPSILON,
        _ => f32::EPSILON as f64,
    }
}

fn value_err(op: &str, message: String) -> Error {
    Error::Value { op: op.into(), message }
}

fn need_matrix(op: &str, a: &Array) -> Result<()> {
    if a.ndim() < 2 {
        return Err(IrError::InvalidShape {
            op: op.into(),
            shape: a.shape().into(),
            message: format!(
                "{}-dimensional array given. Array must be at least two-dimensional",
                a.ndim()
            ),
        }
        .into());
    }
    Ok(())
}

/// The conjugate transpose of the last two axes.
fn adjoint(a: &Array) -> Result<Array> {
    let t = a.swapaxes(-1, -2);
    Ok(if super::decompositions::is_complex(a.dtype()) { t.conj() } else { t })
}

/// `1/s` where `s > cutoff` (broadcast over the last axis), else 0.
fn inverse_above(s: &Array, cutoff: &Array) -> Result<Array> {
    let keep = s.try_greater(cutoff)?;
    try_where_(&keep, &s.try_reciprocal()?, 0.0)
}

/// `np.linalg.pinv(a, rcond)`: the Moore–Penrose pseudo-inverse `(.., n, m)` of `a`
/// `(.., m, n)`, from its SVD: singular values at most `rcond * max(s)` count as 0. `rcond`
/// defaults to 1e-15 (NumPy's). Dtype: the [`linalg_dtype`].
///
/// Errors: rank below 2 ([`IrError::InvalidShape`]).
pub fn try_pinv(a: &Array, rcond: Option<f64>) -> Result<Array> {
    pinv_of(a, rcond).map_err(|e| e.within("pinv"))
}

/// [`try_pinv`]'s steps (errors of the ops it is made of name them).
fn pinv_of(a: &Array, rcond: Option<f64>) -> Result<Array> {
    need_matrix("pinv", a)?;
    let r = a.ndim();
    let (m, n) = (a.shape()[r - 2], a.shape()[r - 1]);
    if m == 0 || n == 0 {
        let shape: Vec<usize> = a.shape()[..r - 2].iter().copied().chain([n, m]).collect();
        return Ok(crate::zeros(&shape, linalg_dtype(a.dtype())));
    }
    let (u, s, vh) = try_svd(a, false)?;
    let cutoff =
        s.try_max(AxisArg::from(-1i64).keepdims())?.try_multiply(rcond.unwrap_or(1e-15))?;
    let sinv = inverse_above(&s, &cutoff)?.try_expand_dims(&[-1])?;
    // V · diag(1/s) · Uᴴ
    try_matmul(&adjoint(&vh)?, &sinv.try_multiply(&adjoint(&u)?)?)
}

/// `np.linalg.matrix_rank(a, tol)`: the number of singular values above `tol` (default
/// `max(s) * max(m, n) * eps`), int64 of shape `(..)`. A 1-D or 0-d `a` has rank 1 unless all
/// its elements are 0 (NumPy's rule).
///
/// Errors: none at the call for arrays of rank 2 or more.
pub fn try_matrix_rank(a: &Array, tol: Option<f64>) -> Result<Array> {
    matrix_rank_of(a, tol).map_err(|e| e.within("matrix_rank"))
}

/// [`try_matrix_rank`]'s steps (errors of the ops it is made of name them).
fn matrix_rank_of(a: &Array, tol: Option<f64>) -> Result<Array> {
    if a.ndim() < 2 {
        return Ok(a.try_not_equal(0)?.try_any(AxisArg::default())?.astype(DType::Int64));
    }
    let r = a.ndim();
    let (m, n) = (a.shape()[r - 2], a.shape()[r - 1]);
    if m == 0 || n == 0 {
        return Ok(crate::zeros(&a.shape()[..r - 2], DType::Int64));
    }
    let s = try_svdvals(a)?;
    let tol = match tol {
        Some(t) => Array::scalar(t).cast_to(s.dtype()),
        None => s
            .try_max(AxisArg::from(-1i64).keepdims())?
            .try_multiply(m.max(n) as f64 * eps(s.dtype()))?,
    };
    Ok(s.try_greater(&tol)?.try_sum(-1i64)?.astype(DType::Int64))
}

/// `np.linalg.matrix_power(a, n)`: `a` multiplied by itself `n` times (repeated squaring:
/// about 2·log2(n) products), the identity for `n = 0`, powers of `inv(a)` for `n < 0`. `a`:
/// `(.., m, m)`; the result has its shape and dtype (the [`linalg_dtype`] for `n < 0`).
///
/// Errors: rank below 2 or non-square ([`IrError::InvalidShape`]); when computed, a singular
/// `a` with `n < 0` ([`IrError::LinAlg`]).
pub fn try_matrix_power(a: &Array, n: i64) -> Result<Array> {
    need_matrix("matrix_power", a)?;
    let r = a.ndim();
    let m = a.shape()[r - 1];
    if a.shape()[r - 2] != m {
        return Err(IrError::InvalidShape {
            op: "matrix_power".into(),
            shape: a.shape().into(),
            message: "Last 2 dimensions of the array must be square".into(),
        }
        .into());
    }
    if n == 0 {
        return crate::identity(m, a.dtype()).try_broadcast_to(a.shape());
    }
    let base = if n < 0 { try_inv(a)? } else { a.clone() };
    let mut k = n.unsigned_abs();
    let mut square = base;
    let mut result: Option<Array> = None;
    loop {
        if k & 1 == 1 {
            result = Some(match result {
                None => square.clone(),
                Some(r) => try_matmul(&r, &square)?,
            });
        }
        k >>= 1;
        if k == 0 {
            break;
        }
        square = try_matmul(&square, &square)?;
    }
    Ok(result.expect("n != 0"))
}

/// `np.linalg.norm`'s `ord`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NormOrd {
    /// `'fro'`: the Frobenius norm (matrices).
    Fro,
    /// `'nuc'`: the nuclear norm, the sum of singular values (matrices).
    Nuc,
    /// `inf`: max of `|x|` (vectors), max row sum of `|x|` (matrices).
    Inf,
    /// `-inf`: min of `|x|` (vectors), min row sum (matrices).
    NegInf,
    /// A number: `sum(|x|**p)**(1/p)` for vectors (0 counts non-zeros); for matrices 1 and -1
    /// (max/min column sum), 2 and -2 (largest/smallest singular value).
    P(f64),
}

fn norm_err(message: &str) -> Error {
    value_err("norm", message.into())
}

/// `np.linalg.norm(a, ord, axis, keepdims)`. `axis`: `None` (a 1-D or 2-D `a` by `ord`'s rule,
/// or, with `ord` `None`, the 2-norm of the flattened array), one axis (vector norms) or two
/// (matrix norms). Result: real dtype of the [`linalg_dtype`] (float64 for integers), the
/// norm axes removed (kept as 1 with `keepdims`).
///
/// Errors: `ord` `None` is the 2-norm (vectors) or Frobenius (matrices); `Fro`/`Nuc` over one
/// axis, or a vector-only `ord` over two, or more than two axes: [`Error::Value`]; axes out of
/// range ([`IrError::AxisOutOfBounds`]).
pub fn try_norm(
    a: &Array,
    ord: Option<NormOrd>,
    axis: Option<&[i64]>,
    keepdims: bool,
) -> Result<Array> {
    let x = a.cast_to(linalg_dtype(a.dtype()));
    let nd = x.ndim() as i64;
    let axes: Vec<i64> = match axis {
        Some(ax) => ax.to_vec(),
        None if ord.is_none() => {
            // The 2-norm of the flattened array.
            let all: Vec<i64> = (0..nd).collect();
            return sum_sq_sqrt(&x, &all, keepdims);
        }
        None => (0..nd).collect(),
    };
    for &ax in &axes {
        if ax < -nd || ax >= nd {
            return Err(IrError::AxisOutOfBounds {
                op: "norm".into(),
                axis: ax,
                rank: nd as usize,
            }
            .into());
        }
    }
    let absx = x.try_abs()?;
    let arg = |axes: &[i64]| {
        let a = AxisArg::from(axes.to_vec());
        if keepdims {
            a.keepdims()
        } else {
            a
        }
    };
    match axes.len() {
        1 => match ord {
            None => sum_sq_sqrt(&x, &axes, keepdims),
            Some(NormOrd::Inf) => absx.try_max(arg(&axes)),
            Some(NormOrd::NegInf) => absx.try_min(arg(&axes)),
            Some(NormOrd::P(p)) if p == 0.0 => {
                Ok(absx.try_not_equal(0)?.try_sum(arg(&axes))?.astype(absx.dtype()))
            }
            Some(NormOrd::P(p)) if p == 1.0 => absx.try_sum(arg(&axes)),
            Some(NormOrd::P(p)) if p == 2.0 => sum_sq_sqrt(&x, &axes, keepdims),
            Some(NormOrd::P(p)) => absx.try_power(p)?.try_sum(arg(&axes))?.try_power(1.0 / p),
            Some(NormOrd::Fro | NormOrd::Nuc) => Err(norm_err("Invalid norm order for vectors.")),
        },
        2 => {
            let norm_ax = |k: i64| if k < 0 { k + nd } else { k };
            let (r, c) = (norm_ax(axes[0]), norm_ax(axes[1]));
            if r == c {
                return Err(norm_err("Duplicate axes given."));
            }
            // Matrix norms of the singular values: move the axes last.
            let svd_based = |f: &dyn Fn(&Array) -> Result<Array>| -> Result<Array> {
                let rest: Vec<i64> = (0..nd).filter(|&k| k != r && k != c).collect();
                let perm: Vec<i64> = rest.iter().copied().chain([r, c]).collect();
                let s = try_svdvals(&x.try_permute(&perm)?)?;
                let out = f(&s)?;
                if keepdims {
                    let mut keep = [r, c];
                    keep.sort();
                    out.try_expand_dims(&keep)
                } else {
                    Ok(out)
                }
            };
            match ord {
                None | Some(NormOrd::Fro) => sum_sq_sqrt(&x, &[r, c], keepdims),
                Some(NormOrd::Nuc) => svd_based(&|s| s.try_sum(-1i64)),
                Some(NormOrd::P(p)) if p == 2.0 => svd_based(&|s| s.try_max(-1i64)),
                Some(NormOrd::P(p)) if p == -2.0 => svd_based(&|s| s.try_min(-1i64)),
                Some(NormOrd::P(p)) if p == 1.0 || p == -1.0 => {
                    // Column sums (over the row axis), then the max/min over both axes.
                    let sums = absx.try_sum(AxisArg::from(r).keepdims())?;
                    if p > 0.0 {
                        sums.try_max(arg(&[r, c]))
                    } else {
                        sums.try_min(arg(&[r, c]))
                    }
                }
                Some(NormOrd::Inf | NormOrd::NegInf) => {
                    // Row sums (over the column axis), then the max/min over both axes.
                    let sums = absx.try_sum(AxisArg::from(c).keepdims())?;
                    if ord == Some(NormOrd::Inf) {
                        sums.try_max(arg(&[r, c]))
                    } else {
                        sums.try_min(arg(&[r, c]))
                    }
                }
                Some(NormOrd::P(_)) => Err(norm_err("Invalid norm order for matrices.")),
            }
        }
        _ => Err(norm_err("Improper number of dimensions to norm.")),
    }
}

/// `sqrt(sum(|x|²))` over `axes`.
fn sum_sq_sqrt(x: &Array, axes: &[i64], keepdims: bool) -> Result<Array> {
    let a = x.try_abs()?;
    let arg = AxisArg::from(axes.to_vec());
    let arg = if keepdims { arg.keepdims() } else { arg };
    a.try_multiply(&a)?.try_sum(arg)?.try_sqrt()
}

/// `np.linalg.cond(a, p)`: the condition number of each matrix of `a` `(.., m, n)`: for `p`
/// `None` or 2 the ratio of the largest to the smallest singular value (`-2`: its inverse);
/// for the other orders `norm(a, p) * norm(inv(a), p)` (square `a`). Shape `(..)`, real dtype.
///
/// Errors: rank below 2 ([`IrError::InvalidShape`]); a non-square `a` with an order other
/// than ±2; when computed, a singular `a` for those orders ([`IrError::LinAlg`]).
pub fn try_cond(a: &Array, p: Option<NormOrd>) -> Result<Array> {
    need_matrix("cond", a)?;
    match p {
        None | Some(NormOrd::P(2.0)) | Some(NormOrd::P(-2.0)) => {
            let s = try_svdvals(a)?;
            let (hi, lo) = (s.try_max(-1i64)?, s.try_min(-1i64)?);
            if p == Some(NormOrd::P(-2.0)) {
                lo.try_divide(&hi)
            } else {
                hi.try_divide(&lo)
            }
        }
        Some(ord) => {
            let axes = [-2i64, -1];
            try_norm(a, Some(ord), Some(&axes), false)?.try_multiply(&try_norm(
                &try_inv(a)?,
                Some(ord),
                Some(&axes),
                false,
            )?)
        }
    }
}

/// `np.linalg.trace(a, offset)`: the sum of each matrix's diagonal `a[.., i, i + offset]` over
/// the last two axes, shape `(..)`; NumPy's sum dtype (integers → int64).
///
/// Errors: rank below 2 ([`IrError::InvalidShape`]).
pub fn try_trace(a: &Array, offset: i64) -> Result<Array> {
    need_matrix("trace", a)?;
    let r = a.ndim();
    let (m, n) = (a.shape()[r - 2], a.shape()[r - 1]);
    let mask = crate::eye(m, Some(n), offset, DType::Bool);
    try_where_(&mask, a, 0)?.astype(a.dtype()).try_sum([-2i64, -1])
}

/// `np.linalg.lstsq(a, b, rcond)`: the least-squares solution of `a @ x = b` by the SVD of `a`
/// `(m, n)`, singular values at most `rcond * max(s)` treated as 0 (default
/// `eps * max(m, n)`, NumPy's). `b`: `(m,)` or `(m, k)`. Returns `(x, residuals, rank, s)`:
/// `x` `(n,)` or `(n, k)`; `residuals` the squared 2-norms of `b - a @ x` per column, `(k,)`
/// (`(1,)` for 1-D `b`), or empty `(0,)` when `rank < n` or `m <= n`; `rank` int64 of shape
/// `()`; `s` the singular values `(min(m, n),)`. Whether there are residuals depends on the
/// rank, so the call computes `a`'s singular values and reads the rank back (one
/// synchronisation).
///
/// Errors: `a` not 2-D or `b` not 1-D/2-D ([`IrError::InvalidShape`]); `b`'s rows not `m`
/// ([`IrError::ShapeMismatch`]); when computed, the errors of the SVD.
pub fn try_lstsq(a: &Array, b: &Array, rcond: Option<f64>) -> Result<(Array, Array, Array, Array)> {
    let bad = |x: &Array, what: &str| -> Error {
        IrError::InvalidShape { op: "lstsq".into(), shape: x.shape().into(), message: what.into() }
            .into()
    };
    if a.ndim() != 2 {
        return Err(bad(a, "a must be 2-dimensional"));
    }
    if b.ndim() != 1 && b.ndim() != 2 {
        return Err(bad(b, "b must be 1- or 2-dimensional"));
    }
    let (m, n) = (a.shape()[0], a.shape()[1]);
    if b.shape()[0] != m {
        return Err(IrError::ShapeMismatch {
            op: "lstsq".into(),
            shapes: vec![a.shape().into(), b.shape().into()],
        }
        .into());
    }
    let dtype = linalg_dtype(kiln_ir::promote::result_type(a.dtype(), b.dtype()));
    let (a, b) = (a.cast_to(dtype), b.cast_to(dtype));
    let vector = b.ndim() == 1;
    let b2 = if vector { b.try_expand_dims(&[1])? } else { b.clone() };
    let (u, s, vh) = try_svd(&a, false)?;
    let rcond = rcond.unwrap_or(eps(dtype) * m.max(n) as f64);
    let cutoff = s.try_max(AxisArg::from(-1i64).keepdims())?.try_multiply(rcond)?;
    let (s_host, rank) = if m.min(n) == 0 {
        (s.clone(), 0usize)
    } else {
        let keep = s.try_greater(&cutoff)?;
        let r = keep.try_sum(AxisArg::default())?.try_item::<i64>()? as usize;
        (s.clone(), r)
    };
    let sinv = if m.min(n) == 0 { s.clone() } else { inverse_above(&s, &cutoff)? };
    let x = try_matmul(
        &adjoint(&vh)?,
        &sinv.try_expand_dims(&[-1])?.try_multiply(&try_matmul(&adjoint(&u)?, &b2)?)?,
    )?;
    let residuals = if rank == n && m > n {
        let r = b2.try_subtract(&try_matmul(&a, &x)?)?.try_abs()?;
        r.try_multiply(&r)?.try_sum(0i64)?
    } else {
        crate::zeros(&[0], dtype.real_dtype())
    };
    let x = if vector { x.try_squeeze(Some(&[-1]))? } else { x };
    let rank = Array::scalar(rank as i64);
    Ok((x, residuals, rank, s_host))
}

macro_rules! panicking {
    ($($(#[$m:meta])* $name:ident($($arg:ident: $t:ty),*) -> $r:ty = $try:ident;)*) => {$(
        $(#[$m])*
        #[track_caller]
        pub fn $name($($arg: $t),*) -> $r {
            crate::unwrap($try($($arg),*))
        }
    )*};
}

panicking! {
    /// [`try_pinv`], panicking on error.
    pinv(a: &Array, rcond: Option<f64>) -> Array = try_pinv;
    /// [`try_matrix_rank`], panicking on error.
    matrix_rank(a: &Array, tol: Option<f64>) -> Array = try_matrix_rank;
    /// [`try_matrix_power`], panicking on error.
    matrix_power(a: &Array, n: i64) -> Array = try_matrix_power;
    /// [`try_norm`], panicking on error.
    norm(a: &Array, ord: Option<NormOrd>, axis: Option<&[i64]>, keepdims: bool) -> Array = try_norm;
    /// [`try_cond`], panicking on error.
    cond(a: &Array, p: Option<NormOrd>) -> Array = try_cond;
    /// [`try_trace`], panicking on error.
    trace(a: &Array, offset: i64) -> Array = try_trace;
    /// [`try_lstsq`], panicking on error.
    lstsq(a: &Array, b: &Array, rcond: Option<f64>) -> (Array, Array, Array, Array) = try_lstsq;
}
