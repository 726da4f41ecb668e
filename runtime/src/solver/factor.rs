//! Cholesky and QR: [`potrf`], [`geqrf`], [`orgqr`], [`form_q`] (with [`q_columns`]).

use cudarc::cusolver::sys as cs;

use super::{
    check_batch, check_status, int, p, pointer_array, with_solver, FailureKind, Info, QMode,
    SolverType, Strided, Uplo, Workspace,
};
use crate::error::{check, Result, RuntimeError};

/// Cholesky factorisations `A = L·Lᴴ` ([`Uplo::Lower`]) or `A = Uᴴ·U` ([`Uplo::Upper`]) of
/// `batch` Hermitian positive-definite `n × n` matrices, in place: the `uplo` triangle of each
/// matrix is read and overwritten with the factor; the other triangle is left as it was (not
/// zeroed). `cusolverDnXpotrf` for one matrix, `cusolverDn{S,D,C,Z}potrfBatched` for more.
/// [`Info`] entry `i > 0`: the leading minor of order `i` is not positive definite
/// ([`FailureKind::NotPositiveDefinite`]).
///
/// # Safety
/// `a` addresses `batch` matrices of `n × n` elements of `ty` on the current device, alive until
/// the stream has run the call.
pub unsafe fn potrf(
    ty: SolverType,
    uplo: Uplo,
    n: usize,
    a: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXpotrf";
    check_batch(CALL, "a", a, n * n, batch, false)?;
    let kind = FailureKind::NotPositiveDefinite;
    with_solver(|s, stream| {
        if batch > 1 && n > 0 {
            let call = match ty {
                SolverType::F32 => "cusolverDnSpotrfBatched",
                SolverType::F64 => "cusolverDnDpotrfBatched",
                SolverType::C64 => "cusolverDnCpotrfBatched",
                SolverType::C128 => "cusolverDnZpotrfBatched",
            };
            let info = Info::new(stream, call, kind, batch)?;
            let (ni, bi) = (int(call, "n", n)?, int(call, "batch", batch)?);
            let ptrs = pointer_array(stream, a, batch, ty.size())?;
            let (h, fill, arr, inf) = (s.dn, uplo.raw(), ptrs.ptr(), info.at(0));
            // SAFETY: the caller's contract covers the matrices; `ptrs` holds their `batch`
            // addresses and `info` `batch` ints, both ours, freed in stream order.
            let status = unsafe {
                match ty {
                    SolverType::F32 => {
                        cs::cusolverDnSpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                    SolverType::F64 => {
                        cs::cusolverDnDpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                    SolverType::C64 => {
                        cs::cusolverDnCpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                    SolverType::C128 => {
                        cs::cusolverDnZpotrfBatched(h, fill, ni, p(arr), ni, inf, bi)
                    }
                }
            };
            check_status(call, status)?;
            return Ok(info);
        }
        let info = Info::new(stream, CALL, kind, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, ni) = (ty.data_type(), n as i64);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXpotrf_bufferSize", unsafe {
            cs::cusolverDnXpotrf_bufferSize(
                s.dn,
                s.params,
                uplo.raw(),
                ni,
                t,
                p(a.ptr),
                ni,
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i`; the workspaces hold the sizes
            // asked for and live past the call (the device one freed in stream order, the
            // host one kept until the stream is done); `info` holds `batch` ints.
            check_status(CALL, unsafe {
                cs::cusolverDnXpotrf(
                    s.dn,
                    s.params,
                    uplo.raw(),
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    ni,
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// QR factorisations `A = Q·R` of `batch` `m × n` matrices, in place (`cusolverDnXgeqrf`, once
/// per matrix): `R` (`k × n`, `k = min(m, n)`) on and above the diagonal, the Householder
/// reflectors below it with their scalars in `tau` (`k` elements of `ty` per matrix). Form `Q`
/// with [`form_q`] (or [`orgqr`]); take `R` as the upper triangle of the first `k` rows.
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `tau` `batch` vectors of `k`
/// elements of `ty`, on the current device, alive until the stream has run the call.
pub unsafe fn geqrf(
    ty: SolverType,
    m: usize,
    n: usize,
    a: Strided,
    tau: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgeqrf";
    check_batch(CALL, "a", a, m * n, batch, false)?;
    check_batch(CALL, "tau", tau, m.min(n), batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::Other, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, mi, ni) = (ty.data_type(), m as i64, n as i64);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXgeqrf_bufferSize", unsafe {
            cs::cusolverDnXgeqrf_bufferSize(
                s.dn,
                s.params,
                mi,
                ni,
                t,
                p(a.ptr),
                mi,
                t,
                p(tau.ptr),
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i` and its `tau`; the workspaces
            // hold the sizes asked for and outlive the call's work (see `Workspace`).
            check_status(CALL, unsafe {
                cs::cusolverDnXgeqrf(
                    s.dn,
                    s.params,
                    mi,
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    mi,
                    t,
                    tau.ptr_at(i, ty.size()),
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// Forms, in place, the `m × ncols` matrix of orthonormal columns `Q` from the first `k`
/// Householder reflectors of [`geqrf`] stored in the first `k` columns of `q` (`m × ncols`),
/// with their `tau` (`k` per matrix): `cusolverDn{S,D}orgqr` / `cusolverDn{C,Z}ungqr`, once
/// per matrix. Requires `m ≥ ncols ≥ k`; the columns past `k` are set by the call.
///
/// # Safety
/// `q` addresses `batch` matrices of `m × ncols` elements of `ty`, `tau` `batch` vectors of
/// `k` elements of `ty`, on the current device, alive until the stream has run the call.
pub unsafe fn orgqr(
    ty: SolverType,
    m: usize,
    ncols: usize,
    k: usize,
    q: Strided,
    tau: Strided,
    batch: usize,
) -> Result<Info> {
    let (call, size_call) = match ty {
        SolverType::F32 => ("cusolverDnSorgqr", "cusolverDnSorgqr_bufferSize"),
        SolverType::F64 => ("cusolverDnDorgqr", "cusolverDnDorgqr_bufferSize"),
        SolverType::C64 => ("cusolverDnCungqr", "cusolverDnCungqr_bufferSize"),
        SolverType::C128 => ("cusolverDnZungqr", "cusolverDnZungqr_bufferSize"),
    };
    if !(m >= ncols && ncols >= k) {
        return Err(RuntimeError::InvalidArgument(format!(
            "{call}: needs m >= ncols >= k (m = {m}, ncols = {ncols}, k = {k})"
        )));
    }
    check_batch(call, "q", q, m * ncols, batch, false)?;
    check_batch(call, "tau", tau, k, batch, true)?;
    let (mi, ni, ki) = (int(call, "m", m)?, int(call, "ncols", ncols)?, int(call, "k", k)?);
    with_solver(|s, stream| {
        let info = Info::new(stream, call, FailureKind::Other, batch)?;
        if m == 0 || ncols == 0 || batch == 0 {
            return Ok(info);
        }
        let h = s.dn;
        let (a0, t0) = (q.ptr, tau.ptr);
        let mut lwork = 0i32;
        // SAFETY: a live handle; only `lwork` is written.
        let status = unsafe {
            match ty {
                SolverType::F32 => {
                    cs::cusolverDnSorgqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
                SolverType::F64 => {
                    cs::cusolverDnDorgqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
                SolverType::C64 => {
                    cs::cusolverDnCungqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
                SolverType::C128 => {
                    cs::cusolverDnZungqr_bufferSize(h, mi, ni, ki, p(a0), mi, p(t0), &mut lwork)
                }
            }
        };
        check_status(size_call, status)?;
        let ws = Workspace::new(stream, lwork.max(0) as usize * ty.size(), 0)?;
        let w = ws.device.ptr();
        for i in 0..batch {
            let (a, t, inf) = (q.at(i, ty.size()), tau.at(i, ty.size()), info.at(i));
            // SAFETY: the caller's contract covers matrix `i` and its `tau`; the workspace
            // holds `lwork` elements, freed in stream order.
            let status = unsafe {
                match ty {
                    SolverType::F32 => {
                        cs::cusolverDnSorgqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                    SolverType::F64 => {
                        cs::cusolverDnDorgqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                    SolverType::C64 => {
                        cs::cusolverDnCungqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                    SolverType::C128 => {
                        cs::cusolverDnZungqr(h, mi, ni, ki, p(a), mi, p(t), p(w), lwork, inf)
                    }
                }
            };
            check_status(call, status)?;
        }
        Ok(info)
    })
}

/// The columns of `Q` [`form_q`] makes: `k = min(m, n)` (reduced) or `m` (complete).
pub fn q_columns(mode: QMode, m: usize, n: usize) -> usize {
    match mode {
        QMode::Reduced => m.min(n),
        QMode::Complete => m,
    }
}

/// `Q` of the QR factorisations of [`geqrf`] (`a`: its `m × n` output, `tau` its scalars),
/// written to `q` (`m × q_columns(mode, m, n)` per matrix, leaving `a` as it is: `R` stays
/// there): copies the reflectors into `q`, then [`orgqr`].
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty` written by [`geqrf`], `tau` their
/// `min(m, n)` scalars each, `q` `batch` matrices of `m × q_columns(mode, m, n)` elements of
/// `ty` not overlapping `a`, all on the current device and alive until the stream has run the
/// call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn form_q(
    ty: SolverType,
    mode: QMode,
    m: usize,
    n: usize,
    a: Strided,
    tau: Strided,
    q: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cuMemcpyDtoDAsync";
    let (k, ncols) = (m.min(n), q_columns(mode, m, n));
    check_batch("form_q", "a", a, m * n, batch, false)?;
    check_batch("form_q", "q", q, m * ncols, batch, false)?;
    if m > 0 && k > 0 && batch > 0 {
        // The reflectors are the first k columns of a: m·k contiguous elements (leading
        // dimension m in both), the first k columns of q.
        let bytes = m * k * ty.size();
        with_solver(|_, stream| {
            for i in 0..batch {
                // SAFETY: both ranges lie in the caller's matrices (`k ≤ n` and `k ≤ ncols`
                // columns of `m` elements), which do not overlap; the context is current.
                check(CALL, unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        q.at(i, ty.size()),
                        a.at(i, ty.size()),
                        bytes,
                        stream.raw(),
                    )
                })?;
            }
            Ok(())
        })?;
    }
    // SAFETY: the caller's contract; q now holds the reflectors in its first k columns.
    unsafe { orgqr(ty, m, ncols, k, q, tau, batch) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_columns_by_mode() {
        assert_eq!(q_columns(QMode::Reduced, 4, 3), 3);
        assert_eq!(q_columns(QMode::Complete, 4, 3), 4);
        assert_eq!(q_columns(QMode::Reduced, 3, 4), 3);
        assert_eq!(q_columns(QMode::Complete, 3, 4), 3);
    }
}
