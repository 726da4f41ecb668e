//! Sorts (`sort`, `argsort`) against NumPy's fixtures (`tests/fixtures/sort/`, from
//! `make_sort_fixtures.py`: NaN last, ±0 and ±inf, ties (argsort stable), complex with NaN
//! parts, every dtype class, an empty axis, 0-d with axis None, negative axes) and the order
//! statistics built on them (median, quantile, percentile and their NaN-skipping forms,
//! searchsorted, digitize, histogram, the unique family, topk), on
//! whichever backend runs the suite; their typed errors; a sort as its own region.

use kiln::{Array, DType};

use crate::numpy_fixtures::fixture_cases;

fixture_cases! { "sort/cases.txt";
    sort_f32_last, sort_f16, sort_u8, sort_c128_special, sort_f64_long => |a| a[0].sort(Some(-1));
    sort_f64_special, sort_f32_special_rows => |a| a[0].sort(Some(-1));
    sort_f32_axis0, sort_i8_axis0 => |a| a[0].sort(Some(0));
    sort_f32_axis1, sort_bool, sort_empty_axis => |a| a[0].sort(Some(1));
    sort_f32_none, sort_0d_none => |a| a[0].sort(None);

    argsort_f32_last, argsort_f64_special, argsort_f32_special_rows, argsort_i64_ties => |a| a[0].argsort(Some(-1));
    argsort_c128_special, argsort_ties_long => |a| a[0].argsort(Some(-1));
    argsort_f32_axis0, argsort_i8_ties_axis0 => |a| a[0].argsort(Some(0));
    argsort_bool => |a| a[0].argsort(Some(1));
    argsort_none => |a| a[0].argsort(None);
    argsort_of_negation => |a| (-&a[0]).argsort(Some(1));

    median_f32_last => |a| a[0].median(Some(-1));
    median_f32_axis0 => |a| a[0].median(Some(0));
    median_none, median_f16 => |a| a[0].median(None);
    median_i32_rows, median_special => |a| a[0].median(Some(1));
    quantile_f32_rows => |a| a[0].quantile(0.3, Some(2));
    quantile_f64_long => |a| a[0].quantile(0.9137, None);
    percentile_i32 => |a| a[0].percentile(62.5, Some(0));
    percentile_f32_none => |a| a[0].percentile(99.0, None);
    nanmedian_rows => |a| a[0].nanmedian(Some(1));
    nanpercentile_rows => |a| a[0].nanpercentile(40.0, Some(1));
    nanquantile_axis0 => |a| a[0].nanquantile(0.75, Some(0));

    searchsorted_left => |a| kiln::searchsorted(&a[0], &a[1], kiln::Side::Left);
    searchsorted_right => |a| kiln::searchsorted(&a[0], &a[1], kiln::Side::Right);
    searchsorted_int => |a| kiln::searchsorted(&a[0], &a[1], kiln::Side::Left);
    digitize_left => |a| kiln::digitize(&a[0], &a[1], false);
    digitize_right => |a| kiln::digitize(&a[0], &a[1], true);
    histogram_counts_auto, histogram_counts_int => |a| kiln::histogram(&a[0], if a[0].dtype() == DType::Int64 { 9 } else { 17 }, None).0;
    histogram_edges_auto, histogram_edges_int => |a| kiln::histogram(&a[0], if a[0].dtype() == DType::Int64 { 9 } else { 17 }, None).1;
    histogram_counts_range => |a| kiln::histogram(&a[0], 10, Some((-1.5, 2.25))).0;

    unique_f64, unique_bool, unique_empty => |a| kiln::unique(&a[0]);
    unique_values_f64 => |a| kiln::unique_values(&a[0]);
    unique_counts_values_i16 => |a| kiln::unique_counts(&a[0]).0;
    unique_counts_counts_i16, unique_counts_counts_f64 => |a| kiln::unique_counts(&a[0]).1;
    unique_inverse_i16, unique_inverse_f64 => |a| kiln::unique_inverse(&a[0]).1;

    partition_kth_f32 => |a| a[0].partition(&[1, 3], Some(-1)).take(&Array::from_vec(vec![1i64, 3], &[2]), Some(-1));
    partition_kth_axis0 => |a| a[0].partition(&[-1], Some(0)).take(&Array::scalar(-1i64), Some(0));
    lexsort_two => |a| kiln::lexsort(&[&a[0], &a[1]], -1);
    lexsort_one => |a| kiln::lexsort(&[&a[0]], -1);
    lexsort_axis0 => |a| kiln::lexsort(&[&a[0], &a[1]], 0);
    histogram_with_edges_f32, histogram_with_edges_int => |a| kiln::histogram_with_edges(&a[0], &a[1]).0;
    topk_pos_special_largest => |a| kiln::topk(&a[0], 5, -1, true).1;
    topk_vals_special_largest => |a| kiln::topk(&a[0], 5, -1, true).0;
    topk_pos_special_smallest => |a| kiln::topk(&a[0], 5, -1, false).1;
    topk_vals_special_smallest => |a| kiln::topk(&a[0], 5, -1, false).0;
    topk_pos_rows_all => |a| kiln::topk(&a[0], 12, -1, true).1;
    topk_pos_axis0 => |a| kiln::topk(&a[0], 2, 0, true).1;
    topk_vals_axis0 => |a| kiln::topk(&a[0], 2, 0, true).0;
    topk_pos_i8_ties => |a| kiln::topk(&a[0], 4, 1, true).1;
    topk_pos_i8_ties_smallest => |a| kiln::topk(&a[0], 4, 1, false).1;
    topk_pos_i64_ties => |a| kiln::topk(&a[0], 7, -1, true).1;
    topk_pos_u8, topk_pos_bool => |a| kiln::topk(&a[0], 3, -1, true).1;
    topk_vals_f16 => |a| kiln::topk(&a[0], 10, -1, true).0;
    topk_pos_k0 => |a| kiln::topk(&a[0], 0, -1, true).1;
    unique_all_values_i16 => |a| kiln::unique_all(&a[0]).0;
    unique_all_indices_i16, unique_all_indices_f64 => |a| kiln::unique_all(&a[0]).1;
    unique_all_inverse_i16 => |a| kiln::unique_all(&a[0]).2;
    unique_all_counts_i16, unique_all_counts_f64 => |a| kiln::unique_all(&a[0]).3;
}

