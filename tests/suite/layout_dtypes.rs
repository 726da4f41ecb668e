//! Issue 23 §2, reductions and layout, against NumPy 2.4 (`tests/fixtures/layout_dtypes/`, from
//! `layout_dtypes/gen.py`):
//!
//! - memory order: `copy` in orders C, F, A, K, `asfortranarray`, `ascontiguousarray`, their
//!   `strides()` (bytes) and `flags()` (`c_contiguous`, `f_contiguous`, `owndata`), and an
//!   F-ordered copy's buffer read through DLPack: F-ordered in memory, before and after `eval`;
//! - `view(dtype)`: the same item size, smaller and larger (NumPy's last-axis rule), bool,
//!   complex, float16, 0-d, special float values; fused into its consumers;
//! - `dtype=` on the reductions and scans; `matmul_axes`;
//! - typed errors for bad orders, dtypes and axes.

use kiln::ir::infer::infer;
use kiln::ir::{Attrs, IrError, OpKind};
use kiln::{Array, DType, Error, Order};

use crate::numpy_fixtures::{fixture_cases, fixture_dir};

const ALL: Option<i64> = None;

/// Strides as the int64 array NumPy's fixture holds.
fn strides(a: &Array) -> Array {
    Array::from_vec1(a.strides().into_iter().map(|s| s as i64).collect())
}

/// `[c_contiguous, f_contiguous, owndata]`, as the fixture.
fn flags(a: &Array) -> Array {
    let f = a.flags();
    Array::from_vec1(vec![f.c_contiguous, f.f_contiguous, f.owndata])
}

fn f(a: &Array) -> Array {
    a.asfortranarray()
}

