//! NumPy's tensor products: `outer`, `inner`, `vdot`, `kron`, `tensordot` and NumPy 2's
//! `linalg.vecdot`, as compositions of lazy views, `multiply`, `sum` and `matmul` (through
//! einsum's pairwise contraction, [`super::einsum`]), so they fuse with the work around them.
//!
//! A contraction that is a matrix product (`tensordot` over some axes, `inner` of matrices)
//! becomes one IR `matmul` over reshaped views; one that sums everything it multiplies (`vdot`,
//! `inner` of vectors, `vecdot`) a broadcast `multiply` and a `sum` (one fused reduction).

use kiln_ir::promote::result_type;
use kiln_ir::shape::{broadcast_shapes, normalize_axis, ShapeDisplay};
use kiln_ir::IrError;

use super::einsum::{contract, Label, ELLIPSIS};
use crate::array::Array;
use crate::error::Result;

/// `np.outer(a, b)`: `out[i, j] = a.ravel()[i] * b.ravel()[j]`, a broadcast multiply of the
/// flattened operands.
///
/// Shapes: any `a` (M elements) and `b` (N elements) give `(M, N)`. Dtype: `multiply`'s
/// (`np.result_type`; bools give bool). Errors: none of the shapes; `multiply`'s for dtypes.
pub fn try_outer(a: &Array, b: &Array) -> Result<Array> {
    let col = a.try_reshape(&[a.size() as i64, 1])?;
    let row = b.try_reshape(&[1, b.size() as i64])?;
    col.try_multiply(&row).map_err(|e| e.within("outer"))
}

/// [`try_outer`], panicking on error.
#[track_caller]
pub fn outer(a: &Array, b: &Array) -> Array {
    crate::unwrap(try_outer(a, b))
}

/// `np.inner(a, b)`: the sum product over the last axes of `a` and `b`,
/// `out[i.., j..] = sum(a[i.., :] * b[j.., :])`; a rank-0 operand multiplies the other.
///
/// Shapes: `(.., k)` and `(.., k)` give `a.shape[:-1] + b.shape[:-1]` (rank 0 for two vectors).
/// Dtype: `np.result_type(a, b)`. A product with rows on both sides is one `matmul` (`a` as
/// `(M, k)`, `b` transposed as `(k, N)`); two vectors a multiply and a sum.
///
/// Errors: last extents that differ ([`IrError::MatMulShape`], naming both shapes).
pub fn try_inner(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return a.try_multiply(b);
    }
    let (na, nb) = (a.ndim(), b.ndim());
    let (k1, k2) = (a.shape()[na - 1], b.shape()[nb - 1]);
    if k1 != k2 {
        return Err(IrError::MatMulShape {
            op: "inner".into(),
            a: a.shape().into(),
            b: b.shape().into(),
            k1,
            k2,
        }
        .into());
    }
    // a: free labels 1..na, contracted 0; b: free na..na+nb-1, contracted 0.
    let la: Vec<Label> = (1..na as Label).chain([0]).collect();
    let lb: Vec<Label> = (na as Label..(na + nb - 1) as Label).chain([0]).collect();
    let out: Vec<Label> = (1..(na + nb - 1) as Label).collect();
    let dtype = result_type(a.dtype(), b.dtype());
    contract("inner", None, &[(a, &la[..]), (b, &lb[..])], &out, dtype)
}

/// [`try_inner`], panicking on error.
#[track_caller]
pub fn inner(a: &Array, b: &Array) -> Array {
    crate::unwrap(try_inner(a, b))
}

