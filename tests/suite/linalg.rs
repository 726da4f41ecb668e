//! `kiln::linalg`'s decompositions and solvers (`cholesky`, `solve`, `inv`, `det`, `slogdet`,
//! `qr`, `svd`, `svdvals`, `eigh`, `eigvalsh`) and the functions derived from them (`lstsq`,
//! `pinv`, `matrix_rank`, `matrix_power`, `norm`, `cond`, `trace`) against NumPy
//! (`tests/fixtures/linalg/`, from `tests/fixtures/linalg/gen.py`), on whichever backend runs
//! the suite:
//!
//! - unique results against NumPy's values (`linalg/cases.txt`): L, x, inverses,
//!   determinants, `slogdet`'s sign and log, singular values, eigenvalues, R with its rows
//!   scaled to a positive diagonal (R is unique up to those signs), and every derived function;
//! - factors unique only up to signs or phases (Q, U, Vh, v) by reconstruction (`Q @ R = a`,
//!   `U @ diag(S) @ Vh = a`, `a @ v = v * w`) and orthonormality, their dtypes and shapes
//!   against NumPy's (`linalg/factors.txt`), R triangular, S descending, w ascending;
//! - typed errors: shapes and orders at the call, singular and indefinite matrices when
//!   computed;
//! - the graph: one library call for svd's three outputs (qr's two, eigh's two), producers and
//!   consumers of the call around it.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;

use kiln::ir::{Data, IrError};
use kiln::linalg::{self, NormOrd, QrMode};
use kiln::{s, Array, DType, Error, HostArray, SliceArg};
use kiln_compiler::fusion::RegionKind;
use kiln_compiler::pipeline::{compile, Options};
use kiln_compiler::vendor::VendorCall;

use crate::numpy_fixtures::{compare, fixture_cases, fixture_dir, Tol};

// ------------------------------------------------------------------------------------------------
// Values NumPy and kiln agree on
// ------------------------------------------------------------------------------------------------

