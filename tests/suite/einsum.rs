//! NumPy's tensor products (`einsum`, `outer`, `inner`, `vdot`, `kron`, `tensordot`,
//! `linalg.vecdot`) against NumPy's fixtures (`tests/fixtures/einsum/`, from
//! `tests/fixtures/einsum/gen.py`), on whichever backend runs the suite; their typed errors;
//! the graphs they build (a batched matrix product is one `matmul` node, a sum product one
//! fused kernel).

use kiln::ir::{IrError, OpKind};
use kiln::{Array, DType, Error};

use crate::numpy_fixtures::fixture_cases;

fixture_cases! { "einsum/cases.txt";
    ein_matmul_f64, ein_matmul_f32, ein_complex, ein_int64, ein_mixed_dtypes, ein_letter_broadcast
        => |a| kiln::einsum("ij,jk->ik", &[&a[0], &a[1]]);
    ein_batched_f64, ein_batched_f32 => |a| kiln::einsum("bij,bjk->bik", &[&a[0], &a[1]]);
    ein_transpose => |a| kiln::einsum("ij->ji", &[&a[0]]);
    ein_permute3 => |a| kiln::einsum("ijk->kij", &[&a[0]]);
    ein_implicit_transpose => |a| kiln::einsum("ji", &[&a[0]]);
    ein_trace, ein_int32_trace => |a| kiln::einsum("ii", &[&a[0]]);
    ein_diag => |a| kiln::einsum("ii->i", &[&a[0]]);
    ein_diag3 => |a| kiln::einsum("iii->i", &[&a[0]]);
    ein_diag_partial => |a| kiln::einsum("iij->ji", &[&a[0]]);
    ein_outer => |a| kiln::einsum("i,j->ij", &[&a[0], &a[1]]);
    ein_ellipsis, ein_ellipsis_ranks => |a| kiln::einsum("...ij,...jk->...ik", &[&a[0], &a[1]]);
    ein_ellipsis_implicit => |a| kiln::einsum("...ij,...jk", &[&a[0], &a[1]]);
    ein_ellipsis_sum => |a| kiln::einsum("...i->...", &[&a[0]]);
    ein_three => |a| kiln::einsum("ij,jk,kl->il", &[&a[0], &a[1], &a[2]]);
    ein_bilinear => |a| kiln::einsum("i,ij,j->", &[&a[0], &a[1], &a[2]]);
    ein_sum_all => |a| kiln::einsum("ij->", &[&a[0]]);
    ein_sum_axis => |a| kiln::einsum("ijk->ik", &[&a[0]]);
    ein_implicit => |a| kiln::einsum("ij,jk", &[&a[0], &a[1]]);
    ein_hadamard => |a| kiln::einsum("ij,ij->ij", &[&a[0], &a[1]]);
    ein_rowdot => |a| kiln::einsum("ij,ij->i", &[&a[0], &a[1]]);
    ein_matvec => |a| kiln::einsum("ij,j->i", &[&a[0], &a[1]]);
    ein_scalar => |a| kiln::einsum(",ij->ji", &[&a[0], &a[1]]);
    ein_complex_dot => |a| kiln::einsum("i,i", &[&a[0], &a[1]]);
    ein_int64_sum => |a| kiln::einsum("ij->j", &[&a[0]]);
    outer_f64, outer_f32, outer_int64 => |a| kiln::outer(&a[0], &a[1]);
    inner_vec, inner_mat, inner_scalar, inner_int64, inner_f32 => |a| kiln::inner(&a[0], &a[1]);
    vdot_f64, vdot_c128, vdot_c128_mat => |a| kiln::vdot(&a[0], &a[1]);
    kron_f64, kron_ranks, kron_int64 => |a| kiln::kron(&a[0], &a[1]);
    tensordot_2 => |a| kiln::tensordot(&a[0], &a[1], 2);
    tensordot_pairs => |a| kiln::tensordot(&a[0], &a[1], ([0, 2], [1, 0]));
    tensordot_negative => |a| kiln::tensordot(&a[0], &a[1], (vec![-1i64], vec![-2i64]));
    tensordot_0 => |a| kiln::tensordot(&a[0], &a[1], 0usize);
    tensordot_full => |a| kiln::tensordot(&a[0], &a[1], 3);
    tensordot_f32 => |a| kiln::linalg::tensordot(&a[0], &a[1], kiln::TensordotAxes::Count(1));
    vecdot_c128, vecdot_broadcast => |a| kiln::linalg::vecdot(&a[0], &a[1], -1);
    vecdot_axis0 => |a| kiln::linalg::vecdot(&a[0], &a[1], 0);
}