fixture_cases! { "layout_dtypes/cases.txt";
    strides_c_f64 => |a| strides(&a[0].copy(Order::C));
    strides_f_f64 => |a| strides(&a[0].copy(Order::F));
    strides_a_of_f => |a| strides(&f(&a[0]).copy(Order::A));
    strides_k_of_f => |a| strides(&f(&a[0]).copy("K"));
    strides_c_of_f => |a| strides(&f(&a[0]).copy("C"));
    strides_a_of_c => |a| strides(&a[0].copy(Order::A));
    strides_asfortranarray => |a| strides(&f(&a[0]));
    strides_f_transposed => |a| strides(&f(&a[0]).t());
    strides_f_permuted => |a| strides(&f(&a[0]).permute(&[1, 0, 2]));
    strides_k_of_permuted_f => |a| strides(&f(&a[0]).permute(&[1, 0, 2]).copy(Order::K));
    strides_ascontiguous_of_f => |a| strides(&f(&a[0]).ascontiguousarray());
    strides_col_asfortranarray => |a| strides(&f(&a[0]));
    strides_col_copy_f => |a| strides(&a[0].copy(Order::F));
    strides_col_copy_f_t => |a| strides(&a[0].t().copy(Order::F));
    strides_empty_f => |a| strides(&a[0].copy(Order::F));
    strides_empty_c => |a| strides(&a[0]);
    strides_1d_f => |a| strides(&f(&a[0]));
    flags_c => |a| flags(&a[0].copy(Order::C));
    flags_f => |a| flags(&a[0].copy(Order::F));
    flags_asfortranarray => |a| flags(&f(&a[0]));
    flags_f_transposed => |a| flags(&f(&a[0]).t());
    flags_f_permuted => |a| flags(&f(&a[0]).permute(&[1, 0, 2]));
    flags_1d_f => |a| flags(&a[0].copy(Order::F));
    flags_col_copy_f => |a| flags(&a[0].copy(Order::F));
    flags_empty_f => |a| flags(&a[0].copy(Order::F));

    copy_f_values => |a| a[0].copy(Order::F);
    copy_k_permuted_values => |a| f(&a[0]).permute(&[2, 0, 1]).copy(Order::K);
    copy_f_then_math => |a| {
        let x = f(&a[0]);
        &(&x * 2.0) + &x.t().sum(0).t().expand_dims(&[-1])
    };
    copy_f_matmul => |a| {
        let x = f(&a[0]);
        kiln::matmul(&x, &x.permute(&[0, 2, 1]))
    };

    view_f32_u8, view_f16_u8, view_i8_u8, view_c64_u8, view_bool_u8 => |a| a[0].view(DType::UInt8);
    view_f32_i32, view_0d_f32_i32 => |a| a[0].view(DType::Int32);
    view_f32_u16, view_f16_u16 => |a| a[0].view(DType::UInt16);
    view_f32_f64, view_u8_f64 => |a| a[0].view(DType::Float64);
    view_i16_i32 => |a| a[0].view(DType::Int32);
    view_i16_u64 => |a| a[0].view(DType::UInt64);
    view_i16_f16, view_i8_f16 => |a| a[0].view(DType::Float16);
    view_u8_i16, view_bool_i16 => |a| a[0].view(DType::Int16);
    view_u64_i8 => |a| a[0].view(DType::Int8);
    view_u64_f32, view_c64_f32 => |a| a[0].view(DType::Float32);
    view_c64_i64, view_f_same_size => |a| a[0].view(DType::Int64);
    view_c128_c64, view_f32_c64 => |a| a[0].view(DType::Complex64);
    view_f32_c128 => |a| a[0].view(DType::Complex128);
    view_u8_bool => |a| a[0].view(DType::Bool);
    view_0d_f32_u32 => |a| a[0].view(DType::UInt32);
    view_then_math => |a| a[0].view(DType::Int32).right_shift(23).bitwise_and(0xFF);

    red_sum_i8_i64 => |a| a[0].sum_dtype(1, DType::Int64);
    red_sum_i8_i8 => |a| a[0].sum_dtype(1, DType::Int8);
    red_mean_f16_f32 => |a| a[0].mean_dtype(0, DType::Float32);
    red_mean_f16_f32_all => |a| a[0].mean_dtype(ALL, DType::Float32);
    red_sum_f32_f64 => |a| a[0].sum_dtype(ALL, DType::Float64);
    red_prod_f32_f64 => |a| a[0].prod_dtype(0, DType::Float64);
    red_cumsum_i8_i64 => |a| a[0].cumsum_dtype(Some(1), DType::Int64);
    red_cumprod_f32_f64 => |a| a[0].cumprod_dtype(Some(0), DType::Float64);
    red_nansum_f32_f64 => |a| a[0].nansum_dtype(1, DType::Float64);
    red_nanmean_f32_f64 => |a| a[0].nanmean_dtype(0, DType::Float64);
    red_var_i8_f32 => |a| a[0].var_dtype(1, 0, DType::Float32);
    red_sum_f_order => |a| f(&a[0]).sum_dtype(vec![0, 2], DType::Float32);

    matmul_axes_a => |a| kiln::matmul_axes(&a[0], &a[1], [(0, 2), (0, 2), (2, 0)]);
    matmul_axes_neg => |a| kiln::matmul_axes(&a[0], &a[1], [(-3, -1), (-3, -1), (-2, -1)]);
    matmul_axes_bcast => |a| kiln::matmul_axes(&a[0], &a[1], [(2, 1), (1, 0), (0, 1)]);
    matmul_axes_f_order => |a| kiln::matmul_axes(&f(&a[0]), &f(&a[1]), [(0, 2), (0, 2), (1, 2)]);
    matmul_axes_1d_1d => |a| kiln::matmul_axes(&a[0], &a[1], ((0,), (0,), ()));
    matmul_axes_1d_1d_neg => |a| kiln::matmul_axes(&a[0], &a[1], ((-1,), -1, ()));
    matmul_axes_1d_1d_i32 => |a| kiln::matmul_axes(&a[0], &a[1], (0, 0, ()));
    matmul_axes_2d_1d => |a| kiln::matmul_axes(&a[0], &a[1], ((0, 2), (0,), (0,)));
    matmul_axes_2d_1d_last => |a| kiln::matmul_axes(&a[0], &a[1], ((0, 2), (0,), (-1,)));
    matmul_axes_1d_2d => |a| kiln::matmul_axes(&a[0], &a[1], ((0,), (0, 2), (1,)));
    matmul_axes_1d_2d_first => |a| kiln::matmul_axes(&a[0], &a[1], (0, (0, 2), 0));
    matmul_axes_1d_2d_f32, matmul_axes_1d_2d_promote => |a| {
        kiln::matmul_axes(&a[0], &a[1], ((0,), (0, a[1].ndim() as i64 - 1), (0,)))
    };
    matmul_axes_2d_1d_f_order => |a| kiln::matmul_axes(&f(&a[0]), &a[1], ((0, 2), (-1,), (1,)));
}