fixture_cases! { "linalg/cases.txt";
    cholesky_spd4, cholesky_spd4_f32, cholesky_spdb, cholesky_spdb_f32, cholesky_hpd3,
        cholesky_lower_only, cholesky_spd_int, cholesky_e00, cholesky_e200
        => |a| linalg::cholesky(&a[0]);
    // The producer (a * 2) runs before the call.
    cholesky_scaled => |a| linalg::cholesky(&(&a[0] * 2.0));

    solve_vec, solve_mat, solve_vec_f32, solve_mat_f32, solve_batch_vec, solve_batch_mat,
        solve_bcast_a, solve_bcast_b, solve_bcast_both, solve_c128, solve_int, solve_mixed,
        solve_empty, solve_empty_mat
        => |a| linalg::solve(&a[0], &a[1]);

    inv_gen4, inv_gen4_f32, inv_genb, inv_genb_f32, inv_genc, inv_int3, inv_e00, inv_e200
        => |a| linalg::inv(&a[0]);

    det_gen4, det_gen4_f32, det_genb, det_genb_f32, det_genc, det_int3, det_sing2, det_singb,
        det_e00, det_e200
        => |a| linalg::det(&a[0]);

    slogdet_sign_gen4, slogdet_sign_gen4_f32, slogdet_sign_genb, slogdet_sign_genc,
        slogdet_sign_int3, slogdet_sign_sing2, slogdet_sign_singb, slogdet_sign_e00
        => |a| linalg::slogdet(&a[0]).0;
    slogdet_logabs_gen4, slogdet_logabs_gen4_f32, slogdet_logabs_genb, slogdet_logabs_genc,
        slogdet_logabs_int3, slogdet_logabs_sing2, slogdet_logabs_singb, slogdet_logabs_e00
        => |a| linalg::slogdet(&a[0]).1;

    qr_r_tall, qr_r_wide, qr_r_sq4, qr_r_tall_f32, qr_r_wide_f32, qr_r_tallb, qr_r_tallc,
        qr_r_widec, qr_r_e03
        => |a| positive_rows(&linalg::qr(&a[0], QrMode::Reduced).1);
    qr_rc_tall, qr_rc_wide, qr_rc_sq4, qr_rc_tall_f32, qr_rc_wide_f32, qr_rc_tallb, qr_rc_tallc,
        qr_rc_widec, qr_rc_e03
        => |a| positive_rows(&linalg::qr(&a[0], QrMode::Complete).1);

    svd_s_tall, svd_s_wide, svd_s_sq4, svd_s_tall_f32, svd_s_wide_f32, svd_s_tallb, svd_s_tallc,
        svd_s_widec, svd_s_e03, svd_s_int3
        => |a| linalg::svd(&a[0], false).1;
    svdvals_tall, svdvals_wide, svdvals_sq4, svdvals_tall_f32, svdvals_wide_f32, svdvals_tallb,
        svdvals_tallc, svdvals_widec, svdvals_e03, svdvals_int3
        => |a| linalg::svdvals(&a[0]);

    eigh_w_sym4, eigh_w_sym4_f32, eigh_w_symb, eigh_w_herm4, eigh_w_lower_only, eigh_w_sym_int,
        eigh_w_e00
        => |a| linalg::eigh(&a[0]).0;
    eigvalsh_sym4, eigvalsh_sym4_f32, eigvalsh_symb, eigvalsh_herm4, eigvalsh_lower_only,
        eigvalsh_sym_int, eigvalsh_e00
        => |a| linalg::eigvalsh(&a[0]);

    // --- derived functions
    lstsq_x_tall_vec, lstsq_x_tall_mat, lstsq_x_wide_vec, lstsq_x_zerocol, lstsq_x_tall_f32,
        lstsq_x_int => |a| linalg::lstsq(&a[0], &a[1], None).0;
    lstsq_res_tall_vec, lstsq_res_tall_mat, lstsq_res_wide_vec, lstsq_res_zerocol,
        lstsq_res_tall_f32, lstsq_res_int => |a| linalg::lstsq(&a[0], &a[1], None).1;
    lstsq_rank_tall_vec, lstsq_rank_tall_mat, lstsq_rank_wide_vec, lstsq_rank_zerocol,
        lstsq_rank_tall_f32, lstsq_rank_int => |a| linalg::lstsq(&a[0], &a[1], None).2;
    lstsq_s_tall_vec, lstsq_s_tall_mat, lstsq_s_wide_vec, lstsq_s_zerocol, lstsq_s_tall_f32,
        lstsq_s_int => |a| linalg::lstsq(&a[0], &a[1], None).3;
    lstsq_x_rcond, lstsq_x_rank2 => |a| linalg::lstsq(&a[0], &a[1], Some(a[2].item())).0;
    lstsq_res_rcond, lstsq_res_rank2 => |a| linalg::lstsq(&a[0], &a[1], Some(a[2].item())).1;
    lstsq_rank_rcond, lstsq_rank_rank2 => |a| linalg::lstsq(&a[0], &a[1], Some(a[2].item())).2;
    lstsq_s_rcond, lstsq_s_rank2 => |a| linalg::lstsq(&a[0], &a[1], Some(a[2].item())).3;

    pinv_tall, pinv_wide, pinv_sq4, pinv_tallb, pinv_tallc, pinv_tall_f32, pinv_int3,
        pinv_zerocol, pinv_e03 => |a| linalg::pinv(&a[0], None);
    pinv_rank2, pinv_rcond => |a| linalg::pinv(&a[0], Some(a[1].item()));

    matrix_rank_gen4, matrix_rank_zerocol, matrix_rank_rankb, matrix_rank_z33,
        matrix_rank_tall_f32, matrix_rank_wide, matrix_rank_b4, matrix_rank_z3, matrix_rank_e00
        => |a| linalg::matrix_rank(&a[0], None);
    matrix_rank_tol, matrix_rank_rank2 => |a| linalg::matrix_rank(&a[0], Some(a[1].item()));

    matrix_power_0 => |a| linalg::matrix_power(&a[0], 0);
    matrix_power_1 => |a| linalg::matrix_power(&a[0], 1);
    matrix_power_2 => |a| linalg::matrix_power(&a[0], 2);
    matrix_power_3, matrix_power_f32_3 => |a| linalg::matrix_power(&a[0], 3);
    matrix_power_5 => |a| linalg::matrix_power(&a[0], 5);
    matrix_power_m1, matrix_power_int_m1 => |a| linalg::matrix_power(&a[0], -1);
    matrix_power_m3 => |a| linalg::matrix_power(&a[0], -3);
    matrix_power_batch_4 => |a| linalg::matrix_power(&a[0], 4);
    matrix_power_fib_10 => |a| linalg::matrix_power(&a[0], 10);
    matrix_power_int_0 => |a| linalg::matrix_power(&a[0], 0);

    norm_vec, norm_vec_c128, norm_vec_int, norm_vec_f32, norm_mat, norm_cube
        => |a| linalg::norm(&a[0], None, None, false);
    norm_vec_inf, norm_mat_inf => |a| linalg::norm(&a[0], Some(NormOrd::Inf), None, false);
    norm_vec_neginf, norm_mat_neginf
        => |a| linalg::norm(&a[0], Some(NormOrd::NegInf), None, false);
    norm_vec_0 => |a| linalg::norm(&a[0], Some(NormOrd::P(0.0)), None, false);
    norm_vec_1, norm_vec_c128_1, norm_mat_1, norm_mat_int_1
        => |a| linalg::norm(&a[0], Some(NormOrd::P(1.0)), None, false);
    norm_vec_2, norm_mat_2 => |a| linalg::norm(&a[0], Some(NormOrd::P(2.0)), None, false);
    norm_vec_3 => |a| linalg::norm(&a[0], Some(NormOrd::P(3.0)), None, false);
    norm_vec_m1, norm_mat_m1 => |a| linalg::norm(&a[0], Some(NormOrd::P(-1.0)), None, false);
    norm_vec_half => |a| linalg::norm(&a[0], Some(NormOrd::P(0.5)), None, false);
    norm_mat_fro => |a| linalg::norm(&a[0], Some(NormOrd::Fro), None, false);
    norm_mat_nuc, norm_mat_c128_nuc => |a| linalg::norm(&a[0], Some(NormOrd::Nuc), None, false);
    norm_mat_m2 => |a| linalg::norm(&a[0], Some(NormOrd::P(-2.0)), None, false);
    norm_cube_keep => |a| linalg::norm(&a[0], None, None, true);
    norm_cube_12_fro => |a| linalg::norm(&a[0], Some(NormOrd::Fro), Some(&[1, 2]), false);
    norm_cube_12_nuc => |a| linalg::norm(&a[0], Some(NormOrd::Nuc), Some(&[1, 2]), false);
    norm_cube_12_2_keep => |a| linalg::norm(&a[0], Some(NormOrd::P(2.0)), Some(&[1, 2]), true);
    norm_cube_20_1 => |a| linalg::norm(&a[0], Some(NormOrd::P(1.0)), Some(&[2, 0]), false);
    norm_cube_20_inf_keep => |a| linalg::norm(&a[0], Some(NormOrd::Inf), Some(&[2, 0]), true);
    norm_cube_m1 => |a| linalg::norm(&a[0], None, Some(&[-1]), false);
    norm_cube_0_3_keep => |a| linalg::norm(&a[0], Some(NormOrd::P(3.0)), Some(&[0]), true);

    cond_gen4, cond_tall, cond_genb, cond_gen4_f32, cond_genc => |a| linalg::cond(&a[0], None);
    cond_gen4_2 => |a| linalg::cond(&a[0], Some(NormOrd::P(2.0)));
    cond_gen4_m2, cond_wide_m2 => |a| linalg::cond(&a[0], Some(NormOrd::P(-2.0)));
    cond_gen4_fro, cond_genb_fro => |a| linalg::cond(&a[0], Some(NormOrd::Fro));
    cond_gen4_nuc => |a| linalg::cond(&a[0], Some(NormOrd::Nuc));
    cond_gen4_1 => |a| linalg::cond(&a[0], Some(NormOrd::P(1.0)));
    cond_gen4_m1 => |a| linalg::cond(&a[0], Some(NormOrd::P(-1.0)));
    cond_gen4_inf => |a| linalg::cond(&a[0], Some(NormOrd::Inf));
    cond_gen4_neginf => |a| linalg::cond(&a[0], Some(NormOrd::NegInf));

    trace_sq4, trace_cube, trace_int3, trace_genc, trace_f32, trace_e00
        => |a| linalg::trace(&a[0], 0);
    trace_sq4_1, trace_cube_1 => |a| linalg::trace(&a[0], 1);
    trace_sq4_m1 => |a| linalg::trace(&a[0], -1);
    trace_wide_2 => |a| linalg::trace(&a[0], 2);
    trace_wide_m5 => |a| linalg::trace(&a[0], -5);
}

