//! GPU tests of [`crate::solver`]: each wrapper on small known problems, for every element type,
//! checked on the host after download (`L·Lᴴ = A`, `A·X = B`, `Q·R = A`, `A·V = V·Λ`,
//! `U·S·Vᴴ = A`, `A·A⁻¹ = I`), batches of 2 or more, and the failures (`info > 0`) of a
//! matrix that is not positive definite or is singular. Skipped where cuSOLVER (or cuBLAS)
//! cannot be loaded.

use std::ops::{Add, Mul, Sub};

use super::{Failure, GpuTest, TestResult};
use crate::solver::{self, FailureKind, Info, QMode, SolverType, Strided, SvdJob, Transpose, Uplo};
use crate::{DeviceBuffer, RuntimeError};

/// The solver tests, in the order they run.
pub(super) fn tests() -> Vec<GpuTest> {
    macro_rules! list {
        ($($name:ident),* $(,)?) => { vec![$(GpuTest { name: stringify!($name), run: $name }),*] };
    }
    list![
        solver_preload,
        solver_potrf,
        solver_lu_solve,
        solver_qr,
        solver_syevd,
        solver_syevj_batched,
        solver_gesvd,
        solver_gesvdj_batched,
        solver_gesvdj,
        solver_inv_batched,
    ]
}

/// `solver::preload` loads cuSOLVER on a thread of its own: the process's first solver call
/// then finds it loaded (the first of the solver tests, so nothing loaded it before).
fn solver_preload() -> TestResult {
    solver::preload();
    let t = std::time::Instant::now();
    while solver::loaded().is_none() {
        if t.elapsed() > std::time::Duration::from_secs(20) {
            return Err(Failure::Fail("cuSOLVER not loaded 20 s after its preload".into()));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    if solver::loaded() != Some(true) {
        return super::skip("cuSOLVER cannot be loaded");
    }
    // Still mapped: `libs::open_kept` kept it open.
    if crate::libs::is_mapped(&["cusolver"]) {
        Ok(())
    } else {
        Err(Failure::Fail("cuSOLVER was unmapped after its preload".into()))
    }
}

const TYPES: [SolverType; 4] =
    [SolverType::F32, SolverType::F64, SolverType::C64, SolverType::C128];

/// A host complex number (the real types use `im = 0`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
struct C {
    re: f64,
    im: f64,
}

fn c(re: f64, im: f64) -> C {
    C { re, im }
}

impl Add for C {
    type Output = C;
    fn add(self, o: C) -> C {
        c(self.re + o.re, self.im + o.im)
    }
}

impl Sub for C {
    type Output = C;
    fn sub(self, o: C) -> C {
        c(self.re - o.re, self.im - o.im)
    }
}

impl Mul for C {
    type Output = C;
    fn mul(self, o: C) -> C {
        c(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)
    }
}

impl C {
    fn conj(self) -> C {
        c(self.re, -self.im)
    }

    fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
}

/// Column-major `m × k` times `k × n`.
fn matmul(a: &[C], m: usize, k: usize, b: &[C], n: usize) -> Vec<C> {
    let mut out = vec![C::default(); m * n];
    for j in 0..n {
        for l in 0..k {
            let blj = b[l + j * k];
            for i in 0..m {
                out[i + j * m] = out[i + j * m] + a[i + l * m] * blj;
            }
        }
    }
    out
}

/// The conjugate transpose (`cols × rows`) of a `rows × cols` matrix.
fn adjoint(a: &[C], rows: usize, cols: usize) -> Vec<C> {
    let mut out = vec![C::default(); rows * cols];
    for j in 0..cols {
        for i in 0..rows {
            out[j + i * cols] = a[i + j * rows].conj();
        }
    }
    out
}

fn eye(n: usize) -> Vec<C> {
    (0..n * n).map(|i| if i % (n + 1) == 0 { c(1.0, 0.0) } else { C::default() }).collect()
}

/// The first `cols` columns of a matrix of `rows` rows.
fn columns(a: &[C], rows: usize, cols: usize) -> Vec<C> {
    a[..rows * cols].to_vec()
}

/// `a` times `diag(d)` on the right (`rows × d.len()`).
fn scale_columns(a: &[C], rows: usize, d: &[f64]) -> Vec<C> {
    let mut out = a[..rows * d.len()].to_vec();
    for (j, &s) in d.iter().enumerate() {
        for x in &mut out[j * rows..(j + 1) * rows] {
            *x = *x * c(s, 0.0);
        }
    }
    out
}

fn max_diff(a: &[C], b: &[C]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(x, y)| (*x - *y).abs()).fold(0.0, f64::max)
}

fn tol(ty: SolverType) -> f64 {
    match ty.real() {
        SolverType::F32 => 2e-4,
        _ => 1e-10,
    }
}

/// A deterministic `rows × cols` matrix with entries in [-1, 1] (complex for complex types).
fn random(ty: SolverType, rows: usize, cols: usize, seed: u64) -> Vec<C> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    (0..rows * cols)
        .map(|_| {
            let re = next();
            let im = next();
            c(re, if ty.is_complex() { im } else { 0.0 })
        })
        .collect()
}

