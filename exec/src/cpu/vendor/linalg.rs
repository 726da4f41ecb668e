//! Linear algebra on the host through faer: Cholesky (`llt`), LU with partial pivoting
//! (`solve`, `inv`, `det`, `slogdet`), Householder QR, the SVD and the Hermitian
//! eigendecomposition, for float32, float64, complex64 and complex128, each matrix of a batch
//! read through the operand's strides (one matrix per task when the batch holds many small
//! ones; one large matrix uses faer's own threads).
//!
//! What faer leaves open is fixed here as NumPy fixes it: a zero pivot of the LU is "Singular
//! matrix" (LAPACK's getrf info > 0), a failed Cholesky "Matrix is not positive definite",
//! both [`IrError::LinAlg`] naming the op and operand shape; singular values are descending,
//! eigenvalues ascending; `Vh` is `Vᴴ`.

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::traits::{ComplexField, RealField};
use faer::{Mat, MatMut, MatRef, Side};
use kiln_compiler::vendor::{LinalgCall, LinalgKind};
use kiln_ir::host::{Data, HostElement};
use kiln_ir::{DType, HostArray, IrError, Layout};
use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use super::host::in_bounds;
use crate::ExecError;

/// Matrices of at most this many elements run one per task (a batch of small ones).
const SMALL_MATRIX: usize = 64 * 64;

/// An element type faer decomposes.
trait Field:
    ComplexField<Real = Self::R> + Copy + Send + Sync + HostElement + std::ops::Mul<Output = Self>
{
    type R: RealField + Copy + Send + Sync + HostElement;
    fn wrap(v: Vec<Self>) -> Data;
    fn wrap_real(v: Vec<Self::R>) -> Data;
    fn real_f64(x: Self::R) -> f64;
    fn real_from_f64(x: f64) -> Self::R;
    fn modulus(self) -> f64;
    /// `self / |self|` (1 for 0).
    fn unit(self) -> Self;
    fn conj_of(self) -> Self;
    fn one_() -> Self;
    fn zero_() -> Self;
    fn re(self) -> Self::R;
    fn negate(self) -> Self;
}

macro_rules! real_field {
    ($t:ty, $variant:ident) => {
        impl Field for $t {
            type R = $t;
            fn wrap(v: Vec<$t>) -> Data {
                Data::$variant(v)
            }
            fn wrap_real(v: Vec<$t>) -> Data {
                Data::$variant(v)
            }
            fn real_f64(x: $t) -> f64 {
                x as f64
            }
            fn real_from_f64(x: f64) -> $t {
                x as $t
            }
            fn modulus(self) -> f64 {
                (self as f64).abs()
            }
            fn unit(self) -> $t {
                if self < 0.0 {
                    -1.0
                } else {
                    1.0
                }
            }
            fn conj_of(self) -> $t {
                self
            }
            fn one_() -> $t {
                1.0
            }
            fn zero_() -> $t {
                0.0
            }
            fn re(self) -> $t {
                self
            }
            fn negate(self) -> $t {
                -self
            }
        }
    };
}
real_field!(f32, Float32);
real_field!(f64, Float64);

macro_rules! complex_field {
    ($t:ty, $r:ty, $variant:ident, $real:ident) => {
        impl Field for $t {
            type R = $r;
            fn wrap(v: Vec<$t>) -> Data {
                Data::$variant(v)
            }
            fn wrap_real(v: Vec<$r>) -> Data {
                Data::$real(v)
            }
            fn real_f64(x: $r) -> f64 {
                x as f64
            }
            fn real_from_f64(x: f64) -> $r {
                x as $r
            }
            fn modulus(self) -> f64 {
                (self.re as f64).hypot(self.im as f64)
            }
            fn unit(self) -> $t {
                let m = self.norm();
                if m == 0.0 {
                    <$t>::new(1.0, 0.0)
                } else {
                    self / m
                }
            }
            fn conj_of(self) -> $t {
                self.conj()
            }
            fn one_() -> $t {
                <$t>::new(1.0, 0.0)
            }
            fn zero_() -> $t {
                <$t>::new(0.0, 0.0)
            }
            fn re(self) -> $r {
                self.re
            }
            fn negate(self) -> $t {
                -self
            }
        }
    };
}
complex_field!(Complex32, f32, Complex64, Float32);
complex_field!(Complex64, f64, Complex128, Float64);