fn arange(shape: &[usize], dtype: DType) -> Array {
    let n: usize = shape.iter().product();
    kiln::arange(n as i64)
        .reshape(&shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
        .astype(dtype)
}

/// The number of nodes of `op` in the graph that materialising `y` builds.
fn count(y: &Array, op: OpKind) -> usize {
    kiln::lower(&[y]).graph.nodes().iter().filter(|n| n.op == op).count()
}

/// Held (materialised) operands, so the graph starts at `input` nodes.
fn held(shape: &[usize]) -> Array {
    let a = arange(shape, DType::Float32);
    a.eval();
    a
}

#[test]
fn batched_matrix_product_is_one_matmul() {
    let (x, y) = (held(&[4, 3, 5]), held(&[4, 5, 2]));
    let z = kiln::einsum("bij,bjk->bik", &[&x, &y]);
    assert_eq!(z.shape(), &[4, 3, 2]);
    assert_eq!(count(&z, OpKind::MatMul), 1, "{}", kiln::explain(&[&z]).graph);
    assert_eq!(count(&z, OpKind::Mul), 0, "{}", kiln::explain(&[&z]).graph);
    assert_eq!(count(&z, OpKind::Sum), 0, "{}", kiln::explain(&[&z]).graph);
    // The same through tensordot, inner and a transposed output.
    let t = kiln::tensordot(&held(&[3, 4, 5]), &held(&[4, 5, 6]), 2);
    assert_eq!((count(&t, OpKind::MatMul), count(&t, OpKind::Sum)), (1, 0));
    let i = kiln::inner(&held(&[3, 5]), &held(&[2, 5]));
    assert_eq!((count(&i, OpKind::MatMul), count(&i, OpKind::Sum)), (1, 0));
    let k = kiln::einsum("bij,bjk->bki", &[&x, &y]);
    assert_eq!((count(&k, OpKind::MatMul), count(&k, OpKind::Sum)), (1, 0));
    // Three operands: two products.
    let c = kiln::einsum("ij,jk,kl->il", &[&held(&[2, 3]), &held(&[3, 4]), &held(&[4, 5])]);
    assert_eq!((count(&c, OpKind::MatMul), count(&c, OpKind::Sum)), (2, 0));
}

#[test]
fn sum_products_are_one_fused_kernel() {
    let (a, b) = (held(&[6, 7]), held(&[6, 7]));
    // Row dot products, scaled and exponentiated: a multiply and a sum, no matmul, one kernel.
    let y = (kiln::einsum("ij,ij->i", &[&a, &b]) * 1e-3).exp();
    assert_eq!(count(&y, OpKind::MatMul), 0);
    assert_eq!(kiln::explain(&[&y]).report.kernel_count(), 1, "{}", kiln::explain(&[&y]));
    let v = kiln::vdot(&a, &b);
    assert_eq!(count(&v, OpKind::MatMul), 0);
    assert_eq!(kiln::explain(&[&v]).report.kernel_count(), 1);
    // The trace is a strided view of the matrix and a sum: no gather.
    let s = held(&[5, 5]);
    let tr = kiln::einsum("ii", &[&s]);
    assert_eq!(count(&tr, OpKind::Take), 0);
    assert_eq!(tr.item::<f32>(), (0..5).map(|i| (i * 6) as f32).sum::<f32>());
}

#[test]
fn results_keep_the_promoted_dtype() {
    let i32m = arange(&[3, 3], DType::Int32);
    assert_eq!(kiln::einsum("ij->", &[&i32m]).dtype(), DType::Int32);
    assert_eq!(kiln::einsum("ij,jk", &[&i32m, &i32m]).dtype(), DType::Int32);
    let u8v = arange(&[200], DType::UInt8);
    // 0^2 + 1^2 + ... wraps modulo 256 as NumPy's uint8 einsum.
    let want = (0u64..200).map(|i| (i % 256) * (i % 256)).sum::<u64>() % 256;
    assert_eq!(kiln::einsum("i,i", &[&u8v, &u8v]).item::<u8>() as u64, want);
    let b = Array::from_vec(vec![true, false, true], &[3]);
    let nb = Array::from_vec(vec![false, true, false], &[3]);
    assert!(kiln::vdot(&b, &b).item::<bool>());
    assert!(!kiln::vdot(&b, &nb).item::<bool>());
    let f16 = arange(&[2, 2], DType::Float16);
    assert_eq!(kiln::tensordot(&f16, &i32m.slice(&kiln::s![..2, ..2]), 1).dtype(), DType::Float64);
}

#[test]
fn zero_extents() {
    let a = kiln::zeros(&[3, 0], DType::Float64);
    let b = kiln::zeros(&[0, 4], DType::Float64);
    let c = kiln::einsum("ij,jk->ik", &[&a, &b]);
    assert_eq!(c.shape(), &[3, 4]);
    assert_eq!(c.to_vec::<f64>(), vec![0.0; 12]);
    let e = kiln::zeros(&[0, 0], DType::Float64);
    assert_eq!(kiln::einsum("ii->i", &[&e]).shape(), &[0]);
    assert_eq!(kiln::einsum("ii", &[&e]).item::<f64>(), 0.0);
}

/// The error of `r`, which must be `Err` of an IrError matching `pat`, its message containing
/// every string of `parts`.
fn expect_err(r: kiln::Result<Array>, check: fn(&IrError) -> bool, parts: &[&str]) {
    let e = match r {
        Ok(a) => panic!("expected an error, got an array of shape {:?}", a.shape()),
        Err(e) => e,
    };
    let msg = e.to_string();
    match &e {
        Error::Ir(ir) => assert!(check(ir), "wrong variant: {ir:?}"),
        other => panic!("not an IrError: {other:?}"),
    }
    for p in parts {
        assert!(msg.contains(p), "{msg:?} lacks {p:?}");
    }
}

#[test]
fn einsum_subscript_errors() {
    let a = arange(&[2, 3], DType::Float64);
    let b = arange(&[3, 4], DType::Float64);
    let c = arange(&[4, 5], DType::Float64);
    let attrs = |e: &IrError| matches!(e, IrError::InvalidAttrs { op, .. } if op == "einsum");
    let shape = |e: &IrError| matches!(e, IrError::InvalidShape { op, .. } if op == "einsum");
    let s = "(2, 3) (3, 4)";
    expect_err(kiln::try_einsum("ij,j%", &[&a, &b]), attrs, &["invalid subscript '%'", s]);
    expect_err(kiln::try_einsum("ij,j1", &[&a, &b]), attrs, &["invalid subscript '1'"]);
    expect_err(kiln::try_einsum("ij,jk->ik", &[&a]), attrs, &["fewer operands", "(2, 3)"]);
    expect_err(kiln::try_einsum("ij->i", &[&a, &b]), attrs, &["more operands", s]);
    expect_err(kiln::try_einsum("ij,jk->il", &[&a, &b]), attrs, &["'l' which never appeared", s]);
    expect_err(kiln::try_einsum("ij,jk->ii", &[&a, &b]), attrs, &["'i' multiple times", s]);
    expect_err(kiln::try_einsum("ijk,jk", &[&a, &b]), attrs, &["too many subscripts", s]);
    expect_err(kiln::try_einsum("i,jk", &[&a, &b]), attrs, &["no '...'", s]);
    expect_err(kiln::try_einsum("...i...,jk", &[&a, &b]), attrs, &["more than one ellipsis"]);
    expect_err(kiln::try_einsum("i..j,jk", &[&a, &b]), attrs, &["'.'"]);
    expect_err(kiln::try_einsum("ij,jk->ik->i", &[&a, &b]), attrs, &["'->'"]);
    expect_err(kiln::try_einsum("...j,jk->k", &[&a, &b]), attrs, &["no '...' ellipsis"]);
    expect_err(kiln::try_einsum("", &[]), attrs, &["at least one operand"]);
    // Extents: j is 3 in a and 4 in c.
    expect_err(
        kiln::try_einsum("ij,jk->ik", &[&a, &c]),
        shape,
        &["label 'j'", "operand 1 (4)", "(3)", "(2, 3) (4, 5)", "\"ij,jk->ik\""],
    );
    expect_err(kiln::try_einsum("ii->i", &[&a]), shape, &["collapsing index 'i'", "(2, 3)"]);
    // A panicking form panics with the message.
    let p = std::panic::catch_unwind(|| kiln::einsum("ij,jk->ik", &[&a, &c]));
    assert!(p.is_err());
}

#[test]
fn product_errors() {
    let a = arange(&[2, 3], DType::Float64);
    let b = arange(&[4, 5], DType::Float64);
    let x = arange(&[2, 3, 4], DType::Float64);
    let inner_shape = |e: &IrError| matches!(e, IrError::MatMulShape { op, .. } if op == "inner");
    let vecdot_shape = |e: &IrError| matches!(e, IrError::MatMulShape { op, .. } if op == "vecdot");
    expect_err(kiln::try_inner(&a, &b), inner_shape, &["(2, 3)", "(4, 5)"]);
    expect_err(
        kiln::try_vdot(&a, &b),
        |e| matches!(e, IrError::InvalidShape { op, .. } if op == "vdot"),
        &["6 and 20", "(2, 3)", "(4, 5)"],
    );
    let td_shape = |e: &IrError| matches!(e, IrError::InvalidShape { op, .. } if op == "tensordot");
    let td_attrs = |e: &IrError| matches!(e, IrError::InvalidAttrs { op, .. } if op == "tensordot");
    expect_err(kiln::try_tensordot(&a, &b, 1), td_shape, &["shape-mismatch for sum", "(2, 3)"]);
    expect_err(kiln::try_tensordot(&a, &x, 3), td_attrs, &["axes=3", "(2, 3, 4)"]);
    expect_err(kiln::try_tensordot(&a, &x, -1), td_attrs, &["axes=-1"]);
    expect_err(
        kiln::try_tensordot(&a, &x, (vec![0, 1], vec![0])),
        td_attrs,
        &["different lengths"],
    );
    expect_err(
        kiln::try_tensordot(&a, &x, ([2], [0])),
        |e| matches!(e, IrError::AxisOutOfBounds { op, axis: 2, rank: 2 } if op == "tensordot"),
        &["axis 2"],
    );
    expect_err(
        kiln::try_tensordot(&x, &x, ([0, -3], [0, 1])),
        |e| matches!(e, IrError::RepeatedAxis { op, .. } if op == "tensordot"),
        &["repeated axis"],
    );
    expect_err(kiln::try_vecdot(&a, &b, -1), vecdot_shape, &["(2, 3)", "(4, 5)"]);
    expect_err(
        kiln::try_vecdot(&x, &arange(&[3, 4], DType::Float64).slice(&kiln::s![..2]), -1),
        |e| matches!(e, IrError::Broadcast { op, .. } if op == "vecdot"),
        &["(2, 3, 4)", "(2, 4)"],
    );
    expect_err(
        kiln::try_vecdot(&Array::scalar(1.0), &a, -1),
        |e| matches!(e, IrError::InvalidShape { op, .. } if op == "vecdot"),
        &["operand 0"],
    );
}

#[test]
fn tensordot_axes_forms_agree() {
    let x = arange(&[2, 3, 4], DType::Float64);
    let y = arange(&[3, 4, 5], DType::Float64);
    let want = kiln::tensordot(&x, &y, 2).to_vec::<f64>();
    let forms: Vec<kiln::TensordotAxes> = vec![
        2i64.into(),
        2usize.into(),
        ([1, 2], [0, 1]).into(),
        ([-2i64, -1], [0i64, 1]).into(),
        (vec![1usize, 2], vec![0usize, 1]).into(),
        (&[1i32, 2][..], &[0i32, 1][..]).into(),
    ];
    for f in forms {
        assert_eq!(kiln::tensordot(&x, &y, f.clone()).to_vec::<f64>(), want, "{f:?}");
    }
    // Against an einsum of the same contraction.
    assert_eq!(kiln::einsum("ijk,jkl->il", &[&x, &y]).to_vec::<f64>(), want);
    // Swapped pairs sum the other way round.
    let yt = y.permute(&[1, 0, 2]);
    assert_eq!(kiln::tensordot(&x, &yt, ([2, 1], [0, 1])).to_vec::<f64>(), want);
}
