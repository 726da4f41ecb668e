//! Gathers and scatters: `take`, `take_along_axis`, `add_at`, `maximum_at`, `minimum_at`, `put`,
//! `put_along_axis` and `bincount` against NumPy's fixtures (`tests/fixtures/indexing/`, from
//! `make_indexing_fixtures.py`: duplicates, negative and wrapped indices, empty index arrays,
//! every dtype class, 0-d values), on whichever backend runs the suite; their typed errors; and
//! fusion: the k-means update (sums by `add_at`, counts by `bincount` of the same labels) is one
//! scatter kernel that computes the labels.

use kiln::{Array, DType};

use crate::numpy_fixtures::fixture_cases;

/// `a` as a lazy array (not held on the host), so that its values are not checked.
fn lazy(a: &Array) -> Array {
    a + 0
}

fixture_cases! { "indexing/cases.txt";
    take_flat_f32 => |a| a[0].take(&a[1], None);
    take_axis1_i16 => |a| a[0].take(&a[1], Some(1));
    take_axis_last_bool => |a| a[0].take(&a[1], Some(-1));
    take_axis0_empty => |a| a[0].take(&a[1], Some(0));
    take_axis1_wrap_lazy => |a| a[0].take(&lazy(&a[1]), Some(1));
    take_c64_axis0 => |a| a[0].take(&a[1], Some(0));
    take_along_axis_sort => |a| a[0].take_along_axis(&a[1], 1);
    take_along_axis_bcast => |a| a[0].take_along_axis(&a[1], 1);

    index_arrays_apart => |a| a[0].index(&[(&a[1]).into(), (..).into(), (&a[2]).into()]);
    index_array_and_int => |a| a[0].index(&[(..).into(), (&a[1]).into(), 1i64.into()]);
    index_slice_then_array => |a| a[0].index(&[(1i64..).into(), (&a[1]).into()]);
    index_ellipsis_array => |a| a[0].index(&[kiln::Index::ELLIPSIS, (&a[1]).into()]);
    index_newaxis_array_step => |a| {
        a[0].index(&[kiln::SliceArg::NewAxis.into(), (&a[1]).into(), kiln::SliceArg::FULL.step(-2).into()])
    };
    index_int_slice_array => |a| a[0].index(&[(-1i64).into(), (1i64..3).into(), (&a[1]).into()]);

    add_at_f32_dup => |a| a[0].add_at(&a[1], &a[2]);
    add_at_f64_scalar => |a| a[0].add_at(&a[1], 1.5);
    add_at_f32_0d_values => |a| a[0].add_at(&a[1], &a[2]);
    add_at_i32_2d_idx => |a| a[0].add_at(&a[1], &a[2]);
    add_at_u8_wraps => |a| a[0].add_at(&a[1], &a[2]);
    add_at_c64 => |a| a[0].add_at(&a[1].slice(&kiln::s![..3]), &a[2]);
    add_at_empty => |a| a[0].add_at(&a[1], kiln::zeros(&[0, 3], DType::Float32));
    maximum_at_f64_nan => |a| a[0].maximum_at(&a[1], &a[2]);
    minimum_at_f64_nan => |a| a[0].minimum_at(&a[1], &a[2]);
    maximum_at_u8 => |a| a[0].maximum_at(&a[1], &a[2]);
    minimum_at_i32_2d_idx => |a| a[0].minimum_at(&a[1], &a[2]);

    put_i16_last_wins => |a| a[0].put(&a[1], a[2].astype(DType::Int16));
    put_cyclic => |a| a[0].put(&a[1], a[2].astype(DType::Int16));
    put_along_axis_f32 => |a| {
        let v = &kiln::arange(4).astype(DType::Float32).reshape(&[1, 4, 1]) * -1.0;
        a[0].put_along_axis(&a[1], &v, 1)
    };
    put_along_axis_bcast => |a| a[0].put_along_axis(&a[1], 7, 1);

    bincount_plain => |a| kiln::bincount(&a[0], None, 0);
    bincount_minlength => |a| kiln::bincount(&a[0], None, 12);
    bincount_weights => |a| kiln::bincount(&a[0], Some(&a[1].astype(DType::Float64)), 0);
    bincount_empty => |a| kiln::bincount(&a[0], None, 3);
    bincount_lazy => |a| kiln::bincount(&(&a[0] * 2), None, 4);
}

