//! Reference semantics of the linear-algebra ops: textbook algorithms, exact and simple rather
//! than fast, on row-major matrices held in slices (element `(i, j)` of an `m×n` matrix is
//! `a[i * n + j]`). Every function is generic over [`Scalar`], implemented for `f64` and
//! `Complex<f64>`; the evaluator widens every dtype to one of the two before calling them.
//!
//! - [`cholesky`]: the Cholesky–Banachiewicz recurrence, row by row, on the lower triangle.
//! - [`solve`], [`inv`], [`det`], [`slogdet`]: Doolittle LU with partial pivoting (the row with
//!   the largest `|.|` in the column, the first on a tie), then forward and back substitution
//!   (`inv` solves against the identity); the determinant is the product of U's diagonal times
//!   the sign of the row permutation.
//! - [`qr`]: Householder reflections `H = I - 2·v·vᴴ/(vᴴ·v)` applied to the columns in turn; Q is
//!   the product of the reflections, accumulated from the identity.
//! - [`eigh`]: cyclic Jacobi on the Hermitian matrix rebuilt from the lower triangle: each
//!   off-diagonal `(p, q)` is zeroed by a unitary plane rotation (for complex entries, a real
//!   rotation conjugated by the phase of `a[p][q]`), sweeping until every off-diagonal entry is
//!   negligible against its two diagonal entries.
//! - [`svd`]: one-sided Jacobi (Hestenes): the same rotations applied to pairs of columns until
//!   all columns are mutually orthogonal; the column norms are the singular values. A wide matrix
//!   is handled through its conjugate transpose; left singular vectors missing for zero singular
//!   values (and the extra ones of `full`) are completed to an orthonormal basis through [`qr`].
//!
//! NaN inputs never panic nor loop forever (the Jacobi sweeps are capped); results may be NaN.

// Until the evaluator calls these.

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

use num_complex::Complex;

/// The scalars the reference algorithms work in: `f64` and `Complex<f64>`.
pub(crate) trait Scalar:
    Copy
    + Debug
    + PartialEq
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// The real number `x`.
    fn from_f64(x: f64) -> Self;
    fn zero() -> Self {
        Self::from_f64(0.0)
    }
    fn one() -> Self {
        Self::from_f64(1.0)
    }
    /// Complex conjugate (the identity for reals).
    fn conj(self) -> Self;
    /// `|x|`, computed without intermediate overflow.
    fn abs(self) -> f64;
    /// The real part.
    fn re(self) -> f64;
    /// `self · k`.
    fn scale(self, k: f64) -> Self;
    /// `self / k`, rounded once per component.
    fn div_real(self, k: f64) -> Self;
    /// `|x|²`.
    fn abs2(self) -> f64;
    /// The phase `x / |x|` (exactly ±1 for a nonzero real); 1 for zero.
    fn unit(self) -> Self {
        let r = self.abs();
        if r == 0.0 {
            Self::one()
        } else {
            self.div_real(r)
        }
    }
}

impl Scalar for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn conj(self) -> Self {
        self
    }
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    fn re(self) -> f64 {
        self
    }
    fn scale(self, k: f64) -> Self {
        self * k
    }
    fn div_real(self, k: f64) -> Self {
        self / k
    }
    fn abs2(self) -> f64 {
        self * self
    }
}

impl Scalar for Complex<f64> {
    fn from_f64(x: f64) -> Self {
        Complex::new(x, 0.0)
    }
    fn conj(self) -> Self {
        Complex::conj(&self)
    }
    fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
    fn re(self) -> f64 {
        self.re
    }
    fn scale(self, k: f64) -> Self {
        Complex::new(self.re * k, self.im * k)
    }
    fn div_real(self, k: f64) -> Self {
        Complex::new(self.re / k, self.im / k)
    }
    fn abs2(self) -> f64 {
        self.re * self.re + self.im * self.im
    }
}

/// Why a factorization could not be completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Cholesky met a pivot that is not positive (or is NaN).
    NotPositiveDefinite,
    /// LU met an exactly zero pivot.
    Singular,
}

/// Cholesky factor of `a` (`n×n`, row-major, Hermitian positive definite).
///
/// Reads only the lower triangle of `a`, and only the real part of its diagonal (like LAPACK's
/// `potrf` with `UPLO='L'`). Returns `L` (`n×n`, row-major, zeros above the diagonal, a real
/// positive diagonal) with `a = L·Lᴴ`. A pivot `a[j][j] - Σ_k |L[j][k]|²` that is not positive
/// (including NaN) gives `Err(NotPositiveDefinite)`.
pub(crate) fn cholesky<T: Scalar>(n: usize, a: &[T]) -> Result<Vec<T>, Failure> {
    assert_eq!(a.len(), n * n);
    let mut l = vec![T::zero(); n * n];
    for i in 0..n {
        for j in 0..i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s = s - l[i * n + k] * l[j * n + k].conj();
            }
            l[i * n + j] = s.div_real(l[j * n + j].re());
        }
        let d = a[i * n + i].re() - (0..i).map(|k| l[i * n + k].abs2()).sum::<f64>();
        if d.is_nan() || d <= 0.0 {
            return Err(Failure::NotPositiveDefinite);
        }
        l[i * n + i] = T::from_f64(d.sqrt());
    }
    Ok(l)
}

/// `P·a = L·U` packed in one `n×n` matrix (L's unit diagonal implied); `perm[i]` is the row of
/// `a` that ended up as row `i`.
struct Lu<T> {
    lu: Vec<T>,
    perm: Vec<usize>,
    /// An odd number of row swaps.
    odd: bool,
    /// Some column had no nonzero pivot (that column was left uneliminated, as `getrf` does).
    singular: bool,
}

