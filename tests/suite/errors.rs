//! Error cases: each gives its typed error, from the op call itself ("lazy does not mean late"),
//! with a message naming the op and the operands' shapes or dtypes; the panicking forms and
//! operator overloads panic with the same message; arrays made before an error still work.

use std::panic::{catch_unwind, AssertUnwindSafe};

use kiln::ir::IrError;
use kiln::{s, Array, DType, Error, SliceArg};

fn f32s(shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    Array::from_vec((0..n).map(|i| i as f32).collect(), shape)
}

fn i8s(shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    Array::from_vec((0..n).map(|i| i as i8).collect(), shape)
}

/// The message `f` panics with.
fn panic_message<R>(f: impl FnOnce() -> R) -> String {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .expect("a string panic payload"),
    }
}

/// Asserts `msg` contains every one of `parts`.
#[track_caller]
fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} does not mention {p:?}");
    }
}

fn shape(s: &[usize]) -> kiln::ir::Shape {
    s.into()
}

// ------------------------------------------------------------------------------------------------
// Broadcasting, scalars, dtypes
// ------------------------------------------------------------------------------------------------

#[test]
fn broadcast_mismatch() {
    let a = f32s(&[2, 3]);
    let b = f32s(&[4]);
    let e = a.try_add(&b).unwrap_err();
    match &e {
        Error::Ir(IrError::Broadcast { op, shapes }) => {
            assert_eq!(op, "add");
            assert_eq!(shapes, &vec![shape(&[2, 3]), shape(&[4])]);
        }
        other => panic!("expected Broadcast, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["add", "(2, 3)", "(4,)", "broadcast"]);
    // The operators and the panicking method panic with the same message.
    assert_eq!(panic_message(|| &a + &b), e.to_string());
    assert_eq!(panic_message(|| a.add(&b)), e.to_string());
    // Reversed operands name the shapes in their order.
    let e2 = b.try_multiply(&a).unwrap_err();
    assert_mentions(&e2.to_string(), &["multiply", "(4,) (2, 3)"]);
    assert_eq!(panic_message(|| &b * &a), e2.to_string());
}

#[test]
fn broadcast_mismatch_in_where_and_broadcast_to() {
    let c = Array::from_vec(vec![true, false, true], &[3]);
    let e = kiln::try_where_(&c, f32s(&[2, 4]), 0.0).unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::Broadcast { op, .. }) if op == "where"), "{e:?}");
    assert_mentions(&e.to_string(), &["where", "(3,)", "(2, 4)"]);

    let e = f32s(&[2, 3]).try_broadcast_to(&[3, 3]).unwrap_err();
    assert!(
        matches!(&e, Error::Ir(IrError::Broadcast { op, .. }) if op == "broadcast_to"),
        "{e:?}"
    );
    assert_mentions(&e.to_string(), &["broadcast_to", "(2, 3)", "(3, 3)"]);
    assert_eq!(panic_message(|| f32s(&[2, 3]).broadcast_to(&[3, 3])), e.to_string());
}