fn err(r: kiln::Result<Array>) -> String {
    match r {
        Ok(a) => panic!("expected an error, got {a:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_indices_are_typed_errors_naming_the_op() {
    let a = Array::from_vec((0..12).map(|v| v as f32).collect::<Vec<_>>(), &[3, 4]);
    let fidx = Array::from_vec(vec![0.0f32, 1.0], &[2]);
    let e = err(a.try_take(&fidx, Some(0)));
    assert!(e.contains("take") && e.contains("integer") && e.contains("float32"), "{e}");
    let idx = Array::from_vec(vec![0i64, 3], &[2]);
    let e = err(a.try_take(&idx, Some(0)));
    assert!(e.starts_with("take: index 3 is out of bounds for axis 0 with size 3"), "{e}");
    let e = err(a.try_take(&idx, Some(2)));
    assert!(e.contains("take") && e.contains("axis"), "{e}");
    let e = err(a.try_add_at(&Array::from_vec(vec![-4i64], &[1]), 1.0));
    assert!(e.starts_with("add_at: index -4 is out of bounds for axis 0 with size 3"), "{e}");
    // values that do not broadcast to indices.shape + a.shape[1:] = (2, 4)
    let e = err(
        a.try_add_at(&Array::from_vec(vec![0i64, 1], &[2]), kiln::ones(&[2, 3], DType::Float32))
    );
    assert!(e.contains("add_at") && e.contains("[2, 3]") && e.contains("[2, 4]"), "{e}");
    // same_kind: float values into an int array
    let ai = Array::from_vec(vec![1i32, 2, 3], &[3]);
    let e =
        err(ai.try_add_at(&Array::from_vec(vec![0i64], &[1]), Array::from_vec(vec![0.5f64], &[1])));
    assert!(
        e.contains("add_at")
            && e.contains("float64")
            && e.contains("int32")
            && e.contains("same_kind"),
        "{e}"
    );
    let e = err(ai.try_maximum_at(&Array::from_vec(vec![0i64], &[1]), 0.5));
    assert!(e.contains("maximum_at") && e.contains("same_kind"), "{e}");
    let e =
        err(Array::from_vec(vec![1.0f32], &[]).try_add_at(&Array::from_vec(vec![0i64], &[1]), 1.0));
    assert!(e.contains("add_at") && e.contains("0-d"), "{e}");
    let e = err(a.try_take_along_axis(&Array::from_vec(vec![0i64], &[1]), 0));
    assert!(e.contains("take_along_axis") && e.contains("rank"), "{e}");
    let e = err(a.try_put(&Array::from_vec(vec![12i64], &[1]), 0.0));
    assert!(e.starts_with("put: index 12 is out of bounds"), "{e}");
    // the arrays are unchanged by the failed calls
    assert_eq!(a.to_vec::<f32>(), (0..12).map(|v| v as f32).collect::<Vec<_>>());
    assert_eq!(ai.to_vec::<i32>(), vec![1, 2, 3]);
}

#[test]
fn bincount_errors() {
    let e = err(kiln::try_bincount(&Array::from_vec(vec![1i64, -2, 3], &[3]), None, 0));
    assert!(e.starts_with("bincount: the first argument must be non-negative (found -2)"), "{e}");
    // a negative value of a lazy array is found by the read of its minimum
    let lazy = &Array::from_vec(vec![1i64, 2, 3], &[3]) - 2;
    let e = err(kiln::try_bincount(&lazy, None, 0));
    assert!(e.contains("non-negative (found -1)"), "{e}");
    let e = err(kiln::try_bincount(&Array::from_vec(vec![1i64, 2, 3, 4], &[2, 2]), None, 0));
    assert!(e.contains("bincount") && e.contains("1-D"), "{e}");
    let e = err(kiln::try_bincount(&Array::from_vec(vec![1.0f32], &[1]), None, 0));
    assert!(e.contains("bincount") && e.contains("float32"), "{e}");
    let x = Array::from_vec(vec![1i64, 2], &[2]);
    let e = err(kiln::try_bincount(&x, Some(&Array::from_vec(vec![1.0f64], &[1])), 0));
    assert!(e.contains("bincount") && e.contains("weights"), "{e}");
}

/// Squared distances of the rows of `x` to the rows of `c`, summed over the last axis.
fn sq_distances(x: &Array, c: &Array) -> Array {
    (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2)
}

fn kmeans_data(n: usize, d: usize, k: usize) -> (Array, Array) {
    let x: Vec<f32> = (0..n * d).map(|i| ((i * 7919 % 1000) as f32) / 100.0 - 5.0).collect();
    let c: Vec<f32> = (0..k * d).map(|i| ((i * 104729 % 1000) as f32) / 100.0 - 5.0).collect();
    (Array::from_vec(x, &[n, d]), Array::from_vec(c, &[k, d]))
}

#[test]
fn kmeans_update_is_one_scatter_kernel_computing_the_labels() {
    let (n, d, k) = (1000, 16, 10);
    let (x, c) = kmeans_data(n, d, k);
    let labels = sq_distances(&x, &c).argmin(1);
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, &x);
    let counts = kiln::bincount(&labels, None, k);
    let ex = kiln::explain(&[&sums, &counts]);
    let report = ex.report.to_string();
    assert_eq!(ex.report.kernel_count(), 1, "{report}");
    assert!(report.contains("region 0 scatter scatter items=[1000]"), "{report}");
    for op in ["argmin", "sum", "scatter_add"] {
        assert!(report.contains(op), "{op} in {report}");
    }
    // The report says how the GPU combines the values.
    assert!(
        report.contains(
            "  scatter: GPU: shared-memory bins, 8 blocks, partials combined in block order"
        ),
        "{report}"
    );
    // against the same update written with masks (no scatter)
    let mask = labels.expand_dims(&[1]).equal(kiln::arange(k as i64).expand_dims(&[0]));
    let want_counts = mask.sum(0);
    let want_sums = kiln::where_(mask.expand_dims(&[2]), x.expand_dims(&[1]), 0.0f32).sum(0);
    assert_eq!(counts.to_vec::<i64>(), want_counts.to_vec::<i64>());
    let (got, want) = (sums.to_vec::<f32>(), want_sums.to_vec::<f32>());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{g} vs {w}");
    }
}