/// R with each row multiplied by the conjugate phase of its diagonal entry (rows past the
/// diagonal stay as they are, zero), as `gen.py`'s `positive_rows`: R is unique up to those
/// phases.
fn positive_rows(r: &Array) -> Array {
    let (m, n) = (r.shape()[r.ndim() - 2], r.shape()[r.ndim() - 1]);
    let diagonal = (r * &kiln::eye(m, Some(n), 0, r.dtype())).sum(kiln::axis(-1).keepdims());
    r * &diagonal.sign().conj()
}

/// The fixture harness fails wrong answers of these ops (a test that can fail).
#[test]
fn the_harness_rejects_wrong_decompositions() {
    let fails = |name: &str, f: fn(&[Array]) -> Array| {
        let r =
            std::panic::catch_unwind(|| crate::numpy_fixtures::run_case_in(manifest(), name, f));
        assert!(r.is_err(), "case {name} accepted a wrong answer");
    };
    fails("cholesky_spd4", |a| linalg::cholesky(&a[0]).t()); // U for L
    fails("cholesky_spd4_f32", |a| &linalg::cholesky(&a[0]) * 1.001f32);
    fails("inv_gen4", |a| &linalg::inv(&a[0]) * (1.0 + 1e-9));
    fails("solve_bcast_a", |a| linalg::solve(&a[0], &a[1].slice(&s![.., ..1]))); // shape
    fails("det_int3", |a| linalg::det(&a[0]).astype(DType::Float32)); // dtype
    fails("qr_r_tall", |a| linalg::qr(&a[0], QrMode::Reduced).1); // signs not normalised
    fails("svd_s_tall", |a| linalg::svd(&a[0], false).1.flip(None)); // ascending
}

// ------------------------------------------------------------------------------------------------
// Factors: reconstruction, orthonormality, NumPy's dtypes and shapes
// ------------------------------------------------------------------------------------------------

/// The outputs of NumPy's decompositions, by decomposition and input: each output's dtype and
/// shape (`linalg/factors.txt`).
fn factors(kind: &str) -> BTreeMap<String, Vec<(DType, Vec<usize>)>> {
    let path = fixture_dir().join("linalg").join("factors.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (run python3 tests/fixtures/linalg/gen.py)", path.display())
    });
    let mut m: BTreeMap<String, Vec<(DType, Vec<usize>)>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 5, "factors.txt: {line:?}");
        if f[0] != kind {
            continue;
        }
        let outs = m.entry(f[1].to_string()).or_default();
        assert_eq!(f[2].parse::<usize>().unwrap(), outs.len(), "factors.txt: {line:?}");
        let shape = if f[4] == "-" {
            vec![]
        } else {
            f[4].split(',').map(|d| d.parse().unwrap()).collect()
        };
        outs.push((f[3].parse().unwrap(), shape));
    }
    assert!(!m.is_empty(), "no {kind} lines in factors.txt");
    m
}

fn load(file: &str) -> Array {
    kiln::load_npy(fixture_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The outputs' dtypes and shapes are NumPy's, as written (before anything is computed) and
/// as computed.
fn assert_types(what: &str, outs: &[&Array], numpy: &[(DType, Vec<usize>)]) {
    assert_eq!(outs.len(), numpy.len(), "{what}: number of outputs");
    for (k, (o, (dt, shape))) in outs.iter().zip(numpy).enumerate() {
        assert_eq!(
            (o.dtype(), o.shape()),
            (*dt, shape.as_slice()),
            "{what}: output {k} (kiln vs NumPy)"
        );
    }
    kiln::try_eval_all(outs).unwrap_or_else(|e| panic!("{what}: materialising: {e}"));
    for (k, (o, (dt, shape))) in outs.iter().zip(numpy).enumerate() {
        let h = o.try_to_host().unwrap();
        assert_eq!((h.dtype(), h.shape()), (*dt, shape.as_slice()), "{what}: computed output {k}");
    }
}

/// The tolerance of a product of factors against what it should equal, relative to the largest
/// |part| of the expected array.
fn tol(dtype: DType) -> f64 {
    match dtype {
        DType::Float32 | DType::Complex64 => 1e-4,
        _ => 1e-10,
    }
}

/// `got` within [`tol`] of `want` (same dtype and shape).
fn assert_close(what: &str, got: &Array, want: &Array) {
    assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()), "{what}: dtype, shape");
    let (g, w) = (got.try_to_host().unwrap(), want.try_to_host().unwrap());
    if let Err(msg) = compare(&w, &g, Tol::Norm(tol(want.dtype())), false) {
        panic!("{what} ({} {:?}): {msg}", want.dtype(), want.shape());
    }
}

/// `xᴴ` over the last two axes.
fn ct(x: &Array) -> Array {
    x.swapaxes(-1, -2).conj()
}

