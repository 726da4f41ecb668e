//! SVDs by Jacobi rotations of matrices of any size: [`gesvdj`] (`cusolverDn{S,D,C,Z}gesvdj`).

use cudarc::cusolver::sys as cs;

use super::svd::GesvdjParams;
use super::{
    check_batch, check_status, int, p, with_solver, FailureKind, Info, SolverType, Strided,
    Workspace,
};
use crate::error::Result;

/// Singular value decompositions `A = U·diag(S)·Vᴴ` of `batch` `m × n` matrices (any shape) by
/// one-sided Jacobi rotations (`cusolverDn{S,D,C,Z}gesvdj`, once per matrix; `a` is destroyed),
/// with the singular vectors. `s` receives `k = min(m, n)` singular values (descending,
/// `ty.real()`) per matrix, `u` the `m × m` `U` (`econ`: its first `k` columns, `m × k`), `v`
/// the `n × n` **`V`** (not `Vᴴ`; `econ`: `n × k`), each packed column-major.
///
/// `tolerance` (`> 0`; otherwise cuSOLVER's default, the type's machine epsilon) and
/// `max_sweeps` (`> 0`; otherwise the default, 100) bound the iteration. [`Info`] entry
/// `i > 0`: matrix `i` did not converge within them ([`FailureKind::NotConverged`]); its
/// factors are then not an SVD (run [`super::gesvd`] on it instead).
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `s` `batch` vectors of `k`
/// elements of `ty.real()`, `u` and `v` `batch` matrices of `m × m` and `n × n` elements of `ty`
/// (`econ`: `m × k` and `n × k`), none overlapping, all on the current device and alive until
/// the stream has run the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gesvdj(
    ty: SolverType,
    econ: bool,
    m: usize,
    n: usize,
    a: Strided,
    s: Strided,
    u: Strided,
    v: Strided,
    batch: usize,
    tolerance: f64,
    max_sweeps: usize,
) -> Result<Info> {
    let (call, size_call) = match ty {
        SolverType::F32 => ("cusolverDnSgesvdj", "cusolverDnSgesvdj_bufferSize"),
        SolverType::F64 => ("cusolverDnDgesvdj", "cusolverDnDgesvdj_bufferSize"),
        SolverType::C64 => ("cusolverDnCgesvdj", "cusolverDnCgesvdj_bufferSize"),
        SolverType::C128 => ("cusolverDnZgesvdj", "cusolverDnZgesvdj_bufferSize"),
    };
    let k = m.min(n);
    let (uc, vc) = if econ { (k, k) } else { (m, n) };
    check_batch(call, "a", a, m * n, batch, false)?;
    check_batch(call, "s", s, k, batch, false)?;
    check_batch(call, "u", u, m * uc, batch, false)?;
    check_batch(call, "v", v, n * vc, batch, false)?;
    let (mi, ni) = (int(call, "m", m)?, int(call, "n", n)?);
    let sweeps = int(call, "max_sweeps", max_sweeps)?;
    let (lda, ldu, ldv) = (mi.max(1), mi.max(1), ni.max(1));
    let size = ty.size();
    with_solver(|h, stream| {
        let info = Info::new(stream, call, FailureKind::NotConverged, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let mut params = GesvdjParams(std::ptr::null_mut());
        // SAFETY: writes a new parameter object (default tolerance, sweeps and sorting).
        check_status("cusolverDnCreateGesvdjInfo", unsafe {
            cs::cusolverDnCreateGesvdjInfo(&mut params.0)
        })?;
        if tolerance > 0.0 {
            // SAFETY: a live parameter object.
            check_status("cusolverDnXgesvdjSetTolerance", unsafe {
                cs::cusolverDnXgesvdjSetTolerance(params.0, tolerance)
            })?;
        }
        if sweeps > 0 {
            // SAFETY: a live parameter object.
            check_status("cusolverDnXgesvdjSetMaxSweeps", unsafe {
                cs::cusolverDnXgesvdjSetMaxSweeps(params.0, sweeps)
            })?;
        }
        let (d, prm, e) = (h.dn, params.0, econ as i32);
        let job = cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR;
        let (pa, ps, pu, pv) = (a.ptr, s.ptr, u.ptr, v.ptr);
        let mut lwork = 0i32;
        macro_rules! buffer_size {
            ($f:path) => {
                $f(d, job, e, mi, ni, p(pa), lda, p(ps), p(pu), ldu, p(pv), ldv, &mut lwork, prm)
            };
        }
        // SAFETY: a live handle and parameter object; only `lwork` is written.
        let status = unsafe {
            match ty {
                SolverType::F32 => buffer_size!(cs::cusolverDnSgesvdj_bufferSize),
                SolverType::F64 => buffer_size!(cs::cusolverDnDgesvdj_bufferSize),
                SolverType::C64 => buffer_size!(cs::cusolverDnCgesvdj_bufferSize),
                SolverType::C128 => buffer_size!(cs::cusolverDnZgesvdj_bufferSize),
            }
        };
        check_status(size_call, status)?;
        let ws = Workspace::new(stream, lwork.max(0) as usize * size, 0)?;
        let wk = ws.device.ptr();
        for i in 0..batch {
            let (ai, si) = (a.at(i, size), s.at(i, ty.real().size()));
            let (ui, vi, inf) = (u.at(i, size), v.at(i, size), info.at(i));
            macro_rules! svd {
                ($f:path) => {
                    $f(
                        d,
                        job,
                        e,
                        mi,
                        ni,
                        p(ai),
                        lda,
                        p(si),
                        p(ui),
                        ldu,
                        p(vi),
                        ldv,
                        p(wk),
                        lwork,
                        inf,
                        prm,
                    )
                };
            }
            // SAFETY: the caller's contract covers matrix `i`, its values and factors; the
            // workspace holds `lwork` elements, freed in stream order; `info` holds `batch`
            // ints; the parameter object outlives the call.
            let status = unsafe {
                match ty {
                    SolverType::F32 => svd!(cs::cusolverDnSgesvdj),
                    SolverType::F64 => svd!(cs::cusolverDnDgesvdj),
                    SolverType::C64 => svd!(cs::cusolverDnCgesvdj),
                    SolverType::C128 => svd!(cs::cusolverDnZgesvdj),
                }
            };
            check_status(call, status)?;
        }
        Ok(info)
    })
}
