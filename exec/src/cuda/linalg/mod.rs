//! Linear-algebra calls ([`LinalgCall`]) on the device, through cuSOLVER (and cuBLAS's batched
//! LU inverse) by way of `kiln_runtime::solver`, for float32, float64, complex64 and complex128,
//! on the current stream. What comes out matches the host executor (`cpu::vendor::linalg`):
//! C-order outputs, L with zeros above the diagonal, `s` descending, `w` ascending, `Vh = Vᴴ`,
//! det 0 and slogdet `(0, -inf)` for a singular matrix, and [`IrError::LinAlg`] with NumPy's
//! messages ("Matrix is not positive definite", "Singular matrix") for the failures the host
//! reports.
//!
//! **Operands.** Every operand is gathered (`kiln_runtime::gather`) into a fresh packed buffer
//! (cuSOLVER overwrites its input): broadcast batch axes become copies, one matrix after
//! another. cuSOLVER is column-major, and a C-order `m × n` matrix read column-major is its
//! transpose `Aᵀ` (`n × m`). Where the math allows, the routine runs on `Aᵀ` as it is; where it
//! does not, the gather reads the operand with its last two strides swapped, which gives `A`
//! column-major at the same cost (no separate transpose). The LU-based kinds factor `A` itself,
//! as NumPy's LAPACK calls do (its umath_linalg copies `A` into Fortran order), so a matrix with
//! equal rows has the same exactly zero pivot ("Singular matrix", det 0) as on the host; `Aᵀ`'s
//! LU could round it to a tiny nonzero one:
//!
//! | kind | on the device |
//! |---|---|
//! | cholesky | `A` gathered column-major, `potrf(Lower)` (cuSOLVER's faster path) reads its lower triangle (the one NumPy reads) and leaves `L` column-major; one tiled kernel transposes it into C order with zeros above the diagonal |
//! | solve | `A` and `b` gathered column-major, `getrf` + `getrs`, `x` gathered back into C order |
//! | inv | `A` gathered column-major; `n ≤ 32` and several matrices: `inv_batched` (cuBLAS getrf/getriBatched), `inv(A)` gathered back into C order; otherwise `getrf` + `getrs` with `op = T` against an identity: `inv(Aᵀ) = inv(A)ᵀ` column-major is `inv(A)` in C order, no transpose back |
//! | det, slogdet | `A` gathered column-major, `getrf`, then one kernel thread per matrix multiplies `U`'s diagonal and the pivots' sign (log|det| summed in double precision); a zero on the diagonal gives 0 and `(0, -inf)`. No read-back: nothing waits |
//! | qr | `A` gathered column-major, `geqrf` + `form_q` (reduced or complete), `Q` and `R` gathered back into C order (R: the upper triangle of the first `k` or `m` rows, a kernel zeroing below the diagonal) |
//! | svd | many small matrices (`m, n ≤ 32`): `gesvdj_batched` on `A` column-major, `U`'s first columns and `Vᴴ` (from `V`, conjugated by a kernel for complex types) gathered into C order. Otherwise, with vectors, `gesvdj` (one-sided Jacobi, torch's default driver) on `Aᵀ` as it is: `Aᵀ = U'·S·V'ᴴ` gives `A = conj(V')·S·U'ᵀ`, so its `U'` column-major is `Vh` in C order and `U` is its `V'` gathered into C order (conjugated for complex types); a matrix it does not converge on sends the call to `gesvd` on `Aᵀ`, whose `U'` is again `Vh` and whose `V'ᴴ` column-major is `U` in C order — no transposes. `s` alone: `gesvd`, no vectors computed |
//! | eigh | `A` gathered column-major, `syevd(Lower)` (or `syevj_batched` for many matrices of `n ≤ 32`) reads its lower triangle; `w` as it comes, the eigenvectors (columns) gathered into C order; `w` alone: no vectors |
//!
//! **Errors and waits.** cholesky, solve, inv, eigh and svd read cuSOLVER's `info` back
//! (`Info::check`, one wait per call) to report a failure as the host does; det, slogdet and qr
//! wait for nothing. Empty operands (no matrices, or a zero dimension) are left to the host
//! path (see [`supported`]).
//!
//! The small kernels (zeroing a triangle, an identity, conjugation, the determinant from the
//! LU factors) are one CUDA C source compiled by NVRTC for the device on first use and cached
//! per device.

