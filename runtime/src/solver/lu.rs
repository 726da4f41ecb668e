//! LU: [`getrf`], [`getrs`], and cuBLAS's batched inverse [`inv_batched`].

use cudarc::cublas::sys as cb;
use cudarc::cusolver::sys as cs;

use super::{
    check_batch, check_blas, check_status, int, p, pointer_arrays, with_solver, FailureKind, Info,
    SolverType, Strided, Transpose, Workspace,
};
use crate::error::Result;
use crate::memory::DeviceBuffer;

/// LU factorisations with partial pivoting `P·A = L·U` of `batch` `m × n` matrices, in place
/// (`cusolverDnXgetrf`, once per matrix): `L` (unit diagonal, not stored) below the diagonal,
/// `U` on and above it. `ipiv` receives `min(m, n)` 1-based pivot rows per matrix, as `i64`.
/// [`Info`] entry `i > 0`: `U(i, i)` is exactly zero ([`FailureKind::Singular`]; the
/// factorisation is complete, but solving with it divides by zero).
///
/// # Safety
/// `a` addresses `batch` matrices of `m × n` elements of `ty`, `ipiv` `batch` vectors of
/// `min(m, n)` `i64`, on the current device, alive until the stream has run the call.
pub unsafe fn getrf(
    ty: SolverType,
    m: usize,
    n: usize,
    a: Strided,
    ipiv: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgetrf";
    check_batch(CALL, "a", a, m * n, batch, false)?;
    check_batch(CALL, "ipiv", ipiv, m.min(n), batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::Singular, batch)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(info);
        }
        let (t, mi, ni) = (ty.data_type(), m as i64, n as i64);
        let (mut dev, mut host) = (0usize, 0usize);
        // SAFETY: a live handle and parameters; only the sizes are written.
        check_status("cusolverDnXgetrf_bufferSize", unsafe {
            cs::cusolverDnXgetrf_bufferSize(
                s.dn,
                s.params,
                mi,
                ni,
                t,
                p(a.ptr),
                mi,
                t,
                &mut dev,
                &mut host,
            )
        })?;
        let mut ws = Workspace::new(stream, dev, host)?;
        for i in 0..batch {
            // SAFETY: the caller's contract covers matrix `i` and its pivots; the workspaces
            // hold the sizes asked for and outlive the call's work (see `Workspace`).
            check_status(CALL, unsafe {
                cs::cusolverDnXgetrf(
                    s.dn,
                    s.params,
                    mi,
                    ni,
                    t,
                    a.ptr_at(i, ty.size()),
                    mi,
                    ipiv.ptr_at(i, 8),
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

/// Solves `op(A)·X = B` for `nrhs` right-hand sides with the LU factors of [`getrf`] (`n × n`),
/// overwriting each `B` (`n × nrhs`) with `X` (`cusolverDnXgetrs`, once per matrix). `a` and
/// `ipiv` may have stride 0 (one factorisation for the whole batch). Its [`Info`] reports
/// invalid parameters only: check [`getrf`]'s for singular matrices.
///
/// # Safety
/// `a` addresses `batch` (or, with stride 0, one) `n × n` factorisations of `ty` with their
/// `ipiv` pivots (`n` `i64` each) from [`getrf`], `b` `batch` matrices of `n × nrhs` elements of
/// `ty`, not overlapping `a`, all on the current device and alive until the stream has run the
/// call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn getrs(
    ty: SolverType,
    trans: Transpose,
    n: usize,
    nrhs: usize,
    a: Strided,
    ipiv: Strided,
    b: Strided,
    batch: usize,
) -> Result<Info> {
    const CALL: &str = "cusolverDnXgetrs";
    check_batch(CALL, "a", a, n * n, batch, true)?;
    check_batch(CALL, "ipiv", ipiv, n, batch, true)?;
    check_batch(CALL, "b", b, n * nrhs, batch, false)?;
    with_solver(|s, stream| {
        let info = Info::new(stream, CALL, FailureKind::Other, batch)?;
        if n == 0 || nrhs == 0 {
            return Ok(info);
        }
        let (t, ni) = (ty.data_type(), n as i64);
        for i in 0..batch {
            // SAFETY: the caller's contract covers factorisation `i`, its pivots and its
            // right-hand sides; `info` holds `batch` ints.
            check_status(CALL, unsafe {
                cs::cusolverDnXgetrs(
                    s.dn,
                    s.params,
                    trans.raw(),
                    ni,
                    nrhs as i64,
                    t,
                    a.ptr_at(i, ty.size()),
                    ni,
                    ipiv.ptr_at(i, 8),
                    t,
                    b.ptr_at(i, ty.size()),
                    ni,
                    info.at(i),
                )
            })?;
        }
        Ok(info)
    })
}

/// Inverses of `batch` `n × n` matrices through cuBLAS's batched LU
/// (`cublas{S,D,C,Z}getrfBatched`, then `getriBatched` out of place into `c`; any `n`, meant
/// for many small matrices). `a` is overwritten with its LU factors. [`Info`] entry `i > 0`:
/// `U(i, i)` is exactly zero, the matrix is singular and its `c` is not an inverse.
///
/// # Safety
/// `a` and `c` address `batch` matrices each of `n × n` elements of `ty`, not overlapping, on
/// the current device, alive until the stream has run the call.
pub unsafe fn inv_batched(
    ty: SolverType,
    n: usize,
    a: Strided,
    c: Strided,
    batch: usize,
) -> Result<Info> {
    let (getrf, getri) = match ty {
        SolverType::F32 => ("cublasSgetrfBatched", "cublasSgetriBatched"),
        SolverType::F64 => ("cublasDgetrfBatched", "cublasDgetriBatched"),
        SolverType::C64 => ("cublasCgetrfBatched", "cublasCgetriBatched"),
        SolverType::C128 => ("cublasZgetrfBatched", "cublasZgetriBatched"),
    };
    check_batch(getrf, "a", a, n * n, batch, false)?;
    check_batch(getri, "c", c, n * n, batch, false)?;
    let (ni, bi) = (int(getrf, "n", n)?, int(getrf, "batch", batch)?);
    // getriBatched reads getrfBatched's info too: both write the same array (the same
    // singular matrices set it).
    with_solver(|s, stream| {
        let info = Info::new(stream, getrf, FailureKind::Singular, batch)?;
        if n == 0 || batch == 0 {
            return Ok(info);
        }
        let h = s.blas(stream)?;
        let ptrs = pointer_arrays(stream, a, c, batch, ty.size())?;
        let pivots = DeviceBuffer::alloc_on(stream, 4 * n * batch)?;
        let (pa, pc) = (ptrs.ptr(), ptrs.ptr() + 8 * batch as u64);
        let (piv, inf) = (pivots.ptr(), info.at(0));
        // SAFETY: the pointer arrays hold the caller's `batch` matrices (its contract), the
        // pivots `n` ints per matrix and `info` `batch` ints, ours, freed in stream order.
        let status = unsafe {
            match ty {
                SolverType::F32 => cb::cublasSgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
                SolverType::F64 => cb::cublasDgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
                SolverType::C64 => cb::cublasCgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
                SolverType::C128 => cb::cublasZgetrfBatched(h, ni, p(pa), ni, p(piv), inf, bi),
            }
        };
        check_blas(getrf, status)?;
        // SAFETY: as above; `c`'s matrices do not overlap `a`'s (the caller's contract).
        let status = unsafe {
            match ty {
                SolverType::F32 => {
                    cb::cublasSgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
                SolverType::F64 => {
                    cb::cublasDgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
                SolverType::C64 => {
                    cb::cublasCgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
                SolverType::C128 => {
                    cb::cublasZgetriBatched(h, ni, p(pa), ni, p(piv), p(pc), ni, inf, bi)
                }
            }
        };
        check_blas(getri, status)?;
        Ok(info)
    })
}
