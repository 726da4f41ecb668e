//! SVDs: [`gesvd`] (wide matrices through the adjoint, cuBLAS `geam`), [`gesvdj_batched`].

use std::ffi::c_void;

use cudarc::cublas::sys as cb;
use cudarc::cusolver::sys as cs;

use super::{
    check_batch, check_blas, check_packed, check_small, check_status, eig_mode, int, p, svd_shapes,
    with_solver, FailureKind, Info, SolverType, Strided, SvdJob, Workspace,
};
use crate::error::Result;
use crate::memory::DeviceBuffer;

/// The scalars 1 and 0 of `ty`, aligned for any element type.
#[repr(C, align(16))]
struct Scalar([u8; 16]);

fn one(ty: SolverType) -> Scalar {
    let mut s = [0u8; 16];
    match ty.real() {
        SolverType::F32 => s[..4].copy_from_slice(&1.0f32.to_ne_bytes()),
        _ => s[..8].copy_from_slice(&1.0f64.to_ne_bytes()),
    }
    Scalar(s)
}

/// `dst (cols × rows) = srcᴴ` (the transpose for real types) for a `rows × cols` `src`, both
/// packed column-major, queued on the handle's stream (`cublas{S,D,C,Z}geam_64`).
///
/// # Safety
/// `src` and `dst` are device addresses of the handle's device holding the two matrices, of
/// `ty`, not overlapping, alive until the stream has run the call.
unsafe fn adjoint(
    h: cb::cublasHandle_t,
    ty: SolverType,
    rows: usize,
    cols: usize,
    src: u64,
    dst: u64,
) -> Result<()> {
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let (alpha, beta) = (one(ty), Scalar([0u8; 16]));
    let op = cb::cublasOperation_t::CUBLAS_OP_C;
    let (m, n, ld, ldc) = (cols as i64, rows as i64, rows as i64, cols as i64);
    let (a, b) = (alpha.0.as_ptr(), beta.0.as_ptr());
    // SAFETY: the caller's contract; `B` is `src` again, read with the same shape (and scaled by
    // zero); the scalars are host values of the element type, alive across the call (read
    // before it returns in the default pointer mode).
    let (call, status) = unsafe {
        match ty {
            SolverType::F32 => (
                "cublasSgeam_64",
                cb::cublasSgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
            SolverType::F64 => (
                "cublasDgeam_64",
                cb::cublasDgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
            SolverType::C64 => (
                "cublasCgeam_64",
                cb::cublasCgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
            SolverType::C128 => (
                "cublasZgeam_64",
                cb::cublasZgeam_64(
                    h,
                    op,
                    op,
                    m,
                    n,
                    a.cast(),
                    p(src),
                    ld,
                    b.cast(),
                    p(src),
                    ld,
                    p(dst),
                    ldc,
                ),
            ),
        }
    };
    check_blas(call, status)
}

/// `gesvdjInfo_t`, destroyed on drop.
pub(super) struct GesvdjParams(pub(super) cs::gesvdjInfo_t);

impl Drop for GesvdjParams {
    fn drop(&mut self) {
        // SAFETY: made by `cusolverDnCreateGesvdjInfo`, destroyed once.
        let _ = unsafe { cs::cusolverDnDestroyGesvdjInfo(self.0) };
    }
}

/// The jobs cuSOLVER runs for an `m × n` SVD with `jobu`/`jobvt`: `(transposed, jobu, jobvt)`.
/// cuSOLVER's gesvd needs `m ≥ n`; a wide matrix is decomposed through its adjoint
/// (`Aᴴ = V·S·Uᴴ`), whose `U` is the caller's `V` and whose `Vᴴ` is the caller's `Uᴴ`, so the
/// jobs swap.
fn gesvd_plan(m: usize, n: usize, jobu: SvdJob, jobvt: SvdJob) -> (bool, SvdJob, SvdJob) {
    if m >= n {
        (false, jobu, jobvt)
    } else {
        (true, jobvt, jobu)
    }
}

/// Singular value decompositions `A = U·diag(S)·Vᴴ` of `batch` `m × n` matrices
/// (`cusolverDnXgesvd`, once per matrix; `a` is destroyed). `s` receives `k = min(m, n)`
/// singular values (descending, `ty.real()`) per matrix, `u` and `vt` the factors `jobu` and
/// `jobvt` ask for, of the shapes [`svd_shapes`] gives (each packed, its leading dimension its
/// row count; ignored for [`SvdJob::None`]).
///
/// cuSOLVER's gesvd handles `m ≥ n` only; a wide matrix (`m < n`) is transposed here into a
/// temporary (cuBLAS `geam`), decomposed, and its factors conjugate-transposed into `u` and
/// `vt`: the caller sees no difference. [`Info`] entry `i > 0`: that many superdiagonals did
/// not converge ([`FailureKind::NotConverged`]).
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `s` `batch` vectors of `k`
/// elements of `ty.real()`, `u` and `vt` (unless not asked for) `batch` matrices of their
/// [`svd_shapes`] of `ty`, none overlapping, all on the current device and alive until the
/// stream has run the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gesvd(
    ty: SolverType,
    jobu: SvdJob,
    jobvt: SvdJob,
    m: usize,
    n: usize,
    a: Strided,
    s: Strided,
    u: Strided,
    vt: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgesvd";
    let shapes = svd_shapes(m, n, jobu, jobvt);
    let k = shapes.k;
    check_batch(CALL, "a", a, m * n, batch, false)?;
    check_batch(CALL, "s", s, k, batch, false)?;
    check_batch(CALL, "u", u, shapes.u.0 * shapes.u.1, batch, false)?;
    check_batch(CALL, "vt", vt, shapes.vt.0 * shapes.vt.1, batch, false)?;
    let (transposed, ju, jvt) = gesvd_plan(m, n, jobu, jobvt);
    // The shapes cuSOLVER sees: (rows, cols) ≥ 1 wide, its U and Vᴴ.
    let (rows, cols) = if transposed { (n, m) } else { (m, n) };
    let inner = svd_shapes(rows, cols, ju, jvt);
    let (ldu, ldvt) = (rows.max(1) as i64, cols.max(1) as i64);
    let size = ty.size();
    with_solver(|h, stream| {
        let info = Info::new(stream, CALL, FailureKind::NotConverged, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, tr) = (ty.data_type(), ty.real().data_type());
        let (ri, ci) = (rows as i64, cols as i64);
        let (cju, cjvt) = (ju.letter() as std::ffi::c_schar, jvt.letter() as std::ffi::c_schar);
        // The transposed path's temporaries: Aᴴ, and the U and Vᴴ of Aᴴ.
        let alloc = |elems: usize| DeviceBuffer::alloc_on(stream, elems * size);
        let (tmp_a, tmp_u, tmp_vt) = if transposed {
            (
                Some(alloc(rows * cols)?),
                Some(alloc(inner.u.0 * inner.u.1)?),
                Some(alloc(inner.vt.0 * inner.vt.1)?),
            )
        } else {
            (None, None, None)
        };
        let blas = if transposed { Some(h.blas(stream)?) } else { None };
        // Where matrix i goes in (a, u, vt) for cuSOLVER.
        let operands = |i: usize| -> (u64, u64, u64) {
            match (&tmp_a, &tmp_u, &tmp_vt) {
                (Some(ta), Some(tu), Some(tv)) => (ta.ptr(), tu.ptr(), tv.ptr()),
                _ => (
                    a.at(i, size),
                    if u.ptr == 0 { 0 } else { u.at(i, size) },
                    if vt.ptr == 0 { 0 } else { vt.at(i, size) },
                ),
            }
        };
        let null_if = |job: SvdJob, ptr: u64| -> *mut c_void {
            if job == SvdJob::None || ptr == 0 {
                std::ptr::null_mut()
            } else {
                ptr as *mut c_void
            }
        };
        let (a0, u0, vt0) = operands(0);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXgesvd_bufferSize", unsafe {
            cs::cusolverDnXgesvd_bufferSize(
                h.dn,
                h.params,
                cju,
                cjvt,
                ri,
                ci,
                t,
                p(a0),
                ri,
                tr,
                p(s.ptr),
                t,
                null_if(ju, u0),
                ldu,
                t,
                null_if(jvt, vt0),
                ldvt,
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            let (ai, ui, vti) = operands(i);
            if let Some(b) = blas {
                // SAFETY: matrix i of the caller (m × n) into the n × m temporary.
                unsafe { adjoint(b, ty, m, n, a.at(i, size), ai)? };
            }
            // SAFETY: the caller's contract (or our temporaries) covers matrix `i`, its
            // singular values and factors, of the shapes given; the workspaces hold the sizes
            // asked for and outlive the call's work.
            check_status(CALL, unsafe {
                cs::cusolverDnXgesvd(
                    h.dn,
                    h.params,
                    cju,
                    cjvt,
                    ri,
                    ci,
                    t,
                    p(ai),
                    ri,
                    tr,
                    s.ptr_at(i, ty.real().size()),
                    t,
                    null_if(ju, ui),
                    ldu,
                    t,
                    null_if(jvt, vti),
                    ldvt,
                    t,
                    ws.device_ptr(),
                    ws.device_len(),
                    ws.host_ptr(),
                    host,
                    info.at(i),
                )
            })?;
            if let Some(b) = blas {
                // The caller's U is (Vᴴ of Aᴴ)ᴴ, its Vᴴ is (U of Aᴴ)ᴴ.
                if jobu != SvdJob::None {
                    // SAFETY: our k × k temporary into the caller's m × m (k = m) U.
                    unsafe { adjoint(b, ty, inner.vt.0, inner.vt.1, vti, u.at(i, size))? };
                }
                if jobvt != SvdJob::None {
                    // SAFETY: our n × (n or k) temporary into the caller's (n or k) × n Vᴴ.
                    unsafe { adjoint(b, ty, inner.u.0, inner.u.1, ui, vt.at(i, size))? };
                }
            }
        }
        Ok(info)
    })
}

/// SVDs of many small matrices at once by Jacobi rotations (`cusolverDn{S,D,C,Z}gesvdjBatched`,
/// one call): `m, n ≤ 32`, any shape, the batch packed (`a.stride == m·n`, `s.stride == k`,
/// `u.stride == m·m`, `v.stride == n·n`; `a` is destroyed). `s` receives `k = min(m, n)`
/// singular values (descending) per matrix; with `vectors`, `u` the full `m × m` `U` and `v`
/// the full `n × n` **`V`** (not `Vᴴ`: `A = U·diag(S)·Vᴴ`; the reduced factors are their first
/// `k` columns); without `vectors`, `u` and `v` are not used (the wrapper gives cuSOLVER
/// scratch factors: it writes them even then). [`Info`] entry `i > 0`: matrix `i` did not
/// converge.
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `s` `batch` vectors of `k`
/// elements of `ty.real()`, with `vectors` `u` and `v` `batch` matrices of `m × m` and `n × n`
/// elements of `ty`, none overlapping, all on the current device and alive until the stream has
/// run the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gesvdj_batched(
    ty: SolverType,
    vectors: bool,
    m: usize,
    n: usize,
    a: Strided,
    s: Strided,
    u: Strided,
    v: Strided,
    batch: usize,
) -> Result<Info> {
    let (call, size_call) = match ty {
        SolverType::F32 => ("cusolverDnSgesvdjBatched", "cusolverDnSgesvdjBatched_bufferSize"),
        SolverType::F64 => ("cusolverDnDgesvdjBatched", "cusolverDnDgesvdjBatched_bufferSize"),
        SolverType::C64 => ("cusolverDnCgesvdjBatched", "cusolverDnCgesvdjBatched_bufferSize"),
        SolverType::C128 => ("cusolverDnZgesvdjBatched", "cusolverDnZgesvdjBatched_bufferSize"),
    };
    let k = m.min(n);
    check_small(call, &[("m", m), ("n", n)])?;
    check_packed(call, "a", a, m * n, batch)?;
    check_packed(call, "s", s, k, batch)?;
    if vectors {
        check_packed(call, "u", u, m * m, batch)?;
        check_packed(call, "v", v, n * n, batch)?;
    }
    let (mi, ni, bi) = (m as i32, n as i32, int(call, "batch", batch)?);
    let (ldu, ldv) = (mi.max(1), ni.max(1));
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
        let (d, job, prm) = (h.dn, eig_mode(vectors), params.0);
        let (pa, ps) = (a.ptr, s.ptr);
        // Without vectors cuSOLVER still writes U and V (its batched_svd_qr kernels do, seen
        // with compute-sanitizer on an H100): scratch ones then, freed in stream order.
        let scratch = if vectors {
            None
        } else {
            let size = ty.size() * batch;
            Some((
                DeviceBuffer::alloc_on(stream, m * m * size)?,
                DeviceBuffer::alloc_on(stream, n * n * size)?,
            ))
        };
        let (pu, pv) = match &scratch {
            None => (u.ptr, v.ptr),
            Some((su, sv)) => (su.ptr(), sv.ptr()),
        };
        let mut lwork = 0i32;
        // SAFETY: a live handle and parameter object; only `lwork` is written.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZgesvdjBatched_bufferSize(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    &mut lwork,
                    prm,
                    bi,
                ),
            }
        };
        check_status(size_call, status)?;
        let ws = Workspace::new(stream, lwork.max(0) as usize * ty.size(), 0)?;
        let (wk, inf) = (ws.device.ptr(), info.at(0));
        // SAFETY: the caller's contract covers the packed matrices, values and factors (or
        // our scratch factors, of the same shapes); the workspace holds `lwork` elements and
        // `info` `batch` ints, freed in stream order; the parameter object outlives the call.
        let status = unsafe {
            match ty {
                SolverType::F32 => cs::cusolverDnSgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::F64 => cs::cusolverDnDgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C64 => cs::cusolverDnCgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
                    p(wk),
                    lwork,
                    inf,
                    prm,
                    bi,
                ),
                SolverType::C128 => cs::cusolverDnZgesvdjBatched(
                    d,
                    job,
                    mi,
                    ni,
                    p(pa),
                    mi,
                    p(ps),
                    p(pu),
                    ldu,
                    p(pv),
                    ldv,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_svds_go_through_the_adjoint_with_the_jobs_swapped() {
        use SvdJob::*;
        assert_eq!(gesvd_plan(3, 2, Full, None), (false, Full, None));
        assert_eq!(gesvd_plan(2, 2, Reduced, Full), (false, Reduced, Full));
        assert_eq!(gesvd_plan(2, 3, Full, None), (true, None, Full));
        // The caller's factors come from the adjoint's: U (m × m) from its k × k Vᴴ, Vᴴ from
        // its U, of the caller's shape transposed.
        let (m, n) = (2, 5);
        for (ju, jvt) in [(Full, Full), (Reduced, Reduced), (Full, Reduced), (Reduced, Full)] {
            let (t, iu, ivt) = gesvd_plan(m, n, ju, jvt);
            assert!(t);
            let outer = svd_shapes(m, n, ju, jvt);
            let inner = svd_shapes(n, m, iu, ivt);
            assert_eq!((inner.vt.1, inner.vt.0), outer.u, "{ju:?} {jvt:?}");
            assert_eq!((inner.u.1, inner.u.0), outer.vt, "{ju:?} {jvt:?}");
        }
    }
}