/// A k-means update of 2^17 positions: on the GPU blocks of two tiles each, whose label
/// lanes take two terms a step (`lower/screen.rs`, `LANE_UNROLL`). The counts and the sums of
/// each cluster's positions (integers: exact in any order) against the reference evaluator's,
/// the float sums within a float32 sum's rounding bound of its (`m` terms of magnitude at most
/// 5 in any order: `m · 2^-24 · 5m`).
#[test]
fn kmeans_update_of_several_tiles_a_block_matches_the_evaluator() {
    let (n, d, k) = (1usize << 17, 64, 10);
    let (x, c) = kmeans_data(n, d, k);
    let labels = sq_distances(&x, &c).argmin(1);
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, &x);
    let counts = kiln::bincount(&labels, None, k);
    let at = kiln::zeros(&[k], DType::Int64).add_at(&labels, &kiln::arange(n as i64));
    let l = kiln::lower(&[&sums, &counts, &at]);
    let inputs: Vec<&kiln::ir::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
    kiln::eval_all(&[&sums, &counts, &at]);
    assert_eq!(counts.to_vec::<i64>(), want[1].as_slice::<i64>().unwrap());
    assert_eq!(at.to_vec::<i64>(), want[2].as_slice::<i64>().unwrap());
    let got = sums.to_vec::<f32>();
    let m = want[1].as_slice::<i64>().unwrap();
    for (e, (g, w)) in got.iter().zip(want[0].as_slice::<f32>().unwrap()).enumerate() {
        let m = m[e / d] as f32;
        assert!((g - w).abs() <= m * 5.0 * m * (-24f32).exp2(), "{g} vs {w} ({m} terms)");
    }
}