/// `np.vdot(a, b)`: `sum(conj(a.ravel()) * b.ravel())`, the first operand conjugated when
/// complex; a multiply and a sum (one fused reduction).
///
/// Shapes: any two arrays of the same number of elements; the result is rank 0. Dtype:
/// `np.result_type(a, b)` (integers wrap; bools give `any(a and b)`).
///
/// Errors: numbers of elements that differ ([`IrError::InvalidShape`], naming both shapes).
pub fn try_vdot(a: &Array, b: &Array) -> Result<Array> {
    if a.size() != b.size() {
        return Err(IrError::InvalidShape {
            op: "vdot".into(),
            shape: a.shape().into(),
            message: format!(
                "vectors have different lengths: {} and {} elements (shapes {} and {})",
                a.size(),
                b.size(),
                ShapeDisplay(a.shape()),
                ShapeDisplay(b.shape())
            ),
        }
        .into());
    }
    let dtype = result_type(a.dtype(), b.dtype());
    let (fa, fb) = (a.ravel().conj(), b.ravel());
    contract("vdot", None, &[(&fa, &[0][..]), (&fb, &[0][..])], &[], dtype)
}

/// [`try_vdot`], panicking on error.
#[track_caller]
pub fn vdot(a: &Array, b: &Array) -> Array {
    crate::unwrap(try_vdot(a, b))
}

/// `np.kron(a, b)`: the Kronecker product, `out[i0*n0 + j0, i1*n1 + j1, ..] = a[i0, i1, ..] *
/// b[j0, j1, ..]`; the operand of lower rank is taken with leading axes of extent 1. A
/// broadcast multiply of `a` as `(m0, 1, m1, 1, ..)` and `b` as `(1, n0, 1, n1, ..)`, then a
/// reshape.
///
/// Shapes: `(m0, m1, ..)` and `(n0, n1, ..)` give `(m0*n0, m1*n1, ..)`, of the larger rank.
/// Dtype: `multiply`'s (`np.result_type`). Errors: none of the shapes; `multiply`'s for dtypes.
pub fn try_kron(a: &Array, b: &Array) -> Result<Array> {
    let nd = a.ndim().max(b.ndim());
    let padded = |x: &Array| -> Vec<i64> {
        let mut s = vec![1i64; nd - x.ndim()];
        s.extend(x.shape().iter().map(|&d| d as i64));
        s
    };
    let (sa, sb) = (padded(a), padded(b));
    let ea: Vec<i64> = sa.iter().flat_map(|&d| [d, 1]).collect();
    let eb: Vec<i64> = sb.iter().flat_map(|&d| [1, d]).collect();
    let kron = || {
        let prod = a.try_reshape(&ea)?.try_multiply(&b.try_reshape(&eb)?)?;
        let out: Vec<i64> = sa.iter().zip(&sb).map(|(&m, &n)| m * n).collect();
        prod.try_reshape(&out)
    };
    kron().map_err(|e| e.within("kron"))
}

/// [`try_kron`], panicking on error.
#[track_caller]
pub fn kron(a: &Array, b: &Array) -> Array {
    crate::unwrap(try_kron(a, b))
}

/// The `axes` argument of [`try_tensordot`]: NumPy's integer `N` (the last `N` axes of `a` with
/// the first `N` of `b`, in order) or two lists of axes paired in order (negative axes count
/// from the end).
///
/// Made from an integer (`2`), or a pair of arrays, vectors or slices of integers
/// (`([1, 0], [0, 1])`, `(vec![-1], vec![0])`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensordotAxes {
    /// The last `N` axes of `a` with the first `N` of `b`.
    Count(i64),
    /// `a`'s axes `.0[k]` with `b`'s axes `.1[k]`.
    Pairs(Vec<i64>, Vec<i64>),
}