/// `partition`/`argpartition`: the element at each kth is a full sort's, none before it is
/// greater and none after it smaller; the positions read the values back; bad `kth` is a typed
/// error naming the op.
#[test]
fn partition_puts_kth_in_place() {
    let v: Vec<f32> = (0..4 * 33).map(|i| ((i * 29) % 31) as f32 - 15.0).collect();
    let a = Array::from_vec(v.clone(), &[4, 33]);
    let p = a.partition(&[5, -2], Some(1)).to_vec::<f32>();
    let ap = a.argpartition(&[5, -2], Some(1)).to_vec::<i64>();
    for r in 0..4 {
        let mut line = v[r * 33..(r + 1) * 33].to_vec();
        line.sort_by(f32::total_cmp);
        let got = &p[r * 33..(r + 1) * 33];
        for k in [5usize, 31] {
            assert_eq!(got[k], line[k]);
            assert!(got[..k].iter().all(|&x| x <= got[k]) && got[k..].iter().all(|&x| x >= got[k]));
        }
        for (j, &i) in ap[r * 33..(r + 1) * 33].iter().enumerate() {
            assert_eq!(v[r * 33 + i as usize], got[j]);
        }
    }
    let e = a.try_partition(&[33], Some(1)).unwrap_err().to_string();
    assert!(e.contains("partition") && e.contains("kth(=33)"), "{e}");
    let e = a.try_argpartition(&[], None).unwrap_err().to_string();
    assert!(e.contains("argpartition"), "{e}");
    assert!(a.try_partition(&[0], Some(2)).is_err());
    let e = kiln::try_lexsort(&[&a, &a.sum(0)], -1).unwrap_err().to_string();
    assert!(e.contains("lexsort") && e.contains("same shape"), "{e}");
    assert!(kiln::try_lexsort(&[], 0).is_err());
    let edges = Array::from_vec(vec![0.0f64, 2.0, 1.0], &[3]);
    let e = kiln::try_histogram_with_edges(&a, &edges).unwrap_err().to_string();
    assert!(e.contains("histogram") && e.contains("monotonically"), "{e}");
    // The arrays are intact after the errors.
    assert_eq!(a.sort(Some(1)).to_vec::<f32>()[..3], [-15.0, -15.0, -14.0]);
}