#[test]
fn scatter_results_are_the_same_bits_every_run() {
    let (x, c) = kmeans_data(5000, 8, 7);
    let labels = sq_distances(&x, &c).argmin(1);
    let first: Vec<f32> = kiln::zeros(&[7, 8], DType::Float32).add_at(&labels, &x).to_vec();
    for _ in 1..10 {
        let again: Vec<f32> = kiln::zeros(&[7, 8], DType::Float32).add_at(&labels, &x).to_vec();
        assert_eq!(
            first.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            again.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn kmeans_update_region_and_host_kernel_snapshots() {
    let (x, c) = kmeans_data(64, 4, 3);
    let labels = sq_distances(&x, &c).argmin(1);
    let sums = kiln::zeros(&[3, 4], DType::Float32).add_at(&labels, &x);
    let counts = kiln::bincount(&labels, None, 3);
    let ex = kiln::explain(&[&sums, &counts]);
    insta::assert_snapshot!("kmeans_update_regions", ex.regions);
    let mlir = kiln::kernel_code(&[&sums, &counts], kiln::CodeStage::HostMlir).unwrap();
    // compiled, not left to the evaluator: one loop over the positions, the labels' argmin and
    // distances inside it, a loop over each row's elements combining into the outputs
    assert!(!mlir.contains("unsupported"), "{mlir}");
    insta::assert_snapshot!("kmeans_update_host_mlir", mlir);
}

/// The k-means update's GPU kernel, compiled to PTX here (no GPU needed) and assembled by
/// `ptxas` where installed: shared-memory bins (the float sums in private copies, the integer
/// counts by shared atomics), the tile's rows staged in shared memory, barriers, one counter
/// atomic to find the last block, and no local memory.
#[test]
fn kmeans_update_gpu_kernel_ptx() {
    let (x, c) = kmeans_data(4096, 64, 10);
    let labels = sq_distances(&x, &c).argmin(1);
    let sums = kiln::zeros(&[10, 64], DType::Float32).add_at(&labels, &x);
    let counts = kiln::bincount(&labels, None, 10);
    let k = crate::support::only_gpu_kernel(&[&sums, &counts]);
    let gs = k.kernel.gpu_scatter.expect("a GPU scatter kernel");
    assert_eq!(gs.blocks, 32, "4096 positions in tiles of 128, a block each");
    let ptx = &k.ptx;
    let has = |p: &str| {
        ptx.lines().any(|l| l.trim_start().starts_with(p) || l.contains(&format!(" {p}")))
    };
    // The counts' bins: an atomic add a position, or (bins owned by threads) a mark in the
    // position's row mask.
    let counts = match crate::scatter_epilogue::bins_owned() {
        true => "atom.shared.or.b32",
        false => "atom.shared.add.u64",
    };
    for p in ["bar.sync", counts, "atom.global.add.u32", "st.shared.b32", "ld.shared.b32"] {
        assert!(has(p) || ptx.contains(p), "{p} in the PTX:\n{ptx}");
    }
    assert!(!ptx.contains(".local"), "local memory:\n{ptx}");
    // The lines that make it a scatter: barriers, shared-memory atomics (the counts' or the
    // masks'), the counter that finds the last block, and the fence before it.
    let lines: Vec<&str> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| ["bar.sync", "atom.", "fence.", "membar"].iter().any(|p| l.starts_with(p)))
        .collect();
    // Register numbers change with any change of the code around: not part of the snapshot.
    let lines: Vec<String> = lines.iter().map(|l| without_register_numbers(l)).collect();
    let name = match crate::scatter_epilogue::bins_owned() {
        true => "kmeans_update_ptx_sync_lines",
        false => "kmeans_update_ptx_sync_lines_bins_copies",
    };
    insta::assert_snapshot!(name, lines.join("\n"));
    if let Some(ptxas) = crate::ptxas() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("scatter.ptx");
        std::fs::write(&file, ptx.as_bytes()).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args(["-arch=sm_90", "-v", "-o"])
            .arg(dir.path().join("scatter.cubin"))
            .arg(&file)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "ptxas: {report}");
        eprintln!("{report}");
    }
}

#[test]
fn take_clips_where_asked() {
    // np.take([10, 20, 30, 40], [-5, -1, 2, 9], mode='clip') -> [10, 10, 30, 40] (clip disables
    // negative indices); mode='wrap' -> [40, 40, 30, 20]; and with lazy indices the same.
    let a = Array::from_vec(vec![10i32, 20, 30, 40], &[4]);
    let idx = Array::from_vec(vec![-5i64, -1, 2, 9], &[4]);
    assert_eq!(
        a.try_take_mode(&idx, Some(0), kiln::TakeMode::Clip).unwrap().to_vec::<i32>(),
        vec![10, 10, 30, 40]
    );
    assert_eq!(
        a.try_take_mode(&lazy(&idx), None, kiln::TakeMode::Clip).unwrap().to_vec::<i32>(),
        vec![10, 10, 30, 40]
    );
    assert_eq!(a.take(&lazy(&idx), Some(0)).to_vec::<i32>(), vec![40, 40, 30, 20]);
    assert_eq!(
        a.take_mode(&lazy(&idx), Some(0), kiln::TakeMode::Wrap).to_vec::<i32>(),
        vec![40, 40, 30, 20]
    );
    // host indices out of range with the default mode are an error, as NumPy's mode="raise"
    assert!(a.try_take(&idx, Some(0)).is_err());
}