/// Runs `call` on its operands (`a`, and `b` for solve); one array per entry of
/// `call.outputs`.
pub fn run(
    call: &LinalgCall,
    a: &HostArray,
    b: Option<&HostArray>,
) -> Result<Vec<HostArray>, ExecError> {
    if a.dtype() != call.dtype || b.is_some_and(|b| b.dtype() != call.dtype) {
        return Err(ExecError::InvalidInput(format!(
            "{}: operands of dtype {} (and {:?}), the call is {}",
            op_name(call.kind),
            a.dtype(),
            b.map(|b| b.dtype()),
            call.dtype
        )));
    }
    in_bounds(&call.a.layout, a.len())?;
    if let (Some((l, _)), Some(b)) = (&call.b, b) {
        in_bounds(&l.layout, b.len())?;
    }
    match call.dtype {
        DType::Float32 => typed::<f32>(call, a, b),
        DType::Float64 => typed::<f64>(call, a, b),
        DType::Complex64 => typed::<Complex32>(call, a, b),
        DType::Complex128 => typed::<Complex64>(call, a, b),
        other => Err(ExecError::InvalidInput(format!(
            "{} of {other}: the frontend promotes to float32, float64, complex64 or complex128",
            op_name(call.kind)
        ))),
    }
}

fn op_name(kind: LinalgKind) -> &'static str {
    match kind {
        LinalgKind::Cholesky => "cholesky",
        LinalgKind::Solve => "solve",
        LinalgKind::Inv => "inv",
        LinalgKind::Det => "det",
        LinalgKind::Slogdet => "slogdet",
        LinalgKind::Qr { .. } => "qr",
        LinalgKind::Svd { .. } => "svd",
        LinalgKind::Eigh => "eigh",
    }
}

/// The element offset of each matrix of a strided operand (batch axes in C order).
fn matrix_offsets(l: &Layout) -> Vec<isize> {
    let r = l.rank();
    let mut offs = vec![l.offset];
    for ax in 0..r - 2 {
        let (n, s) = (l.shape[ax], l.strides[ax]);
        offs = offs.iter().flat_map(|&o| (0..n).map(move |i| o + i as isize * s)).collect();
    }
    offs
}

/// Matrix `off` of the operand (rows, columns strided as `l`'s last two axes), as a view: no
/// copy (faer's factorisations take strided views and copy into their own storage).
fn read<'a, T: Field>(data: &'a [T], l: &Layout, off: isize) -> MatRef<'a, T> {
    let r = l.rank();
    let (m, n) = (l.shape[r - 2], l.shape[r - 1]);
    let (sr, sc) = (l.strides[r - 2], l.strides[r - 1]);
    if m == 0 || n == 0 {
        return MatRef::from_row_major_slice(&data[..0], m, n);
    }
    // Every element the view addresses is in `data`: the caller checked the whole layout
    // (`in_bounds`), which covers each matrix's offset plus its row and column reach.
    let reach = |len: usize, s: isize| (len as isize - 1) * s;
    let (lo, hi) = [reach(m, sr), reach(n, sc)].iter().fold((off, off), |(lo, hi), &x| {
        if x < 0 {
            (lo + x, hi)
        } else {
            (lo, hi + x)
        }
    });
    assert!(lo >= 0 && (hi as usize) < data.len(), "a strided matrix inside its buffer");
    // SAFETY: `off` and every `off + i·sr + j·sc` (i < m, j < n) lie in `data` (asserted just
    // above), which outlives the view ('a); the view only reads.
    unsafe { MatRef::from_raw_parts(data.as_ptr().offset(off), m, n, sr, sc) }
}

/// One routine's outputs for one matrix, each in C order.
enum Part<T: Field> {
    Full(Vec<T>),
    Real(Vec<T::R>),
}

/// The elements of `x` in C order (a blocked transposing copy where `x` is column-major).
fn rows<T: Field>(x: MatRef<'_, T>) -> Vec<T> {
    let (m, n) = (x.nrows(), x.ncols());
    let mut v = vec![T::zero_(); m * n];
    if m * n > 0 {
        MatMut::from_row_major_slice_mut(&mut v, m, n).copy_from(x);
    }
    v
}