fn input(name: &str) -> Array {
    kiln::load_npy(fixture_dir().join(format!("layout_dtypes/in_{name}.npy"))).unwrap()
}

/// The float64 `(2, 3, 4)` input's elements in Fortran order (the first axis fastest).
fn fortran_elements(a: &Array) -> Vec<f64> {
    let v = a.to_vec::<f64>();
    let mut out = Vec::with_capacity(v.len());
    for k in 0..4 {
        for j in 0..3 {
            for i in 0..2 {
                out.push(v[i * 12 + j * 4 + k]);
            }
        }
    }
    out
}

/// The 24 float64 values a host DLPack tensor's data pointer points at, in memory order.
fn buffer_of(t: &kiln::DLPackTensor) -> Vec<f64> {
    let p = t.data_ptr() as *const f64;
    // SAFETY: the tensor keeps its host buffer of 24 float64 values alive while `t` lives; the
    // pointer is its first element (byte offset 0, strides positive).
    unsafe { std::slice::from_raw_parts(p, 24).to_vec() }
}

/// An F-ordered copy is F-ordered in memory: its buffer (shared by a DLPack export, strides in
/// elements) holds the elements first axis fastest, before and after `eval`; reading it back
/// gives C order; `eval` keeps it a view of its buffer, strides unchanged.
#[test]
fn an_f_copy_is_f_ordered_in_memory() {
    let a = input("f64_3d");
    let x = a.copy(Order::F);
    assert_eq!(x.strides(), vec![8, 16, 48]);
    let t = x.to_dlpack_host().unwrap();
    assert_eq!(t.strides().unwrap(), &[1, 2, 6]);
    assert_eq!(t.shape(), &[2, 3, 4]);
    assert_eq!(buffer_of(&t), fortran_elements(&a), "the buffer is in Fortran order");
    assert_eq!(x.to_vec::<f64>(), a.to_vec::<f64>(), "read back in C order");
    x.eval();
    assert!(!x.is_materialized(), "a view of its buffer: the buffer is what is held");
    assert_eq!(x.strides(), vec![8, 16, 48], "eval keeps the layout");
    assert!(x.flags().f_contiguous && !x.flags().c_contiguous);
    // Its bits as int64: the same layout (NumPy's view keeps the strides).
    let bits = x.view(DType::Int64);
    assert_eq!(bits.strides(), vec![8, 16, 48]);
    assert_eq!(
        bits.to_vec::<i64>(),
        a.to_vec::<f64>().iter().map(|v| v.to_bits() as i64).collect::<Vec<_>>()
    );
    // The C-ordered copy's buffer is C-ordered.
    let c = a.copy(Order::C);
    let tc = c.to_dlpack_host().unwrap();
    assert_eq!(buffer_of(&tc), a.to_vec::<f64>());
    // Its transpose is C-contiguous, a view of the same buffer (NumPy's `f.T`).
    let xt = x.t();
    assert_eq!(xt.strides(), vec![48, 16, 8]);
    assert!(xt.flags().c_contiguous && !xt.flags().owndata);
    assert_eq!(xt.to_dlpack_host().unwrap().data_ptr(), t.data_ptr(), "one buffer");
}