use std::sync::Arc;

use kiln_compiler::vendor::{LinalgCall, LinalgKind, Strided};
use kiln_ir::shape::numel;
use kiln_ir::{DType, IrError};
use kiln_runtime::solver::{self, FailureKind, Info, QMode, SolverType, SvdJob, Transpose, Uplo};
use kiln_runtime::{gather, DeviceBuffer, KernelArg};

mod kernels;

use kernels::{conjugate, identities, launch, suffix, transposed, zero_triangle};

use super::{DeviceArray, Result};
use crate::ExecError as Error;

/// The largest matrices the batched Jacobi and batched-inverse routines take.
const BATCHED_MAX: usize = 32;

/// The solver type of a call's dtype, `None` for what cuSOLVER does not compute.
fn solver_type(dtype: DType) -> Option<SolverType> {
    Some(match dtype {
        DType::Float32 => SolverType::F32,
        DType::Float64 => SolverType::F64,
        DType::Complex64 => SolverType::C64,
        DType::Complex128 => SolverType::C128,
        _ => return None,
    })
}

/// Whether the device runs `call`: a cuSOLVER type, at least one matrix, no zero dimension (the
/// host handles empty operands), operands of the shapes the call describes, few enough axes for
/// a gather.
pub(super) fn supported(call: &LinalgCall) -> bool {
    let count: usize = call.batch.iter().product();
    let full = |rows: usize, cols: usize| -> Vec<usize> {
        call.batch.iter().copied().chain([rows, cols]).collect()
    };
    let a_ok = call.a.layout.shape.to_vec() == full(call.m, call.n)
        && call.a.layout.rank() <= gather::MAX_RANK;
    let b_ok = match (&call.b, call.kind) {
        (Some((b, k)), LinalgKind::Solve) => *k > 0 && b.layout.shape.to_vec() == full(call.n, *k),
        (None, LinalgKind::Solve) => false,
        _ => true,
    };
    solver_type(call.dtype).is_some()
        && count > 0
        && call.m > 0
        && call.n > 0
        && a_ok
        && b_ok
        && call.outputs.len() == call.out_types.len()
}