#[test]
fn int_scalar_out_of_bounds_for_int8() {
    let a = i8s(&[4]);
    let e = a.try_add(300).unwrap_err();
    match &e {
        Error::Ir(IrError::ScalarOutOfBounds { op, value, dtype }) => {
            assert_eq!((op.as_str(), value.as_str(), *dtype), ("add", "300", DType::Int8));
        }
        other => panic!("expected ScalarOutOfBounds, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["add", "300", "int8"]);
    assert_eq!(panic_message(|| &a + 300), e.to_string());
    assert_eq!(panic_message(|| 300 + &a), e.to_string());
    // -129 as well; 127 and -128 are fine; a float scalar promotes instead.
    assert!(matches!(a.try_subtract(-129), Err(Error::Ir(IrError::ScalarOutOfBounds { .. }))));
    assert_eq!(a.try_add(127).unwrap().dtype(), DType::Int8);
    assert_eq!(a.try_add(-128).unwrap().dtype(), DType::Int8);
    assert_eq!(a.try_add(300.0).unwrap().dtype(), DType::Float64);
    // uint8 and a negative Python int (NumPy 2: OverflowError).
    let u = Array::from_vec(vec![1u8, 2], &[2]);
    let e = u.try_add(-1).unwrap_err();
    assert!(
        matches!(&e, Error::Ir(IrError::ScalarOutOfBounds { dtype: DType::UInt8, .. })),
        "{e:?}"
    );
    assert_mentions(&e.to_string(), &["add", "-1", "uint8"]);
}

#[test]
fn full_with_out_of_bounds_int_scalar_is_an_error() {
    // NumPy 2: np.full(3, 300, np.int8) raises "OverflowError: Python integer 300 out of bounds
    // for int8"; it does not wrap to 44. kiln's `full` has no `try_` form, so it should panic.
    let msg = panic_message(|| kiln::full(&[3], 300, DType::Int8));
    assert_mentions(&msg, &["300", "int8"]);
}

#[test]
fn bitwise_and_on_floats() {
    let a = f32s(&[2]);
    let e = a.try_bitwise_and(&a).unwrap_err();
    match &e {
        Error::Ir(IrError::UnsupportedDType { op, dtypes, .. }) => {
            assert_eq!(op, "bitwise_and");
            assert_eq!(dtypes, &vec![DType::Float32, DType::Float32]);
        }
        other => panic!("expected UnsupportedDType, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["bitwise_and", "float32"]);
    assert_eq!(panic_message(|| &a & &a), e.to_string());
    // A weak int with a float array promotes to float: still no loop.
    assert!(matches!(a.try_bitwise_or(1), Err(Error::Ir(IrError::UnsupportedDType { .. }))));
    let e = a.try_invert().unwrap_err();
    assert!(
        matches!(&e, Error::Ir(IrError::UnsupportedDType { op, .. }) if op == "invert"),
        "{e:?}"
    );
    assert_eq!(panic_message(|| !&a), e.to_string());
    let d = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    let e = d.try_left_shift(&d).unwrap_err();
    assert_mentions(&e.to_string(), &["left_shift", "float64"]);
    assert_eq!(panic_message(|| &d << &d), e.to_string());
}

#[test]
fn floor_divide_and_comparisons_of_complex() {
    // NumPy: floor_divide and remainder have no complex loops.
    let z = Array::from_vec(vec![num_complex::Complex32::new(1.0, 2.0)], &[1]);
    let e = z.try_floor_divide(&z).unwrap_err();
    assert!(
        matches!(&e, Error::Ir(IrError::UnsupportedDType { op, .. }) if op == "floor_divide"),
        "{e:?}"
    );
    assert_mentions(&e.to_string(), &["floor_divide", "complex64"]);
    assert!(matches!(z.try_remainder(&z), Err(Error::Ir(IrError::UnsupportedDType { .. }))));
}

#[test]
fn sin_of_bool_is_float16_as_numpy() {
    // np.sin(np.array([True, False])) -> array([0.8413, 0.], dtype=float16): not an error.
    let b = Array::from_vec(vec![true, false], &[2]);
    let y = b.try_sin().expect("sin of bool computes in float16");
    assert_eq!(y.dtype(), DType::Float16);
    assert_eq!(y.shape(), &[2]);
    let v: Vec<half::f16> = y.to_vec();
    assert_eq!(v, vec![half::f16::from_f64(1f64.sin()), half::f16::ZERO]);
}

#[test]
fn bool_subtract_and_negative_are_errors_as_numpy() {
    // NumPy: "numpy boolean subtract, the `-` operator, is not supported" (TypeError), and the
    // same for negative; np.sign has no bool loop. kiln should refuse them (UnsupportedDType),
    // not compute them in float16.
    let b = Array::from_vec(vec![true, false], &[2]);
    let r = b.try_subtract(&b);
    assert!(
        matches!(&r, Err(Error::Ir(IrError::UnsupportedDType { op, .. })) if op == "subtract"),
        "bool - bool gave {r:?}"
    );
    let r = b.try_negative();
    assert!(
        matches!(&r, Err(Error::Ir(IrError::UnsupportedDType { op, .. })) if op == "negative"),
        "-bool gave {r:?}"
    );
    let r = b.try_sign();
    assert!(
        matches!(&r, Err(Error::Ir(IrError::UnsupportedDType { op, .. })) if op == "sign"),
        "sign(bool) gave {r:?}"
    );
}

// ------------------------------------------------------------------------------------------------
// Axes and reductions
// ------------------------------------------------------------------------------------------------

#[test]
fn axis_out_of_bounds() {
    let x = f32s(&[2, 3]);
    let e = x.try_sum(2).unwrap_err();
    match &e {
        Error::Ir(IrError::AxisOutOfBounds { op, axis, rank }) => {
            assert_eq!((op.as_str(), *axis, *rank), ("sum", 2, 2));
        }
        other => panic!("expected AxisOutOfBounds, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["sum", "axis 2", "dimension 2"]);
    assert_eq!(panic_message(|| x.sum(2)), e.to_string());
    for r in [
        x.try_sum(-3),
        x.try_max([0, 5]),
        x.try_mean(3),
        x.try_var(-3, 0),
        x.try_argmax(2),
        x.try_all(9),
    ] {
        assert!(matches!(r, Err(Error::Ir(IrError::AxisOutOfBounds { .. }))), "{r:?}");
    }
    let e = x.try_mean(3).unwrap_err();
    assert_mentions(&e.to_string(), &["mean", "3"]);
    let e = x.try_argmax(-3).unwrap_err();
    assert_mentions(&e.to_string(), &["argmax", "-3"]);
    assert!(matches!(x.try_expand_dims(&[3]), Err(Error::Ir(IrError::AxisOutOfBounds { .. }))));
    assert!(matches!(x.try_squeeze(Some(&[2])), Err(Error::Ir(IrError::AxisOutOfBounds { .. }))));
    assert!(matches!(x.try_flip(Some(&[-3])), Err(Error::Ir(IrError::AxisOutOfBounds { .. }))));
    assert!(matches!(
        kiln::try_concatenate(&[&x, &x], 2),
        Err(Error::Ir(IrError::AxisOutOfBounds { .. }))
    ));
    assert!(matches!(
        kiln::try_stack(&[&x, &x], 3),
        Err(Error::Ir(IrError::AxisOutOfBounds { .. }))
    ));
    assert!(kiln::try_stack(&[&x, &x], 2).is_ok());
}

#[test]
fn repeated_axis() {
    let x = f32s(&[2, 3]);
    let e = x.try_sum([0, -2]).unwrap_err();
    match &e {
        Error::Ir(IrError::RepeatedAxis { op, axis }) => {
            assert_eq!((op.as_str(), *axis), ("sum", -2))
        }
        other => panic!("expected RepeatedAxis, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["sum", "repeated axis"]);
    assert_eq!(panic_message(|| x.sum([0, -2])), e.to_string());
    assert!(matches!(x.try_max([1, 1]), Err(Error::Ir(IrError::RepeatedAxis { .. }))));
    assert!(matches!(x.try_expand_dims(&[0, 0]), Err(Error::Ir(IrError::RepeatedAxis { .. }))));
}

#[test]
fn max_of_empty_axis() {
    let x = kiln::zeros(&[3, 0], DType::Float32);
    let e = x.try_max(1).unwrap_err();
    match &e {
        Error::Ir(IrError::EmptyReduction { op, shape: s, axes }) => {
            assert_eq!(op, "max");
            assert_eq!(s, &shape(&[3, 0]));
            assert_eq!(axes, &vec![1]);
        }
        other => panic!("expected EmptyReduction, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["max", "(3, 0)", "zero-size"]);
    assert_eq!(panic_message(|| x.max(1)), e.to_string());
    assert!(matches!(x.try_min(None), Err(Error::Ir(IrError::EmptyReduction { .. }))));
    // Reducing the non-empty axis is fine (NumPy gives shape (0,)); sum of empty is fine.
    assert_eq!(x.try_max(0).unwrap().shape(), &[0]);
    assert_eq!(x.try_sum(1).unwrap().shape(), &[3]);
}

#[test]
fn argmax_of_empty() {
    let x = Array::from_vec(Vec::<f32>::new(), &[0]);
    let e = x.try_argmax(None).unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::EmptyReduction { op, .. }) if op == "argmax"), "{e:?}");
    assert_mentions(&e.to_string(), &["argmax", "(0,)"]);
    assert_eq!(panic_message(|| x.argmax(None)), e.to_string());
    let e = kiln::zeros(&[2, 0], DType::Int32).try_argmin(1).unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::EmptyReduction { op, .. }) if op == "argmin"), "{e:?}");
    assert_mentions(&e.to_string(), &["argmin", "(2, 0)"]);
}

#[test]
fn argmax_over_several_axes() {
    let x = f32s(&[2, 3]);
    let e = x.try_argmax([0, 1]).unwrap_err();
    assert!(matches!(&e, Error::Value { op, .. } if op == "argmax"), "{e:?}");
}

// ------------------------------------------------------------------------------------------------
// Views
// ------------------------------------------------------------------------------------------------

#[test]
fn reshape_to_the_wrong_size() {
    let x = f32s(&[2, 3]);
    let e = x.try_reshape(&[4, 2]).unwrap_err();
    match &e {
        Error::Ir(IrError::Reshape { op, size, to }) => {
            assert_eq!((op.as_str(), *size), ("reshape", 6));
            assert_eq!(to, &shape(&[4, 2]));
        }
        other => panic!("expected Reshape, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["reshape", "size 6", "(4, 2)"]);
    assert_eq!(panic_message(|| x.reshape(&[4, 2])), e.to_string());
    // An inferred extent that does not divide.
    assert!(matches!(x.try_reshape(&[-1, 4]), Err(Error::Ir(IrError::Reshape { size: 6, .. }))));
    // Two unknown extents.
    assert!(matches!(x.try_reshape(&[-1, -1]), Err(Error::Value { .. })));
}

#[test]
fn squeeze_of_a_non_1_axis() {
    let x = f32s(&[2, 1, 3]);
    let e = x.try_squeeze(Some(&[0])).unwrap_err();
    match &e {
        Error::Ir(IrError::InvalidShape { op, shape: s, .. }) => {
            assert_eq!(op, "squeeze");
            assert_eq!(s, &shape(&[2, 1, 3]));
        }
        other => panic!("expected InvalidShape, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["squeeze", "(2, 1, 3)", "axis 0"]);
    assert_eq!(panic_message(|| x.squeeze(Some(&[0]))), e.to_string());
    assert_eq!(x.try_squeeze(Some(&[1])).unwrap().shape(), &[2, 3]);
}

#[test]
fn slicing_errors() {
    let x = f32s(&[2, 3]);
    // Too many indices.
    let e = x.try_slice(&s![0, 0, 0]).unwrap_err();
    assert!(matches!(&e, Error::Value { op, .. } if op == "slice"), "{e:?}");
    assert_mentions(&e.to_string(), &["slice", "too many indices", "2-dimensional", "3"]);
    assert_eq!(panic_message(|| x.slice(&s![0, 0, 0])), e.to_string());
    // New axes do not count as indices.
    assert_eq!(x.try_slice(&s![SliceArg::NewAxis, 0, 0]).unwrap().shape(), &[1]);
    // Index out of bounds, positive and negative.
    let e = x.try_slice(&s![.., 3]).unwrap_err();
    assert!(matches!(&e, Error::Value { .. }), "{e:?}");
    assert_mentions(&e.to_string(), &["slice", "index 3", "axis 1", "size 3"]);
    let e = x.try_slice(&s![-3]).unwrap_err();
    assert_mentions(&e.to_string(), &["index -3", "axis 0", "size 2"]);
    // Out-of-range slice bounds clip, as in NumPy.
    assert_eq!(x.try_slice(&s![5..10]).unwrap().shape(), &[0, 3]);
    // Zero step.
    let e = x.try_slice(&s![..;0]).unwrap_err();
    assert!(matches!(&e, Error::Value { .. }), "{e:?}");
    assert_mentions(&e.to_string(), &["slice", "step", "zero"]);
    // Two ellipses.
    assert!(x.try_slice(&[SliceArg::Ellipsis, SliceArg::Ellipsis]).is_err());
}

#[test]
fn transpose_errors() {
    let x = f32s(&[2, 3]);
    let e = x.try_permute(&[0]).unwrap_err();
    assert_mentions(&e.to_string(), &["[0]", "dimension 2"]);
    let e = x.try_permute(&[0, 0]).unwrap_err();
    assert_mentions(&e.to_string(), &["[0, 0]"]);
    assert!(matches!(x.try_permute(&[0, 2]), Err(Error::Ir(IrError::AxisOutOfBounds { .. }))));
}

#[test]
fn concatenate_with_mismatched_shapes() {
    let a = f32s(&[2, 3]);
    let b = f32s(&[3, 2]);
    let e = kiln::try_concatenate(&[&a, &b], 0).unwrap_err();
    match &e {
        Error::Ir(IrError::ShapeMismatch { op, shapes }) => {
            assert_eq!(op, "concatenate");
            assert_eq!(shapes, &vec![shape(&[2, 3]), shape(&[3, 2])]);
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["concatenate", "(2, 3)", "(3, 2)"]);
    assert_eq!(panic_message(|| kiln::concatenate(&[&a, &b], 0)), e.to_string());
    // Along axis 1 the (2, 3) and (2, 5) extents may differ; ranks may not.
    assert_eq!(kiln::try_concatenate(&[&a, &f32s(&[2, 5])], 1).unwrap().shape(), &[2, 8]);
    assert!(matches!(
        kiln::try_concatenate(&[&a, &f32s(&[6])], 0),
        Err(Error::Ir(IrError::ShapeMismatch { .. }))
    ));
    // Stack needs equal shapes; an empty list and rank-0 arrays are errors.
    let e = kiln::try_stack(&[&a, &f32s(&[2, 5])], 0).unwrap_err();
    assert_mentions(&e.to_string(), &["stack", "(2, 3)", "(2, 5)"]);
    assert!(matches!(kiln::try_concatenate(&[], 0), Err(Error::Value { .. })));
    let z = Array::scalar(1.0);
    assert!(matches!(kiln::try_concatenate(&[&z, &z], 0), Err(Error::Value { .. })));
}

// ------------------------------------------------------------------------------------------------
// Reading results, creation, files
// ------------------------------------------------------------------------------------------------

#[test]
fn to_vec_with_the_wrong_element_type() {
    let x = f32s(&[2, 3]);
    let e = x.try_to_vec::<f64>().unwrap_err();
    match &e {
        Error::ElementType { op, dtype, wanted } => {
            assert_eq!((op.as_str(), *dtype, *wanted), ("to_vec", DType::Float32, DType::Float64));
        }
        other => panic!("expected ElementType, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["to_vec", "float32", "float64"]);
    assert_eq!(panic_message(|| x.to_vec::<f64>()), e.to_string());
    assert!(matches!(x.try_to_ndarray::<i32>(), Err(Error::ElementType { .. })));
    assert!(matches!(x.sum(None).try_item::<f64>(), Err(Error::ElementType { .. })));
    // The check needs no evaluation: a lazy array errs the same way.
    let lazy = x.sin();
    assert!(matches!(
        lazy.try_to_vec::<i8>(),
        Err(Error::ElementType { dtype: DType::Float32, wanted: DType::Int8, .. })
    ));
    assert!(!lazy.is_materialized());
}

#[test]
fn item_of_a_non_size_1_array() {
    let x = f32s(&[2, 3]);
    let e = x.try_item::<f32>().unwrap_err();
    assert!(matches!(&e, Error::Value { op, .. } if op == "item"), "{e:?}");
    assert_mentions(&e.to_string(), &["item", "size 1", "6"]);
    assert_eq!(panic_message(|| x.item::<f32>()), e.to_string());
    assert!(f32s(&[0]).try_item::<f32>().is_err());
    assert_eq!(f32s(&[1, 1]).item::<f32>(), 0.0);
}

#[test]
fn creation_errors() {
    let e = Array::try_from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
    assert_mentions(&e.to_string(), &["5", "(2, 3)"]);
    let e = kiln::try_arange_step(0, 10, 0).unwrap_err();
    assert!(matches!(&e, Error::Value { op, .. } if op == "arange"), "{e:?}");
    assert_eq!(panic_message(|| kiln::arange_step(0.0, 1.0, 0.0)), e.to_string());
}

#[test]
fn load_npy_of_a_missing_file() {
    let path = std::env::temp_dir().join(format!("kiln-no-such-file-{}.npy", std::process::id()));
    let e = kiln::load_npy(&path).unwrap_err();
    match &e {
        Error::Io { op, path: p, .. } => {
            assert_eq!(op, "load_npy");
            assert_eq!(p, &path.display().to_string());
        }
        other => panic!("expected Io, got {other:?}"),
    }
    assert_mentions(&e.to_string(), &["load_npy", "kiln-no-such-file"]);
    // A file that is not .npy.
    let manifest = crate::repo_root().join("tests/fixtures/cases.txt");
    assert!(matches!(kiln::load_npy(&manifest), Err(Error::Io { .. })));
}

#[test]
fn save_npy_errors() {
    let dir = std::env::temp_dir().join(format!("kiln-no-such-dir-{}", std::process::id()));
    let x = f32s(&[2]);
    let e = x.save_npy(dir.join("x.npy")).unwrap_err();
    assert!(matches!(&e, Error::Io { op, .. } if op == "save_npy"), "{e:?}");
    let b = Array::from_vec(vec![half::bf16::ONE], &[1]);
    let path = std::env::temp_dir().join(format!("kiln-bf16-{}.npy", std::process::id()));
    let e = b.save_npy(&path).unwrap_err();
    let _ = std::fs::remove_file(&path);
    assert!(matches!(&e, Error::Io { .. }), "{e:?}");
    assert_mentions(&e.to_string(), &["bfloat16"]);
}

// ------------------------------------------------------------------------------------------------
// Lazy does not mean late; errors leave earlier arrays intact
// ------------------------------------------------------------------------------------------------

#[test]
fn errors_come_from_the_op_call_not_from_materialisation() {
    // A chain of lazy ops; the bad op errs at once, and nothing was computed to find out.
    let x = f32s(&[2, 3]);
    let y = x.sin() * 2.0 + 1.0;
    let z = y.sum(1);
    assert!(!y.is_materialized() && !z.is_materialized());
    let errs: Vec<Error> = vec![
        z.try_add(f32s(&[3])).unwrap_err(),
        y.try_reshape(&[5]).unwrap_err(),
        y.try_max(7).unwrap_err(),
        z.try_bitwise_xor(&z).unwrap_err(),
        y.try_slice(&s![0, 0, 0]).unwrap_err(),
        kiln::try_concatenate(&[&y, &z], 0).unwrap_err(),
    ];
    assert_eq!(errs.len(), 6);
    assert!(!y.is_materialized() && !z.is_materialized(), "finding an error must not evaluate");
    // The error names the shapes of the lazy operands.
    assert_mentions(&errs[0].to_string(), &["(2,)", "(3,)"]);
    assert_mentions(&errs[1].to_string(), &["size 6", "(5,)"]);
}

#[test]
fn arrays_made_before_an_error_still_evaluate() {
    let x = f32s(&[2, 3]);
    let y = &x * 2.0 + 1.0;
    let w = y.sum(0);
    let _ = y.try_add(f32s(&[4])).unwrap_err();
    let _ = panic_message(|| &y + &f32s(&[5]));
    let _ = y.try_reshape(&[7]).unwrap_err();
    let _ = w.try_argmax([0, 0]).unwrap_err();
    assert_eq!(y.to_vec::<f32>(), vec![1.0, 3.0, 5.0, 7.0, 9.0, 11.0]);
    assert_eq!(w.to_vec::<f32>(), vec![8.0, 12.0, 16.0]);
    // And new work built on them after the errors is fine too.
    assert_eq!((&w - 8.0).to_vec::<f32>(), vec![0.0, 4.0, 8.0]);
}
