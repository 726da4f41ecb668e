//! Shapes that depend on the data (`extract`, `compress`, `nonzero`, `flatnonzero`, `argwhere`,
//! `where_indices`, `mask`) against NumPy's fixtures (`tests/fixtures/compaction/`, from
//! `make_compaction_fixtures.py`), on whichever backend runs the suite: every dtype class,
//! empty and 0-d arrays, all-false and all-true conditions, NaN and -0.0, conditions shorter and
//! longer than what they index, negative axes, masks computed lazily; their typed errors, the
//! arrays still valid after them; the kernels of one call (the fusion report).

use kiln::{Array, DType, Index};

use crate::numpy_fixtures::fixture_cases;

/// `np.stack(np.nonzero(a))` (shape `(ndim, N)`).
fn stacked(parts: Vec<Array>) -> Array {
    let refs: Vec<&Array> = parts.iter().collect();
    kiln::stack(&refs, 0)
}

fixture_cases! { "compaction/cases.txt";
    flatnonzero_bool_x, flatnonzero_i8_x, flatnonzero_u16_x, flatnonzero_i64_x,
    flatnonzero_f16_x, flatnonzero_f32_x, flatnonzero_f64_x, flatnonzero_c64_x,
    flatnonzero_c128_x, flatnonzero_f32_empty, flatnonzero_i32_zeros, flatnonzero_i32_ones,
    flatnonzero_f64_0d_true, flatnonzero_f64_0d_false => |a| kiln::flatnonzero(&a[0]);
    nonzero_bool_x, nonzero_i8_x, nonzero_f32_x, nonzero_c64_x, nonzero_f32_empty,
    nonzero_i32_zeros, nonzero_i32_ones, nonzero_1d => |a| stacked(kiln::nonzero(&a[0]));
    where_one_f64 => |a| stacked(kiln::where_indices(&a[0]));
    argwhere_f32_x, argwhere_u16_x, argwhere_i64_x, argwhere_c128_x, argwhere_f32_empty,
    argwhere_i32_zeros, argwhere_i32_ones, argwhere_f64_0d_true,
    argwhere_f64_0d_false => |a| kiln::argwhere(&a[0]);
    extract_f32_gt0_lazy => |a| kiln::extract(&a[0].greater(0.0), &a[0]);
    extract_f32_mask, extract_bool_values, extract_int_cond, extract_float_cond_nan,
    extract_shorter_cond, extract_longer_zero_tail, extract_all_false, extract_all_true,
    extract_empty, extract_0d => |a| kiln::extract(&a[0], &a[1]);
    extract_f16_self, extract_c64_self => |a| kiln::extract(&a[0], &a[0]);
    extract_neg_zero_kept => |a| kiln::extract(&a[0].less_equal(0.0), &a[0]);
    compress_axis0, compress_axis1_longer => |a| a[1].compress(&a[0], Some(if a[1].ndim() == 3 { 0 } else { 1 }));
    compress_axis_neg1 => |a| a[1].compress(&a[0], Some(-1));
    compress_none, compress_shorter_none => |a| a[1].compress(&a[0], None);
    compress_float_cond => |a| a[1].compress(&a[0], Some(0));
    compress_empty_cond => |a| a[1].compress(&a[0], Some(1));
    compress_0d_none => |a| a[1].compress(&a[0].slice(&[kiln::SliceArg::Range { start: None, stop: Some(1), step: 1 }]), None);
    compress_all_false_axis2 => |a| a[1].compress(&(&a[0] * 0), Some(2));
    mask_full, mask_leading, mask_rows, mask_0d_true, mask_0d_false,
    mask_empty => |a| a[1].mask(&a[0]);
    mask_lazy_gt0 => |a| a[0].mask(&a[0].greater(0.0));
    index_mask_then_slice => |a| a[1].index(&[(&a[0]).into(), (1..).into()]);
    index_slice_then_mask2d => |a| {
        let m = a[0].index(&[0i64.into()]);
        a[1].index(&[(..).into(), m.into()])
    };
    index_ellipsis_mask => |a| a[1].index(&[Index::ELLIPSIS, (&a[0]).into()]);
    index_int_then_mask => |a| a[1].index(&[1i64.into(), (2..).into(), (&a[0]).into()]);
    index_mask_alone => |a| a[1].index(&[(&a[0]).into()]);
}