#[test]
fn mixed_index_errors() {
    let x = Array::from_vec((0..24).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3, 4]);
    let f = Array::from_vec(vec![0.0f32], &[1]);
    let e = err(x.try_index(&[(&f).into()]));
    assert!(e.contains("index") && e.contains("integer") && e.contains("float32"), "{e}");
    let (i2, i3) = (Array::from_vec(vec![0i64, 1], &[2]), Array::from_vec(vec![0i64, 1, 2], &[3]));
    let e = err(x.try_index(&[(&i2).into(), (&i3).into()]));
    assert!(e.contains("index") && e.contains("(2,)") && e.contains("(3,)"), "{e}");
    let e = err(x.try_index(&[(..).into(), (&Array::from_vec(vec![3i64], &[1])).into()]));
    assert!(e.starts_with("index: index 3 is out of bounds for axis 1 with size 3"), "{e}");
    let e = err(x.try_index(&[(&i2).into(), (..).into(), (..).into(), (..).into()]));
    assert!(e.contains("too many indices"), "{e}");
}

/// Bins that do not fit a GPU block's shared memory (20,000 float32 and 50,000 int64): on the
/// GPU the sums go straight to the outputs by global atomics; on either backend the result is
/// NumPy's within float rounding (exact for the integer counts).
#[test]
fn scatters_into_many_bins() {
    let n = 100_000usize;
    let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919 + i / 3) % 20_000).collect();
    let vals: Vec<f32> = (0..n).map(|i| ((i * 31 % 97) as f32) / 8.0 - 6.0).collect();
    let (ia, va) = (Array::from_vec(idx.clone(), &[n]), Array::from_vec(vals.clone(), &[n]));
    let base = kiln::arange(20_000).astype(DType::Float32);
    let got: Vec<f32> = base.add_at(&(&ia + 0), &va).to_vec();
    let mut want: Vec<f64> = (0..20_000).map(|i| i as f64).collect();
    for (&i, &v) in idx.iter().zip(&vals) {
        want[i as usize] += v as f64;
    }
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((*g as f64 - w).abs() <= 1e-3 * w.abs().max(1.0), "bin {k}: {g} vs {w}");
    }
    let labels = (&ia * 5 + 3) % 50_000;
    let counts: Vec<i64> = kiln::bincount(&labels, None, 50_000).to_vec();
    let mut want = vec![0i64; 50_000];
    for &i in &idx {
        want[((i * 5 + 3) % 50_000) as usize] += 1;
    }
    assert_eq!(counts, want);
}

#[test]
fn many_bins_gpu_kernel_uses_global_atomics() {
    let ia = &Array::from_vec((0..4096i64).collect::<Vec<_>>(), &[4096]) + 0;
    let va = Array::from_vec(vec![1.0f32; 4096], &[4096]);
    let s = kiln::zeros(&[1 << 20], DType::Float32).add_at(&ia, &va);
    let k = crate::support::scatter_gpu_kernel(&s).unwrap();
    assert!(k.kernel.gpu_scatter.expect("a GPU scatter").zero_outputs);
    let report = kiln::explain(&[&s]).report.to_string();
    assert!(report.contains("scatter: GPU: global atomics into the output"), "{report}");
    assert!(
        k.ptx.contains("atom.global.add.f32") || k.ptx.contains("red.global.add.f32"),
        "{}",
        k.ptx
    );
    // A maximum into as many bins has no GPU kernel (the host runs it).
    let m = kiln::zeros(&[1 << 20], DType::Float32).maximum_at(&ia, &va);
    assert!(matches!(
        crate::support::scatter_gpu_kernel(&m),
        Err(kiln_compiler::CompileError::Unsupported { .. })
    ));
    let report = kiln::explain(&[&m]).report.to_string();
    assert!(
        report.contains("scatter: GPU: on the host (maximum bins of 1048576 elements"),
        "{report}"
    );
}