/// `owndata`: false for a transpose of a copy another handle holds (NumPy's view of it).
#[test]
fn owndata_of_a_transposed_copy() {
    let a = input("f64_3d");
    let y = a.t().ascontiguousarray();
    let v = y.t();
    assert!(v.flags().f_contiguous && !v.flags().c_contiguous, "an F-ordered view of y");
    assert!(!v.flags().owndata, "y is held by another handle");
    assert!(a.copy(Order::F).flags().owndata);
    // Values through every order agree.
    for o in ["C", "F", "A", "K", "c", "f"] {
        assert_eq!(a.copy(o).to_vec::<f64>(), a.to_vec::<f64>(), "order {o}");
    }
}

/// Views of bits fuse: a view of a held array and the arithmetic on it are one kernel.
#[test]
fn views_fuse_into_one_kernel() {
    let x = input("f32_special");
    for (what, y) in [
        ("same size", &x.view(DType::Int32) + 1),
        ("smaller", &x.view(DType::UInt8) + 1u8),
        ("larger", &x.view(DType::Float64) * 2.0),
    ] {
        let e = kiln::explain(&[&y]);
        assert_eq!(e.report.kernel_count(), 1, "{what}:\n{}", e.report);
    }
}

/// The views' kernels on both backends: the host's result is the reference evaluator's bit for
/// bit (bfloat16 too, which NumPy has not), and the GPU kernel compiles to PTX (made on the
/// host, so checked without a GPU).
#[test]
fn views_match_the_evaluator_and_compile_for_the_gpu() {
    let x = input("f32_special");
    let cases = [
        ("float32 as uint8", x.view(DType::UInt8)),
        ("float32 as int32", x.view(DType::Int32)),
        ("float32 as float64", x.view(DType::Float64)),
        ("bfloat16 as int16", x.astype(DType::BFloat16).view(DType::Int16)),
        ("bfloat16 as uint8", x.astype(DType::BFloat16).view(DType::UInt8)),
        ("int16 as bfloat16", input("i16").view(DType::BFloat16)),
        ("float16 as bfloat16", input("f16").view(DType::BFloat16)),
        ("uint8 as float16", input("u8").view(DType::Float16)),
        ("complex64 as int64", input("c64").view(DType::Int64)),
        ("float32 as complex64", input("f32_pairs").view(DType::Complex64)),
        ("bool as int16", input("bool").view(DType::Int16)),
    ];
    let ptx = kiln::CodeStage::Ptx(kiln_compiler::toolchain::ptx::PtxTarget::default());
    for (what, y) in &cases {
        let lowered = kiln::lower(&[y]);
        let inputs: Vec<&kiln::HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
        let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
        // Before the value is held (then there is no kernel to compile).
        let code = kiln::kernel_code(&[y], ptx).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(code.contains(".entry") && !code.contains("runs on the host"), "{what}: {code}");
        let got = y.try_to_host().unwrap();
        let bits = |h: &kiln::HostArray| format!("{:?}", h.data());
        assert_eq!(bits(&got), bits(&want[0]), "{what}");
    }
}

fn value_message(r: kiln::Result<Array>, op: &str, text: &str) {
    match r {
        Err(Error::Value { op: o, message }) => {
            assert_eq!(o, op);
            assert!(message.contains(text), "{message}");
        }
        Err(e) => panic!("{op}: expected a value error containing {text:?}, got {e:?}"),
        Ok(a) => panic!("{op}: expected an error, got {}", a.describe()),
    }
}