/// Identity matrices of side `n` with `batch` axes, of `dtype`.
fn eyes(batch: &[usize], n: usize, dtype: DType) -> Array {
    let shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
    kiln::eye(n, None, 0, dtype).broadcast_to(&shape)
}

fn batch_of(x: &Array) -> &[usize] {
    &x.shape()[..x.ndim() - 2]
}

/// The real and imaginary parts of each element, as f64.
fn parts(x: &Array) -> Vec<[f64; 2]> {
    let h: std::sync::Arc<HostArray> = x.try_to_host().unwrap();
    match h.data() {
        Data::Float32(v) => v.iter().map(|&x| [x as f64, 0.0]).collect(),
        Data::Float64(v) => v.iter().map(|&x| [x, 0.0]).collect(),
        Data::Complex64(v) => v.iter().map(|z| [z.re as f64, z.im as f64]).collect(),
        Data::Complex128(v) => v.iter().map(|z| [z.re, z.im]).collect(),
        d => panic!("not a float dtype: {}", d.dtype()),
    }
}

/// Every entry below the diagonal of each matrix of `r` is exactly zero (NumPy's are).
fn assert_upper_triangular(what: &str, r: &Array) {
    let (m, n) = (r.shape()[r.ndim() - 2], r.shape()[r.ndim() - 1]);
    for (i, p) in parts(r).iter().enumerate() {
        let (row, col) = ((i / n) % m.max(1), i % n);
        assert!(row <= col || *p == [0.0, 0.0], "{what}: R[.., {row}, {col}] = {p:?}");
    }
}

/// Each row of the last axis of `x` (real) is sorted, descending or ascending.
fn assert_sorted(what: &str, x: &Array, descending: bool) {
    let n = x.shape()[x.ndim() - 1];
    let v: Vec<f64> = parts(x).iter().map(|p| p[0]).collect();
    for row in v.chunks(n.max(1)) {
        for w in row.windows(2) {
            let ok = if descending { w[0] >= w[1] } else { w[0] <= w[1] };
            assert!(ok, "{what}: not sorted: {row:?}");
        }
    }
}

fn qr_factors(kind: &str, mode: QrMode) {
    for (input, numpy) in factors(kind) {
        let what = format!("{kind} {input}");
        let a = load(&input);
        let (q, r) = linalg::qr(&a, mode);
        assert_types(&what, &[&q, &r], &numpy);
        let af = a.astype(q.dtype());
        let (m, k) = (q.shape()[q.ndim() - 2], q.shape()[q.ndim() - 1]);
        assert_close(&format!("{what}: Q @ R"), &q.matmul(&r), &af);
        assert_close(
            &format!("{what}: Qᴴ Q"),
            &ct(&q).matmul(&q),
            &eyes(batch_of(&q), k, q.dtype()),
        );
        if mode == QrMode::Complete {
            assert_close(
                &format!("{what}: Q Qᴴ"),
                &q.matmul(&ct(&q)),
                &eyes(batch_of(&q), m, q.dtype()),
            );
        }
        assert_upper_triangular(&what, &r);
    }
}

#[test]
fn qr_reduced_reconstructs_with_numpys_shapes() {
    qr_factors("qr_reduced", QrMode::Reduced);
}

#[test]
fn qr_complete_reconstructs_with_numpys_shapes() {
    qr_factors("qr_complete", QrMode::Complete);
}

fn svd_factors(kind: &str, full: bool) {
    for (input, numpy) in factors(kind) {
        let what = format!("{kind} {input}");
        let a = load(&input);
        let (u, sv, vh) = linalg::svd(&a, full);
        assert_types(&what, &[&u, &sv, &vh], &numpy);
        let af = a.astype(u.dtype());
        let k = sv.shape()[sv.ndim() - 1] as i64;
        let (m, n) = (u.shape()[u.ndim() - 2], vh.shape()[vh.ndim() - 1]);
        let uk = u.slice(&s![SliceArg::Ellipsis, .., ..k]);
        let vk = vh.slice(&s![SliceArg::Ellipsis, ..k, ..]);
        let usv = (&uk * &sv.expand_dims(&[-2])).matmul(&vk);
        assert_close(&format!("{what}: U diag(S) Vh"), &usv, &af);
        let (bu, bv) = (batch_of(&u), batch_of(&vh));
        let (ku, kv) = (u.shape()[u.ndim() - 1], vh.shape()[vh.ndim() - 2]);
        assert_close(&format!("{what}: Uᴴ U"), &ct(&u).matmul(&u), &eyes(bu, ku, u.dtype()));
        assert_close(&format!("{what}: Vh Vhᴴ"), &vh.matmul(&ct(&vh)), &eyes(bv, kv, u.dtype()));
        if full {
            assert_close(&format!("{what}: U Uᴴ"), &u.matmul(&ct(&u)), &eyes(bu, m, u.dtype()));
            assert_close(&format!("{what}: Vhᴴ Vh"), &ct(&vh).matmul(&vh), &eyes(bv, n, u.dtype()));
        }
        assert_sorted(&what, &sv, true);
        assert!(parts(&sv).iter().all(|p| p[0] >= 0.0), "{what}: negative singular values");
        // svdvals is S.
        assert_close(&format!("{what}: svdvals"), &linalg::svdvals(&a), &sv);
    }
}

#[test]
fn svd_reduced_reconstructs_with_numpys_shapes() {
    svd_factors("svd_reduced", false);
}

#[test]
fn svd_full_reconstructs_with_numpys_shapes() {
    svd_factors("svd_full", true);
}