fn lu<T: Scalar>(n: usize, a: &[T]) -> Lu<T> {
    assert_eq!(a.len(), n * n);
    let mut lu = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let (mut odd, mut singular) = (false, false);
    for k in 0..n {
        let mut p = k;
        let mut best = lu[k * n + k].abs();
        for i in k + 1..n {
            let v = lu[i * n + k].abs();
            if v > best {
                (p, best) = (i, v);
            }
        }
        if p != k {
            for j in 0..n {
                lu.swap(k * n + j, p * n + j);
            }
            perm.swap(k, p);
            odd = !odd;
        }
        let pivot = lu[k * n + k];
        if pivot == T::zero() {
            singular = true;
            continue;
        }
        for i in k + 1..n {
            let f = lu[i * n + k] / pivot;
            lu[i * n + k] = f;
            for j in k + 1..n {
                lu[i * n + j] = lu[i * n + j] - f * lu[k * n + j];
            }
        }
    }
    Lu { lu, perm, odd, singular }
}

/// Solves `a·x = b` for `a` `n×n` and `b` `n×k` (both row-major), returning `x` (`n×k`).
///
/// LU with partial pivoting (the largest `|.|` in the column), then forward and back
/// substitution for each column of `b`. An exactly zero pivot gives `Err(Singular)`; a nearly
/// singular matrix gives a large (or inf/NaN) result, as LAPACK's `gesv` does.
pub(crate) fn solve<T: Scalar>(n: usize, k: usize, a: &[T], b: &[T]) -> Result<Vec<T>, Failure> {
    assert_eq!(b.len(), n * k);
    let f = lu(n, a);
    if f.singular {
        return Err(Failure::Singular);
    }
    let lu = &f.lu;
    // x = P·b, then L·y = x in place, then U·x = y in place.
    let mut x: Vec<T> =
        f.perm.iter().flat_map(|&r| b[r * k..(r + 1) * k].iter().copied()).collect();
    for i in 0..n {
        for j in 0..i {
            let m = lu[i * n + j];
            for c in 0..k {
                x[i * k + c] = x[i * k + c] - m * x[j * k + c];
            }
        }
    }
    for i in (0..n).rev() {
        for j in i + 1..n {
            let m = lu[i * n + j];
            for c in 0..k {
                x[i * k + c] = x[i * k + c] - m * x[j * k + c];
            }
        }
        let d = lu[i * n + i];
        for c in 0..k {
            x[i * k + c] = x[i * k + c] / d;
        }
    }
    Ok(x)
}

/// Inverse of `a` (`n×n`, row-major): [`solve`] against the identity. An exactly zero LU pivot
/// gives `Err(Singular)`.
pub(crate) fn inv<T: Scalar>(n: usize, a: &[T]) -> Result<Vec<T>, Failure> {
    solve(n, n, a, &identity(n))
}

/// Determinant of `a` (`n×n`, row-major) from its LU factorization: the product of U's
/// diagonal times the sign of the row permutation. `n = 0` gives 1; a matrix with an exactly
/// zero pivot gives 0.
pub(crate) fn det<T: Scalar>(n: usize, a: &[T]) -> T {
    let f = lu(n, a);
    if f.singular {
        return T::zero();
    }
    let d = (0..n).fold(T::one(), |d, i| d * f.lu[i * n + i]);
    if f.odd {
        -d
    } else {
        d
    }
}

/// `(sign, log|det a|)` for `a` `n×n` (row-major), from the same LU as [`det`] but summing
/// `ln|u_ii|` so that it neither overflows nor underflows. `sign` has `|sign| = 1` (the product
/// of the phases `u_ii/|u_ii|` and the permutation's sign; ±1 for reals); a matrix with an exactly
/// zero pivot gives `(0, -inf)`; `n = 0` gives `(1, 0)`.
pub(crate) fn slogdet<T: Scalar>(n: usize, a: &[T]) -> (T, f64) {
    let f = lu(n, a);
    if f.singular {
        return (T::zero(), f64::NEG_INFINITY);
    }
    let mut sign = if f.odd { -T::one() } else { T::one() };
    let mut log = 0.0;
    for i in 0..n {
        let u = f.lu[i * n + i];
        sign = sign * u.unit();
        log += u.abs().ln();
    }
    (sign, log)
}

