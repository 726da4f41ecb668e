//! `numpy.linalg`'s decompositions and solvers: `cholesky`, `solve`, `inv`, `det`, `slogdet`,
//! `qr`, `svd`, `svdvals`, `eigh`, `eigvalsh`.
//!
//! Each is one IR node per output of the op table's vendor class (`cholesky` ... `eigh`), so it
//! is lazy like every op and its operand's producers and its results' consumers fuse around
//! it; the outputs of one decomposition of one operand (svd's U, s and Vh) are one library
//! call. Operands are stacks of matrices over their last two axes (NumPy 2's batching).
//! Dtypes: float32, float64, complex64 and complex128 compute in their own precision; bools
//! and integers become float64 (NumPy's rule), float16 and bfloat16 float32 (NumPy refuses
//! them; CuPy computes them in float32).
//!
//! Where it runs: faer on the host; cuSOLVER on a CUDA device (potrf, getrf/getrs, geqrf +
//! orgqr, syevd, gesvdj with gesvd as fallback, and the batched Jacobi and cuBLAS batched-LU
//! forms for many matrices of at most 32×32), on the current stream. Reading cuSOLVER's `info`
//! back to raise NumPy's errors is one synchronisation per call for `cholesky`, `solve`, `inv`,
//! `eigh` and `svd`; `det`, `slogdet` and `qr` do not wait.
//!
//! Errors: an operand of rank below 2 or a non-square matrix where one is needed
//! ([`IrError::InvalidShape`], NumPy's messages), mismatched shapes
//! ([`IrError::ShapeMismatch`]), both when the op is written. A matrix that is not positive
//! definite (`cholesky`) or singular (`solve`, `inv`) is found when the value is computed:
//! [`IrError::LinAlg`] (NumPy's `LinAlgError` messages) from the call that materialises it.

use kiln_ir::promote::result_type;
use kiln_ir::shape::broadcast_shapes;
use kiln_ir::{Attrs, DType, DTypeKind, IrError, OpKind, Shape};

use crate::array::Array;
use crate::error::Result;

/// The dtype `numpy.linalg` computes a `dtype` operand in: float32, float64, complex64 and
/// complex128 keep theirs; bools and integers → float64; float16 and bfloat16 → float32.
pub fn linalg_dtype(dtype: DType) -> DType {
    match dtype {
        DType::Float32 | DType::Float64 | DType::Complex64 | DType::Complex128 => dtype,
        DType::Float16 | DType::BFloat16 => DType::Float32,
        _ => DType::Float64,
    }
}

fn prepared(a: &Array) -> Array {
    a.cast_to(linalg_dtype(a.dtype()))
}

fn output(op: OpKind, a: &Array, output: u8, full_matrices: bool) -> Result<Array> {
    Array::apply(op, Attrs::Linalg { output, full_matrices }, &[a])
}

/// `np.linalg.cholesky(a)`: the lower-triangular `L` with `a = L @ Lᴴ`, for Hermitian positive
/// definite `a` of shape `(.., n, n)`; only the lower triangle of `a` is read. Result: the
/// shape of `a`, its [`linalg_dtype`].
///
/// Errors: rank below 2 or non-square ([`IrError::InvalidShape`]); when computed, a matrix that
/// is not positive definite ([`IrError::LinAlg`], "Matrix is not positive definite").
pub fn try_cholesky(a: &Array) -> Result<Array> {
    Array::apply(OpKind::Cholesky, Attrs::None, &[&prepared(a)])
}

