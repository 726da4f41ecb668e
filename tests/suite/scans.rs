//! Scans (`cumsum`, `cumprod`, `cummax`, `cummin`, `nancumsum`, `nancumprod`) and `diff` against
//! NumPy's fixtures (`tests/fixtures/scan/`, from `make_scan_fixtures.py`: every dtype class,
//! NaN, ±0 and ±inf, an empty axis, 0-d, axis None and negative), on whichever backend runs the
//! suite; their typed errors; and fusion: a scan is one kernel with its input's producers.

use kiln::{Array, DType};

use crate::numpy_fixtures::fixture_cases;

fixture_cases! { "scan/cases.txt";
    cumsum_f32_none, cumsum_f64_special, cumsum_f16, cumsum_i32_wraps, cumsum_0d, cumsum_long => |a| a[0].cumsum(None);
    cumsum_f32_axis0, cumsum_u8_to_u64 => |a| a[0].cumsum(Some(0));
    cumsum_f32_axis1, cumsum_i8_to_i64, cumsum_bool, cumsum_c64, cumsum_empty_axis => |a| a[0].cumsum(Some(1));
    cumsum_f32_axis_neg => |a| a[0].cumsum(Some(-1));
    cumsum_of_square => |a| (&a[0] * &a[0]).cumsum(Some(2));

    cumprod_f64_special => |a| a[0].cumprod(None);
    cumprod_f32_axis2 => |a| a[0].cumprod(Some(2));
    cumprod_i64, cumprod_u8_to_u64 => |a| a[0].cumprod(Some(1));
    cumprod_c64 => |a| a[0].cumprod(Some(0));

    cummax_f32_rows, cummax_bool => |a| a[0].cummax(Some(1));
    cummin_f32_rows, cummin_u8 => |a| a[0].cummin(Some(1));
    cummax_i8_axis0 => |a| a[0].cummax(Some(0));
    cummax_none => |a| a[0].cummax(None);

    nancumsum_special => |a| a[0].nancumsum(None);
    nancumsum_rows, nancumsum_int => |a| a[0].nancumsum(Some(1));
    nancumprod_special => |a| a[0].nancumprod(None);

    diff_f32_axis_last => |a| a[0].diff(1, -1);
    diff_f32_n2_axis0 => |a| a[0].diff(2, 0);
    diff_bool, diff_u8_wraps => |a| a[0].diff(1, 1);
    diff_n0 => |a| a[0].diff(0, -1);
    diff_past_length => |a| a[0].diff(9, 1);
}

fn err(r: kiln::Result<Array>) -> String {
    match r {
        Ok(a) => panic!("expected an error, got {a:?}"),
        Err(e) => e.to_string(),
    }
}

/// Typed errors naming the op, raised where the op is written; the operand stays valid.
#[test]
fn scan_errors_name_the_op() {
    let x = kiln::arange(6).reshape(&[2, 3]);
    let e = err(x.try_cumsum(Some(2)));
    assert!(e.contains("cumsum") && e.contains('2'), "{e}");
    let e = err(x.try_cummax(Some(-3)));
    assert!(e.contains("cummax"), "{e}");
    let e = err(kiln::full(&[], 1.0, DType::Float32).try_cumprod(Some(0)));
    assert!(e.contains("cumprod"), "{e}");
    let e = err(kiln::full(&[], 1.0, DType::Float32).try_diff(1, 0));
    assert!(e.contains("diff") && e.contains("at least one dimensional"), "{e}");
    let e = err(x.try_diff(1, 5));
    assert!(e.contains("diff"), "{e}");
    // The operand is still valid after the errors.
    assert_eq!(x.cumsum(Some(1)).to_vec::<i64>(), vec![0, 1, 3, 3, 7, 12]);
}

/// `cumsum(x * x)`: one scan kernel computing the square in its loop, and the report says
/// which kind of region it is; the consumer of the scan is a kernel of its own.
#[test]
fn a_scan_is_one_kernel_with_its_producers() {
    let x = Array::from_vec((0..64).map(|i| i as f32 * 0.25).collect::<Vec<_>>(), &[4, 16]);
    let y = (&x * &x).cumsum(Some(1));
    let ex = kiln::explain(&[&y]);
    assert_eq!(ex.regions.matches("region ").count(), 1, "{}", ex.regions);
    assert!(ex.regions.contains("scan shape=[4,16] axis=1"), "{}", ex.regions);
    insta::assert_snapshot!("cumsum_of_square_regions", ex.regions);
    let z = &y + 1.0f32;
    let ex = kiln::explain(&[&z]);
    assert_eq!(ex.regions.matches("region ").count(), 2, "{}", ex.regions);
    let want: Vec<f32> = (0..4)
        .flat_map(|r| {
            let mut acc = 0.0f32;
            (0..16).map(move |c| {
                let v = (r * 16 + c) as f32 * 0.25;
                acc += v * v;
                acc + 1.0
            })
        })
        .collect();
    assert_eq!(z.to_vec::<f32>(), want);
}

/// The host kernel of `cumsum(x * x)`: a loop over rows, the first element stored, then a loop
/// along the axis carrying the running sum.
#[test]
fn scan_host_kernel_snapshot() {
    let x = Array::from_vec((0..64).map(|i| i as f32).collect::<Vec<_>>(), &[4, 16]);
    let y = (&x * &x).cumsum(Some(1));
    let mlir = kiln::kernel_code(&[&y], kiln::CodeStage::HostMlir).unwrap();
    assert!(!mlir.contains("unsupported"), "{mlir}");
    insta::assert_snapshot!("cumsum_of_square_host_mlir", mlir);
}