fn f32s(v: &[f32], shape: &[usize]) -> Array {
    Array::from_vec(v.to_vec(), shape)
}

#[test]
fn results_are_lazy_arrays_that_compose() {
    // After the count, the result is an ordinary lazy array: arithmetic on it, and the
    // condition and values both computed from one lazy producer.
    let x = f32s(&[-1.0, 2.0, 0.5, -3.0, 4.0, 0.0], &[2, 3]);
    let y = &x * 2.0f32;
    let picked = kiln::extract(&y.greater(0.5f32), &(&y + 1.0f32));
    assert_eq!(picked.shape(), &[3]);
    assert_eq!((&picked * 10.0f32).to_vec::<f32>(), vec![50.0, 20.0, 90.0]);
    let nz = kiln::nonzero(&y.greater(0.5f32));
    kiln::eval_all(&nz.iter().collect::<Vec<_>>());
    assert_eq!(nz[0].to_vec::<i64>(), vec![0, 0, 1]);
    assert_eq!(nz[1].to_vec::<i64>(), vec![1, 2, 1]);
    let method = y.greater(0.5f32).nonzero();
    assert_eq!(method[1].to_vec::<i64>(), vec![1, 2, 1]);
    // Indexing with the coordinates reads the selected elements back.
    let back = x.index(&[(&nz[0]).into(), (&nz[1]).into()]);
    assert_eq!(back.to_vec::<f32>(), vec![2.0, 0.5, 4.0]);
}

#[test]
fn compaction_errors_name_op_shapes_and_dtypes() {
    let a = Array::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]);
    let long = Array::from_vec(vec![true, false, true, true], &[4]);
    // compress: a true past the axis (NumPy's IndexError), its index named.
    let e = a.try_compress(&long, Some(1)).unwrap_err().to_string();
    assert!(e.contains("compress") && e.contains("index 3") && e.contains("size 3"), "{e}");
    assert!(e.contains("[4]") && e.contains("bool"), "{e}");
    // ... but zeros past it are NumPy's too: no error.
    let tail = Array::from_vec(vec![true, false, true, false, false], &[5]);
    assert_eq!(a.compress(&tail, Some(1)).to_vec::<i32>(), vec![0, 2, 3, 5]);
    let e = a.try_compress(&long, Some(2)).unwrap_err().to_string();
    assert!(e.contains("compress") && e.contains("axis 2"), "{e}");
    let e = a.try_compress(&long, Some(-3)).unwrap_err().to_string();
    assert!(e.contains("compress"), "{e}");
    let e = a.try_compress(&long.reshape(&[2, 2]), Some(0)).unwrap_err().to_string();
    assert!(e.contains("compress") && e.contains("1-d") && e.contains("[2, 2]"), "{e}");
    // extract: a condition non-zero past a's size.
    let cond = Array::from_vec(vec![0i64, 0, 0, 0, 0, 0, 0, 5], &[8]);
    let e = kiln::try_extract(&cond, &a).unwrap_err().to_string();
    assert!(e.contains("extract") && e.contains("index 7") && e.contains("size 6"), "{e}");
    assert!(e.contains("int64") && e.contains("[8]"), "{e}");
    let e = kiln::try_extract(&Array::from_vec(vec![true], &[1]), &kiln::zeros(&[0], DType::Int8))
        .unwrap_err()
        .to_string();
    assert!(e.contains("extract") && e.contains("index 0") && e.contains("size 0"), "{e}");
    // nonzero and where of a 0-d array (NumPy 2's ValueError).
    let s = Array::from_vec(vec![1.0f64], &[]);
    let e = kiln::try_nonzero(&s).unwrap_err().to_string();
    assert!(e.contains("nonzero") && e.contains("0-d") && e.contains("float64"), "{e}");
    let e = kiln::try_where_indices(&s).unwrap_err().to_string();
    assert!(e.starts_with("where") && e.contains("0-d"), "{e}");
    // mask: not bool, too many axes, an extent that differs.
    let e = a.try_mask(&Array::from_vec(vec![1i32, 0], &[2])).unwrap_err().to_string();
    assert!(e.contains("mask") && e.contains("int32") && e.contains("bool"), "{e}");
    let e = a.try_mask(&kiln::ones(&[2, 3, 1], DType::Bool)).unwrap_err().to_string();
    assert!(e.contains("mask") && e.contains("[2, 3, 1]") && e.contains("[2, 3]"), "{e}");
    let e = a.try_mask(&kiln::ones(&[3], DType::Bool)).unwrap_err().to_string();
    assert!(e.contains("axis 0") && e.contains("size of axis is 2") && e.contains("is 3"), "{e}");
    // Bool arrays in an index: extents checked against the axes they index.
    let m2 = Array::from_vec(vec![true, false], &[2]);
    let e = a.try_index(&[(..).into(), (&m2).into()]).unwrap_err().to_string();
    assert!(
        e.starts_with("index") && e.contains("axis 1") && e.contains("size of axis is 3"),
        "{e}"
    );
    let t = Array::from_vec(vec![true], &[]);
    let e = a.try_index(&[(&t).into(), 0i64.into()]).unwrap_err().to_string();
    assert!(e.starts_with("index") && e.contains("0-d"), "{e}");
    assert_eq!(a.index(&[(&t).into()]).shape(), &[1, 2, 3]);
    // Every live array is still valid and computes after the errors.
    assert_eq!(a.to_vec::<i32>(), (0..6).collect::<Vec<_>>());
    assert_eq!(long.to_vec::<bool>(), vec![true, false, true, true]);
    assert_eq!(cond.to_vec::<i64>(), vec![0, 0, 0, 0, 0, 0, 0, 5]);
    assert_eq!(kiln::extract(&cond, &cond).to_vec::<i64>(), vec![5]);
    assert_eq!(a.compress(&long, None).to_vec::<i32>(), vec![0, 2, 3]);
}