fn typed<T: Field>(
    call: &LinalgCall,
    a: &HostArray,
    b: Option<&HostArray>,
) -> Result<Vec<HostArray>, ExecError> {
    let ad = a.as_slice::<T>()?;
    let a_offs = matrix_offsets(&call.a.layout);
    let b_parts = match (&call.b, b) {
        (Some((l, _)), Some(b)) => Some((b.as_slice::<T>()?, l, matrix_offsets(&l.layout))),
        (Some(_), None) => {
            return Err(ExecError::InvalidInput("solve: no right-hand sides given".into()))
        }
        _ => None,
    };
    let one = |i: usize| -> Result<Vec<Part<T>>, IrError> {
        let x = read(ad, &call.a.layout, a_offs[i]);
        let rhs = b_parts.as_ref().map(|(d, l, offs)| read(d, &l.layout, offs[i]));
        matrix(call, x, rhs)
    };
    let count = a_offs.len();
    let parts: Vec<Vec<Part<T>>> = if count > 1 && call.m * call.n <= SMALL_MATRIX {
        (0..count).into_par_iter().map(one).collect::<Result<_, _>>()?
    } else {
        (0..count).map(one).collect::<Result<_, _>>()?
    };
    // Each output's pieces in batch order (one matrix's are moved, not copied).
    let mut columns: Vec<Vec<Part<T>>> =
        (0..call.outputs.len()).map(|_| Vec::with_capacity(count)).collect();
    for p in parts {
        for (j, part) in p.into_iter().enumerate() {
            columns[j].push(part);
        }
    }
    let mut outs = Vec::with_capacity(call.outputs.len());
    for ((dtype, shape), pieces) in call.out_types.iter().zip(columns) {
        let data = if count == 0 {
            Data::zeros(*dtype, 0)
        } else {
            let mut full: Vec<T> = Vec::new();
            let mut real: Vec<T::R> = Vec::new();
            let mut is_real = false;
            for piece in pieces {
                match piece {
                    Part::Full(v) if full.is_empty() => full = v,
                    Part::Full(v) => full.extend_from_slice(&v),
                    Part::Real(v) => {
                        is_real = true;
                        if real.is_empty() {
                            real = v
                        } else {
                            real.extend_from_slice(&v)
                        }
                    }
                }
            }
            if is_real {
                T::wrap_real(real)
            } else {
                T::wrap(full)
            }
        };
        outs.push(HostArray::new(shape, data)?);
    }
    Ok(outs)
}

fn linalg_error(call: &LinalgCall, message: &str) -> IrError {
    let shape = call.batch.iter().copied().chain([call.m, call.n]).collect();
    IrError::LinAlg { op: op_name(call.kind).into(), shape, message: message.into() }
}