/// `topk`: the largest (smallest) `k` along an axis, largest (smallest) first, NaN the
/// largest; the values against a sorted copy, the positions reading them back.
#[test]
fn topk_takes_the_ends_of_each_line() {
    let v: Vec<f32> = (0..3 * 50)
        .map(|i| if i == 77 { f32::NAN } else { ((i * 37) % 50) as f32 * 0.5 - 7.0 })
        .collect();
    let a = Array::from_vec(v.clone(), &[3, 50]);
    let (vals, pos) = kiln::topk(&a, 4, 1, true);
    let (vals, pos) = (vals.to_vec::<f32>(), pos.to_vec::<i64>());
    for r in 0..3 {
        let mut line: Vec<f32> = v[r * 50..(r + 1) * 50].to_vec();
        line.sort_by(|x, y| {
            y.partial_cmp(x).unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()).reverse())
        });
        let got = &vals[r * 4..(r + 1) * 4];
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            line[..4].iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        for (j, &p) in pos[r * 4..(r + 1) * 4].iter().enumerate() {
            assert_eq!(v[r * 50 + p as usize].to_bits(), got[j].to_bits());
        }
    }
    let (small, _) = kiln::topk(&a, 2, -1, false);
    assert_eq!(small.to_vec::<f32>()[..2], [-7.0, -6.5]);
    assert!(kiln::try_topk(&a, 51, 1, true).unwrap_err().to_string().contains("topk"));
    assert!(kiln::try_histogram(&a, 0, None).is_err());
    // A NaN makes the automatic range not finite (NumPy's ValueError).
    assert!(kiln::try_histogram(&a, 5, None).unwrap_err().to_string().contains("not finite"));
    assert!(kiln::try_searchsorted(&a, &a, kiln::Side::Left)
        .unwrap_err()
        .to_string()
        .contains("1-D"));
}

#[test]
fn sort_errors_name_the_op() {
    let x = Array::from_vec(vec![3.0f32, 1.0, 2.0, 0.5, 4.0, 1.5], &[2, 3]);
    let e = x.try_sort(Some(2)).unwrap_err().to_string();
    assert!(e.contains("sort") && e.contains('2'), "{e}");
    let e = x.try_argsort(Some(-3)).unwrap_err().to_string();
    assert!(e.contains("argsort"), "{e}");
    // A 0-d array has no axis; None flattens it.
    let s = Array::from_vec(vec![2.5f64], &[]);
    assert!(s.try_sort(Some(-1)).is_err());
    assert_eq!(s.sort(None).to_vec::<f64>(), vec![2.5]);
    let e = x.try_quantile(1.5, None).unwrap_err().to_string();
    assert!(e.contains("quantile") && e.contains("[0, 1]"), "{e}");
    let e = x.try_percentile(-1.0, Some(0)).unwrap_err().to_string();
    assert!(e.contains("percentile") && e.contains("[0, 100]"), "{e}");
    let z = Array::from_vec(vec![num_complex::Complex32::new(1.0, 2.0)], &[1]);
    assert!(z.try_median(None).unwrap_err().to_string().contains("median"));
    let empty = Array::from_vec(Vec::<f32>::new(), &[0]);
    assert!(empty.try_quantile(0.5, None).is_err());
    assert!(empty.median(None).item::<f32>().is_nan());
    // The arrays are intact after the errors.
    assert_eq!(x.argsort(Some(1)).to_vec::<i64>(), vec![1, 2, 0, 0, 2, 1]);
    assert_eq!(x.argsort(None).dtype(), DType::Int64);
}