macro_rules! tensordot_axes_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for TensordotAxes {
            fn from(n: $t) -> TensordotAxes {
                TensordotAxes::Count(n as i64)
            }
        }
        impl<const K: usize> From<([$t; K], [$t; K])> for TensordotAxes {
            fn from((a, b): ([$t; K], [$t; K])) -> TensordotAxes {
                TensordotAxes::Pairs(
                    a.iter().map(|&x| x as i64).collect(),
                    b.iter().map(|&x| x as i64).collect(),
                )
            }
        }
        impl From<(Vec<$t>, Vec<$t>)> for TensordotAxes {
            fn from((a, b): (Vec<$t>, Vec<$t>)) -> TensordotAxes {
                TensordotAxes::Pairs(
                    a.iter().map(|&x| x as i64).collect(),
                    b.iter().map(|&x| x as i64).collect(),
                )
            }
        }
        impl From<(&[$t], &[$t])> for TensordotAxes {
            fn from((a, b): (&[$t], &[$t])) -> TensordotAxes {
                TensordotAxes::Pairs(
                    a.iter().map(|&x| x as i64).collect(),
                    b.iter().map(|&x| x as i64).collect(),
                )
            }
        }
    )*};
}
tensordot_axes_from_int!(i32, i64, usize);

/// `np.tensordot(a, b, axes)`: the sum product over the axes `axes` pairs,
/// `out[i.., j..] = sum over the paired axes of a[i.., k..] * b[k.., j..]`.
///
/// Shapes: `a`'s unpaired axes, in order, then `b`'s. Dtype: `np.result_type(a, b)`. With
/// unpaired axes on either side it is one `matmul` (`a` as `(M, K)`, `b` as `(K, N)`, views);
/// with none on either side a multiply and a sum; with no pair (`axes = 0`) the outer product.
///
/// Errors: a negative count, or one larger than either rank, or lists of different lengths
/// ([`IrError::InvalidAttrs`]); an axis out of range ([`IrError::AxisOutOfBounds`]); an axis
/// repeated in one list ([`IrError::RepeatedAxis`]); paired extents that differ (NumPy's
/// "shape-mismatch for sum", [`IrError::InvalidShape`] naming both shapes).
pub fn try_tensordot(a: &Array, b: &Array, axes: impl Into<TensordotAxes>) -> Result<Array> {
    let op = "tensordot";
    let (na, nb) = (a.ndim(), b.ndim());
    let shapes = || format!("shapes {} and {}", ShapeDisplay(a.shape()), ShapeDisplay(b.shape()));
    let (xa, xb): (Vec<usize>, Vec<usize>) = match axes.into() {
        TensordotAxes::Count(n) => {
            if n < 0 || n as usize > na || n as usize > nb {
                return Err(IrError::InvalidAttrs {
                    op: op.into(),
                    message: format!(
                        "axes={n} must be between 0 and the smaller rank ({})",
                        shapes()
                    ),
                }
                .into());
            }
            let n = n as usize;
            ((na - n..na).collect(), (0..n).collect())
        }
        TensordotAxes::Pairs(pa, pb) => {
            if pa.len() != pb.len() {
                return Err(IrError::InvalidAttrs {
                    op: op.into(),
                    message: format!(
                        "axes lists {pa:?} and {pb:?} have different lengths ({})",
                        shapes()
                    ),
                }
                .into());
            }
            let norm = |list: &[i64], rank: usize| -> Result<Vec<usize>> {
                let mut out: Vec<usize> = Vec::with_capacity(list.len());
                for &x in list {
                    let ax = normalize_axis(op, x, rank)?;
                    if out.contains(&ax) {
                        return Err(IrError::RepeatedAxis { op: op.into(), axis: x }.into());
                    }
                    out.push(ax);
                }
                Ok(out)
            };
            (norm(&pa, na)?, norm(&pb, nb)?)
        }
    };
    for (&i, &j) in xa.iter().zip(&xb) {
        let (m, n) = (a.shape()[i], b.shape()[j]);
        if m != n {
            return Err(IrError::InvalidShape {
                op: op.into(),
                shape: a.shape().into(),
                message: format!(
                    "shape-mismatch for sum: axis {i} of a has extent {m}, axis {j} of b {n} ({})",
                    shapes()
                ),
            }
            .into());
        }
    }
    // Labels: a's axis i is i; b's paired axes take their partner's, the others na + j.
    let la: Vec<Label> = (0..na as Label).collect();
    let lb: Vec<Label> = (0..nb)
        .map(|j| match xb.iter().position(|&x| x == j) {
            Some(k) => xa[k] as Label,
            None => (na + j) as Label,
        })
        .collect();
    let mut out: Vec<Label> = (0..na).filter(|i| !xa.contains(i)).map(|i| i as Label).collect();
    out.extend((0..nb).filter(|j| !xb.contains(j)).map(|j| (na + j) as Label));
    let dtype = result_type(a.dtype(), b.dtype());
    contract(op, None, &[(a, &la[..]), (b, &lb[..])], &out, dtype)
}