#[test]
fn errors_from_lazy_conditions_leave_them_valid() {
    // The condition is computed (and its scan held) before the error is found.
    let a = Array::from_vec(vec![1.0f32, -2.0, 3.0], &[3]);
    let c = kiln::concatenate(&[&a.greater(0.0f32), &a.less(0.0f32)], 0);
    let e = a.try_compress(&c, None).unwrap_err().to_string();
    assert!(e.contains("compress") && e.contains("index 4") && e.contains("size 3"), "{e}");
    assert_eq!(c.to_vec::<bool>(), vec![true, false, true, false, true, false]);
    assert_eq!(a.compress(&a.greater(0.0f32), Some(0)).to_vec::<f32>(), vec![1.0, 3.0]);
}

/// `n` reproducible float32 values in [-2, 2) (an LCG).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// The regions of the thread's last run: their kernel shapes (`None`: no generated kernel ran).
fn last_run() -> Vec<Option<String>> {
    kiln_exec::last_run_code()
        .iter()
        .map(|(_, c)| c.kernel().map(|k| k.shape.to_string()))
        .collect()
}

#[test]
fn one_compaction_kernel_a_call() {
    // `x[x > 0]`, extract, flatnonzero, nonzero, argwhere and compress: one generated kernel
    // (the predicate's producer, the compaction and its count), then the count read back.
    let n = 4096usize;
    let x = Array::from_vec(values(n, 7), &[n]);
    let host = x.to_vec::<f32>();
    let expect: Vec<f32> = host.iter().copied().filter(|&v| v > 0.0).collect();
    let at: Vec<i64> = (0..n as i64).filter(|&i| host[i as usize] > 0.0).collect();
    let r = x.mask(&x.greater(0.0f32));
    assert_eq!(last_run().len(), 1, "{:?}", last_run());
    assert!(last_run()[0].is_some(), "generated code, not the evaluator: {:?}", last_run());
    assert_eq!(r.to_vec::<f32>(), expect);
    // The result holds its value: nothing more runs to read it.
    assert!(r.is_materialized());
    assert_eq!(kiln::explain(&[&r]).report.kernel_count(), 0);
    let m = x.reshape(&[64, 64]);
    let e = kiln::extract(&m.greater(0.0f32), &(&m * 2.0f32));
    assert_eq!(last_run().len(), 1, "{:?}", last_run());
    assert_eq!(e.to_vec::<f32>(), expect.iter().map(|v| v * 2.0).collect::<Vec<_>>());
    let f = kiln::flatnonzero(&m.greater(0.0f32));
    assert_eq!(last_run().len(), 1, "{:?}", last_run());
    assert_eq!(f.to_vec::<i64>(), at);
    let c = x.compress(&x.greater(0.0f32), None);
    assert_eq!(c.to_vec::<f32>(), expect);
    let nz = kiln::nonzero(&m.greater(0.0f32));
    kiln::eval_all(&nz.iter().collect::<Vec<_>>());
    assert_eq!(nz[0].to_vec::<i64>(), at.iter().map(|i| i / 64).collect::<Vec<_>>());
    assert_eq!(nz[1].to_vec::<i64>(), at.iter().map(|i| i % 64).collect::<Vec<_>>());
    let aw = kiln::argwhere(&m.greater(0.0f32));
    assert_eq!(aw.shape(), &[at.len(), 2]);
}