fn invalid(message: String) -> Error {
    Error::InvalidInput(message)
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

/// The host's error for `call` (the operand's shape, NumPy's message).
fn linalg_error(call: &LinalgCall, message: &str) -> Error {
    let shape = call.batch.iter().copied().chain([call.m, call.n]).collect();
    Error::Ir(IrError::LinAlg { op: op_name(call.kind).into(), shape, message: message.into() })
}

/// Reads `info` back (waits for the stream) and reports a numerical failure as the host does.
fn checked(call: &LinalgCall, info: &Info) -> Result<()> {
    match info.check()? {
        Ok(()) => Ok(()),
        Err(f) => Err(linalg_error(
            call,
            match f.kind {
                FailureKind::NotPositiveDefinite => "Matrix is not positive definite",
                FailureKind::Singular => "Singular matrix",
                FailureKind::NotConverged if call.kind == LinalgKind::Eigh => {
                    "Eigenvalues did not converge"
                }
                FailureKind::NotConverged => "SVD did not converge",
                FailureKind::Other => return Err(invalid(format!("{}: {f}", op_name(call.kind)))),
            },
        )),
    }
}

/// A packed copy of operand `s` (of `x`): its matrices one after another, in C order, or with
/// `transpose` each one transposed (so the copy read column-major is the matrix itself).
fn packed(x: &DeviceArray, s: &Strided, dtype: DType, transpose: bool) -> Result<DeviceBuffer> {
    if x.dtype != dtype {
        return Err(invalid(format!("linalg call of {dtype}: an operand of dtype {}", x.dtype)));
    }
    let l = &s.layout;
    let r = l.rank();
    let es = dtype.itemsize();
    let (rows, cols) = (l.shape[r - 2], l.shape[r - 1]);
    let count: usize = l.shape[..r - 2].iter().product();
    let end = (l.offset.max(0) as usize + count * rows * cols) * es;
    if transpose && l.offset >= 0 && end <= x.buf.len() && c_contiguous(&l.shape, &l.strides) {
        let src = x.buf.ptr() + (l.offset as usize * es) as u64;
        return transposed(x.buf.device(), src, es, count, cols, rows, false);
    }
    let (mut shape, mut strides) = (l.shape.to_vec(), l.strides.to_vec());
    if transpose {
        shape.swap(r - 2, r - 1);
        strides.swap(r - 2, r - 1);
    }
    Ok(gather::gather(&x.buf, dtype.itemsize(), l.offset, &shape, &strides)?)
}

/// A new buffer of `shape` read from the packed `buf` through `strides` (a transpose, the first
/// rows or columns of each matrix).
fn relayout(
    buf: &DeviceBuffer,
    es: usize,
    shape: &[usize],
    strides: &[isize],
) -> Result<DeviceBuffer> {
    // Every matrix transposed whole (the C-order copy of packed column-major matrices): one
    // transposing kernel.
    if let ([count, rows, cols], [bs, 1, cs]) = (shape, strides) {
        let (count, rows, cols) = (*count, *rows, *cols);
        if *bs == (rows * cols) as isize
            && *cs == rows as isize
            && buf.len() >= count * rows * cols * es
        {
            return transposed(buf.device(), buf.ptr(), es, count, rows, cols, false);
        }
    }
    Ok(gather::gather(buf, es, 0, shape, strides)?)
}

/// Whether `strides` are the C-contiguous ones of `shape` (axes of extent 1 aside).
fn c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    let mut want = 1isize;
    for (&n, &st) in shape.iter().zip(strides).rev() {
        if n != 1 && st != want {
            return false;
        }
        want *= n as isize;
    }
    true
}

fn alloc(bytes: usize) -> Result<DeviceBuffer> {
    Ok(DeviceBuffer::alloc(bytes)?)
}

fn mats(buf: &DeviceBuffer, stride: usize) -> solver::Strided {
    solver::Strided::new(buf.ptr(), stride)
}

// ------------------------------------------------------------------------------------------------
// The routines
// ------------------------------------------------------------------------------------------------

/// The routine's outputs, by routine output index; `None` for those not asked for.
type Produced = Vec<Option<DeviceBuffer>>;

/// Runs `call` on region inputs `inputs`: one array per entry of `call.outputs`.
pub(super) fn run(call: &LinalgCall, inputs: &[Arc<DeviceArray>]) -> Result<Vec<DeviceArray>> {
    let ty = solver_type(call.dtype)
        .ok_or_else(|| invalid(format!("{} of {} on the GPU", op_name(call.kind), call.dtype)))?;
    if !supported(call) {
        return Err(invalid(format!("{call:?} on the GPU")));
    }
    let input = |k: usize| {
        inputs
            .get(k)
            .ok_or_else(|| invalid(format!("linalg call: no input {k} ({} given)", inputs.len())))
    };
    let a = input(call.a.input)?;
    let count: usize = call.batch.iter().product();
    let wants = |o: u8| call.outputs.contains(&o);
    let produced: Produced = match call.kind {
        LinalgKind::Cholesky => cholesky(call, ty, a, count)?,
        LinalgKind::Solve => {
            let (bs, k) = call.b.as_ref().expect("supported: solve has b");
            solve(call, ty, a, input(bs.input)?, bs, *k, count)?
        }
        LinalgKind::Inv => inv(call, ty, a, count)?,
        LinalgKind::Det | LinalgKind::Slogdet => determinant(call, ty, a, count, &wants)?,
        LinalgKind::Qr { full } => qr(call, ty, a, count, full, &wants)?,
        LinalgKind::Svd { full } => svd(call, ty, a, count, full, &wants)?,
        LinalgKind::Eigh => eigh(call, ty, a, count, &wants)?,
    };
    outputs(call, produced)
}

