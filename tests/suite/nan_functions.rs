//! NaN-ignoring reductions, `ptp`, `nan_to_num` and `isclose` against NumPy's fixtures
//! (`tests/fixtures/nan/`, from `make_nan_fixtures.py`: NaNs, an all-NaN row, ±inf, integers,
//! complex), on whichever backend runs the suite; `allclose` and `array_equal`; and fusion: the
//! NaN replacement is computed inside the reduction's kernel.

use kiln::{Array, AxisArg, DType};

use crate::numpy_fixtures::fixture_cases;

fixture_cases! { "nan/cases.txt";
    nansum_none => |a| a[0].nansum(None::<i64>);
    nansum_axis1 => |a| a[0].nansum(1);
    nansum_int => |a| a[0].nansum(0);
    nanprod_axis0 => |a| a[0].nanprod(0);
    nanmean_axis1, nanmean_int => |a| a[0].nanmean(1);
    nanmean_keepdims => |a| a[0].nanmean(AxisArg { axes: Some(vec![0]), keepdims: true });
    nanvar_axis1 => |a| a[0].nanvar(1, 0);
    nanstd_ddof1 => |a| a[0].nanstd(0, 1);
    nanmax_axis1, nanmax_inf => |a| a[0].nanmax(1);
    nanmin_axis0 => |a| a[0].nanmin(0);
    nanmin_int => |a| a[0].nanmin(None::<i64>);
    nanargmax_axis1, nanargmax_neg_inf => |a| a[0].nanargmax(1);
    nanargmin_axis0 => |a| a[0].nanargmin(0);
    nanargmax_none => |a| a[0].nanargmax(None::<i64>);
    nanargmin_inf, nanargmin_int => |a| a[0].nanargmin(1);
    ptp_axis1 => |a| a[0].ptp(1);
    ptp_int => |a| a[0].ptp(0);
    nan_to_num_f64, nan_to_num_c64 => |a| a[0].nan_to_num(0.0, None, None);
    nan_to_num_f32_values => |a| a[0].nan_to_num(-1.5, None, None);
    isclose_default, isclose_inf => |a| kiln::isclose(&a[0], &a[1], 1e-5, 1e-8, false);
    isclose_equal_nan => |a| kiln::isclose(&a[0], &a[1], 0.0, 1e-7, true);
    isclose_int_float => |a| kiln::isclose(&a[0], &(a[0].astype(DType::Float64) + 1e-9), 1e-5, 1e-8, false);

    count_nonzero_axis0 => |a| kiln::where_(a[0].greater(0.0f32), &a[0], 0.0f32).count_nonzero(0);
    count_nonzero_int => |a| (&a[0] % 3).count_nonzero(None::<i64>);
    average_full_weights, average_1d_weights => |a| kiln::average(&a[0], Some(1), Some(&a[1]));
    average_none => |a| kiln::average(&a[0], None, None);
    heaviside_half => |a| kiln::heaviside(&a[0], &kiln::full(&[], 0.5, DType::Float64));
    logspace_base2 => |_| kiln::logspace(0.0, 10.0, 11, 2.0);
    geomspace_pos => |_| kiln::geomspace(1.0, 1000.0, 4);
    geomspace_neg => |_| kiln::geomspace(-1000.0, -1.0, 7);
    expit => |a| kiln::nn::expit(&a[0]).unwrap();
    logit => |a| kiln::nn::logit(&a[0]).unwrap();
    log_softmax_rows => |a| kiln::nn::log_softmax(&a[0], 1).unwrap();
}