/// Householder QR of `a` (`m×n`, row-major), returning `(Q, R)` row-major with `a = Q·R`.
///
/// For each column `j < min(m, n)`, the reflection `H = I - 2·v·vᴴ/(vᴴ·v)` with
/// `v = x - α·e₁`, `x = R[j.., j]`, `α = -phase(x₀)·‖x‖`, maps `x` to `α·e₁` (skipped when `x`
/// is already zero below its first entry). `Q = H₀·H₁·…` is unitary (orthogonal for reals).
/// `complete = false` ("reduced"): Q is `m×k` and R `k×n`, `k = min(m, n)`; `complete = true`:
/// Q is `m×m` and R `m×n`. R is upper triangular (exact zeros below the diagonal); its diagonal
/// may be negative or complex.
pub(crate) fn qr<T: Scalar>(m: usize, n: usize, a: &[T], complete: bool) -> (Vec<T>, Vec<T>) {
    assert_eq!(a.len(), m * n);
    let mut r = a.to_vec();
    let mut q = identity::<T>(m);
    let k = m.min(n);
    for j in 0..k {
        if (j + 1..m).all(|i| r[i * n + j] == T::zero()) {
            continue;
        }
        // In units of (about) the column's largest entry, so no square overflows or underflows
        // (H is unchanged by scaling v).
        let unit = pow2_near((j..m).map(|i| r[i * n + j].abs()).fold(0.0, f64::max));
        let mut v: Vec<T> = (j..m).map(|i| r[i * n + j].div_real(unit)).collect();
        let norm = v.iter().map(|x| x.abs2()).sum::<f64>().sqrt();
        let alpha = -v[0].unit().scale(norm);
        v[0] = v[0] - alpha;
        let vv: f64 = v.iter().map(|x| x.abs2()).sum();
        let beta = 2.0 / vv;
        // R ← H·R on columns j+1.. (column j becomes α·e₁ exactly).
        for c in j + 1..n {
            let dot = (0..v.len()).fold(T::zero(), |s, i| s + v[i].conj() * r[(j + i) * n + c]);
            let dot = dot.scale(beta);
            for i in 0..v.len() {
                r[(j + i) * n + c] = r[(j + i) * n + c] - v[i] * dot;
            }
        }
        r[j * n + j] = alpha.scale(unit);
        for i in j + 1..m {
            r[i * n + j] = T::zero();
        }
        // Q ← Q·H (H is Hermitian).
        for row in 0..m {
            let dot = (0..v.len()).fold(T::zero(), |s, i| s + q[row * m + j + i] * v[i]);
            let dot = dot.scale(beta);
            for i in 0..v.len() {
                q[row * m + j + i] = q[row * m + j + i] - dot * v[i].conj();
            }
        }
    }
    if complete {
        (q, r)
    } else {
        let q = (0..m).flat_map(|i| q[i * m..i * m + k].iter().copied()).collect();
        r.truncate(k * n);
        (q, r)
    }
}

/// The most Jacobi sweeps before giving up (only NaN or inf inputs get near it).
const MAX_SWEEPS: usize = 100;

/// The unitary rotation `G = [[c, s·e], [-s·ē, c]]` (acting on coordinates `p`, `q`) that
/// diagonalizes the Hermitian `[[app, apq], [conj(apq), aqq]]`: `Gᴴ·[..]·G` is diagonal, with
/// `e = apq/|apq|` and `t = s/c` the smaller root of `t² + 2θt - 1 = 0`,
/// `θ = (aqq - app)/(2|apq|)` (Rutishauser's choice, the rotation by at most π/4).
/// Returns `(G_pp, G_pq, G_qp, G_qq)`.
fn jacobi_rotation<T: Scalar>(app: f64, aqq: f64, apq: T) -> (T, T, T, T) {
    let r = apq.abs();
    let e = apq.unit();
    let theta = (aqq - app) / (2.0 * r);
    // θ = ±inf (an off-diagonal negligible beyond the exponent range) gives t = 0, G = I.
    let sign = if theta < 0.0 { -1.0 } else { 1.0 };
    let t = sign / (theta.abs() + theta.hypot(1.0));
    let c = 1.0 / t.hypot(1.0);
    let s = t * c;
    (T::from_f64(c), e.scale(s), -e.conj().scale(s), T::from_f64(c))
}

/// `a ← a·G` on columns `p`, `q` of the row-major `a` with `n` columns, for `G` as
/// [`jacobi_rotation`] returns it.
fn rotate_cols<T: Scalar>(a: &mut [T], n: usize, p: usize, q: usize, g: (T, T, T, T)) {
    let (gpp, gpq, gqp, gqq) = g;
    for row in a.chunks_exact_mut(n) {
        let (x, y) = (row[p], row[q]);
        row[p] = x * gpp + y * gqp;
        row[q] = x * gpq + y * gqq;
    }
}

/// Whether the off-diagonal `apq` is negligible against the diagonal entries `app`, `aqq`
/// (relative to `tol`, so that small eigen/singular values keep their relative accuracy).
fn negligible<T: Scalar>(apq: T, app: f64, aqq: f64, tol: f64) -> bool {
    let r = apq.abs();
    r == 0.0 || r <= tol * app.abs().sqrt() * aqq.abs().sqrt() || r < f64::MIN_POSITIVE
}

/// Hermitian eigendecomposition of `a` (`n×n`, row-major), reading only its lower triangle
/// (NumPy's `UPLO='L'`; the imaginary part of the diagonal is ignored).
///
/// Returns `(w, v)`: the eigenvalues `w` ascending (real), and `v` `n×n` row-major with
/// `v[i*n + j]` = component `i` of eigenvector `j` (the columns are orthonormal eigenvectors),
/// so `a = v·diag(w)·vᴴ`. Cyclic Jacobi: sweeps over all pairs `p < q`, rotating away each
/// `a[p][q]` that is not negligible against `√|a[p][p]·a[q][q]|`, until a sweep rotates
/// nothing (at most 100 sweeps). Eigenvector signs/phases are whatever the rotations leave.
pub(crate) fn eigh<T: Scalar>(n: usize, a: &[T]) -> (Vec<f64>, Vec<T>) {
    assert_eq!(a.len(), n * n);
    let mut h = vec![T::zero(); n * n];
    for i in 0..n {
        for j in 0..i {
            h[i * n + j] = a[i * n + j];
            h[j * n + i] = a[i * n + j].conj();
        }
        h[i * n + i] = T::from_f64(a[i * n + i].re());
    }
    let mut v = identity::<T>(n);
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (app, aqq, apq) = (h[p * n + p].re(), h[q * n + q].re(), h[p * n + q]);
                if negligible(apq, app, aqq, f64::EPSILON) {
                    continue;
                }
                rotated = true;
                // h ← h·G (columns p, q), then h ← Gᴴ·h (rows p, q); v ← v·G.
                let g = jacobi_rotation(app, aqq, apq);
                rotate_cols(&mut h, n, p, q, g);
                rotate_cols(&mut v, n, p, q, g);
                let (gpp, gpq, gqp, gqq) = g;
                for j in 0..n {
                    let (x, y) = (h[p * n + j], h[q * n + j]);
                    h[p * n + j] = gpp.conj() * x + gqp.conj() * y;
                    h[q * n + j] = gpq.conj() * x + gqq.conj() * y;
                }
                h[p * n + q] = T::zero();
                h[q * n + p] = T::zero();
                h[p * n + p] = T::from_f64(h[p * n + p].re());
                h[q * n + q] = T::from_f64(h[q * n + q].re());
            }
        }
        if !rotated {
            break;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| h[i * n + i].re().total_cmp(&h[j * n + j].re()));
    let w = order.iter().map(|&i| h[i * n + i].re()).collect();
    let v = (0..n).flat_map(|i| order.iter().map(move |&j| (i, j))).map(|(i, j)| v[i * n + j]);
    (w, v.collect())
}