#[test]
fn eigh_vectors_satisfy_a_v_equals_v_w() {
    for (input, numpy) in factors("eigh") {
        let what = format!("eigh {input}");
        let a = load(&input);
        let (w, v) = linalg::eigh(&a);
        assert_types(&what, &[&w, &v], &numpy);
        // The Hermitian matrix of a's lower triangle (the only part eigh reads).
        let af = a.astype(v.dtype());
        let h = &af.try_tril(0).unwrap() + &ct(&af.try_tril(-1).unwrap());
        let vw = &v * &w.expand_dims(&[-2]);
        assert_close(&format!("{what}: a v = v w"), &h.matmul(&v), &vw);
        let n = v.shape()[v.ndim() - 1];
        assert_close(
            &format!("{what}: vᴴ v"),
            &ct(&v).matmul(&v),
            &eyes(batch_of(&v), n, v.dtype()),
        );
        assert_sorted(&what, &w, false);
        assert_close(&format!("{what}: eigvalsh"), &linalg::eigvalsh(&a), &w);
    }
}

#[test]
fn slogdet_sign_and_log_give_det() {
    for (input, numpy) in factors("slogdet") {
        let what = format!("slogdet {input}");
        let a = load(&input);
        let (sign, logabs) = linalg::slogdet(&a);
        assert_types(&what, &[&sign, &logabs], &numpy);
        assert_close(&what, &(&sign * &logabs.exp()), &linalg::det(&a));
    }
}

/// Reconstruction fails for a wrong factor (the checks can fail).
#[test]
fn reconstruction_checks_reject_wrong_factors() {
    let a = load("linalg/in_tall.npy");
    let (q, r) = linalg::qr(&a, QrMode::Reduced);
    let caught = |f: &dyn Fn()| std::panic::catch_unwind(AssertUnwindSafe(f)).is_err();
    let bad = caught(&|| assert_close("Q @ R", &q.matmul(&(&r * 1.0001)), &a));
    assert!(bad, "a scaled R reconstructed a");
    let (u, sv, vh) = linalg::svd(&a, false);
    let usv = (&u * &sv.flip(None).expand_dims(&[-2])).matmul(&vh);
    assert!(caught(&|| assert_close("U S Vh", &usv, &a)), "S reversed reconstructed a");
    let bad = caught(&|| {
        assert_types(
            "svd",
            &[&u, &sv, &vh],
            &[
                (DType::Float64, vec![5, 5]),
                (DType::Float64, vec![3]),
                (DType::Float64, vec![3, 3]),
            ],
        )
    });
    assert!(bad, "a reduced U passed as a full one");
    assert!(caught(&|| assert_sorted("S", &sv, false)), "S passed as ascending");
}

// ------------------------------------------------------------------------------------------------
// dtypes NumPy refuses or promotes
// ------------------------------------------------------------------------------------------------

#[test]
fn integers_and_bools_compute_in_float64_half_floats_in_float32() {
    let i = Array::from_vec(vec![4i32, 2, 2, 3], &[2, 2]);
    let b = Array::from_vec(vec![true, false, false, true], &[2, 2]);
    let h = Array::from_vec(vec![4.0f64, 2.0, 2.0, 3.0], &[2, 2]).astype(DType::Float16);
    let bf = h.astype(DType::BFloat16);
    for (x, dt) in
        [(&i, DType::Float64), (&b, DType::Float64), (&h, DType::Float32), (&bf, DType::Float32)]
    {
        assert_eq!(linalg::linalg_dtype(x.dtype()), dt);
        assert_eq!(linalg::cholesky(x).dtype(), dt, "{}", x.dtype());
        assert_eq!(linalg::inv(x).dtype(), dt, "{}", x.dtype());
        assert_eq!(linalg::det(x).dtype(), dt, "{}", x.dtype());
        assert_eq!(linalg::svdvals(x).dtype(), dt, "{}", x.dtype());
        assert_eq!(linalg::eigvalsh(x).dtype(), dt, "{}", x.dtype());
    }
    // det [[4, 2], [2, 3]] = 8; of the identity (bools) 1.
    assert!((linalg::det(&i).item::<f64>() - 8.0).abs() < 1e-12);
    assert!((linalg::det(&h).item::<f32>() - 8.0).abs() < 1e-5);
    assert!((linalg::det(&b).item::<f64>() - 1.0).abs() < 1e-15);
    // complex64 stays complex64, its real outputs float32.
    let c = Array::from_vec(vec![4.0f64, 2.0, 2.0, 3.0], &[2, 2]).astype(DType::Complex64);
    assert_eq!(linalg::inv(&c).dtype(), DType::Complex64);
    assert_eq!(linalg::svdvals(&c).dtype(), DType::Float32);
    let (sign, logabs) = linalg::slogdet(&c);
    assert_eq!((sign.dtype(), logabs.dtype()), (DType::Complex64, DType::Float32));
    assert!((logabs.item::<f32>() - 8f32.ln()).abs() < 1e-5);
}

// ------------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------------

/// The `LinAlg` error of materialising `x`: its op, operand shape and message.
fn linalg_error(x: &Array) -> (String, Vec<usize>, String) {
    match x.try_to_host() {
        Err(Error::Ir(IrError::LinAlg { op, shape, message })) => (op, shape.to_vec(), message),
        Err(e) => panic!("another error: {e:?}"),
        Ok(v) => panic!("no error; computed {v:?}"),
    }
}

#[test]
fn an_indefinite_matrix_is_a_linalg_error_when_computed() {
    let a = Array::from_vec(vec![1.0f64, 2.0, 2.0, 1.0], &[2, 2]); // eigenvalues 3, -1
    let l = linalg::try_cholesky(&a).expect("the call succeeds; the value is not known yet");
    let (op, shape, message) = linalg_error(&l);
    assert_eq!(
        (op.as_str(), shape, message.as_str()),
        ("cholesky", vec![2, 2], "Matrix is not positive definite")
    );
    // One bad matrix of a batch (float32); the fallible reads all say so.
    let b = Array::from_vec(vec![2.0f32, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, -1.0], &[2, 2, 2]);
    let l = linalg::cholesky(&b);
    let (op, shape, _) = linalg_error(&l);
    assert_eq!((op.as_str(), shape), ("cholesky", vec![2, 2, 2]));
    assert!(matches!(l.try_to_vec::<f32>(), Err(Error::Ir(IrError::LinAlg { .. }))));
    assert!(matches!(l.try_eval(), Err(Error::Ir(IrError::LinAlg { .. }))));
    assert!(matches!(kiln::try_eval_all(&[&l]), Err(Error::Ir(IrError::LinAlg { .. }))));
    // A consumer of the failed call fails the same way; the panicking read panics.
    assert!(matches!((&l + 1.0f32).try_to_host(), Err(Error::Ir(IrError::LinAlg { .. }))));
    assert!(std::panic::catch_unwind(AssertUnwindSafe(|| l.to_vec::<f32>())).is_err());
    // The positive definite one is fine.
    assert!(linalg::cholesky(&b.slice(&s![..1])).try_to_host().is_ok());
}