/// A sort reads its operand from memory: `argsort(-x)` is two regions, the negation and the
/// sort, and the report names the sort's.
#[test]
fn a_sort_is_a_region_of_its_own() {
    let x = Array::from_vec((0..24).map(|i| ((i * 7) % 11) as f32).collect::<Vec<_>>(), &[4, 6]);
    let y = (-&x).argsort(Some(1));
    let ex = kiln::explain(&[&y]);
    assert_eq!(ex.regions.matches("region ").count(), 2, "{}", ex.regions);
    assert!(ex.regions.contains("sort"), "{}", ex.regions);
}

/// A long line sorted by the parallel stable sort (and on the GPU backend between copies):
/// against Rust's stable sort of the same keys, ties by position.
#[test]
fn a_long_argsort_is_stable() {
    let n = 1 << 18;
    let keys: Vec<i32> = (0..n).map(|i| ((i as u64 * 2654435761) % 1000) as i32).collect();
    let got = Array::from_vec(keys.clone(), &[n]).argsort(None).to_vec::<i64>();
    let mut want: Vec<i64> = (0..n as i64).collect();
    want.sort_by_key(|&i| keys[i as usize]);
    assert_eq!(got, want);
}

/// Lines of 3000 with ties, NaN and both zeros: on the GPU backend a block per line sorts them
/// in shared memory (a bitonic network over keys and positions), on the host a radix sort of
/// the keys; either way the stable order of a comparison sort in NumPy's order, and `sort`
/// keeps each element's own bits (-0.0 stays -0.0, in its place among the zeros).
#[test]
fn lines_with_ties_nan_and_signed_zeros_sort_stably() {
    let (rows, n) = (4, 3000);
    let v: Vec<f32> = (0..rows * n)
        .map(|i| match (i * 7919) % 97 {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            k => (k % 23) as f32 - 11.0,
        })
        .collect();
    let a = Array::from_vec(v.clone(), &[rows, n]);
    let order = |x: f32, y: f32| match (x.is_nan(), y.is_nan()) {
        (false, false) => x.partial_cmp(&y).unwrap(),
        (p, q) => p.cmp(&q),
    };
    let mut want_pos = Vec::new();
    let mut want_bits = Vec::new();
    for r in 0..rows {
        let line = &v[r * n..(r + 1) * n];
        let mut p: Vec<i64> = (0..n as i64).collect();
        p.sort_by(|&i, &j| order(line[i as usize], line[j as usize]));
        want_bits.extend(p.iter().map(|&i| line[i as usize].to_bits()));
        want_pos.extend(p);
    }
    assert_eq!(a.argsort(Some(1)).to_vec::<i64>(), want_pos);
    let got: Vec<u32> = a.sort(Some(1)).to_vec::<f32>().iter().map(|x| x.to_bits()).collect();
    assert_eq!(got, want_bits);
    // float64 and int64 lines of 2000 too.
    let w: Vec<i64> = (0..2 * 2000).map(|i| ((i * 31) % 41) as i64 - 20).collect();
    let mut want = w.clone();
    want.chunks_mut(2000).for_each(|c| c.sort());
    assert_eq!(Array::from_vec(w, &[2, 2000]).sort(Some(-1)).to_vec::<i64>(), want);
    let d: Vec<f64> = (0..2 * 2000).map(|i| ((i * 31) % 41) as f64 * -0.5).collect();
    let mut want = d.clone();
    want.chunks_mut(2000).for_each(|c| c.sort_by(|a, b| a.partial_cmp(b).unwrap()));
    assert_eq!(Array::from_vec(d, &[2, 2000]).sort(Some(-1)).to_vec::<f64>(), want);
}