/// The region's outputs from the routine's.
fn outputs(call: &LinalgCall, mut produced: Produced) -> Result<Vec<DeviceArray>> {
    let mut outs = Vec::with_capacity(call.outputs.len());
    for (&o, (dtype, shape)) in call.outputs.iter().zip(&call.out_types) {
        let buf = produced.get_mut(o as usize).and_then(Option::take).ok_or_else(|| {
            invalid(format!("{}: output {o} not computed (or asked twice)", op_name(call.kind)))
        })?;
        let bytes = numel(shape) * dtype.itemsize();
        if buf.len() < bytes {
            return Err(invalid(format!(
                "{}: output {o} of {} bytes for {dtype} {shape:?}",
                op_name(call.kind),
                buf.len()
            )));
        }
        outs.push(DeviceArray { buf, dtype: *dtype, shape: shape.to_vec() });
    }
    Ok(outs)
}

fn cholesky(call: &LinalgCall, ty: SolverType, a: &DeviceArray, count: usize) -> Result<Produced> {
    let n = call.n;
    // A column-major (its lower triangle is the one NumPy reads): cuSOLVER's Lower path.
    let buf = packed(a, &call.a, call.dtype, true)?;
    // SAFETY: `buf` holds `count` packed n × n matrices of `ty`, alive past the check below
    // (which waits for the stream).
    let info = unsafe { solver::potrf(ty, Uplo::Lower, n, mats(&buf, n * n), count)? };
    let out = transposed(buf.device(), buf.ptr(), ty.size(), count, n, n, true)?;
    checked(call, &info)?;
    Ok(vec![Some(out)])
}

#[allow(clippy::too_many_arguments)]
fn solve(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    b: &DeviceArray,
    bs: &Strided,
    k: usize,
    count: usize,
) -> Result<Produced> {
    let n = call.n;
    // A and b column-major: each matrix transposed by the gather.
    let lu = packed(a, &call.a, call.dtype, true)?;
    let ipiv = alloc(count * n * 8)?;
    let x = packed(b, bs, call.dtype, true)?;
    // SAFETY: `lu` holds `count` packed column-major n × n matrices, `ipiv` `count` × n i64
    // pivots, `x` `count` packed column-major n × k right-hand sides, none overlapping, all
    // alive past the check (which waits).
    let info = unsafe {
        let info = solver::getrf(ty, n, n, mats(&lu, n * n), mats(&ipiv, n), count)?;
        solver::getrs(
            ty,
            Transpose::None,
            n,
            k,
            mats(&lu, n * n),
            mats(&ipiv, n),
            mats(&x, n * k),
            count,
        )?;
        info
    };
    // x column-major (k × n C order per matrix) back into C order n × k.
    let out = relayout(&x, ty.size(), &[count, n, k], &[(n * k) as isize, 1, n as isize])?;
    checked(call, &info)?;
    Ok(vec![Some(out)])
}