#[test]
fn bad_orders_are_typed_errors() {
    let a = input("f64_3d");
    value_message(a.try_copy("X"), "copy", "order must be one of 'C', 'F', 'A', or 'K' (got 'X')");
    value_message(a.try_copy(""), "copy", "(got '')");
    match "Q".parse::<Order>() {
        Err(Error::Value { op, .. }) => assert_eq!(op, "order"),
        other => panic!("{other:?}"),
    }
    assert_eq!("F".parse::<Order>().unwrap(), Order::F);
    assert_eq!(Order::parse("copy", "k").unwrap(), Order::K);
}

#[test]
fn bad_views_are_typed_errors() {
    let x = input("f32_special");
    value_message(
        input("f32_0d").try_view(DType::UInt8),
        "view",
        "Changing the dtype of a 0d array is only supported if the itemsize is unchanged",
    );
    // (2, 6) float32: a last axis of 24 bytes, which 16 does not divide.
    value_message(x.try_view(DType::Complex128), "view", "must be a divisor of the total size");
    value_message(
        input("i16")
            .try_view(DType::Float16)
            .unwrap()
            .slice(&kiln::s![.., 0..3])
            .try_view(DType::Int64),
        "view",
        "must be a divisor",
    );
    // An F-ordered copy's last axis is not contiguous.
    value_message(
        input("f64_3d").copy(Order::F).try_view(DType::Float32),
        "view",
        "the last axis must be contiguous",
    );
    // The same item size is accepted whatever the layout.
    assert!(input("f64_3d").copy(Order::F).try_view(DType::UInt64).is_ok());
    // The IR's bitcast takes reals of one item size.
    let e =
        infer(OpKind::Bitcast, &Attrs::DType { dtype: DType::Int32 }, &[(DType::Float64, &[2])]);
    assert!(matches!(e, Err(IrError::UnsupportedDType { ref op, .. }) if op == "bitcast"), "{e:?}");
    let e =
        infer(OpKind::Bitcast, &Attrs::DType { dtype: DType::Int64 }, &[(DType::Complex64, &[2])]);
    assert!(matches!(e, Err(IrError::UnsupportedDType { .. })), "{e:?}");
    assert_eq!(
        infer(OpKind::Bitcast, &Attrs::DType { dtype: DType::UInt16 }, &[(DType::BFloat16, &[2])])
            .unwrap()
            .0,
        DType::UInt16
    );
}

#[test]
fn bad_axes_and_dtypes_are_typed_errors() {
    let a = input("mm_a");
    let b = input("mm_b");
    let e = kiln::try_matmul_axes(&a, &b, [(0, 0), (0, 2), (0, 1)]).unwrap_err();
    assert!(
        matches!(e, Error::Ir(IrError::RepeatedAxis { ref op, .. }) if op == "matmul"),
        "{e:?}"
    );
    let e = kiln::try_matmul_axes(&a, &b, [(0, 3), (0, 2), (0, 1)]).unwrap_err();
    assert!(
        matches!(e, Error::Ir(IrError::AxisOutOfBounds { ref op, .. }) if op == "matmul"),
        "{e:?}"
    );
    // a's matrix (3, 2) against b's (4, 5): the inner extents differ.
    let e = kiln::try_matmul_axes(&a, &b, [(0, 1), (0, 2), (0, 1)]).unwrap_err();
    assert!(matches!(e, Error::Ir(_)), "{e:?}");
    let v = input("i32_1d");
    assert!(kiln::try_matmul_axes(&v, &b, [(0, 1), (0, 2), (0, 1)]).is_err());
    matmul_axes_1d_errors();
    // dtype=: an axis out of range names the reduction; bool's var with dtype=bool is refused.
    let x = input("i8");
    let e = x.try_sum_dtype(2, DType::Int64).unwrap_err();
    assert!(
        matches!(e, Error::Ir(IrError::AxisOutOfBounds { ref op, .. }) if op == "sum"),
        "{e:?}"
    );
    let e = input("bool").try_var_dtype(ALL, 0, DType::Bool).unwrap_err();
    assert!(
        matches!(e, Error::Ir(IrError::UnsupportedDType { ref op, .. }) if op == "var"),
        "{e:?}"
    );
    // `None` is the plain form.
    assert_eq!(x.sum_dtype(1, None).dtype(), x.sum(1).dtype());
}