#[test]
fn a_singular_matrix_is_a_linalg_error_for_inv_and_solve() {
    let a = Array::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], &[2, 2]);
    let (op, shape, message) = linalg_error(&linalg::inv(&a));
    assert_eq!((op.as_str(), shape, message.as_str()), ("inv", vec![2, 2], "Singular matrix"));
    let b = Array::from_vec(vec![1.0f64, 1.0], &[2]);
    let (op, _, message) = linalg_error(&linalg::try_solve(&a, &b).unwrap());
    assert_eq!((op.as_str(), message.as_str()), ("solve", "Singular matrix"));
    // A zero matrix, complex; a batch with one singular matrix.
    let z = kiln::zeros(&[3, 3], DType::Complex128);
    assert_eq!(linalg_error(&linalg::inv(&z)).2, "Singular matrix");
    let batch = Array::from_vec(vec![1.0f32, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 4.0], &[2, 2, 2]);
    assert_eq!(linalg_error(&linalg::inv(&batch)).0, "inv");
    // det and slogdet of a singular matrix are values, not errors.
    assert_eq!(linalg::det(&a).item::<f64>(), 0.0);
    let (sign, logabs) = linalg::slogdet(&a);
    assert_eq!((sign.item::<f64>(), logabs.item::<f64>()), (0.0, f64::NEG_INFINITY));
}

fn is_invalid_shape<T: std::fmt::Debug>(what: &str, r: kiln::Result<T>) {
    match r {
        Err(Error::Ir(IrError::InvalidShape { .. })) => {}
        other => panic!("{what}: expected InvalidShape at the call, got {other:?}"),
    }
}

#[test]
fn non_square_and_low_rank_operands_are_shape_errors_at_the_call() {
    let rect = Array::from_vec((0..12).map(|i| i as f64).collect(), &[3, 4]);
    let brect = Array::from_vec((0..24).map(|i| i as f64).collect(), &[2, 3, 4]);
    let v = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let s0 = Array::scalar(2.0f64);
    for x in [&rect, &brect] {
        is_invalid_shape("cholesky", linalg::try_cholesky(x));
        is_invalid_shape("inv", linalg::try_inv(x));
        is_invalid_shape("det", linalg::try_det(x));
        is_invalid_shape("slogdet", linalg::try_slogdet(x));
        is_invalid_shape("eigh", linalg::try_eigh(x));
        is_invalid_shape("eigvalsh", linalg::try_eigvalsh(x));
    }
    // NumPy's message for a non-square matrix.
    match linalg::try_inv(&rect) {
        Err(e) => {
            assert!(e.to_string().contains("Last 2 dimensions of the array must be square"), "{e}")
        }
        Ok(_) => unreachable!(),
    }
    for x in [&v, &s0] {
        is_invalid_shape("cholesky", linalg::try_cholesky(x));
        is_invalid_shape("inv", linalg::try_inv(x));
        is_invalid_shape("det", linalg::try_det(x));
        is_invalid_shape("slogdet", linalg::try_slogdet(x));
        is_invalid_shape("eigh", linalg::try_eigh(x));
        is_invalid_shape("eigvalsh", linalg::try_eigvalsh(x));
        is_invalid_shape("qr", linalg::try_qr(x, QrMode::Reduced));
        is_invalid_shape("qr complete", linalg::try_qr(x, QrMode::Complete));
        is_invalid_shape("svd", linalg::try_svd(x, false));
        is_invalid_shape("svd full", linalg::try_svd(x, true));
        is_invalid_shape("svdvals", linalg::try_svdvals(x));
        is_invalid_shape("solve", linalg::try_solve(x, &v));
    }
    match linalg::try_qr(&v, QrMode::Reduced) {
        Err(e) => assert!(e.to_string().contains("1-dimensional array given"), "{e}"),
        Ok(_) => unreachable!(),
    }
    // The panicking forms panic.
    assert!(std::panic::catch_unwind(AssertUnwindSafe(|| linalg::inv(&rect))).is_err());
    assert!(std::panic::catch_unwind(AssertUnwindSafe(|| linalg::svd(&v, false))).is_err());
}

/// NumPy checks `a` first: a non-square `a` is "Last 2 dimensions of the array must be
/// square" whatever `b` is.
#[test]
fn solve_with_a_non_square_a_is_a_shape_error_at_the_call() {
    let rect = Array::from_vec((0..12).map(|i| i as f64).collect(), &[3, 4]);
    let v3 = Array::from_vec(vec![1.0f64; 3], &[3]);
    let v4 = Array::from_vec(vec![1.0f64; 4], &[4]);
    let m32 = Array::from_vec(vec![1.0f64; 6], &[3, 2]);
    is_invalid_shape("solve (3, 4) by (3,)", linalg::try_solve(&rect, &v3));
    is_invalid_shape("solve (3, 4) by (4,)", linalg::try_solve(&rect, &v4));
    is_invalid_shape("solve (3, 4) by (3, 2)", linalg::try_solve(&rect, &m32));
}