fn inv(call: &LinalgCall, ty: SolverType, a: &DeviceArray, count: usize) -> Result<Produced> {
    let n = call.n;
    // A column-major: the LU NumPy's LAPACK call factors (the same exact zero pivots).
    let lu = packed(a, &call.a, call.dtype, true)?;
    if n <= BATCHED_MAX && count > 1 {
        let c = alloc(count * n * n * ty.size())?;
        // SAFETY: `lu` and `c` hold `count` packed n × n matrices each, not overlapping, alive
        // past the check.
        let info = unsafe { solver::inv_batched(ty, n, mats(&lu, n * n), mats(&c, n * n), count)? };
        // inv(A) column-major, transposed into C order.
        let out = relayout(&c, ty.size(), &[count, n, n], &[(n * n) as isize, 1, n as isize])?;
        checked(call, &info)?;
        return Ok(vec![Some(out)]);
    }
    let ipiv = alloc(count * n * 8)?;
    let x = identities(ty, count, n)?;
    // SAFETY: as in `solve`, the right-hand sides `count` packed n × n identities. With `op = T`
    // the solution is inv(Aᵀ) = inv(A)ᵀ column-major, i.e. inv(A) in C order.
    let info = unsafe {
        let info = solver::getrf(ty, n, n, mats(&lu, n * n), mats(&ipiv, n), count)?;
        solver::getrs(
            ty,
            Transpose::Transpose,
            n,
            n,
            mats(&lu, n * n),
            mats(&ipiv, n),
            mats(&x, n * n),
            count,
        )?;
        info
    };
    checked(call, &info)?;
    Ok(vec![Some(x)])
}

fn determinant(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let n = call.n;
    // A column-major: the LU NumPy's LAPACK call factors (the same exact zero pivots).
    let lu = packed(a, &call.a, call.dtype, true)?;
    let ipiv = alloc(count * n * 8)?;
    // SAFETY: `lu` holds `count` packed n × n matrices, `ipiv` their pivots, alive until the
    // kernel below (queued after) has read them. A singular matrix is no error here: its info
    // is not read (the kernel sees the zero on the diagonal).
    let _info = unsafe { solver::getrf(ty, n, n, mats(&lu, n * n), mats(&ipiv, n), count)? };
    let is_det = call.kind == LinalgKind::Det;
    let full = |want: bool| -> Result<Option<DeviceBuffer>> {
        want.then(|| alloc(count * ty.size())).transpose()
    };
    let det = full(is_det && wants(0))?;
    let sign = full(!is_det && wants(0))?;
    let logabs = (!is_det && wants(1)).then(|| alloc(count * ty.real().size())).transpose()?;
    let ptr = |b: &Option<DeviceBuffer>| b.as_ref().map_or(0u64, DeviceBuffer::ptr);
    let (pd, ps, pl) = (ptr(&det), ptr(&sign), ptr(&logabs));
    let (c, k) = (count as i64, n as i64);
    let args: [&dyn KernelArg; 7] = [&lu, &ipiv, &c, &k, &pd, &ps, &pl];
    launch(lu.device(), &format!("kiln_la_det_{}", suffix(ty)), count, &args)?;
    Ok(if is_det { vec![det] } else { vec![sign, logabs] })
}

fn qr(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    full: bool,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let (m, n, es) = (call.m, call.n, ty.size());
    let k = m.min(n);
    // A column-major (m × n).
    let fac = packed(a, &call.a, call.dtype, true)?;
    let tau = alloc(count * k * es)?;
    // SAFETY: `fac` holds `count` packed column-major m × n matrices, `tau` k scalars each,
    // alive until the gathers below (queued after) have read them.
    let _info = unsafe { solver::geqrf(ty, m, n, mats(&fac, m * n), mats(&tau, k), count)? };
    let q = if wants(0) {
        let mode = if full { QMode::Complete } else { QMode::Reduced };
        let cols = solver::q_columns(mode, m, n);
        let q = alloc(count * m * cols * es)?;
        // SAFETY: `q` holds `count` packed m × cols matrices, not overlapping `fac`.
        let _info = unsafe {
            solver::form_q(
                ty,
                mode,
                m,
                n,
                mats(&fac, m * n),
                mats(&tau, k),
                mats(&q, m * cols),
                count,
            )?
        };
        Some(relayout(&q, es, &[count, m, cols], &[(m * cols) as isize, 1, m as isize])?)
    } else {
        None
    };
    let r = if wants(1) {
        let rows = if full { m } else { k };
        let r = relayout(&fac, es, &[count, rows, n], &[(m * n) as isize, 1, m as isize])?;
        zero_triangle(&r, ty, count, rows, n, false)?;
        Some(r)
    } else {
        None
    };
    Ok(vec![q, r])
}