/// `np.linalg.solve(a, b)`: `x` with `a @ x = b`. `a`: `(.., n, n)`; `b`: `(n,)` (one vector,
/// NumPy 2's rule: only a 1-D `b` is a vector) or `(.., n, k)`, batch axes broadcast with
/// `a`'s. Result: `b`'s shape with the broadcast batch; dtype the [`linalg_dtype`] of
/// `result_type(a, b)`.
///
/// Errors: `a` of rank below 2 or non-square ([`IrError::InvalidShape`]); `b` whose rows are
/// not `n` ([`IrError::ShapeMismatch`], both shapes); batch axes that do not broadcast
/// ([`IrError::Broadcast`]); when computed, a singular `a` ([`IrError::LinAlg`], "Singular
/// matrix").
pub fn try_solve(a: &Array, b: &Array) -> Result<Array> {
    let dtype = linalg_dtype(result_type(a.dtype(), b.dtype()));
    let (a, b) = (a.cast_to(dtype), b.cast_to(dtype));
    let (sa, sb) = (a.shape(), b.shape());
    let mismatch =
        || IrError::ShapeMismatch { op: "solve".into(), shapes: vec![sa.into(), sb.into()] };
    if sa.len() < 2 {
        // The op's own check names the rank.
        return Array::apply(OpKind::Solve, Attrs::None, &[&a, &a]);
    }
    let n = sa[sa.len() - 1];
    if sa[sa.len() - 2] != n {
        return Err(IrError::InvalidShape {
            op: "solve".into(),
            shape: sa.into(),
            message: "Last 2 dimensions of the array must be square".into(),
        }
        .into());
    }
    let vector = sb.len() == 1;
    let b = if vector { b.try_expand_dims(&[1])? } else { b.clone() };
    let sb2 = b.shape().to_vec();
    if sb2.len() < 2 || sb2[sb2.len() - 2] != n {
        return Err(mismatch().into());
    }
    let batch_a: Shape = sa[..sa.len() - 2].into();
    let batch_b: Shape = sb2[..sb2.len() - 2].into();
    let batch = broadcast_shapes("solve", &batch_a, &batch_b).map_err(|_| IrError::Broadcast {
        op: "solve".into(),
        shapes: vec![sa.into(), sb.into()],
    })?;
    let full = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
    let a2 = a.try_broadcast_to(&full([n, sa[sa.len() - 1]]))?;
    let b2 = b.try_broadcast_to(&full([n, sb2[sb2.len() - 1]]))?;
    let x = Array::apply(OpKind::Solve, Attrs::None, &[&a2, &b2])?;
    if vector {
        x.try_squeeze(Some(&[-1]))
    } else {
        Ok(x)
    }
}

/// `np.linalg.inv(a)`: the inverse of each matrix of `a` `(.., n, n)`; same shape, its
/// [`linalg_dtype`].
///
/// Errors: rank below 2 or non-square ([`IrError::InvalidShape`]); when computed, a singular
/// matrix ([`IrError::LinAlg`], "Singular matrix").
pub fn try_inv(a: &Array) -> Result<Array> {
    Array::apply(OpKind::Inv, Attrs::None, &[&prepared(a)])
}

/// `np.linalg.det(a)`: the determinant of each matrix of `a` `(.., n, n)`, shape `(..)`
/// (rank 0 for one matrix), its [`linalg_dtype`]; 0 for a singular matrix, 1 for `n = 0`.
///
/// Errors: rank below 2 or non-square ([`IrError::InvalidShape`]).
pub fn try_det(a: &Array) -> Result<Array> {
    Array::apply(OpKind::Det, Attrs::None, &[&prepared(a)])
}

/// `np.linalg.slogdet(a)`: `(sign, logabsdet)` with `det = sign * exp(logabsdet)`, each of shape
/// `(..)`; `sign` of `a`'s [`linalg_dtype`] (modulus 1, or 0 for a singular matrix), `logabsdet`
/// of its real dtype (-inf for a singular matrix). One LU per matrix gives both.
///
/// Errors: rank below 2 or non-square ([`IrError::InvalidShape`]).
pub fn try_slogdet(a: &Array) -> Result<(Array, Array)> {
    let a = prepared(a);
    Ok((output(OpKind::Slogdet, &a, 0, false)?, output(OpKind::Slogdet, &a, 1, false)?))
}

/// `np.linalg.qr`'s modes kiln offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QrMode {
    /// `Q (.., m, k)`, `R (.., k, n)`, `k = min(m, n)` (NumPy's default).
    #[default]
    Reduced,
    /// `Q (.., m, m)`, `R (.., m, n)`.
    Complete,
}