/// `matmul_axes` with 1-D operands: NumPy 2.4.6's errors, checked there (`np.matmul(v, w,
/// axes=[(0, 1), (0,), ()])` ... ).
fn matmul_axes_1d_errors() {
    use kiln::CoreAxes;
    let v = input("mm_v4");
    let a = input("mm_a");
    let core = |e: Error, text: &str| {
        assert!(
            matches!(e, Error::Ir(IrError::InvalidAttrs { ref op, ref message })
                if op == "matmul" && message == text),
            "{e:?}"
        );
    };
    // operand 0 has 1 core dimensions, but 2 dimensions are specified by axes tuple
    let e = kiln::try_matmul_axes(&v, &v, ((0, 1), 0, ())).unwrap_err();
    core(e, "operand 0 has 1 core dimensions, but 2 dimensions are specified by axes tuple");
    // a 2-D operand given one axis
    let e = kiln::try_matmul_axes(&a, &v, (0, 0, 0)).unwrap_err();
    core(e, "operand 0 has 2 core dimensions, but 1 dimensions are specified by axes tuple");
    // the result of two 1-D operands has no core axis; of a 2-D and a 1-D, one
    let e = kiln::try_matmul_axes(&v, &v, (0, 0, 0)).unwrap_err();
    core(e, "operand 2 has 0 core dimensions, but 1 dimensions are specified by axes tuple");
    let e = kiln::try_matmul_axes(&a, &v, ((0, 2), 0, ())).unwrap_err();
    core(e, "operand 2 has 1 core dimensions, but 0 dimensions are specified by axes tuple");
    let e = kiln::try_matmul_axes(&a, &v, ((0, 2), 0, (0, 1))).unwrap_err();
    core(e, "operand 2 has 1 core dimensions, but 2 dimensions are specified by axes tuple");
    // axis 1 is out of bounds for array of dimension 1
    let e = kiln::try_matmul_axes(&v, &v, [CoreAxes::One(1), CoreAxes::One(0), CoreAxes::None])
        .unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::AxisOutOfBounds { axis: 1, rank: 1, .. })), "{e:?}");
    // the output's one axis out of range: a (3, 2, 4) @ (4,) has rank 2
    let e = kiln::try_matmul_axes(&a, &v, ((0, 2), 0, 2)).unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::AxisOutOfBounds { axis: 2, rank: 2, .. })), "{e:?}");
    // inner extents that differ (k = 4 against 5), and a rank-0 operand
    let e = kiln::try_matmul_axes(&v, &input("mm_v5_i32"), (0, 0, ())).unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::MatMulShape { k1: 4, k2: 5, .. })), "{e:?}");
    let s = Array::from_vec1(vec![2.0f64]).reshape(&[]);
    let e = kiln::try_matmul_axes(&s, &v, ((), 0, ())).unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::InvalidShape { .. })), "{e:?}");
    // shapes and dtypes: (3, 2, 4) @ (4,) over (0, 2) is (3, 2) at axis 0, or (2, 3) at axis 1
    assert_eq!(kiln::matmul_axes(&a, &v, ((0, 2), 0, 0)).shape(), &[3, 2]);
    assert_eq!(kiln::matmul_axes(&a, &v, ((0, 2), 0, 1)).shape(), &[2, 3]);
    let i = kiln::matmul_axes(&input("mm_v5_i32"), &input("i32_1d"), (0, 0, ()));
    assert_eq!((i.shape(), i.dtype()), (&[][..], DType::Int32));
}