/// A PTX line with its registers' numbers taken out (`%rd85` → `%rd`).
pub(crate) fn without_register_numbers(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_register = false;
    for ch in line.chars() {
        if ch == '%' {
            in_register = true;
        } else if in_register && ch.is_ascii_digit() {
            continue;
        } else if !ch.is_ascii_alphabetic() {
            in_register = false;
        }
        out.push(ch);
    }
    out
}

/// Host scatters of many positions into few bins run in private copies (2^19 positions into
/// 4096 bins: 4 copies, combined in chunk order) and give the reference evaluator's bits for
/// every dtype class and combine: duplicates, wrapping integers, NaNs for maximum/minimum,
/// -0.0 values in sums and untouched bins keeping a -0.0 starting value; starting arrays that
/// are broadcast constants, held inputs (reshaped) and computed ones.
#[test]
fn host_scatter_copies_match_the_evaluator_bit_for_bit() {
    use kiln_compiler::pipeline::{compile, Options};
    use kiln_exec::cpu::{run_plan, HostRun};
    let (n, bins) = (1usize << 19, 4096usize);
    // Positions in the first half of the bins only: the others keep their starting value.
    let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919 + i / 5) % (bins as i64 / 2)).collect();
    let idx = Array::from_vec(idx, &[n]);
    let k = |i: usize| (i * 31 + i / 7) % 9;
    // Sums: -0.0, +0.0 and small integers (exact sums in every dtype, whatever the order).
    let sum_vals: Vec<f64> =
        (0..n).map(|i| if k(i) == 0 { -0.0 } else { k(i) as f64 - 5.0 }).collect();
    // Maxima and minima: no zeros (a tie of +0.0 and -0.0 keeps whichever came last), a few
    // NaNs.
    let ext_vals: Vec<f64> = (0..n)
        .map(|i| {
            if i % 5003 == 0 {
                f64::NAN
            } else {
                [-4.0, -3.0, -2.0, -1.0, 1.0, 2.0, 3.0, 4.0, 5.0][k(i)]
            }
        })
        .collect();
    let held_start: Vec<f64> = (0..bins).map(|b| (b * 13 % 7) as f64 - 3.0).collect();
    let held = Array::from_vec(held_start, &[64, 64]);
    let (sum_vals, ext_vals) = (Array::from_vec(sum_vals, &[n]), Array::from_vec(ext_vals, &[n]));
    for dt in [
        DType::Float32,
        DType::Float64,
        DType::Float16,
        DType::BFloat16,
        DType::Complex64,
        DType::Int8,
        DType::UInt16,
        DType::Int64,
        DType::UInt64,
        DType::Bool,
    ] {
        let (sv, ev) = if dt.is_inexact() {
            (sum_vals.astype(dt), ext_vals.astype(dt))
        } else {
            // integers: no NaNs, unsigned ones shifted to be non-negative
            let ev = kiln::where_(&ext_vals.isnan(), 1.0, &ext_vals);
            let shift = if !dt.is_unsigned_integer() { 0.0 } else { 5.0 };
            ((&sum_vals + shift).astype(dt), (&ev + shift).astype(dt))
        };
        let start = held.reshape(&[bins as i64]);
        let mut outs = vec![kiln::full(&[bins], -0.0, DType::Float64).astype(dt).add_at(&idx, &sv)];
        if !dt.is_complex() {
            outs.push(start.astype(dt).maximum_at(&idx, &ev));
            outs.push(kiln::full(&[bins], 0.5, dt).minimum_at(&idx, &ev));
        }
        if dt == DType::Float64 {
            outs.push(start.maximum_at(&idx, &ev));
            outs.push(held.reshape(&[bins as i64]).minimum_at(&idx, &ev));
            outs.push(start.add_at(&idx, &sv));
        }
        let refs: Vec<&Array> = outs.iter().collect();
        let lowered = kiln::lower(&refs);
        let inputs: Vec<&kiln::HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
        let reference = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
        let plan = compile(&lowered.graph, &Options::from_env()).unwrap();
        let got = run_plan(&plan, &inputs, HostRun::Compiled).unwrap();
        assert_eq!(got.len(), reference.len());
        for (o, (g, r)) in got.iter().zip(&reference).enumerate() {
            assert_eq!(g.dtype(), r.dtype(), "{dt} output {o}");
            // Debug prints -0.0 and NaN, and each float exactly (shortest round trip).
            assert_eq!(format!("{:?}", g.data()), format!("{:?}", r.data()), "{dt} output {o}");
        }
    }
}