/// The compaction against a host filter at sizes around the GPU's tiles (2048 and 8192
/// elements) and past many tiles, for each dtype class, and for strided (non-contiguous)
/// values and conditions; all-false, all-true and empty.
#[test]
fn compaction_matches_a_filter_at_tile_edges() {
    let sizes = [1usize, 31, 33, 2047, 2048, 2049, 8191, 8192, 8193, 40_000, 300_001];
    for (k, &n) in sizes.iter().enumerate() {
        let v = values(n, 100 + k as u64);
        let x = Array::from_vec(v.clone(), &[n]);
        // float32, and the others through casts (the producer fused into the compaction).
        let keep: Vec<bool> = v.iter().map(|&a| a > 0.25).collect();
        let pick = |w: &[f64]| -> Vec<f64> {
            w.iter().zip(&keep).filter(|(_, &k)| k).map(|(&a, _)| a).collect()
        };
        let wide: Vec<f64> = v.iter().map(|&a| a as f64).collect();
        let got = x.mask(&x.greater(0.25f32));
        assert_eq!(
            got.to_vec::<f32>(),
            pick(&wide).iter().map(|&a| a as f32).collect::<Vec<_>>(),
            "f32 n={n}"
        );
        let i = (&x * 1000.0f32).astype(DType::Int16);
        let got = kiln::extract(&x.greater(0.25f32), &i);
        let want: Vec<i16> = pick(&wide).iter().map(|&a| (a as f32 * 1000.0) as i16).collect();
        assert_eq!(got.to_vec::<i16>(), want, "i16 n={n}");
        let d = x.astype(DType::Float64);
        let got = d.compress(&d.greater(0.25), None);
        assert_eq!(got.to_vec::<f64>(), pick(&wide), "f64 n={n}");
        let b = x.greater(0.0f32);
        let got = kiln::extract(&x.greater(0.25f32), &b);
        let want: Vec<bool> = pick(&wide).iter().map(|&a| a > 0.0).collect();
        assert_eq!(got.to_vec::<bool>(), want, "bool n={n}");
        let z = kiln::extract(&x.greater(0.25f32), &x.astype(DType::Complex64));
        let zs: Vec<f32> = z.real().to_vec::<f32>();
        assert_eq!(zs, pick(&wide).iter().map(|&a| a as f32).collect::<Vec<_>>(), "c64 n={n}");
        let u = kiln::flatnonzero(&x.greater(0.25f32));
        let want: Vec<i64> = (0..n as i64).filter(|&j| keep[j as usize]).collect();
        assert_eq!(u.to_vec::<i64>(), want, "positions n={n}");
        // Nothing kept, everything kept.
        assert_eq!(x.mask(&x.greater(5.0f32)).size(), 0, "none n={n}");
        assert_eq!(x.mask(&x.less(5.0f32)).to_vec::<f32>(), v, "all n={n}");
    }
    // Non-contiguous values and condition: every other element, reversed, and a transpose.
    let n = 20_000usize;
    let v = values(2 * n, 5);
    let x = Array::from_vec(v.clone(), &[2 * n]);
    let odd = x.slice(&[kiln::SliceArg::Range { start: Some(1), stop: None, step: 2 }]);
    let rev = odd.flip(None);
    let want: Vec<f32> = v.iter().skip(1).step_by(2).rev().copied().filter(|&a| a < 0.5).collect();
    assert_eq!(rev.mask(&rev.less(0.5f32)).to_vec::<f32>(), want);
    let m = x.reshape(&[200, 200]).transpose();
    let mt: Vec<f32> =
        (0..200).flat_map(|c| (0..200).map(move |r| (r, c))).map(|(r, c)| v[r * 200 + c]).collect();
    let want: Vec<f32> = mt.iter().copied().filter(|&a| a > 1.0).collect();
    assert_eq!(m.mask(&m.greater(1.0f32)).to_vec::<f32>(), want);
    // Empty.
    let e = Array::from_vec(Vec::<f32>::new(), &[0]);
    assert_eq!(e.mask(&e.greater(0.0f32)).shape(), &[0]);
}