/// `np.linalg.qr(a, mode)`: `(Q, R)` with `a = Q @ R`, `Q` with orthonormal columns (unitary for
/// complex), `R` upper triangular (Householder reflections, as LAPACK's geqrf; signs of the
/// rows of `R` may differ from NumPy's). `a`: `(.., m, n)`; shapes per [`QrMode`]; dtype the
/// [`linalg_dtype`]. NumPy's mode `"r"` is `.1` of the result (Q is only computed when read).
///
/// Errors: rank below 2 ([`IrError::InvalidShape`]).
pub fn try_qr(a: &Array, mode: QrMode) -> Result<(Array, Array)> {
    let a = prepared(a);
    let full = mode == QrMode::Complete;
    Ok((output(OpKind::Qr, &a, 0, full)?, output(OpKind::Qr, &a, 1, full)?))
}

/// `np.linalg.svd(a, full_matrices)`: `(U, S, Vh)` with `a = U @ diag(S) @ Vh`, `S` descending
/// and non-negative, of the real dtype. `a`: `(.., m, n)`, `k = min(m, n)`: `U (.., m, k)`,
/// `S (.., k)`, `Vh (.., k, n)`, or with `full_matrices` `U (.., m, m)`, `Vh (.., n, n)`.
/// Singular vectors are unique only up to a unit factor per pair (a sign for real dtypes):
/// compare `U @ diag(S) @ Vh`, not the factors, with NumPy's.
///
/// Errors: rank below 2 ([`IrError::InvalidShape`]).
pub fn try_svd(a: &Array, full_matrices: bool) -> Result<(Array, Array, Array)> {
    let a = prepared(a);
    Ok((
        output(OpKind::Svd, &a, 0, full_matrices)?,
        output(OpKind::Svd, &a, 1, full_matrices)?,
        output(OpKind::Svd, &a, 2, full_matrices)?,
    ))
}

/// `np.linalg.svdvals(a)` (`svd(a, compute_uv=False)`): the singular values `(.., k)`,
/// descending, of the real dtype; no singular vectors are computed.
///
/// Errors: rank below 2 ([`IrError::InvalidShape`]).
pub fn try_svdvals(a: &Array) -> Result<Array> {
    output(OpKind::Svd, &prepared(a), 1, false)
}

/// `np.linalg.eigh(a)` (`UPLO='L'`): `(w, v)` with `a @ v = v * w`, for Hermitian `a`
/// `(.., n, n)` of which only the lower triangle is read. `w (.., n)` ascending, of the real
/// dtype; `v (.., n, n)` with the eigenvectors as columns (each unique up to a unit factor).
///
/// Errors: rank below 2 or non-square ([`IrError::InvalidShape`]).
pub fn try_eigh(a: &Array) -> Result<(Array, Array)> {
    let a = prepared(a);
    Ok((output(OpKind::Eigh, &a, 0, false)?, output(OpKind::Eigh, &a, 1, false)?))
}

/// `np.linalg.eigvalsh(a)`: the eigenvalues of [`try_eigh`] alone (no eigenvectors are
/// computed).
///
/// Errors: rank below 2 or non-square ([`IrError::InvalidShape`]).
pub fn try_eigvalsh(a: &Array) -> Result<Array> {
    output(OpKind::Eigh, &prepared(a), 0, false).map_err(|e| e.within("eigvalsh"))
}

/// Whether `dtype` is complex.
pub(super) fn is_complex(dtype: DType) -> bool {
    dtype.kind() == DTypeKind::Complex
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
    /// [`try_cholesky`], panicking on error.
    cholesky(a: &Array) -> Array = try_cholesky;
    /// [`try_solve`], panicking on error.
    solve(a: &Array, b: &Array) -> Array = try_solve;
    /// [`try_inv`], panicking on error.
    inv(a: &Array) -> Array = try_inv;
    /// [`try_det`], panicking on error.
    det(a: &Array) -> Array = try_det;
    /// [`try_slogdet`], panicking on error.
    slogdet(a: &Array) -> (Array, Array) = try_slogdet;
    /// [`try_qr`], panicking on error.
    qr(a: &Array, mode: QrMode) -> (Array, Array) = try_qr;
    /// [`try_svd`], panicking on error.
    svd(a: &Array, full_matrices: bool) -> (Array, Array, Array) = try_svd;
    /// [`try_svdvals`], panicking on error.
    svdvals(a: &Array) -> Array = try_svdvals;
    /// [`try_eigh`], panicking on error.
    eigh(a: &Array) -> (Array, Array) = try_eigh;
    /// [`try_eigvalsh`], panicking on error.
    eigvalsh(a: &Array) -> Array = try_eigvalsh;
}