/// The backend's values of `outs` and the evaluator's, as float64 (labels, one-hot rows).
fn backend_and_evaluator(outs: &[&Array]) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let l = kiln::lower(outs);
    let inputs: Vec<&kiln::ir::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
    let want = want
        .iter()
        .map(|h| match h.dtype() {
            DType::Int64 => h.as_slice::<i64>().unwrap().iter().map(|&v| v as f64).collect(),
            DType::Float32 => h.as_slice::<f32>().unwrap().iter().map(|&v| f64::from(v)).collect(),
            dt => panic!("{dt}"),
        })
        .collect();
    let got = outs
        .iter()
        .map(|a| match a.dtype() {
            DType::Int64 => a.to_vec::<i64>().iter().map(|&v| v as f64).collect(),
            DType::Float32 => a.to_vec::<f32>().iter().map(|&v| f64::from(v)).collect(),
            dt => panic!("{dt}"),
        })
        .collect();
    (got, want)
}

/// Points and centres where a float32 sum of the squared distances picks another centre than
/// the evaluator (a near tie), exact ties, zero distances, NaNs, infinities, overflowing and
/// subnormal squares, then ordinary points: the argmin and argmax of the distances are
/// screened in float32 by the kernels (`lower/screen.rs`) and must fold these exactly. Each
/// point's labels come back from a scatter kernel (one-hot rows added at the labels) and from a
/// reduction kernel, against the evaluator's.
#[test]
fn screened_labels_fold_near_ties_exactly() {
    let d = 512;
    // A point of `d` zeros with `(position, value)` set.
    let row = |set: &[(usize, f32)]| {
        let mut r = vec![0.0f32; d];
        for &(i, v) in set {
            r[i] = v;
        }
        r
    };
    // A: 1 at 0 and e at 64, 128, ..., 448: e² < 2^-24, so 1 + e² is 1 in float32, and a
    // float32 sum that adds them to the 1 one at a time (in order, or in any number of
    // accumulators up to 64 taking every 64th term) is 1; their value 1 + 4.2·2^-24 rounds to
    // 1 + 2^-22. B: 1 at 0 and g at 64: 1 + g² rounds to 1 + 2^-23 in any order. The
    // evaluator's nearest to the origin is B, a float32 sum's A.
    let e = 0.7746f32 * (-12f32).exp2();
    let g = 3.0881e-4f32;
    let a_row =
        row(&[(0, 1.0), (64, e), (128, e), (192, e), (256, e), (320, e), (384, e), (448, e)]);
    let mut centres = a_row.clone();
    centres.extend(row(&[(0, 1.0), (64, g)]));
    // C, D: the same distance from (0, ..., 0, 5) (an exact tie); E: far away.
    centres.extend(row(&[(0, -1.0), (d - 1, 5.0)]));
    centres.extend(row(&[(0, 1.0), (d - 1, 5.0)]));
    centres.extend(vec![100.0f32; d]);
    let k = centres.len() / d;
    let mut points: Vec<Vec<f32>> = vec![
        row(&[]),             // the near tie of A and B
        a_row,                // a zero distance
        row(&[(d - 1, 5.0)]), // the tie of C and D
        row(&[(3, f32::NAN)]),
        row(&[(0, 1e30)]), // squares overflow: every distance inf
        vec![1e18; d],     // sums near float32's largest
        row(&[(0, 1e-23), (1, -1e-23), (7, 1e-22)]), // subnormal squares
        [vec![100.0f32; d - 1], vec![100.000_01]].concat(),
    ];
    let mut s = 7u64;
    for _ in 0..300 {
        let p: Vec<f32> = (0..d)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            })
            .collect();
        points.push(p);
    }
    let n = points.len();
    let x = Array::from_vec(points.concat(), &[n, d]);
    let c = Array::from_vec(centres, &[k, d]);
    let dist = sq_distances(&x, &c);
    let (lmin, lmax) = (dist.argmin(1), dist.argmax(1));
    let (got, want) = backend_and_evaluator(&[&lmin, &lmax]);
    assert_eq!(got, want, "labels (argmin, argmax) against the evaluator");
    assert_eq!(
        &want[0][..3],
        &[1.0, 0.0, 2.0],
        "B nearest the origin, A to itself, C the first of a tie"
    );
    // The same labels inside scatter kernels: row i of the one-hot matrix added at label i.
    let one_hot = kiln::eye(n, None, 0, DType::Float32);
    let smin = kiln::zeros(&[k, n], DType::Float32).add_at(&lmin, &one_hot);
    let smax = kiln::zeros(&[k, n], DType::Float32).add_at(&lmax, &one_hot);
    let counts = kiln::bincount(&lmin, None, k);
    let ex = kiln::explain(&[&smin, &smax, &counts]);
    assert!(ex.report.to_string().contains("scatter"), "{}", ex.report);
    let (got, want) = backend_and_evaluator(&[&smin, &smax]);
    assert_eq!(got, want, "one-hot rows scattered at the labels, against the evaluator");
}