/// Singular value decomposition of `a` (`m×n`, row-major): `(U, s, Vh)` with `a = U·diag(s)·Vh`,
/// `s` descending and non-negative, all row-major.
///
/// `full = false`: U is `m×k` and Vh `k×n`, `k = min(m, n)`; `full = true`: U is `m×m` and Vh
/// `n×n`, the extra columns of U (rows of Vh) completing an orthonormal basis. One-sided Jacobi
/// (Hestenes) on the columns of `a` (of `aᴴ` when `m < n`): each pair of columns whose inner
/// product is not negligible (relative to `m·ε` times their norms) is rotated by the Jacobi
/// rotation of their 2×2 Gram matrix, accumulating the rotations in V, until a sweep rotates
/// nothing (at most 100). Then `s_j` is the norm of column `j` and `U`'s column `j` the column
/// normalized; columns for zero singular values (rank-deficient or zero `a`) and the extra
/// columns of `full` are completed to an orthonormal basis through a complete [`qr`]. `m` or
/// `n = 0` gives empty outputs of the right sizes (the full square factors being identities).
pub(crate) fn svd<T: Scalar>(
    m: usize,
    n: usize,
    a: &[T],
    full: bool,
) -> (Vec<T>, Vec<f64>, Vec<T>) {
    assert_eq!(a.len(), m * n);
    if m < n {
        // aᴴ = U'·S·Vh'  ⇒  a = Vh'ᴴ·S·U'ᴴ.
        let (u, s, vh) = svd(n, m, &adjoint(m, n, a), full);
        let ucols = u.len() / n.max(1);
        return (adjoint(vh.len() / m.max(1), m, &vh), s, adjoint(n, ucols, &u));
    }
    // m ≥ n: rotate the columns of w (m×n, row-major) until they are orthogonal. w is a scaled
    // by a power of two (exactly), its largest entry near 1, so no squared norm overflows.
    let unscale = pow2_near(a.iter().map(|x| x.abs()).fold(0.0, f64::max));
    let mut w: Vec<T> = a.iter().map(|x| x.div_real(unscale)).collect();
    let mut v = identity::<T>(n);
    let tol = (m as f64) * f64::EPSILON;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, T::zero());
                for i in 0..m {
                    let (x, y) = (w[i * n + p], w[i * n + q]);
                    alpha += x.abs2();
                    beta += y.abs2();
                    gamma = gamma + x.conj() * y;
                }
                if negligible(gamma, alpha, beta, tol) {
                    continue;
                }
                rotated = true;
                let g = jacobi_rotation(alpha, beta, gamma);
                rotate_cols(&mut w, n, p, q, g);
                rotate_cols(&mut v, n, p, q, g);
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> =
        (0..n).map(|j| (0..m).map(|i| w[i * n + j].abs2()).sum::<f64>().sqrt()).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| norms[j].total_cmp(&norms[i]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j] * unscale).collect();
    // The columns of U with a nonzero singular value, normalized (m×r).
    let r = order.iter().take_while(|&&j| norms[j] > 0.0).count();
    let mut u = vec![T::zero(); m * r];
    for (c, &j) in order[..r].iter().enumerate() {
        for i in 0..m {
            u[i * r + c] = w[i * n + j].div_real(norms[j]);
        }
    }
    let ucols = if full { m } else { n };
    let u = if r < ucols {
        // Columns r.. of a complete QR of u are orthonormal and orthogonal to u's columns.
        let (q, _) = qr(m, r, &u, true);
        (0..m)
            .flat_map(|i| (0..ucols).map(move |c| (i, c)))
            .map(|(i, c)| if c < r { u[i * r + c] } else { q[i * m + c] })
            .collect()
    } else {
        u
    };
    // Vh = (V with its columns in `order`)ᴴ.
    let vh = (0..n).flat_map(|c| (0..n).map(move |i| (c, i))).map(|(c, i)| v[i * n + order[c]]);
    (u, s, vh.map(T::conj).collect())
}

/// The power of two nearest `x` (within `2^±1022`, so its reciprocal is normal too); 1 for zero,
/// inf or NaN. Scaling by it is exact.
fn pow2_near(x: f64) -> f64 {
    if x > 0.0 && x.is_finite() {
        2f64.powi(x.log2().round().clamp(-1022.0, 1022.0) as i32)
    } else {
        1.0
    }
}

/// The `n×n` identity.
fn identity<T: Scalar>(n: usize) -> Vec<T> {
    let mut e = vec![T::zero(); n * n];
    for i in 0..n {
        e[i * n + i] = T::one();
    }
    e
}