fn svd(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    full: bool,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let (m, n, es) = (call.m, call.n, ty.size());
    let k = m.min(n);
    let vectors = wants(0) || wants(2);
    let s = alloc(count * k * ty.real().size())?;
    if m <= BATCHED_MAX && n <= BATCHED_MAX && count > 1 {
        // Jacobi on A column-major: full U (m × m) and V (n × n), column-major.
        let fac = packed(a, &call.a, call.dtype, true)?;
        let (u, v) = if vectors {
            (Some(alloc(count * m * m * es)?), Some(alloc(count * n * n * es)?))
        } else {
            (None, None)
        };
        let factor = |b: &Option<DeviceBuffer>, stride: usize| match b {
            Some(b) => mats(b, stride),
            None => solver::Strided::new(0, 0),
        };
        // SAFETY: `fac` holds `count` packed m × n matrices, `s` k reals each, with vectors
        // `u` and `v` packed m × m and n × n matrices, none overlapping, alive past the check.
        let info = unsafe {
            solver::gesvdj_batched(
                ty,
                vectors,
                m,
                n,
                mats(&fac, m * n),
                mats(&s, k),
                factor(&u, m * m),
                factor(&v, n * n),
                count,
            )?
        };
        let (ucols, vrows) = if full { (m, n) } else { (k, k) };
        let u_out = match (&u, wants(0)) {
            (Some(u), true) => {
                Some(relayout(u, es, &[count, m, ucols], &[(m * m) as isize, 1, m as isize])?)
            }
            _ => None,
        };
        let vh_out = if let (Some(v), true) = (&v, wants(2)) {
            // Vh[i][j] = conj(V(j, i)): V's column-major rows read in C order, conjugated.
            let vh = relayout(v, es, &[count, vrows, n], &[(n * n) as isize, n as isize, 1])?;
            conjugate(&vh, ty, count * vrows * n)?;
            Some(vh)
        } else {
            None
        };
        checked(call, &info)?;
        return Ok(vec![u_out, Some(s), vh_out]);
    }
    if vectors {
        if let Some(out) = svd_jacobi(call, ty, a, count, full, wants)? {
            return Ok(out);
        }
        // Jacobi did not converge (within its default tolerance and sweeps): gesvd.
    }
    // gesvd on Aᵀ as it lies (the C-order copy read column-major): Aᵀ = U'·S·V'ᴴ, so
    // A = conj(V')·S·U'ᵀ: U' (n × ·) column-major is Vh in C order, V'ᴴ (· × m) column-major
    // is U in C order.
    let fac = packed(a, &call.a, call.dtype, false)?;
    let job = match (vectors, full) {
        (false, _) => SvdJob::None,
        (true, true) => SvdJob::Full,
        (true, false) => SvdJob::Reduced,
    };
    let shapes = solver::svd_shapes(n, m, job, job);
    let (ue, ve) = (shapes.u.0 * shapes.u.1, shapes.vt.0 * shapes.vt.1);
    let factor = |elems: usize| -> Result<Option<DeviceBuffer>> {
        vectors.then(|| alloc(count * elems * es)).transpose()
    };
    let (vh, u) = (factor(ue)?, factor(ve)?);
    let strided = |b: &Option<DeviceBuffer>, elems: usize| match b {
        Some(b) => mats(b, elems),
        None => solver::Strided::new(0, 0),
    };
    // SAFETY: `fac` holds `count` packed column-major n × m matrices (Aᵀ), `s` k reals each,
    // `vh` and `u` (with vectors) the factors of `svd_shapes(n, m, job, job)`, none
    // overlapping, alive past the check.
    let info = unsafe {
        solver::gesvd(
            ty,
            job,
            job,
            n,
            m,
            mats(&fac, m * n),
            mats(&s, k),
            strided(&vh, ue),
            strided(&u, ve),
            count,
        )?
    };
    checked(call, &info)?;
    Ok(vec![u.filter(|_| wants(0)), Some(s), vh.filter(|_| wants(2))])
}