/// [`try_tensordot`], panicking on error.
#[track_caller]
pub fn tensordot(a: &Array, b: &Array, axes: impl Into<TensordotAxes>) -> Array {
    crate::unwrap(try_tensordot(a, b, axes))
}

/// `np.linalg.vecdot(a, b, axis=axis)` (and `np.vecdot`): the dot product of vectors along
/// `axis`, the first operand conjugated, `sum(conj(a) * b, axis)`; the other axes broadcast
/// (right aligned). A multiply and a sum (one fused reduction).
///
/// Shapes: `axis` of each operand (negative counts from its end) is the vector; the result is
/// the broadcast of the other axes. Dtype: `np.result_type(a, b)`.
///
/// Errors: a rank-0 operand ([`IrError::InvalidShape`]); `axis` out of range for an operand
/// ([`IrError::AxisOutOfBounds`]); vector extents that differ ([`IrError::MatMulShape`], both
/// shapes); other axes that do not broadcast ([`IrError::Broadcast`], both shapes).
pub fn try_vecdot(a: &Array, b: &Array, axis: i64) -> Result<Array> {
    let op = "vecdot";
    for (k, x) in [a, b].iter().enumerate() {
        if x.ndim() == 0 {
            return Err(IrError::InvalidShape {
                op: op.into(),
                shape: x.shape().into(),
                message: format!(
                    "input operand {k} does not have enough dimensions (has 0, gufunc core with signature (n),(n)->() requires 1)"
                ),
            }
            .into());
        }
    }
    let ia = normalize_axis(op, axis, a.ndim())?;
    let ib = normalize_axis(op, axis, b.ndim())?;
    let (k1, k2) = (a.shape()[ia], b.shape()[ib]);
    if k1 != k2 {
        return Err(IrError::MatMulShape {
            op: op.into(),
            a: a.shape().into(),
            b: b.shape().into(),
            k1,
            k2,
        }
        .into());
    }
    let rest = |x: &Array, i: usize| -> Vec<usize> {
        x.shape().iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &d)| d).collect()
    };
    let (ra, rb) = (rest(a, ia), rest(b, ib));
    let batch = broadcast_shapes(op, &ra, &rb).map_err(|_| IrError::Broadcast {
        op: op.into(),
        shapes: vec![a.shape().into(), b.shape().into()],
    })?;
    // The other axes as right-aligned ellipsis labels; the vector's label is 0.
    let e = batch.len();
    let labels = |x: &Array, i: usize| -> Vec<Label> {
        let r = x.ndim() - 1;
        let mut pos = 0;
        (0..x.ndim())
            .map(|j| {
                if j == i {
                    0
                } else {
                    pos += 1;
                    ELLIPSIS + (e - r + pos - 1) as Label
                }
            })
            .collect()
    };
    let (la, lb) = (labels(a, ia), labels(b, ib));
    let out: Vec<Label> = (0..e).map(|j| ELLIPSIS + j as Label).collect();
    let dtype = result_type(a.dtype(), b.dtype());
    contract(op, None, &[(&a.conj(), &la[..]), (b, &lb[..])], &out, dtype)
}

/// [`try_vecdot`], panicking on error.
#[track_caller]
pub fn vecdot(a: &Array, b: &Array, axis: i64) -> Array {
    crate::unwrap(try_vecdot(a, b, axis))
}