/// The conjugate transpose (`n×m`) of the row-major `m×n` matrix `a`.
fn adjoint<T: Scalar>(m: usize, n: usize, a: &[T]) -> Vec<T> {
    (0..n).flat_map(|j| (0..m).map(move |i| a[i * n + j].conj())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    type C64 = Complex<f64>;

    /// A tiny deterministic generator (Knuth's MMIX LCG), uniform in [-1, 1).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        }
    }

    /// Test-only construction of scalars.
    trait Gen: Scalar {
        /// `re + i·im` (the imaginary part dropped for reals).
        fn c(re: f64, im: f64) -> Self;
        fn rand(g: &mut Lcg) -> Self {
            let re = g.next();
            Self::c(re, g.next())
        }
    }

    impl Gen for f64 {
        fn c(re: f64, _: f64) -> Self {
            re
        }
    }

    impl Gen for C64 {
        fn c(re: f64, im: f64) -> Self {
            C64::new(re, im)
        }
    }

    fn real<T: Gen>(v: &[f64]) -> Vec<T> {
        v.iter().map(|&x| T::from_f64(x)).collect()
    }

    fn rand_mat<T: Gen>(g: &mut Lcg, m: usize, n: usize) -> Vec<T> {
        (0..m * n).map(|_| T::rand(g)).collect()
    }

    /// `(m×k)·(k×n)`.
    fn matmul<T: Scalar>(m: usize, k: usize, n: usize, a: &[T], b: &[T]) -> Vec<T> {
        assert_eq!((a.len(), b.len()), (m * k, k * n));
        let mut c = vec![T::zero(); m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).fold(T::zero(), |s, l| s + a[i * k + l] * b[l * n + j]);
            }
        }
        c
    }

    fn frob<T: Scalar>(a: &[T]) -> f64 {
        a.iter().map(|x| x.abs2()).sum::<f64>().sqrt()
    }

    /// `‖a - b‖_F ≤ 10⁻¹²·scale`.
    #[track_caller]
    fn assert_close<T: Scalar>(a: &[T], b: &[T], scale: f64, what: &str) {
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        let err = frob(&a.iter().zip(b).map(|(&x, &y)| x - y).collect::<Vec<_>>());
        assert!(err <= 1e-12 * scale, "{what}: error {err:e} (scale {scale:e})");
    }

    /// `a` (`m×n`) with column `j` multiplied by `d[j]`.
    fn scale_cols<T: Scalar>(n: usize, a: &[T], d: &[f64]) -> Vec<T> {
        a.iter().enumerate().map(|(i, x)| x.scale(d[i % n])).collect()
    }

    /// The columns of `q` (`m×c`) are orthonormal.
    #[track_caller]
    fn assert_orthonormal_cols<T: Scalar>(m: usize, c: usize, q: &[T], what: &str) {
        let qhq = matmul(c, m, c, &adjoint(m, c, q), q);
        assert_close(&qhq, &identity(c), c as f64, what);
    }

    /// A random Hermitian positive definite `n×n` matrix: `B·Bᴴ + n·I`.
    fn rand_hpd<T: Gen>(g: &mut Lcg, n: usize) -> Vec<T> {
        let b = rand_mat::<T>(g, n, n);
        let mut a = matmul(n, n, n, &b, &adjoint(n, n, &b));
        for i in 0..n {
            a[i * n + i] = a[i * n + i] + T::from_f64(n as f64);
        }
        a
    }

    /// A random Hermitian `n×n` matrix: `(B + Bᴴ)/2`.
    fn rand_herm<T: Gen>(g: &mut Lcg, n: usize) -> Vec<T> {
        let b = rand_mat::<T>(g, n, n);
        b.iter().zip(&adjoint(n, n, &b)).map(|(&x, &y)| (x + y).scale(0.5)).collect()
    }

    /// `a` with garbage in its strict upper triangle and in the imaginary part of its diagonal
    /// (which the lower-triangle readers must ignore).
    fn spoil_upper<T: Gen>(n: usize, a: &[T]) -> Vec<T> {
        let mut s = a.to_vec();
        for i in 0..n {
            s[i * n + i] = s[i * n + i] + T::c(0.0, 7.0);
            for j in i + 1..n {
                s[i * n + j] = T::c(1e3, -5e2);
            }
        }
        s
    }

    fn cholesky_reconstructs<T: Gen>() {
        let mut g = Lcg(1);
        for n in [0, 1, 2, 3, 5, 8] {
            let a = rand_hpd::<T>(&mut g, n);
            let l = cholesky(n, &spoil_upper(n, &a)).unwrap();
            for i in 0..n {
                assert!(l[i * n + i].re() > 0.0 && l[i * n + i] == T::from_f64(l[i * n + i].re()));
                assert!((i + 1..n).all(|j| l[i * n + j] == T::zero()), "upper zeros");
            }
            let llh = matmul(n, n, n, &l, &adjoint(n, n, &l));
            assert_close(&llh, &a, frob(&a), &format!("L·Lᴴ n={n}"));
        }
        // Known: [[4, 2], [2, 5]] = [[2, 0], [1, 2]]·[[2, 1], [0, 2]].
        assert_eq!(cholesky(2, &real::<T>(&[4.0, 2.0, 2.0, 5.0])), Ok(real(&[2.0, 0.0, 1.0, 2.0])));
        // Not positive definite: indefinite, negative, zero, NaN, semidefinite.
        let nan = f64::NAN;
        for a in [[1., 2., 2., 1.], [-1., 0., 0., 1.], [0.; 4], [1., 0., nan, 1.], [1.; 4]] {
            assert_eq!(cholesky(2, &real::<T>(&a)), Err(Failure::NotPositiveDefinite), "{a:?}");
        }
        assert_eq!(cholesky::<T>(0, &[]), Ok(vec![]));
    }

    fn solve_and_inv_reconstruct<T: Gen>() {
        let mut g = Lcg(2);
        for n in [0, 1, 2, 4, 7] {
            let a = rand_mat::<T>(&mut g, n, n);
            for k in [0, 1, 3] {
                let b = rand_mat::<T>(&mut g, n, k);
                let x = solve(n, k, &a, &b).unwrap();
                assert_close(&matmul(n, n, k, &a, &x), &b, frob(&a) * frob(&x), "a·x = b");
            }
            let ai = inv(n, &a).unwrap();
            let scale = frob(&a) * frob(&ai);
            assert_close(&matmul(n, n, n, &a, &ai), &identity(n), scale, "a·inv = I");
            assert_close(&matmul(n, n, n, &ai, &a), &identity(n), scale, "inv·a = I");
        }
        // Needs a row swap: [[0, 1], [1, 0]]·x = [3, 5] → x = [5, 3].
        let x = solve(2, 1, &real::<T>(&[0.0, 1.0, 1.0, 0.0]), &real::<T>(&[3.0, 5.0]));
        assert_eq!(x, Ok(real(&[5.0, 3.0])));
        assert_eq!(inv(2, &real::<T>(&[2.0, 0.0, 0.0, 4.0])), Ok(real(&[0.5, 0.0, 0.0, 0.25])));
    }

    fn singular_is_reported<T: Gen>() {
        for a in [[1.0, 2.0, 2.0, 4.0], [0.0; 4], [0.0, 1.0, 0.0, 3.0]] {
            let a = real::<T>(&a);
            assert_eq!(solve(2, 1, &a, &[T::one(); 2]), Err(Failure::Singular));
            assert_eq!(inv(2, &a), Err(Failure::Singular));
            assert_eq!(det(2, &a), T::zero());
            assert_eq!(slogdet(2, &a), (T::zero(), f64::NEG_INFINITY));
        }
    }

    fn det_known_values<T: Gen>() {
        assert_eq!(det::<T>(0, &[]), T::one());
        assert_eq!(det(1, &[T::c(3.0, -2.0)]), T::c(3.0, -2.0));
        // Triangular: the diagonal's product.
        let tri = real::<T>(&[2.0, 7.0, -1.0, 0.0, 3.0, 5.0, 0.0, 0.0, -4.0]);
        assert_eq!(det(3, &tri), T::from_f64(-24.0));
        // By hand (cofactors along the first row): 2·(0 + 4) + 3·(10 + 1) + 1·(8 - 0) = 49.
        let a = real::<T>(&[2.0, -3.0, 1.0, 2.0, 0.0, -1.0, 1.0, 4.0, 5.0]);
        assert!((det(3, &a) - T::from_f64(49.0)).abs() < 1e-13);
        // A permutation's sign.
        let p = real::<T>(&[0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
        assert_eq!(det(3, &p), T::one());
        assert_eq!(det(2, &real::<T>(&[0.0, 1.0, 1.0, 0.0])), -T::one());
        // diag(i, 2) → 2i (2 for reals).
        let d = [T::c(0.0, 1.0), T::zero(), T::zero(), T::from_f64(2.0)];
        assert_eq!(det(2, &d), T::c(0.0, 2.0));
        // det(a·b) = det(a)·det(b).
        let mut g = Lcg(3);
        for n in [1, 2, 5, 8] {
            let (a, b) = (rand_mat::<T>(&mut g, n, n), rand_mat::<T>(&mut g, n, n));
            let (da, db) = (det(n, &a), det(n, &b));
            let dab = det(n, &matmul(n, n, n, &a, &b));
            assert!((dab - da * db).abs() <= 1e-12 * dab.abs().max(1.0), "n={n}");
        }
    }

    fn slogdet_matches_det<T: Gen>() {
        assert_eq!(slogdet::<T>(0, &[]), (T::one(), 0.0));
        let mut g = Lcg(4);
        for n in [1, 2, 3, 6, 9] {
            let a = rand_mat::<T>(&mut g, n, n);
            let (sign, log) = slogdet(n, &a);
            assert!((sign.abs() - 1.0).abs() < 1e-15);
            let d = det(n, &a);
            assert!((sign.scale(log.exp()) - d).abs() <= 1e-12 * d.abs(), "n={n}");
        }
        assert_eq!(slogdet(2, &real::<T>(&[0.0, 1.0, 1.0, 0.0])), (-T::one(), 0.0));
        // Beyond f64's range: det overflows, slogdet doesn't.
        let n = 40;
        let big: Vec<T> = identity::<T>(n).iter().map(|x| x.scale(-1e10)).collect();
        // (Complex: (inf, 0)·(x, 0) has a NaN imaginary part, which then spreads.)
        assert!(!det(n, &big).abs().is_finite());
        let (sign, log) = slogdet(n, &big);
        assert_eq!(sign, T::one());
        assert!((log - 40.0 * 1e10f64.ln()).abs() < 1e-12 * log);
    }

    /// Test shapes: every pair from 0, 1, 2, 3, 5, and a few more tall and wide ones.
    fn shapes() -> Vec<(usize, usize)> {
        let d = [0, 1, 2, 3, 5];
        let pairs = d.iter().flat_map(|&m| d.iter().map(move |&n| (m, n)));
        pairs.chain([(8, 2), (2, 7), (12, 9), (9, 12)]).collect()
    }

    /// Random test matrices of shape `m×n`: dense, rank 1 (where m, n ≥ 2), zero.
    fn test_mats<T: Gen>(g: &mut Lcg, m: usize, n: usize) -> Vec<Vec<T>> {
        let mut out = vec![rand_mat::<T>(g, m, n), vec![T::zero(); m * n]];
        if m >= 2 && n >= 2 {
            let (x, y) = (rand_mat::<T>(g, m, 1), rand_mat::<T>(g, 1, n));
            out.push(matmul(m, 1, n, &x, &y));
            // Rank 2 with a repeated column.
            let (x, y) = (rand_mat::<T>(g, m, 2), rand_mat::<T>(g, 2, n));
            let mut r2 = matmul(m, 2, n, &x, &y);
            for i in 0..m {
                r2[i * n + n - 1] = r2[i * n];
            }
            out.push(r2);
        }
        out
    }

    fn qr_reconstructs<T: Gen>() {
        let mut g = Lcg(5);
        for (m, n) in shapes() {
            for a in test_mats::<T>(&mut g, m, n) {
                for complete in [false, true] {
                    let (q, r) = qr(m, n, &a, complete);
                    let k = if complete { m } else { m.min(n) };
                    assert_eq!((q.len(), r.len()), (m * k, k * n));
                    let what = format!("qr {m}×{n} complete={complete}");
                    assert_close(&matmul(m, k, n, &q, &r), &a, frob(&a), &what);
                    assert_orthonormal_cols(m, k, &q, &what);
                    for i in 0..k {
                        assert!((0..i.min(n)).all(|j| r[i * n + j] == T::zero()), "{what}: R");
                    }
                }
            }
        }
        // Known: [[3], [4]] → R = ∓5.
        let (_, r) = qr(2, 1, &real::<T>(&[3.0, 4.0]), false);
        assert!((r[0].abs() - 5.0).abs() < 1e-15);
    }

    #[track_caller]
    fn check_eigh<T: Gen>(n: usize, a: &[T], what: &str) -> Vec<f64> {
        let (w, v) = eigh(n, &spoil_upper(n, a));
        assert_eq!((w.len(), v.len()), (n, n * n));
        assert!(w.windows(2).all(|p| p[0] <= p[1]), "{what}: ascending {w:?}");
        assert_orthonormal_cols(n, n, &v, what);
        let recon = matmul(n, n, n, &scale_cols(n, &v, &w), &adjoint(n, n, &v));
        assert_close(&recon, a, frob(a), what);
        w
    }

    fn eigh_reconstructs<T: Gen>() {
        let mut g = Lcg(6);
        for n in [0, 1, 2, 3, 5, 10, 16] {
            check_eigh(n, &rand_herm::<T>(&mut g, n), &format!("eigh n={n}"));
        }
        // Repeated eigenvalues: Q·diag(1, 1, 2, 2, 2, -3)·Qᴴ with Q unitary.
        let n = 6;
        let (q, _) = qr(n, n, &rand_mat::<T>(&mut g, n, n), true);
        let qd = scale_cols(n, &q, &[1.0, 1.0, 2.0, 2.0, 2.0, -3.0]);
        let a = matmul(n, n, n, &qd, &adjoint(n, n, &q));
        let w = check_eigh(n, &a, "repeated");
        for (x, y) in w.iter().zip([-3.0, 1.0, 1.0, 2.0, 2.0, 2.0]) {
            assert!((x - y).abs() < 1e-13, "{w:?}");
        }
        // Zero and identity matrices: diagonal already.
        assert_eq!(check_eigh(3, &[T::zero(); 9], "zero"), [0.0; 3]);
        assert_eq!(check_eigh(3, &identity::<T>(3), "identity"), [1.0; 3]);
    }

    fn eigh_known<T: Gen>() {
        // [[2, 1], [1, 2]]: w = [1, 3], v = ±[1, -1]/√2, ±[1, 1]/√2.
        let (w, v) = eigh(2, &real::<T>(&[2.0, 1.0, 1.0, 2.0]));
        assert!((w[0] - 1.0).abs() <= 4e-16 && (w[1] - 3.0).abs() <= 8e-16, "{w:?}");
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!((v[0].abs() - h).abs() < 1e-15 && (v[0] + v[2]).abs() < 1e-15, "{v:?}");
        assert!((v[1].abs() - h).abs() < 1e-15 && (v[1] - v[3]).abs() < 1e-15, "{v:?}");
        // [[2, -i], [i, 2]] (lower: a[1][0] = i) also has w = [1, 3] (for reals: [[2, 0], [0, 2]]).
        let (w, _) = eigh(2, &[T::from_f64(2.0), T::zero(), T::c(0.0, 1.0), T::from_f64(2.0)]);
        let want = if T::c(0.0, 1.0) == T::zero() { [2.0, 2.0] } else { [1.0, 3.0] };
        assert!((w[0] - want[0]).abs() <= 4e-16 && (w[1] - want[1]).abs() <= 8e-16, "{w:?}");
        // Graded diagonal: small eigenvalues keep full relative accuracy.
        let (w, _) = eigh(2, &real::<T>(&[1e-20, 0.0, 1e-30, 1.0]));
        assert!((w[0] - (1e-20 - 1e-60)).abs() <= 1e-35 && w[1] == 1.0, "{w:?}");
    }

    #[track_caller]
    fn check_svd<T: Gen>(m: usize, n: usize, a: &[T], full: bool, what: &str) -> Vec<f64> {
        let k = m.min(n);
        let (u, s, vh) = svd(m, n, a, full);
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        assert_eq!((u.len(), s.len(), vh.len()), (m * uc, k, vr * n), "{what}: sizes");
        assert!(s.windows(2).all(|p| p[0] >= p[1]) && s.iter().all(|&x| x >= 0.0), "{what}: {s:?}");
        assert_orthonormal_cols(m, uc, &u, what);
        assert_orthonormal_cols(n, vr, &adjoint(vr, n, &vh), what);
        // U·diag(s)·Vh needs only U's first k columns and Vh's first k rows.
        let us: Vec<T> = (0..m)
            .flat_map(|i| (0..k).map(move |j| (i, j)))
            .map(|(i, j)| u[i * uc + j].scale(s[j]))
            .collect();
        assert_close(&matmul(m, k, n, &us, &vh[..k * n]), a, frob(a), what);
        s
    }

    fn svd_reconstructs<T: Gen>() {
        let mut g = Lcg(7);
        for (m, n) in shapes() {
            for (idx, a) in test_mats::<T>(&mut g, m, n).into_iter().enumerate() {
                for full in [false, true] {
                    let what = format!("svd {m}×{n} #{idx} full={full}");
                    let s = check_svd(m, n, &a, full, &what);
                    // The matrices after the first have rank 0, 1, 2.
                    let (rank, tiny) = ([m.min(n), 0, 1, 2][idx], 1e-14 * frob(&a));
                    assert!(s[rank.min(s.len())..].iter().all(|&x| x <= tiny), "{what}");
                    // s² are the eigenvalues of aᴴ·a.
                    let w = eigh(n, &matmul(n, m, n, &adjoint(m, n, &a), &a)).0;
                    for (x, y) in s.iter().zip(w.iter().rev()) {
                        assert!((x * x - y).abs() <= 1e-12 * frob(&a).powi(2), "{what}");
                    }
                }
            }
        }
    }

    fn svd_known<T: Gen>() {
        // [[2, 0], [0, 1]]: s = [2, 1] exactly, U and Vh diagonal.
        let (u, s, vh) = svd(2, 2, &real::<T>(&[2.0, 0.0, 0.0, 1.0]), false);
        assert_eq!(s, [2.0, 1.0]);
        assert_eq!(matmul(2, 2, 2, &u, &vh), identity::<T>(2));
        // [[0, 1], [3, 0]] (needs sorting): s = [3, 1].
        assert_eq!(check_svd(2, 2, &real::<T>(&[0.0, 1.0, 3.0, 0.0]), true, "sort"), [3.0, 1.0]);
        // [[3, 4]] → s = [5]; [[1, 1], [1, 1]] → s = [2, 0].
        assert!((check_svd(1, 2, &real::<T>(&[3.0, 4.0]), true, "row")[0] - 5.0).abs() < 1e-15);
        let s = check_svd(2, 2, &real::<T>(&[1.0; 4]), true, "ones");
        assert!((s[0] - 2.0).abs() < 1e-15 && s[1] < 1e-15, "{s:?}");
        // [[1, i], [i, -1]] has rank 1: s = [2, 0] (for reals, [[1, 0], [0, -1]]: s = [1, 1]).
        let a = [T::one(), T::c(0.0, 1.0), T::c(0.0, 1.0), -T::one()];
        let s = check_svd(2, 2, &a, false, "complex rank 1");
        let want = if a[1] == T::zero() { [1.0, 1.0] } else { [2.0, 0.0] };
        assert!((s[0] - want[0]).abs() < 1e-15 && (s[1] - want[1]).abs() < 1e-15, "{s:?}");
    }

    fn extreme_scales<T: Gen>() {
        let mut g = Lcg(8);
        let a = rand_mat::<T>(&mut g, 4, 3);
        let s = check_svd(4, 3, &a, false, "unit");
        for k in [1e200, 1e-200] {
            let b: Vec<T> = a.iter().map(|x| x.scale(k)).collect();
            let (_, sb, _) = svd(4, 3, &b, false);
            for (x, y) in s.iter().zip(&sb) {
                assert!((x * k - y).abs() <= 1e-13 * y, "{k:e}: {s:?} {sb:?}");
            }
            check_svd(4, 3, &b, true, "svd scaled");
            let (q, r) = qr(4, 3, &b, false);
            assert_close(&matmul(4, 3, 3, &q, &r), &b, frob(&b), "qr scaled");
            assert_orthonormal_cols(4, 3, &q, "qr scaled");
        }
    }

    fn nan_never_panics<T: Gen>() {
        let mut g = Lcg(9);
        for (m, n) in [(3, 3), (4, 2), (2, 4)] {
            let mut a = rand_mat::<T>(&mut g, m, n);
            a[1] = T::from_f64(f64::NAN);
            for inf in [false, true] {
                if inf {
                    a[2] = T::from_f64(f64::INFINITY);
                }
                let _ = qr(m, n, &a, true);
                let _ = svd(m, n, &a, true);
                let _ = svd(m, n, &a, false);
                if m == n {
                    assert_eq!(cholesky(n, &a), Err(Failure::NotPositiveDefinite));
                    let _ = (solve(n, 1, &a, &vec![T::one(); n]), inv(n, &a));
                    let _ = (det(n, &a), slogdet(n, &a));
                    let (w, _) = eigh(n, &adjoint(n, n, &a));
                    assert!(w.iter().any(|x| x.is_nan()), "{w:?}");
                }
            }
        }
    }

    macro_rules! for_both {
        ($($name:ident),* $(,)?) => {
            mod real {
                $(#[test] fn $name() { super::$name::<f64>() })*
            }
            mod complex {
                $(#[test] fn $name() { super::$name::<super::C64>() })*
            }
        };
    }

    for_both!(
        cholesky_reconstructs,
        solve_and_inv_reconstruct,
        singular_is_reported,
        det_known_values,
        slogdet_matches_det,
        qr_reconstructs,
        eigh_reconstructs,
        eigh_known,
        svd_reconstructs,
        svd_known,
        extreme_scales,
        nan_never_panics,
    );
}