/// `digitize` of decreasing, increasing, constant and empty bins, held (checked as NumPy) and
/// lazy (CuPy's direction from the ends), against NumPy 2.4's values (`np.digitize(x, b)` and
/// `right=True`, printed by NumPy); bins held on the host that are not monotonic are NumPy's
/// ValueError, lazy ones are not read back (CuPy does not check).
#[test]
fn digitize_takes_either_direction_and_checks_held_bins() {
    let x = Array::from_vec(vec![-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, f64::NAN], &[10]);
    let cases: [(&[f64], [i64; 10], [i64; 10]); 4] = [
        (
            &[3.0, 2.0, 2.0, 1.0, 0.0],
            [5, 4, 4, 3, 3, 1, 1, 0, 0, 0],
            [5, 5, 4, 4, 3, 3, 1, 1, 0, 0],
        ),
        (
            &[0.0, 1.0, 2.0, 2.0, 3.0],
            [0, 1, 1, 2, 2, 4, 4, 5, 5, 5],
            [0, 0, 1, 1, 2, 2, 4, 4, 5, 5],
        ),
        (&[2.0, 2.0, 2.0], [0, 0, 0, 0, 0, 3, 3, 3, 3, 3], [0, 0, 0, 0, 0, 0, 3, 3, 3, 3]),
        (&[], [0; 10], [0; 10]),
    ];
    for (bins, left, right) in cases {
        let held = Array::from_vec(bins.to_vec(), &[bins.len()]);
        let lazy = &held + 0.0;
        assert!(!lazy.is_materialized());
        for (b, how) in [(&held, "held"), (&lazy, "lazy")] {
            let got = kiln::digitize(&x, b, false).to_vec::<i64>();
            assert_eq!(got, left, "bins {bins:?} ({how})");
            let got = kiln::digitize(&x, b, true).to_vec::<i64>();
            assert_eq!(got, right, "bins {bins:?} ({how}), right");
        }
    }
    // Integer bins and values: np.digitize([0, 5, 10, 15], int32 [12, 8, 4]) is [3, 2, 1, 0].
    let ints = Array::from_vec(vec![0i64, 5, 10, 15], &[4]);
    let bins = Array::from_vec(vec![12i32, 8, 4], &[3]);
    assert_eq!(kiln::digitize(&ints, &bins, false).to_vec::<i64>(), [3, 2, 1, 0]);
    // Not monotonic: NumPy's error for held bins; lazy bins are CuPy's (not checked).
    let bad = Array::from_vec(vec![1.0, 3.0, 2.0], &[3]);
    let e = kiln::try_digitize(&x, &bad, false).unwrap_err().to_string();
    assert_eq!(e, "digitize: bins must be monotonically increasing or decreasing");
    assert!(kiln::try_digitize(&x, &(&bad + 0.0), false).is_ok());
    // Its shape and dtype checks name it.
    let e = kiln::try_digitize(&x, &bad.reshape(&[3, 1]), false).unwrap_err().to_string();
    assert!(e.starts_with("digitize: bins must be 1-D"), "{e}");
}

/// Order statistics by selection (one `sort_take` node) against the evaluator's value of the
/// same graph, bit for bit (±0 in their stable order, NaN last), on whichever backend runs the
/// suite: lines along every axis of a 3-d array with ties, signed zeros and NaNs, float32 and
/// int16.
#[test]
fn order_statistics_by_selection_match_the_evaluator() {
    let v: Vec<f64> = (0..7 * 9 * 11)
        .map(|i: u64| match (i * 7919) % 23 {
            0 => f64::NAN,
            1 => -0.0,
            2 => 0.0,
            k => ((k * 31) % 9) as f64 - 4.0,
        })
        .collect();
    for dt in [DType::Float32, DType::Int16] {
        let x = Array::from_vec(v.clone(), &[7, 9, 11]).astype(dt);
        for axis in [Some(0), Some(1), Some(-1), None] {
            let outs = [
                x.median(axis),
                x.quantile(0.7, axis),
                x.nanmedian(axis),
                x.nanpercentile(33.0, axis),
            ];
            let refs: Vec<&Array> = outs.iter().collect();
            let lowered = kiln::lower(&refs);
            let inputs: Vec<&kiln::HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
            let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
            kiln::eval_all(&refs);
            for (k, (a, w)) in outs.iter().zip(&want).enumerate() {
                let g = a.try_to_host().unwrap();
                if let Err(msg) =
                    crate::numpy_fixtures::compare(w, &g, crate::numpy_fixtures::Tol::Exact, true)
                {
                    panic!("{dt} axis {axis:?} output {k}: {msg}");
                }
            }
        }
    }
}