/// Timing on the backend that runs the suite (`--ignored --nocapture`): `x[x > 0]` of 2^26
/// float32 (peers_ops.py's `mask_select_2^26`), against a host filter; beside it the same
/// compaction with a replacing scatter of the values (`put`), which the evaluator runs.
#[test]
#[ignore]
fn mask_select_2p26_timing() {
    let n = 1usize << 26;
    let host = values(n, 11);
    let expect: Vec<f32> = host.iter().copied().filter(|&v| v > 0.0).collect();
    let x = Array::from_vec(host, &[n]);
    let time = |name: &str, f: &dyn Fn() -> Array| {
        let mut ts = Vec::new();
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let r = f();
            r.eval();
            ts.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(r.size(), expect.len(), "{name}");
        }
        ts.sort_by(f64::total_cmp);
        eprintln!("{name}: median {:.1} ms of {ts:?}", ts[2]);
    };
    time("x.mask(x > 0)", &|| x.mask(&x.greater(0.0f32)));
    let pred = x.greater(0.0f32);
    let incl = pred.cumsum(None);
    time("the scan", &|| {
        let c = pred.cumsum(None);
        c.eval();
        c.slice(&[kiln::SliceArg::Range {
            start: Some(0),
            stop: Some(expect.len() as i64),
            step: 1,
        }])
    });
    incl.eval();
    let i = kiln::arange(n as i64);
    let at = kiln::where_(&pred, &(&incl - 1i64), &i);
    let value = kiln::where_(&pred, &i, 0i64);
    let idx = || kiln::zeros(&[expect.len()], DType::Int64).add_at(&at, &value);
    time("the scatter", &idx);
    let held = idx().eval().clone();
    let few = Array::from_vec(vec![3i64, 5], &[2]);
    time("add_at of 2 values into lazy zeros(count)", &|| {
        kiln::zeros(&[expect.len()], DType::Int64).add_at(&few, 1i64)
    });
    let zs = Array::from_vec(vec![0i64; expect.len()], &[expect.len()]);
    time("add_at of 2 values into held zeros(count)", &|| zs.add_at(&few, 1i64));
    time("the scatter into held zeros(count)", &|| zs.add_at(&at, &value));
    time("the gather", &|| x.take(&held, None));
    time("count_nonzero(x > 0) alone", &|| {
        {
            let c = x.greater(0.0f32).count_nonzero(None);
            c.eval();
            c
        }
        .reshape(&[1])
        .broadcast_to(&[expect.len()])
    });
    assert_eq!(x.mask(&x.greater(0.0f32)).to_vec::<f32>(), expect);
}
