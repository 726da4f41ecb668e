//! Symmetric/Hermitian eigensolvers: [`syevd`], [`syevj_batched`].

use cudarc::cusolver::sys as cs;

use super::{
    check_batch, check_packed, check_small, check_status, eig_mode, int, p, with_solver,
    FailureKind, Info, SolverType, Strided, Uplo, Workspace,
};
use crate::error::Result;

/// Eigenvalues (ascending, into `w`: `n` elements of `ty.real()` per matrix) and, with
/// `vectors`, eigenvectors (overwriting `a`, one per column, orthonormal) of `batch` symmetric
/// or Hermitian `n × n` matrices, of which the `uplo` triangle is read (`cusolverDnXsyevd`,
/// divide and conquer, once per matrix). Without `vectors` `a` is destroyed. [`Info`] entry
/// `i > 0`: no convergence ([`FailureKind::NotConverged`]).
///
/// # Safety
/// `a` addresses `batch` matrices of `n × n` elements of `ty`, `w` `batch` vectors of `n`
/// elements of `ty.real()`, on the current device, alive until the stream has run the call.
pub unsafe fn syevd(
    ty: SolverType,
    uplo: Uplo,
    vectors: bool,
    n: usize,
    a: Strided,
    w: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXsyevd";
    check_batch(CALL, "a", a, n * n, batch, false)?;
    check_batch(CALL, "w", w, n, batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::NotConverged, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, tw, ni, job) = (ty.data_type(), ty.real().data_type(), n as i64, eig_mode(vectors));
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXsyevd_bufferSize", unsafe {
            cs::cusolverDnXsyevd_bufferSize(
                s.dn,
                s.params,
                job,
                uplo.raw(),
                ni,
                t,
                p(a.ptr),
                ni,
                tw,
                p(w.ptr),
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i` and its eigenvalues; the
            // workspaces hold the sizes asked for and outlive the call's work.
            check_status(CALL, unsafe {
                cs::cusolverDnXsyevd(
                    s.dn,
                    s.params,
                    job,
                    uplo.raw(),
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    ni,
                    tw,
                    w.ptr_at(i, ty.real().size()),
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

/// `syevjInfo_t`, destroyed on drop.
struct SyevjParams(cs::syevjInfo_t);

impl Drop for SyevjParams {
    fn drop(&mut self) {
        // SAFETY: made by `cusolverDnCreateSyevjInfo`, destroyed once (a host object: the
        // calls that used it have read it).
        let _ = unsafe { cs::cusolverDnDestroySyevjInfo(self.0) };
    }
}

/// As [`syevd`] for many small matrices at once, by Jacobi rotations
/// (`cusolverDn{S,D}syevjBatched` / `cusolverDn{C,Z}heevjBatched`, one call): `n ≤ 32`, the
/// batch packed (`a.stride == n·n`, `w.stride == n`). Eigenvalues ascending (cuSOLVER's
/// default tolerance, machine precision, and at most 100 sweeps). [`Info`] entry `i > 0`:
/// matrix `i` did not converge.
///
/// # Safety
/// As [`syevd`].
pub unsafe fn syevj_batched(
    ty: SolverType,
    uplo: Uplo,
    vectors: bool,
    n: usize,
    a: Strided,
    w: Strided,
    batch: usize,
) -> Result<Info> {
    let (call, size_call) = match ty {
        SolverType::F32 => ("cusolverDnSsyevjBatched", "cusolverDnSsyevjBatched_bufferSize"),
        SolverType::F64 => ("cusolverDnDsyevjBatched", "cusolverDnDsyevjBatched_bufferSize"),
        SolverType::C64 => ("cusolverDnCheevjBatched", "cusolverDnCheevjBatched_bufferSize"),
        SolverType::C128 => ("cusolverDnZheevjBatched", "cusolverDnZheevjBatched_bufferSize"),
    };
    check_small(call, &[("n", n)])?;
    check_packed(call, "a", a, n * n, batch)?;
    check_packed(call, "w", w, n, batch)?;
    let (ni, bi) = (n as i32, int(call, "batch", batch)?);
    with_solver(|s, stream| {
        let info = Info::new(stream, call, FailureKind::NotConverged, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let mut params = SyevjParams(std::ptr::null_mut());
        // SAFETY: writes a new parameter object (default tolerance, sweeps and sorting).
        check_status("cusolverDnCreateSyevjInfo", unsafe {
            cs::cusolverDnCreateSyevjInfo(&mut params.0)
        })?;
        let (h, job, fill, pa, pw) = (s.dn, eig_mode(vectors), uplo.raw(), a.ptr, w.ptr);
        let prm = params.0;
        let mut lwork = 0i32;
        // SAFETY: a live handle and parameter object; only `lwork` is written.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSsyevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDsyevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCheevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZheevjBatched_bufferSize(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    &mut lwork,
                    prm,
                    bi,
                ),
            }
        };
        check_status(size_call, status)?;
        let ws = Workspace::new(stream, lwork.max(0) as usize * ty.size(), 0)?;
        let (wk, inf) = (ws.device.ptr(), info.at(0));
        // SAFETY: the caller's contract covers the packed matrices and eigenvalues; the
        // workspace holds `lwork` elements and `info` `batch` ints, freed in stream order; the
        // parameter object outlives the call.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSsyevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDsyevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCheevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZheevjBatched(
                    h,
                    job,
                    fill,
                    ni,
                    p(pa),
                    ni,
                    p(pw),
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
            }
        };
        check_status(call, status)?;
        Ok(info)
    })
}