/// The call's outputs (in `call.outputs`' order) for one matrix `x`.
fn matrix<T: Field>(
    call: &LinalgCall,
    x: MatRef<'_, T>,
    rhs: Option<MatRef<'_, T>>,
) -> Result<Vec<Part<T>>, IrError> {
    let (m, n) = (call.m, call.n);
    let singular = || linalg_error(call, "Singular matrix");
    let mut produced: Vec<Option<Part<T>>> = match call.kind {
        LinalgKind::Cholesky => {
            if n == 0 {
                vec![Some(Part::Full(vec![]))]
            } else {
                let llt = x
                    .llt(Side::Lower)
                    .map_err(|_| linalg_error(call, "Matrix is not positive definite"))?;
                vec![Some(Part::Full(rows(llt.L())))]
            }
        }
        LinalgKind::Solve | LinalgKind::Inv => {
            if n == 0 {
                let k = rhs.as_ref().map_or(0, |r| r.ncols());
                vec![Some(Part::Full(vec![T::zero_(); n * k]))]
            } else {
                let lu = x.partial_piv_lu();
                let u = lu.U();
                if (0..n).any(|i| u[(i, i)].modulus() == 0.0) {
                    return Err(singular());
                }
                let out = match rhs {
                    Some(r) => lu.solve(&r),
                    None => lu.inverse(),
                };
                vec![Some(Part::Full(rows(out.as_ref())))]
            }
        }
        LinalgKind::Det | LinalgKind::Slogdet => {
            let (sign, logabs) = sign_logdet(x);
            match call.kind {
                LinalgKind::Det => {
                    let det = if T::real_f64(T::real_from_f64(logabs)) == f64::NEG_INFINITY {
                        T::zero_()
                    } else {
                        x.determinant()
                    };
                    vec![Some(Part::Full(vec![det]))]
                }
                _ => vec![
                    Some(Part::Full(vec![sign])),
                    Some(Part::Real(vec![T::real_from_f64(logabs)])),
                ],
            }
        }
        LinalgKind::Qr { full } => {
            let k = m.min(n);
            let qr = x.qr();
            let q = if full { qr.compute_Q() } else { qr.compute_thin_Q() };
            let r_rows = if full { m } else { k };
            let rr = qr.R();
            let r = Mat::from_fn(r_rows, n, |i, j| {
                if i <= j && i < rr.nrows() {
                    rr[(i, j)]
                } else {
                    T::zero_()
                }
            });
            vec![Some(Part::Full(rows(q.as_ref()))), Some(Part::Full(rows(r.as_ref())))]
        }
        LinalgKind::Svd { full } => {
            let k = m.min(n);
            let only_s = call.outputs.iter().all(|&o| o == 1);
            if only_s || k == 0 {
                let s = if k == 0 {
                    vec![]
                } else {
                    x.singular_values().map_err(|_| linalg_error(call, "SVD did not converge"))?
                };
                let eye = |r: usize, c: usize| {
                    rows(
                        Mat::<T>::from_fn(r, c, |i, j| if i == j { T::one_() } else { T::zero_() })
                            .as_ref(),
                    )
                };
                let (ur, vr) = if full { (m, n) } else { (k, k) };
                vec![
                    Some(Part::Full(eye(m, ur))),
                    Some(Part::Real(descending(s))),
                    Some(Part::Full(eye(vr, n))),
                ]
            } else {
                let svd = if full { x.svd() } else { x.thin_svd() }
                    .map_err(|_| linalg_error(call, "SVD did not converge"))?;
                let s: Vec<T::R> = (0..k).map(|i| svd.S()[i].re()).collect();
                let (u, v) = (svd.U(), svd.V());
                let vh = Mat::from_fn(v.ncols(), v.nrows(), |i, j| v[(j, i)].conj_of());
                let mut order: Vec<usize> = (0..k).collect();
                order.sort_by(|&p, &q| T::real_f64(s[q]).total_cmp(&T::real_f64(s[p])));
                let u = Mat::from_fn(u.nrows(), u.ncols(), |i, j| {
                    u[(i, if j < k { order[j] } else { j })]
                });
                let vh = Mat::from_fn(vh.nrows(), vh.ncols(), |i, j| {
                    vh[(if i < k { order[i] } else { i }, j)]
                });
                vec![
                    Some(Part::Full(rows(u.as_ref()))),
                    Some(Part::Real(order.iter().map(|&i| s[i]).collect())),
                    Some(Part::Full(rows(vh.as_ref()))),
                ]
            }
        }
        LinalgKind::Eigh => {
            let only_w = call.outputs.iter().all(|&o| o == 0);
            if n == 0 {
                vec![Some(Part::Real(vec![])), Some(Part::Full(vec![]))]
            } else if only_w {
                let w = x
                    .self_adjoint_eigenvalues(Side::Lower)
                    .map_err(|_| linalg_error(call, "Eigenvalues did not converge"))?;
                let mut w = w;
                w.sort_by(|p, q| T::real_f64(*p).total_cmp(&T::real_f64(*q)));
                vec![Some(Part::Real(w)), None]
            } else {
                let e = x
                    .self_adjoint_eigen(Side::Lower)
                    .map_err(|_| linalg_error(call, "Eigenvalues did not converge"))?;
                let w: Vec<T::R> = (0..n).map(|i| e.S()[i].re()).collect();
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&p, &q| T::real_f64(w[p]).total_cmp(&T::real_f64(w[q])));
                let u = e.U();
                let v = Mat::from_fn(n, n, |i, j| u[(i, order[j])]);
                vec![
                    Some(Part::Real(order.iter().map(|&i| w[i]).collect())),
                    Some(Part::Full(rows(v.as_ref()))),
                ]
            }
        }
    };
    Ok(call
        .outputs
        .iter()
        .map(|&o| produced[o as usize].take().expect("each output asked once and computed"))
        .collect())
}

/// Singular values (faer gives them in some order) sorted descending.
fn descending<R: Copy + HostElement>(mut s: Vec<R>) -> Vec<R>
where
    R: RealField,
{
    s.sort_by(|p, q| q.partial_cmp(p).unwrap_or(std::cmp::Ordering::Equal));
    s
}

/// `(sign, log|det|)` of a square matrix from its LU factors: `sign` of modulus 1 (0 for a
/// singular matrix, whose log is -inf); the empty matrix gives `(1, 0)`.
fn sign_logdet<T: Field>(x: MatRef<'_, T>) -> (T, f64) {
    let n = x.nrows();
    if n == 0 {
        return (T::one_(), 0.0);
    }
    let lu = x.partial_piv_lu();
    let u = lu.U();
    let (fwd, _) = lu.P().arrays();
    let mut sign = if permutation_is_odd(fwd) { T::one_().negate() } else { T::one_() };
    let mut logabs = 0.0f64;
    for i in 0..n {
        let d = u[(i, i)];
        let m = d.modulus();
        if m == 0.0 {
            return (T::zero_(), f64::NEG_INFINITY);
        }
        logabs += m.ln();
        sign = sign * d.unit();
    }
    (sign, logabs)
}

fn permutation_is_odd(p: &[usize]) -> bool {
    let mut seen = vec![false; p.len()];
    let mut odd = false;
    for start in 0..p.len() {
        let mut len = 0;
        let mut i = start;
        while !seen[i] {
            seen[i] = true;
            i = p[i];
            len += 1;
        }
        if len > 0 && len % 2 == 0 {
            odd = !odd;
        }
    }
    odd
}