/// `B·Bᴴ + n·I`: Hermitian positive definite.
fn spd(ty: SolverType, n: usize, seed: u64) -> Vec<C> {
    let b = random(ty, n, n, seed);
    let mut a = matmul(&b, n, n, &adjoint(&b, n, n), n);
    for i in 0..n {
        a[i + i * n] = a[i + i * n] + c(n as f64, 0.0);
    }
    a
}

/// `(B + Bᴴ) / 2`: Hermitian.
fn hermitian(ty: SolverType, n: usize, seed: u64) -> Vec<C> {
    let b = random(ty, n, n, seed);
    let bh = adjoint(&b, n, n);
    b.iter().zip(&bh).map(|(x, y)| (*x + *y) * c(0.5, 0.0)).collect()
}

fn to_bytes(ty: SolverType, xs: &[C]) -> Vec<u8> {
    let mut out = Vec::with_capacity(xs.len() * ty.size());
    for x in xs {
        match ty {
            SolverType::F32 => out.extend((x.re as f32).to_ne_bytes()),
            SolverType::F64 => out.extend(x.re.to_ne_bytes()),
            SolverType::C64 => {
                out.extend((x.re as f32).to_ne_bytes());
                out.extend((x.im as f32).to_ne_bytes());
            }
            SolverType::C128 => {
                out.extend(x.re.to_ne_bytes());
                out.extend(x.im.to_ne_bytes());
            }
        }
    }
    out
}

fn from_bytes(ty: SolverType, bytes: &[u8]) -> Vec<C> {
    let f32_at = |b: &[u8]| f32::from_ne_bytes(b.try_into().unwrap()) as f64;
    let f64_at = |b: &[u8]| f64::from_ne_bytes(b.try_into().unwrap());
    bytes
        .chunks_exact(ty.size())
        .map(|e| match ty {
            SolverType::F32 => c(f32_at(e), 0.0),
            SolverType::F64 => c(f64_at(e), 0.0),
            SolverType::C64 => c(f32_at(&e[..4]), f32_at(&e[4..])),
            SolverType::C128 => c(f64_at(&e[..8]), f64_at(&e[8..])),
        })
        .collect()
}

/// The matrices of a batch, packed one after another.
fn upload(ty: SolverType, mats: &[Vec<C>]) -> Result<DeviceBuffer, Failure> {
    Ok(DeviceBuffer::from_slice(&to_bytes(ty, &mats.concat()))?)
}

/// A buffer's elements of `ty`, cut into `batch` items.
fn download(ty: SolverType, buf: &DeviceBuffer, batch: usize) -> Result<Vec<Vec<C>>, Failure> {
    let all = from_bytes(ty, &buf.to_vec::<u8>()?);
    let per = all.len() / batch.max(1);
    Ok(all.chunks(per.max(1)).map(<[C]>::to_vec).collect())
}

/// Real values (eigenvalues, singular values) of `ty.real()`, cut into `batch` items.
fn download_real(
    ty: SolverType,
    buf: &DeviceBuffer,
    batch: usize,
) -> Result<Vec<Vec<f64>>, Failure> {
    Ok(download(ty.real(), buf, batch)?
        .into_iter()
        .map(|v| v.iter().map(|x| x.re).collect())
        .collect())
}

fn alloc(ty: SolverType, elems: usize) -> Result<DeviceBuffer, Failure> {
    Ok(DeviceBuffer::alloc(elems * ty.size())?)
}

/// A wrapper's result: a library that cannot be loaded skips the test.
fn call<T>(r: crate::Result<T>) -> Result<T, Failure> {
    match r {
        Err(RuntimeError::Library(l)) if l.call == "libcusolver" || l.call == "libcublas" => {
            Err(Failure::Skip(format!("{} could not be loaded", l.call)))
        }
        r => Ok(r?),
    }
}

/// Fails unless every matrix of the batch succeeded.
fn all_ok(info: &Info, what: &str) -> TestResult {
    match info.check()? {
        Ok(()) => Ok(()),
        Err(f) => Err(Failure::Fail(format!("{what}: {f}"))),
    }
}

fn close(what: impl std::fmt::Display, got: &[C], want: &[C], tol: f64) -> TestResult {
    let d = max_diff(got, want);
    ensure!(d <= tol, "{what}: off by {d:e} (tolerance {tol:e})\n got {got:?}\nwant {want:?}");
    Ok(())
}