#[test]
fn solve_with_a_mismatched_b_errs_at_the_call() {
    let a = kiln::eye(4, None, 0, DType::Float64);
    let ab = kiln::eye(4, None, 0, DType::Float64).broadcast_to(&[3, 4, 4]);
    let mismatch = |what: &str, r: kiln::Result<Array>| match r {
        Err(Error::Ir(IrError::ShapeMismatch { op, shapes })) => {
            assert_eq!(op, "solve", "{what}");
            assert_eq!(shapes.len(), 2, "{what}: both shapes named");
        }
        other => panic!("{what}: expected ShapeMismatch, got {other:?}"),
    };
    mismatch("b (3,)", linalg::try_solve(&a, &kiln::ones(&[3], DType::Float64)));
    mismatch("b (3, 2)", linalg::try_solve(&a, &kiln::ones(&[3, 2], DType::Float64)));
    // NumPy 2: a 2-D b is a matrix, never a stack of vectors: (3, 4) has 3 rows, not 4.
    mismatch("a (3, 4, 4), b (3, 4)", linalg::try_solve(&ab, &kiln::ones(&[3, 4], DType::Float64)));
    // Batch axes that do not broadcast.
    match linalg::try_solve(&ab, &kiln::ones(&[2, 4, 1], DType::Float64)) {
        Err(Error::Ir(IrError::Broadcast { op, .. })) => assert_eq!(op, "solve"),
        other => panic!("batch (3,) with (2,): expected Broadcast, got {other:?}"),
    }
    let five = kiln::ones(&[5], DType::Float64);
    assert!(std::panic::catch_unwind(AssertUnwindSafe(|| linalg::solve(&a, &five))).is_err());
}

// ------------------------------------------------------------------------------------------------
// The graph: library calls, producers and consumers
// ------------------------------------------------------------------------------------------------

/// The library calls of the plan that materialising `outs` runs: per vendor region, its call's
/// outputs.
fn linalg_calls(outs: &[&Array]) -> Vec<Vec<u8>> {
    let lowered = kiln::lower(outs);
    let plan = compile(&lowered.graph, &Options::from_env()).unwrap();
    plan.partition
        .regions
        .iter()
        .filter(|r| r.kind == RegionKind::Vendor)
        .map(|r| match kiln_compiler::vendor::plan(r) {
            Ok(VendorCall::Linalg(call)) => call.outputs,
            other => panic!("not a linear-algebra call: {other:?}\n{}", plan.report()),
        })
        .collect()
}

fn vendor_regions(outs: &[&Array]) -> usize {
    let report = kiln::explain(outs).report;
    report.regions.iter().filter(|r| r.kind == RegionKind::Vendor).count()
}

#[test]
fn svd_u_s_vh_are_one_library_call() {
    let a = load("linalg/in_tall.npy");
    for full in [false, true] {
        let (u, sv, vh) = linalg::svd(&a, full);
        let outs = [&u, &sv, &vh];
        let report = kiln::explain(&outs).report;
        assert_eq!(vendor_regions(&outs), 1, "{report}");
        assert_eq!(report.kernel_count(), 1, "{report}");
        let calls = linalg_calls(&outs);
        assert_eq!(calls.len(), 1);
        let mut got = calls[0].clone();
        got.sort();
        assert_eq!(got, vec![0, 1, 2], "{report}");
        kiln::eval_all(&outs);
        assert_close(
            "U diag(S) Vh",
            &(&u.slice(&s![.., ..3]) * &sv).matmul(&vh.slice(&s![..3])),
            &a,
        );
    }
    // qr's Q and R, eigh's w and v, slogdet's sign and log: one call each.
    let (q, r) = linalg::qr(&a, QrMode::Complete);
    assert_eq!(linalg_calls(&[&q, &r]).len(), 1);
    let sym = load("linalg/in_symb.npy");
    let (w, v) = linalg::eigh(&sym);
    assert_eq!(linalg_calls(&[&w, &v]).len(), 1);
    let (sign, logabs) = linalg::slogdet(&sym);
    assert_eq!(linalg_calls(&[&sign, &logabs]).len(), 1);
    // Two decompositions of one operand, or one of two operands, are two calls.
    let (u, _, _) = linalg::svd(&a, false);
    let (uf, _, _) = linalg::svd(&a, true);
    assert_eq!(linalg_calls(&[&u, &uf]).len(), 2);
    let (_, r2) = linalg::qr(&(&a * 2.0), QrMode::Complete);
    assert_eq!(vendor_regions(&[&r, &r2]), 2);
    // svdvals is svd's S: with U and Vh, still one call.
    let (u, _, vh) = linalg::svd(&a, false);
    let sv = linalg::svdvals(&a);
    assert_eq!(linalg_calls(&[&u, &sv, &vh]).len(), 1);
}

#[test]
fn producers_and_consumers_fuse_around_the_call() {
    let a = load("linalg/in_spd4.npy");
    // The producer a * 2 before the call; the value is cholesky(2a) = sqrt(2) cholesky(a).
    let l2 = linalg::cholesky(&(&a * 2.0));
    let report = kiln::explain(&[&l2]).report;
    let kinds: Vec<RegionKind> = report.regions.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RegionKind::Elementwise, RegionKind::Vendor], "{report}");
    assert_close("cholesky(2a)", &l2, &(&linalg::cholesky(&a) * 2f64.sqrt()));
    // A view producer (a transpose, a batch slice) is read through strides: one region.
    let b = load("linalg/in_spdb.npy");
    let lt = linalg::cholesky(&b.slice(&s![1..]).swapaxes(-1, -2));
    let report = kiln::explain(&[&lt]).report;
    assert_eq!(report.kernel_count(), 1, "{report}");
    // b is symmetric: the transposed view is the same matrices.
    let want = linalg::cholesky(&(&b.slice(&s![1..]) + 0.0));
    assert_close("cholesky of a view", &lt, &want);
    // Elementwise consumers of the results: one kernel after the call.
    let (w, v) = linalg::eigh(&load("linalg/in_sym4.npy"));
    let y = (&v * &w.expand_dims(&[-2])).abs() + 1.0;
    let report = kiln::explain(&[&y]).report;
    assert_eq!(report.kernel_count(), 2, "{report}");
    assert_eq!(report.regions[0].kind, RegionKind::Vendor, "{report}");
    let vw = &v * &w.expand_dims(&[-2]);
    assert_close("consumer", &y, &(&vw.abs() + 1.0));
    // Chained calls: inv(inv(a)) = a; det(inv(a)) = 1 / det(a).
    let g = load("linalg/in_gen4.npy");
    assert_close("inv(inv(a))", &linalg::inv(&linalg::inv(&g)), &g);
    assert_close("det(inv(a))", &linalg::det(&linalg::inv(&g)), &(1.0 / &linalg::det(&g)));
}