/// The SVD with vectors by `gesvdj` (one-sided Jacobi, as torch's default CUDA driver), `None`
/// when some matrix did not converge (the caller falls back to `gesvd`). On `Aᵀ` as it lies
/// (the C-order copy read column-major, `n × m`): `Aᵀ = U'·S·V'ᴴ` gives `A = conj(V')·S·U'ᵀ`,
/// so `U'` column-major (`n × n`, or `n × k`) is `Vh` in C order as it comes, and `U` is `V'`
/// (`m × m`, or `m × k`) column-major gathered into C order and conjugated.
fn svd_jacobi(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    full: bool,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Option<Produced>> {
    let (m, n, es) = (call.m, call.n, ty.size());
    let k = m.min(n);
    let s = alloc(count * k * ty.real().size())?;
    let fac = packed(a, &call.a, call.dtype, false)?;
    // U' (n × uc) and V' (m × vc) of Aᵀ.
    let (uc, vc) = if full { (n, m) } else { (k, k) };
    let up = alloc(count * n * uc * es)?;
    let vp = alloc(count * m * vc * es)?;
    // SAFETY: `fac` holds `count` packed column-major n × m matrices (Aᵀ), `s` k reals each,
    // `up` and `vp` packed n × uc and m × vc factors, none overlapping, alive past the check.
    let info = unsafe {
        solver::gesvdj(
            ty,
            !full,
            n,
            m,
            mats(&fac, m * n),
            mats(&s, k),
            mats(&up, n * uc),
            mats(&vp, m * vc),
            count,
            0.0,
            0,
        )?
    };
    let u = if wants(0) {
        // U[i][j] = conj(V'(i, j)), V' column-major m × vc.
        let u = relayout(&vp, es, &[count, m, vc], &[(m * vc) as isize, 1, m as isize])?;
        conjugate(&u, ty, count * m * vc)?;
        Some(u)
    } else {
        None
    };
    match info.check()? {
        Ok(()) => Ok(Some(vec![u, Some(s), wants(2).then_some(up)])),
        Err(f) if f.kind == FailureKind::NotConverged => Ok(None),
        Err(_) => checked(call, &info).map(|()| None),
    }
}

fn eigh(
    call: &LinalgCall,
    ty: SolverType,
    a: &DeviceArray,
    count: usize,
    wants: &dyn Fn(u8) -> bool,
) -> Result<Produced> {
    let n = call.n;
    let vectors = wants(1);
    // A column-major: its lower triangle is what NumPy reads.
    let fac = packed(a, &call.a, call.dtype, true)?;
    let w = alloc(count * n * ty.real().size())?;
    // SAFETY: `fac` holds `count` packed n × n matrices, `w` n reals each, alive past the
    // check.
    let info = unsafe {
        if n <= BATCHED_MAX && count > 1 {
            solver::syevj_batched(
                ty,
                Uplo::Lower,
                vectors,
                n,
                mats(&fac, n * n),
                mats(&w, n),
                count,
            )?
        } else {
            solver::syevd(ty, Uplo::Lower, vectors, n, mats(&fac, n * n), mats(&w, n), count)?
        }
    };
    let v = if vectors {
        // The eigenvectors are fac's columns: transpose into C order.
        Some(relayout(&fac, ty.size(), &[count, n, n], &[(n * n) as isize, 1, n as isize])?)
    } else {
        None
    };
    checked(call, &info)?;
    Ok(vec![Some(w), v])
}

#[cfg(test)]
mod tests;