fn close_real(what: impl std::fmt::Display, got: &[f64], want: &[f64], tol: f64) -> TestResult {
    let as_c = |v: &[f64]| v.iter().map(|&x| c(x, 0.0)).collect::<Vec<_>>();
    close(what, &as_c(got), &as_c(want), tol)
}

/// The `uplo` triangle of an `n × n` matrix, zeros elsewhere.
fn triangle(a: &[C], n: usize, uplo: Uplo) -> Vec<C> {
    let mut out = a.to_vec();
    for j in 0..n {
        for i in 0..n {
            let keep = match uplo {
                Uplo::Lower => i >= j,
                Uplo::Upper => i <= j,
            };
            if !keep {
                out[i + j * n] = C::default();
            }
        }
    }
    out
}

/// Cholesky of SPD batches (1 matrix: `Xpotrf`; 2: `potrfBatched`), both triangles, every
/// type; and a matrix that is not positive definite, alone and second in a batch.
fn solver_potrf() -> TestResult {
    let n = 3;
    for ty in TYPES {
        let mats = [spd(ty, n, 1), spd(ty, n, 2)];
        for uplo in [Uplo::Lower, Uplo::Upper] {
            for batch in [1, 2] {
                let a = upload(ty, &mats[..batch])?;
                // SAFETY: `batch` packed 3 × 3 matrices of `ty`, alive past the check (which
                // waits for the stream).
                let info = call(unsafe {
                    solver::potrf(ty, uplo, n, Strided::new(a.ptr(), n * n), batch)
                })?;
                all_ok(&info, "potrf")?;
                for (i, f) in download(ty, &a, batch)?.iter().enumerate() {
                    let f = triangle(f, n, uplo);
                    let product = match uplo {
                        Uplo::Lower => matmul(&f, n, n, &adjoint(&f, n, n), n),
                        Uplo::Upper => matmul(&adjoint(&f, n, n), n, n, &f, n),
                    };
                    close(
                        format!("{ty:?} {uplo:?} batch {batch} [{i}]"),
                        &product,
                        &mats[i],
                        tol(ty) * 10.0,
                    )?;
                }
            }
        }
        // [[1, 2], [2, 1]] has eigenvalues 3 and -1: its minor of order 2 is not positive.
        let bad = vec![c(1.0, 0.0), c(2.0, 0.0), c(2.0, 0.0), c(1.0, 0.0)];
        for (mats, index) in [(vec![bad.clone()], 0), (vec![eye(2), bad], 1)] {
            let batch = mats.len();
            let a = upload(ty, &mats)?;
            // SAFETY: as above, 2 × 2 matrices.
            let info = call(unsafe {
                solver::potrf(ty, Uplo::Lower, 2, Strided::new(a.ptr(), 4), batch)
            })?;
            match info.check()? {
                Err(f) => ensure!(
                    f.kind == FailureKind::NotPositiveDefinite && f.index == index && f.info == 2,
                    "{ty:?} batch {batch}: {f:?}"
                ),
                Ok(()) => ensure!(
                    false,
                    "{ty:?} batch {batch}: a matrix that is not positive definite passed"
                ),
            }
        }
    }
    Ok(())
}