/// Labels among 11 centres (the host screen merges their float32 sums in a tree of four
/// levels, or in vector reductions, `lower/screen.rs`) on a coarse grid: coordinates are small
/// integers, some moved by 2^-11, 2^-18 or 2^-20, so that near ties (apart by less than the
/// screen's bound: about 250, 50 and 25 of the 3,000 points below by NumPy's float32 sums;
/// with 16 and 48 coordinates one whose float32 sums pick another centre) fall between centres in the same and
/// in different subtrees, and between a best and each runner-up position. Labels by argmin and
/// argmax, in a reduction kernel and in a scatter kernel with the counts, against the evaluator;
/// points of 6 coordinates (scalar sums) and of 16 and 48 (the host's sums in vectors of 16
/// lanes).
#[test]
fn screened_labels_of_many_centres_on_a_grid_match_the_evaluator() {
    for d in [6, 16, 48] {
        grid_labels(d);
    }
}

fn grid_labels(d: usize) {
    let (n, k) = (3000, 11);
    let mut s = 11u64;
    let mut next = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s >> 33
    };
    let mut coord = || {
        let r = next();
        let nudge = match r % 8 {
            0 => (-11f32).exp2(),
            1 => -(-18f32).exp2(),
            2 => (-20f32).exp2(),
            _ => 0.0,
        };
        ((r / 8) % 3) as f32 - 1.0 + nudge
    };
    let x: Vec<f32> = (0..n * d).map(|_| coord()).collect();
    let c: Vec<f32> = (0..k * d).map(|_| coord()).collect();
    let (x, c) = (Array::from_vec(x, &[n, d]), Array::from_vec(c, &[k, d]));
    let dist = sq_distances(&x, &c);
    let (lmin, lmax) = (dist.argmin(1), dist.argmax(1));
    let (got, want) = backend_and_evaluator(&[&lmin, &lmax]);
    assert_eq!(got, want, "labels (argmin, argmax) against the evaluator, d = {d}");
    let spread = (0..n).filter(|&i| want[0][i] != 0.0).count();
    assert!(spread > n / 2, "labels spread over the centres: {spread}, d = {d}");
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&lmin, &x);
    let smax = kiln::zeros(&[k, d], DType::Float32).add_at(&lmax, &x);
    let counts = kiln::bincount(&lmin, None, k);
    let cmax = kiln::bincount(&lmax, None, k);
    let (got, want) = backend_and_evaluator(&[&sums, &smax, &counts, &cmax]);
    assert_eq!(got[2..], want[2..], "counts at the labels, against the evaluator, d = {d}");
    // Float32 sums of m terms (|x| < 1.01) in another order (the GPU's bins and combines):
    // within recursive summation's bound, (m - 1)·2^-24·Σ|x|.
    for (s, c) in [(0, 2), (1, 3)] {
        for (e, (g, w)) in got[s].iter().zip(&want[s]).enumerate() {
            let m = want[c][e / d];
            let bound = m * m * 1.01 * (-24f64).exp2();
            assert!(
                (g - w).abs() <= bound,
                "sum {s}, element {e}: {g} vs {w} ({m} terms), d = {d}"
            );
        }
    }
}
