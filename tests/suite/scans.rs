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

/// Rows longer than a tile: on the GPU a scan along the last axis runs by tiles of up to 8192
/// elements, each tile's prefix combined from other tiles' published totals (the totals of the
/// tiles before it in its chunk of 480 after the prefix the chunk before published; a Fenwick
/// tree with `KILN_GPU_SCAN_LOOKBACK=fenwick`); on the host a loop per row. Integers, maxima and minima are
/// exact; float sums are within rounding of a running f64 sum and the same bits every run.
#[test]
fn scans_longer_than_a_tile() {
    let n = (1 << 20) + 3;
    let x: Vec<i32> = (0..n).map(|i| ((i as i64 * 7919) % 201) as i32 - 100).collect();
    let a = Array::from_vec(x.clone(), &[n]);
    let mut acc = 0i64;
    let want: Vec<i64> = x
        .iter()
        .map(|&v| {
            acc += v as i64;
            acc
        })
        .collect();
    assert_eq!(a.cumsum(None).to_vec::<i64>(), want);
    let mut hi = i32::MIN;
    let want: Vec<i32> = x
        .iter()
        .map(|&v| {
            hi = hi.max(v);
            hi
        })
        .collect();
    // A maximum that grows late in the row: every tile's prefix matters.
    let ramp = Array::from_vec(
        (0..n).map(|i| ((i as i64 * 37) % 1001) as i32 + (i / 4096) as i32).collect::<Vec<_>>(),
        &[n],
    );
    let mut hi2 = i32::MIN;
    let want_ramp: Vec<i32> = ramp
        .to_vec::<i32>()
        .iter()
        .map(|&v| {
            hi2 = hi2.max(v);
            hi2
        })
        .collect();
    assert_eq!(a.cummax(None).to_vec::<i32>(), want);
    assert_eq!(ramp.cummax(Some(0)).to_vec::<i32>(), want_ramp);

    // Eighths of small integers: every partial sum is exact in float32 in any association, so
    // the tiles' result is the running sum's bits.
    let f: Vec<f32> =
        (0..n).map(|i| ((((i * 2654435761usize) >> 7) % 17) as f32 - 8.0) / 8.0).collect();
    let mut s = 0.0f32;
    let want: Vec<f32> = f
        .iter()
        .map(|&v| {
            s += v;
            s
        })
        .collect();
    assert_eq!(Array::from_vec(f, &[n]).cumsum(None).to_vec::<f32>(), want);
    // Inexact sums: the same bits on every run.
    let g: Vec<f32> =
        (0..n).map(|i| (((i * 2654435761usize) >> 7) % 1000) as f32 / 997.0 - 0.5).collect();
    let make = || Array::from_vec(g.clone(), &[n]).cumsum(None).to_vec::<f32>();
    let (g1, g2) = (make(), make());
    assert!(
        g1.iter().zip(&g2).all(|(a, b)| a.to_bits() == b.to_bits()),
        "two runs of one float cumsum differ"
    );
}

/// Several rows of several tiles each, two scans of one row space in one region, and a product.
#[test]
fn scans_of_rows_of_several_tiles() {
    let (rows, n) = (3, 5000);
    let x: Vec<i64> = (0..rows * n).map(|i| ((i * 131) % 17) as i64 - 8).collect();
    let a = Array::from_vec(x.clone(), &[rows, n]);
    let (s, m) = (a.cumsum(Some(1)), a.cummin(Some(-1)));
    kiln::eval_all(&[&s, &m]);
    let (mut ws, mut wm) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let (mut acc, mut lo) = (0i64, i64::MAX);
        for &v in &x[r * n..(r + 1) * n] {
            acc += v;
            lo = lo.min(v);
            ws.push(acc);
            wm.push(lo);
        }
    }
    assert_eq!(s.to_vec::<i64>(), ws);
    assert_eq!(m.to_vec::<i64>(), wm);
    // Products of ±1 (exact in any order), over 3 rows of 3000 float64.
    let p: Vec<f64> = (0..3 * 3000).map(|i| if (i * 7) % 13 < 6 { -1.0 } else { 1.0 }).collect();
    let got = Array::from_vec(p.clone(), &[3, 3000]).cumprod(Some(1)).to_vec::<f64>();
    let want: Vec<f64> = p
        .chunks(3000)
        .flat_map(|r| {
            let mut acc = 1.0;
            r.iter()
                .map(move |&v| {
                    acc *= v;
                    acc
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(got, want);
}

/// Scans along an axis other than the last: on the GPU by column tiles (chunks of 16 along the
/// axis times up to 256 positions after it, each position's prefix combined from other tiles'
/// published values); on the host a loop per line. Lines of 3000 (188 chunks) over 2 × 300
/// positions, integers exact, and eighths summed exactly in float32 in any order.
#[test]
fn scans_down_columns_in_chunks() {
    let shape = [2usize, 3000, 3, 100];
    let total: usize = shape.iter().product();
    let x: Vec<i32> = (0..total).map(|i| ((i * 7919) % 23) as i32 - 11).collect();
    let a = Array::from_vec(x.clone(), &shape);
    let (s, m) = (a.cumsum(Some(1)), a.cummax(Some(1)));
    kiln::eval_all(&[&s, &m]);
    let inner = 300;
    let mut ws = vec![0i64; total];
    let mut wm = vec![0i32; total];
    for o in 0..2 {
        for p in 0..inner {
            let (mut acc, mut hi) = (0i64, i32::MIN);
            for k in 0..3000 {
                let i = (o * 3000 + k) * inner + p;
                acc += x[i] as i64;
                hi = hi.max(x[i]);
                ws[i] = acc;
                wm[i] = hi;
            }
        }
    }
    assert_eq!(s.to_vec::<i64>(), ws);
    assert_eq!(m.to_vec::<i32>(), wm);
    // Down the columns of a 4096 x 40 float32 matrix (fewer columns than a block's threads).
    let f: Vec<f32> =
        (0..4096 * 40).map(|i| (((i * 2654435761usize) >> 9) % 9) as f32 / 8.0 - 0.5).collect();
    let got = Array::from_vec(f.clone(), &[4096, 40]).cumsum(Some(0)).to_vec::<f32>();
    let mut want = f.clone();
    for r in 1..4096 {
        for c in 0..40 {
            want[r * 40 + c] += want[(r - 1) * 40 + c];
        }
    }
    assert_eq!(got, want);
}