/// `A·X = B` through getrf + getrs for a batch of 2 (4 × 4, 2 right-hand sides), every type,
/// `op(A)` = `A` and `Aᵀ`; one factorisation shared by the batch (stride 0); and a singular
/// matrix.
fn solver_lu_solve() -> TestResult {
    let (n, nrhs, batch) = (4, 2, 2);
    for ty in TYPES {
        for trans in [Transpose::None, Transpose::Transpose, Transpose::ConjugateTranspose] {
            let mats: Vec<Vec<C>> = (0..batch)
                .map(|i| {
                    let mut a = random(ty, n, n, 10 + i as u64);
                    for d in 0..n {
                        a[d + d * n] = a[d + d * n] + c(4.0, 0.0);
                    }
                    a
                })
                .collect();
            let rhs: Vec<Vec<C>> = (0..batch).map(|i| random(ty, n, nrhs, 20 + i as u64)).collect();
            let a = upload(ty, &mats)?;
            let b = upload(ty, &rhs)?;
            let ipiv = DeviceBuffer::alloc(8 * n * batch)?;
            let (sa, sp, sb) = (
                Strided::new(a.ptr(), n * n),
                Strided::new(ipiv.ptr(), n),
                Strided::new(b.ptr(), n * nrhs),
            );
            // SAFETY: the buffers hold the batch's matrices, pivots and right-hand sides of
            // the shapes given, alive past the checks (which wait for the stream).
            let info = call(unsafe { solver::getrf(ty, n, n, sa, sp, batch) })?;
            all_ok(&info, "getrf")?;
            // SAFETY: as above.
            let info = call(unsafe { solver::getrs(ty, trans, n, nrhs, sa, sp, sb, batch) })?;
            all_ok(&info, "getrs")?;
            let pivots = ipiv.to_vec::<i64>()?;
            ensure!(
                pivots.iter().all(|&p| (1..=n as i64).contains(&p)),
                "{ty:?}: pivots {pivots:?}"
            );
            for (i, x) in download(ty, &b, batch)?.iter().enumerate() {
                let op_a = match trans {
                    Transpose::None => mats[i].clone(),
                    Transpose::Transpose => {
                        adjoint(&mats[i], n, n).iter().map(|z| z.conj()).collect()
                    }
                    Transpose::ConjugateTranspose => adjoint(&mats[i], n, n),
                };
                close(
                    format!("{ty:?} {trans:?} [{i}] A·X"),
                    &matmul(&op_a, n, n, x, nrhs),
                    &rhs[i],
                    tol(ty) * 10.0,
                )?;
            }
        }
        // One factorisation for both right-hand sides: a and ipiv of stride 0.
        let mut m0 = random(ty, n, n, 30);
        for d in 0..n {
            m0[d + d * n] = m0[d + d * n] + c(4.0, 0.0);
        }
        let rhs: Vec<Vec<C>> = (0..batch).map(|i| random(ty, n, nrhs, 40 + i as u64)).collect();
        let a = upload(ty, &[m0.clone()])?;
        let b = upload(ty, &rhs)?;
        let ipiv = DeviceBuffer::alloc(8 * n)?;
        // SAFETY: one matrix and its pivots, shared (stride 0) by the batch's right-hand sides.
        unsafe {
            all_ok(
                &call(solver::getrf(
                    ty,
                    n,
                    n,
                    Strided::new(a.ptr(), 0),
                    Strided::new(ipiv.ptr(), 0),
                    1,
                ))?,
                "getrf",
            )?;
            let info = call(solver::getrs(
                ty,
                Transpose::None,
                n,
                nrhs,
                Strided::new(a.ptr(), 0),
                Strided::new(ipiv.ptr(), 0),
                Strided::new(b.ptr(), n * nrhs),
                batch,
            ))?;
            all_ok(&info, "getrs shared")?;
        }
        for (i, x) in download(ty, &b, batch)?.iter().enumerate() {
            close(
                format!("{ty:?} shared [{i}]"),
                &matmul(&m0, n, n, x, nrhs),
                &rhs[i],
                tol(ty) * 10.0,
            )?;
        }
        // [[1, 2], [2, 4]] is singular: U(2, 2) = 0.
        let singular = vec![c(1.0, 0.0), c(2.0, 0.0), c(2.0, 0.0), c(4.0, 0.0)];
        let a = upload(ty, &[eye(2), singular])?;
        let ipiv = DeviceBuffer::alloc(8 * 2 * 2)?;
        // SAFETY: two 2 × 2 matrices and their pivots.
        let info = call(unsafe {
            solver::getrf(ty, 2, 2, Strided::new(a.ptr(), 4), Strided::new(ipiv.ptr(), 2), 2)
        })?;
        match info.check()? {
            Err(f) => ensure!(
                f.kind == FailureKind::Singular && f.index == 1 && f.info == 2,
                "{ty:?}: {f:?}"
            ),
            Ok(()) => ensure!(false, "{ty:?}: a singular matrix passed getrf"),
        }
    }
    Ok(())
}