// ------------------------------------------------------------------------------------------------
// The derived functions' errors
// ------------------------------------------------------------------------------------------------

#[test]
fn derived_functions_check_shapes_and_orders_at_the_call() {
    let rect = Array::from_vec((0..12).map(|i| i as f64).collect(), &[3, 4]);
    let v = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let cube = kiln::ones(&[2, 3, 4], DType::Float64);
    is_invalid_shape("matrix_power (3, 4)", linalg::try_matrix_power(&rect, 2));
    is_invalid_shape("matrix_power 1-D", linalg::try_matrix_power(&v, 2));
    is_invalid_shape("trace 1-D", linalg::try_trace(&v, 0));
    is_invalid_shape("pinv 1-D", linalg::try_pinv(&v, None));
    is_invalid_shape("cond 1-D", linalg::try_cond(&v, None));
    is_invalid_shape("lstsq a 1-D", linalg::try_lstsq(&v, &v, None));
    is_invalid_shape("lstsq a 3-D", linalg::try_lstsq(&cube, &v, None));
    match linalg::try_lstsq(&rect, &kiln::ones(&[4], DType::Float64), None) {
        Err(Error::Ir(IrError::ShapeMismatch { op, .. })) => assert_eq!(op, "lstsq"),
        other => panic!("lstsq (3, 4) by (4,): expected ShapeMismatch, got {other:?}"),
    }
    // norm: orders that do not fit the number of axes, bad axes.
    let value_error = |what: &str, r: kiln::Result<Array>| match r {
        Err(Error::Value { op, .. }) => assert_eq!(op, "norm", "{what}"),
        other => panic!("{what}: expected a value error, got {other:?}"),
    };
    value_error("fro of a vector", linalg::try_norm(&v, Some(NormOrd::Fro), None, false));
    value_error(
        "nuc over one axis",
        linalg::try_norm(&rect, Some(NormOrd::Nuc), Some(&[0]), false),
    );
    value_error("p=3 of a matrix", linalg::try_norm(&rect, Some(NormOrd::P(3.0)), None, false));
    value_error("three axes", linalg::try_norm(&cube, Some(NormOrd::Fro), Some(&[0, 1, 2]), false));
    value_error("duplicate axes", linalg::try_norm(&rect, None, Some(&[1, -1]), false));
    match linalg::try_norm(&rect, None, Some(&[2]), false) {
        Err(Error::Ir(IrError::AxisOutOfBounds { .. })) => {}
        other => panic!("axis 2 of a matrix: expected AxisOutOfBounds, got {other:?}"),
    }
    // A negative power of a singular matrix fails when computed, as inv does.
    let sing = Array::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], &[2, 2]);
    let p = linalg::try_matrix_power(&sing, -2).expect("the call succeeds");
    assert_eq!(linalg_error(&p).2, "Singular matrix");
    // lstsq's rank is an int64 array (NumPy's is a LAPACK int, np.int32).
    let (_, _, rank, _) =
        linalg::lstsq(&load("linalg/in_tall.npy"), &load("linalg/in_b5.npy"), None);
    assert_eq!((rank.dtype(), rank.shape()), (DType::Int64, &[][..]));
}

/// `np.matmul(x, y, axes=[(0, 2), (0, 2), (2, 0)])` of `arange` inputs, NumPy 2.4's values.
#[test]
fn matmul_with_axes_as_numpy() {
    let x = Array::from_vec((0..24).map(|v| v as f64).collect::<Vec<_>>(), &[3, 2, 4]);
    let y = Array::from_vec((0..40).map(|v| v as f64).collect::<Vec<_>>(), &[4, 2, 5]);
    let r = kiln::matmul_axes(&x, &y, [(0, 2), (0, 2), (2, 0)]);
    assert_eq!(r.shape(), &[5, 2, 3]);
    let want = [
        140.0, 620.0, 1100.0, 490.0, 1130.0, 1770.0, 146.0, 658.0, 1170.0, 512.0, 1184.0, 1856.0,
        152.0, 696.0, 1240.0, 534.0, 1238.0, 1942.0, 158.0, 734.0, 1310.0, 556.0, 1292.0, 2028.0,
        164.0, 772.0, 1380.0, 578.0, 1346.0, 2114.0,
    ];
    assert_eq!(r.to_vec::<f64>(), want);
    // The default axes are matmul's.
    let a = Array::from_vec((0..12).map(|v| v as f64).collect::<Vec<_>>(), &[3, 4]);
    let b = Array::from_vec((0..8).map(|v| v as f64).collect::<Vec<_>>(), &[4, 2]);
    let d = kiln::matmul_axes(&a, &b, [(-2, -1), (-2, -1), (-2, -1)]);
    assert_eq!(d.to_vec::<f64>(), a.matmul(&b).to_vec::<f64>());
    // Errors where the call is written.
    assert!(kiln::try_matmul_axes(&a, &b, [(0, 0), (0, 1), (0, 1)]).is_err());
    assert!(kiln::try_matmul_axes(&a, &b, [(0, 2), (0, 1), (0, 1)]).is_err());
}
