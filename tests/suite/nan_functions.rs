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
    ptp_axis1 => |a| a[0].ptp(1);
    ptp_int => |a| a[0].ptp(0);
    nan_to_num_f64, nan_to_num_c64 => |a| a[0].nan_to_num(0.0, None, None);
    nan_to_num_f32_values => |a| a[0].nan_to_num(-1.5, None, None);
    isclose_default, isclose_inf => |a| kiln::isclose(&a[0], &a[1], 1e-5, 1e-8, false);
    isclose_equal_nan => |a| kiln::isclose(&a[0], &a[1], 0.0, 1e-7, true);
    isclose_int_float => |a| kiln::isclose(&a[0], &(a[0].astype(DType::Float64) + 1e-9), 1e-5, 1e-8, false);
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
    assert!(!kiln::array_equal(&i, &i.reshape(&[3, 1]), false).unwrap(), "shapes differ: not equal, no error");
    let e = kiln::try_isclose(&i, &Array::from_vec(vec![1i32, 2], &[2]), 1e-5, 1e-8, false).unwrap_err().to_string();
    assert!(e.contains('3') && e.contains('2'), "{e}");
}

/// `nansum` is one reduction kernel: the NaN test and the replacement are its prologue.
#[test]
fn nansum_is_one_kernel() {
    let x = Array::from_vec((0..64).map(|i| if i % 7 == 0 { f32::NAN } else { i as f32 }).collect::<Vec<_>>(), &[8, 8]);
    x.eval();
    let s = x.nansum(1);
    assert_eq!(kiln::explain(&[&s]).report.kernel_count(), 1);
    let want: Vec<f32> = (0..8).map(|r| (0..8).map(|c| r * 8 + c).filter(|i| i % 7 != 0).map(|i| i as f32).sum()).collect();
    assert_eq!(s.to_vec::<f32>(), want);
}