/// QR of batches of 2 tall (4 × 3) and wide (3 × 4) matrices, every type: `Q·R = A` and
/// `Qᴴ·Q = I` for the reduced and the complete `Q`.
fn solver_qr() -> TestResult {
    let batch = 2;
    for ty in TYPES {
        for (m, n) in [(4, 3), (3, 4), (3, 3)] {
            let k = m.min(n);
            let mats: Vec<Vec<C>> = (0..batch).map(|i| random(ty, m, n, 50 + i as u64)).collect();
            let a = upload(ty, &mats)?;
            let tau = alloc(ty, k * batch)?;
            let (sa, st) = (Strided::new(a.ptr(), m * n), Strided::new(tau.ptr(), k));
            // SAFETY: the batch's matrices and their `tau`, alive past the check.
            all_ok(&call(unsafe { solver::geqrf(ty, m, n, sa, st, batch) })?, "geqrf")?;
            let factored = download(ty, &a, batch)?;
            for mode in [QMode::Reduced, QMode::Complete] {
                let qc = solver::q_columns(mode, m, n);
                let q = alloc(ty, m * qc * batch)?;
                // SAFETY: geqrf's output and `tau`, and room for the batch's Q.
                let info = call(unsafe {
                    solver::form_q(ty, mode, m, n, sa, st, Strided::new(q.ptr(), m * qc), batch)
                })?;
                all_ok(&info, "form_q")?;
                for (i, q) in download(ty, &q, batch)?.iter().enumerate() {
                    let what = format!("{ty:?} {m}x{n} {mode:?} [{i}]");
                    let r = triangle_rows(&factored[i], m, n, k);
                    close(
                        format!("{what} Q·R"),
                        &matmul(&columns(q, m, k), m, k, &r, n),
                        &mats[i],
                        tol(ty) * 10.0,
                    )?;
                    close(
                        format!("{what} QᴴQ"),
                        &matmul(&adjoint(q, m, qc), qc, m, q, qc),
                        &eye(qc),
                        tol(ty) * 10.0,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// `R` (`k × n`): the upper triangle of the first `k` rows of geqrf's `m × n` output.
fn triangle_rows(a: &[C], m: usize, n: usize, k: usize) -> Vec<C> {
    let mut r = vec![C::default(); k * n];
    for j in 0..n {
        for i in 0..k.min(j + 1) {
            r[i + j * k] = a[i + j * m];
        }
    }
    r
}

/// Checks eigenpairs: ascending values, `A·V = V·Λ`, `Vᴴ·V = I`.
fn check_eigen(
    what: &str,
    ty: SolverType,
    a: &[C],
    n: usize,
    w: &[f64],
    v: Option<&[C]>,
) -> TestResult {
    ensure!(w.windows(2).all(|p| p[0] <= p[1]), "{what}: eigenvalues not ascending: {w:?}");
    if let Some(v) = v {
        let t = tol(ty) * 20.0;
        close(format!("{what} A·V"), &matmul(a, n, n, v, n), &scale_columns(v, n, w), t)?;
        close(format!("{what} VᴴV"), &matmul(&adjoint(v, n, n), n, n, v, n), &eye(n), t)?;
    }
    Ok(())
}

/// `[[2, 1], [1, 2]]` (real) or `[[2, i], [-i, 2]]` (complex): eigenvalues 1 and 3.
fn two_by_two(ty: SolverType) -> Vec<C> {
    if ty.is_complex() {
        vec![c(2.0, 0.0), c(0.0, -1.0), c(0.0, 1.0), c(2.0, 0.0)]
    } else {
        vec![c(2.0, 0.0), c(1.0, 0.0), c(1.0, 0.0), c(2.0, 0.0)]
    }
}

type EigenCall =
    unsafe fn(SolverType, Uplo, bool, usize, Strided, Strided, usize) -> crate::Result<Info>;

/// The eigen tests of one solver: the 2 × 2 of known values, then a batch of 3 Hermitian 5 × 5
/// matrices, with vectors (lower triangle) and values only (upper).
fn eigen_cases(name: &str, f: EigenCall) -> TestResult {
    for ty in TYPES {
        let a = upload(ty, &[two_by_two(ty)])?;
        let w = alloc(ty.real(), 2)?;
        // SAFETY: one 2 × 2 matrix and room for its eigenvalues.
        let info = call(unsafe {
            f(ty, Uplo::Lower, true, 2, Strided::new(a.ptr(), 4), Strided::new(w.ptr(), 2), 1)
        })?;
        all_ok(&info, name)?;
        let got = download_real(ty, &w, 1)?.concat();
        close_real(
            format!("{name} {ty:?} eigenvalues of the 2 × 2"),
            &got,
            &[1.0, 3.0],
            tol(ty) * 10.0,
        )?;
        let v = download(ty, &a, 1)?.concat();
        check_eigen(&format!("{name} {ty:?} 2 × 2"), ty, &two_by_two(ty), 2, &got, Some(&v))?;

        let (n, batch) = (5, 3);
        let mats: Vec<Vec<C>> = (0..batch).map(|i| hermitian(ty, n, 60 + i as u64)).collect();
        let mut values = Vec::new();
        for (vectors, uplo) in [(true, Uplo::Lower), (false, Uplo::Upper)] {
            let a = upload(ty, &mats)?;
            let w = alloc(ty.real(), n * batch)?;
            // SAFETY: the packed batch and room for its eigenvalues.
            let info = call(unsafe {
                f(
                    ty,
                    uplo,
                    vectors,
                    n,
                    Strided::new(a.ptr(), n * n),
                    Strided::new(w.ptr(), n),
                    batch,
                )
            })?;
            all_ok(&info, name)?;
            let ws = download_real(ty, &w, batch)?;
            let vs = download(ty, &a, batch)?;
            for i in 0..batch {
                let what = format!("{name} {ty:?} vectors {vectors} [{i}]");
                check_eigen(&what, ty, &mats[i], n, &ws[i], vectors.then_some(&vs[i][..]))?;
            }
            values.push(ws.concat());
        }
        close_real(format!("{name} {ty:?} values alone"), &values[1], &values[0], tol(ty) * 10.0)?;
    }
    Ok(())
}

fn solver_syevd() -> TestResult {
    eigen_cases("syevd", solver::syevd)
}

fn solver_syevj_batched() -> TestResult {
    eigen_cases("syevj_batched", solver::syevj_batched)?;
    // Packing is required.
    // SAFETY: fails on its arguments before using the addresses.
    let e = unsafe {
        solver::syevj_batched(
            SolverType::F32,
            Uplo::Lower,
            true,
            3,
            Strided::new(0, 10),
            Strided::new(0, 3),
            2,
        )
    };
    ensure!(matches!(e, Err(RuntimeError::InvalidArgument(_))), "{e:?}");
    Ok(())
}

/// Checks an SVD: descending non-negative values, and with the factors (`u`: `m × uc`, `v`'s
/// first `k` columns `V`) `U·S·Vᴴ = A` and orthonormal columns.
#[allow(clippy::too_many_arguments)]
fn check_svd(
    what: &str,
    ty: SolverType,
    a: &[C],
    m: usize,
    n: usize,
    s: &[f64],
    u: Option<(&[C], usize)>,
    v: Option<(&[C], usize)>,
) -> TestResult {
    let k = m.min(n);
    ensure!(s.len() == k, "{what}: {} singular values", s.len());
    ensure!(s.windows(2).all(|p| p[0] >= p[1]) && s.iter().all(|&x| x >= 0.0), "{what}: {s:?}");
    let t = tol(ty) * 20.0;
    if let Some((u, uc)) = u {
        close(format!("{what} UᴴU"), &matmul(&adjoint(u, m, uc), uc, m, u, uc), &eye(uc), t)?;
    }
    if let Some((v, vc)) = v {
        close(format!("{what} VᴴV"), &matmul(&adjoint(v, n, vc), vc, n, v, vc), &eye(vc), t)?;
    }
    if let (Some((u, _)), Some((v, _))) = (u, v) {
        let us = scale_columns(&columns(u, m, k), m, s);
        close(
            format!("{what} U·S·Vᴴ"),
            &matmul(&us, m, k, &adjoint(&columns(v, n, k), n, k), n),
            a,
            t,
        )?;
    }
    Ok(())
}

/// `diag(3, 4)` padded with zeros to `m × n`: singular values 4, 3, then zeros.
fn known_svd(m: usize, n: usize) -> Vec<C> {
    let mut a = vec![C::default(); m * n];
    a[0] = c(3.0, 0.0);
    a[1 + m] = c(4.0, 0.0);
    a
}

/// The singular values of [`known_svd`] (`k ≥ 2`).
fn known_values(k: usize) -> Vec<f64> {
    let mut s = vec![0.0; k];
    s[..2].copy_from_slice(&[4.0, 3.0]);
    s
}

/// gesvd of batches of 2 of 3 × 2, 2 × 3 (through the adjoint) and 3 × 3 matrices, every type
/// and job; and the singular values of a known matrix.
fn solver_gesvd() -> TestResult {
    use SvdJob::*;
    let batch = 2;
    for ty in TYPES {
        for (m, n) in [(3, 2), (2, 3), (3, 3)] {
            let k = m.min(n);
            let known = known_svd(m, n);
            let mut mats: Vec<Vec<C>> = vec![known.clone()];
            mats.push(random(ty, m, n, 70 + m as u64));
            for (jobu, jobvt) in
                [(Reduced, Reduced), (Full, Full), (Full, Reduced), (None, Full), (None, None)]
            {
                let sh = solver::svd_shapes(m, n, jobu, jobvt);
                let a = upload(ty, &mats)?;
                let s = alloc(ty.real(), k * batch)?;
                let (ue, ve) = (sh.u.0 * sh.u.1, sh.vt.0 * sh.vt.1);
                let u = alloc(ty, ue * batch)?;
                let vt = alloc(ty, ve * batch)?;
                // SAFETY: the batch, room for its values and factors of the shapes of
                // `svd_shapes`, alive past the check.
                let info = call(unsafe {
                    solver::gesvd(
                        ty,
                        jobu,
                        jobvt,
                        m,
                        n,
                        Strided::new(a.ptr(), m * n),
                        Strided::new(s.ptr(), k),
                        Strided::new(u.ptr(), ue),
                        Strided::new(vt.ptr(), ve),
                        batch,
                    )
                })?;
                all_ok(&info, "gesvd")?;
                let ss = download_real(ty, &s, batch)?;
                close_real(
                    format!("gesvd {ty:?} {m}x{n} known"),
                    &ss[0],
                    &known_values(k),
                    tol(ty) * 10.0,
                )?;
                let us = if ue > 0 { download(ty, &u, batch)? } else { vec![vec![]; batch] };
                let vts = if ve > 0 { download(ty, &vt, batch)? } else { vec![vec![]; batch] };
                for i in 0..batch {
                    let what = format!("gesvd {ty:?} {m}x{n} {jobu:?}/{jobvt:?} [{i}]");
                    let v = (ve > 0).then(|| adjoint(&vts[i], sh.vt.0, sh.vt.1));
                    check_svd(
                        &what,
                        ty,
                        &mats[i],
                        m,
                        n,
                        &ss[i],
                        (ue > 0).then_some((&us[i][..], sh.u.1)),
                        v.as_deref().map(|v| (v, sh.vt.0)),
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// gesvdjBatched of batches of 3 of 3 × 2 and 2 × 3 matrices, every type, with and without
/// vectors.
fn solver_gesvdj_batched() -> TestResult {
    let batch = 3;
    for ty in TYPES {
        for (m, n) in [(3, 2), (2, 3), (4, 4)] {
            let k = m.min(n);
            let mut mats: Vec<Vec<C>> = vec![known_svd(m, n)];
            mats.extend((1..batch).map(|i| random(ty, m, n, 80 + i as u64)));
            let mut values = Vec::new();
            for vectors in [true, false] {
                let a = upload(ty, &mats)?;
                let s = alloc(ty.real(), k * batch)?;
                let u = alloc(ty, m * m * batch)?;
                let v = alloc(ty, n * n * batch)?;
                // SAFETY: the packed batch, room for its values and full factors.
                let info = call(unsafe {
                    solver::gesvdj_batched(
                        ty,
                        vectors,
                        m,
                        n,
                        Strided::new(a.ptr(), m * n),
                        Strided::new(s.ptr(), k),
                        Strided::new(u.ptr(), m * m),
                        Strided::new(v.ptr(), n * n),
                        batch,
                    )
                })?;
                all_ok(&info, "gesvdj_batched")?;
                let ss = download_real(ty, &s, batch)?;
                close_real(
                    format!("gesvdj {ty:?} {m}x{n} known"),
                    &ss[0],
                    &known_values(k),
                    tol(ty) * 10.0,
                )?;
                let (us, vs) = if vectors {
                    (download(ty, &u, batch)?, download(ty, &v, batch)?)
                } else {
                    (vec![], vec![])
                };
                for i in 0..batch {
                    let what = format!("gesvdj {ty:?} {m}x{n} vectors {vectors} [{i}]");
                    let (ui, vi) = if vectors {
                        (Some((&us[i][..], m)), Some((&vs[i][..], n)))
                    } else {
                        (None, None)
                    };
                    check_svd(&what, ty, &mats[i], m, n, &ss[i], ui, vi)?;
                }
                values.push(ss.concat());
            }
            close_real(
                format!("gesvdj {ty:?} {m}x{n} values alone"),
                &values[1],
                &values[0],
                tol(ty) * 10.0,
            )?;
        }
    }
    Ok(())
}

/// gesvdj (one matrix at a time) of batches of 2 of 3 × 2, 2 × 3 and 40 × 40 matrices, every
/// type, full and economy factors; and a large batch of 1 × 1 matrices (more `info` entries
/// than [`Info::FLAG_FROM`]: the flag path of [`Info::check`]).
fn solver_gesvdj() -> TestResult {
    let batch = 2;
    for ty in TYPES {
        for (m, n) in [(3, 2), (2, 3), (40, 40)] {
            let k = m.min(n);
            let mut mats: Vec<Vec<C>> = vec![known_svd(m, n)];
            mats.push(random(ty, m, n, 85 + m as u64));
            for econ in [false, true] {
                let (uc, vc) = if econ { (k, k) } else { (m, n) };
                let a = upload(ty, &mats)?;
                let s = alloc(ty.real(), k * batch)?;
                let u = alloc(ty, m * uc * batch)?;
                let v = alloc(ty, n * vc * batch)?;
                // SAFETY: the batch, room for its values and factors.
                let info = call(unsafe {
                    solver::gesvdj(
                        ty,
                        econ,
                        m,
                        n,
                        Strided::new(a.ptr(), m * n),
                        Strided::new(s.ptr(), k),
                        Strided::new(u.ptr(), m * uc),
                        Strided::new(v.ptr(), n * vc),
                        batch,
                        0.0,
                        0,
                    )
                })?;
                all_ok(&info, "gesvdj")?;
                let ss = download_real(ty, &s, batch)?;
                close_real(
                    format!("gesvdj {ty:?} {m}x{n} known"),
                    &ss[0],
                    &known_values(k),
                    tol(ty) * 10.0,
                )?;
                let (us, vs) = (download(ty, &u, batch)?, download(ty, &v, batch)?);
                for i in 0..batch {
                    let what = format!("gesvdj {ty:?} {m}x{n} econ {econ} [{i}]");
                    let (ui, vi) = (Some((&us[i][..], uc)), Some((&vs[i][..], vc)));
                    check_svd(&what, ty, &mats[i], m, n, &ss[i], ui, vi)?;
                }
            }
        }
    }
    // Many 1 × 1 matrices: |x| and the flag path of `Info::check`.
    let (ty, batch) = (SolverType::F64, Info::FLAG_FROM + 7);
    let mats: Vec<Vec<C>> = (0..batch).map(|i| vec![c(i as f64 - 3.5, 0.0)]).collect();
    let a = upload(ty, &mats)?;
    let (s, u, v) = (alloc(ty, batch)?, alloc(ty, batch)?, alloc(ty, batch)?);
    // SAFETY: `batch` 1 × 1 matrices, values and factors.
    let info = call(unsafe {
        solver::gesvdj(
            ty,
            true,
            1,
            1,
            Strided::new(a.ptr(), 1),
            Strided::new(s.ptr(), 1),
            Strided::new(u.ptr(), 1),
            Strided::new(v.ptr(), 1),
            batch,
            0.0,
            0,
        )
    })?;
    all_ok(&info, "gesvdj 1 × 1")?;
    let want: Vec<f64> = (0..batch).map(|i| (i as f64 - 3.5).abs()).collect();
    close_real("gesvdj 1 × 1 values", &download_real(ty, &s, 1)?[0], &want, 1e-12)?;
    // The same through inv_batched (pointer arrays written on the device), x = i - 3: matrix 3
    // alone is singular, found through the flag.
    let mats: Vec<Vec<C>> = (0..batch).map(|i| vec![c(i as f64 - 3.0, 0.0)]).collect();
    let a = upload(ty, &mats)?;
    let inv = alloc(ty, batch)?;
    // SAFETY: `batch` 1 × 1 matrices and room for their inverses.
    let info = call(unsafe {
        solver::inv_batched(ty, 1, Strided::new(a.ptr(), 1), Strided::new(inv.ptr(), 1), batch)
    })?;
    match info.check()? {
        Err(f) => ensure!(
            f.kind == FailureKind::Singular && f.index == 3 && f.failed == 1,
            "inv_batched 1 × 1: {f:?}"
        ),
        Ok(()) => ensure!(false, "inv_batched 1 × 1: a singular matrix passed"),
    }
    let got = download(ty, &inv, 1)?.concat();
    for (i, x) in got.iter().enumerate().filter(|&(i, _)| i != 3) {
        let want = 1.0 / (i as f64 - 3.0);
        ensure!((x.re - want).abs() <= 1e-12, "inv_batched 1 × 1 [{i}]: {x:?}, not {want}");
    }
    Ok(())
}

/// Batched inverses (3 × 3, batch 2, every type; 40 × 40 in float64): `A·A⁻¹ = I`; and a
/// singular matrix second in a batch.
fn solver_inv_batched() -> TestResult {
    for ty in TYPES {
        for (n, batch) in [(3, 2), (40, 2)] {
            if n == 40 && ty != SolverType::F64 {
                continue;
            }
            let mats: Vec<Vec<C>> = (0..batch)
                .map(|i| {
                    let mut a = random(ty, n, n, 90 + i as u64);
                    for d in 0..n {
                        a[d + d * n] = a[d + d * n] + c(4.0, 0.0);
                    }
                    a
                })
                .collect();
            let a = upload(ty, &mats)?;
            let inv = alloc(ty, n * n * batch)?;
            // SAFETY: the batch and room for its inverses, not overlapping.
            let info = call(unsafe {
                solver::inv_batched(
                    ty,
                    n,
                    Strided::new(a.ptr(), n * n),
                    Strided::new(inv.ptr(), n * n),
                    batch,
                )
            })?;
            all_ok(&info, "inv_batched")?;
            for (i, x) in download(ty, &inv, batch)?.iter().enumerate() {
                close(
                    format!("{ty:?} n = {n} [{i}] A·A⁻¹"),
                    &matmul(&mats[i], n, n, x, n),
                    &eye(n),
                    tol(ty) * 100.0,
                )?;
            }
        }
        let singular = vec![c(1.0, 0.0), c(2.0, 0.0), c(2.0, 0.0), c(4.0, 0.0)];
        let a = upload(ty, &[eye(2), singular])?;
        let inv = alloc(ty, 8)?;
        // SAFETY: two 2 × 2 matrices and room for their inverses.
        let info = call(unsafe {
            solver::inv_batched(ty, 2, Strided::new(a.ptr(), 4), Strided::new(inv.ptr(), 4), 2)
        })?;
        match info.check()? {
            Err(f) => ensure!(
                f.kind == FailureKind::Singular && f.index == 1 && f.failed == 1,
                "{ty:?}: {f:?}"
            ),
            Ok(()) => ensure!(false, "{ty:?}: a singular matrix passed inv_batched"),
        }
    }
    Ok(())
}