#[test]
fn average_and_geomspace_errors() {
    let x = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let w = Array::from_vec(vec![1.0f64, 2.0], &[2]);
    let e = kiln::try_average(&x, Some(1), Some(&w)).unwrap_err().to_string();
    assert!(e.contains("average") && e.contains("[2]") && e.contains("[2, 3]"), "{e}");
    assert!(kiln::try_average(&x, None, Some(&w)).is_err());
    assert_eq!(kiln::average(&x, Some(0), Some(&w)).to_vec::<f64>(), vec![3.0, 4.0, 5.0]);
    let e = kiln::try_geomspace(0.0, 1.0, 3).unwrap_err().to_string();
    assert!(e.contains("geomspace") && e.contains("zero"), "{e}");
    assert!(kiln::try_geomspace(-1.0, 1.0, 3).is_err());
}

#[test]
fn allclose_and_array_equal() {
    let x = Array::from_vec(vec![1.0f64, f64::NAN, 3.0], &[3]);
    let y = Array::from_vec(vec![1.0f64 + 1e-9, f64::NAN, 3.0], &[3]);
    assert!(!kiln::allclose(&x, &y, 1e-5, 1e-8, false).unwrap());
    assert!(kiln::allclose(&x, &y, 1e-5, 1e-8, true).unwrap());
    assert!(!kiln::array_equal(&x, &x, false).unwrap());
    assert!(kiln::array_equal(&x, &x, true).unwrap());
    assert!(!kiln::array_equal(&x, &y, true).unwrap());
    let i = Array::from_vec(vec![1i32, 2, 3], &[3]);
    assert!(kiln::array_equal(&i, &i.astype(DType::Float64), false).unwrap());
    assert!(
        !kiln::array_equal(&i, &i.reshape(&[3, 1]), false).unwrap(),
        "shapes differ: not equal, no error"
    );
    let e = kiln::try_isclose(&i, &Array::from_vec(vec![1i32, 2], &[2]), 1e-5, 1e-8, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains('3') && e.contains('2'), "{e}");
}

/// `nansum` is one reduction kernel: the NaN test and the replacement are its prologue.
#[test]
fn nansum_is_one_kernel() {
    let x = Array::from_vec(
        (0..64).map(|i| if i % 7 == 0 { f32::NAN } else { i as f32 }).collect::<Vec<_>>(),
        &[8, 8],
    );
    x.eval();
    let s = x.nansum(1);
    assert_eq!(kiln::explain(&[&s]).report.kernel_count(), 1);
    let want: Vec<f32> = (0..8)
        .map(|r| (0..8).map(|c| r * 8 + c).filter(|i| i % 7 != 0).map(|i| i as f32).sum())
        .collect();
    assert_eq!(s.to_vec::<f32>(), want);
}

/// `nanargmax` of a row-wise reduction fuses the NaN fill and the all-NaN test with the
/// argmax: one kernel; an all-NaN row is -1.
#[test]
fn nanargmax_is_one_kernel() {
    let x = Array::from_vec(
        (0..64).map(|i| if i % 7 == 0 || i >= 56 { f32::NAN } else { (i % 5) as f32 }).collect(),
        &[8, 8],
    );
    x.eval();
    let i = x.nanargmax(1);
    assert_eq!(kiln::explain(&[&i]).report.kernel_count(), 1);
    assert_eq!(i.to_vec::<i64>(), vec![4, 1, 3, 0, 2, 4, 6, -1]); // NumPy's, the last row -1
}

/// `nanvar` where `count - ddof <= 0` is NaN, as NumPy's (not `s / 0 = inf`).
#[test]
fn nanvar_without_enough_values_is_nan() {
    let x = Array::from_vec(vec![1.0f64, f64::NAN, 1.0, 3.0, f64::NAN, f64::NAN], &[3, 2]);
    // Row 0: one value, ddof 1 -> NaN; row 1: two values, var 2; row 2: none -> NaN.
    let v: Vec<f64> = x.nanvar(1, 1).to_vec();
    assert!(v[0].is_nan() && v[2].is_nan(), "{v:?}");
    assert_eq!(v[1], 2.0);
    assert!(x.nanstd(1, 1).to_vec::<f64>()[0].is_nan());
}
