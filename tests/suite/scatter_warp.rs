//! GPU scatters of one-element rows (`add_at` of a 1-D array, `maximum_at`, `minimum_at`,
//! weighted `bincount`) with a copy of the bins per warp (`KILN_GPU_SCATTER_WARP`, on unless
//! the environment says off; `compiler/src/codegen/lower/scatter/warp.rs`): the kernel's PTX
//! (warp match and vote, no shared-memory atomics, nothing spilled), and on a CUDA device the
//! results against the reference evaluator bit for bit where any order gives the same bits
//! (small integers, NaN maxima), with rows repeated inside a warp (runs of one row, a single
//! row), partial tiles and starting arrays; and the same bits every run where the order matters.
//! Tests named `gpu_...` return at once without a CUDA backend (`on_gpu`).

use kiln::{Array, DType};
use kiln_exec::RanCode;

use crate::sorts_gpu::matches_evaluator_when;
use crate::vendor_gpu::on_gpu;

/// Whether the per-warp bins are on (`KILN_GPU_SCATTER_WARP`, on unless the environment says
/// off).
fn per_warp() -> bool {
    !std::env::var("KILN_GPU_SCATTER_WARP")
        .is_ok_and(|v| ["0", "off", "false", "no"].contains(&v.trim().to_lowercase().as_str()))
}

/// A reproducible stream of 64-bit numbers (SplitMix64).
fn mix(i: u64, seed: u64) -> u64 {
    let mut z = i.wrapping_add(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` row indices into `bins` rows: spread at random (`run` 1), or in runs of `run` equal
/// rows (a warp's 32 positions then share a few rows), computed on the device (`+ 0`).
fn labels(n: usize, bins: usize, run: usize, seed: u64) -> Array {
    let v: Vec<i64> =
        (0..n as u64).map(|i| (mix(i / run as u64, seed) % bins as u64) as i64).collect();
    &Array::from_vec(v, &[n]) + 0
}

/// `n` small integers -8..8 and -0.0 as `dt` (sums exact in any order).
fn small_values(n: usize, dt: DType, seed: u64) -> Array {
    let v: Vec<f64> = (0..n as u64)
        .map(|i| match mix(i, seed) % 18 {
            17 => -0.0,
            k => k as f64 - 8.0,
        })
        .collect();
    Array::from_vec(v, &[n]).astype(dt)
}

/// The one scatter region of `out`, compiled to PTX for the GPU.
fn scatter_ptx(out: &Array) -> String {
    let k = crate::support::scatter_gpu_kernel(out).unwrap();
    assert!(k.kernel.gpu_scatter.is_some(), "a GPU scatter kernel");
    if let Some(path) = std::env::var_os("KILN_TEST_PTX_OUT") {
        std::fs::write(path, k.ptx.as_bytes()).unwrap();
    }
    k.ptx.to_string()
}

/// `bincount` of 2^18 labels into 1024 bins without tiles: its int64 counts by shared-memory
/// atomics, no block barrier between its loads of positions and its atomics (the tiles have
/// two), no warp match.
#[test]
fn one_element_integer_bins_take_no_tiles() {
    let counts = kiln::bincount(&labels(1 << 18, 1024, 1, 1), None, 1024);
    let report = kiln::explain(&[&counts]).report.to_string();
    assert_eq!(
        per_warp(),
        report.contains("scatter: GPU: shared-memory bins without tiles"),
        "{report}"
    );
    let ptx = scatter_ptx(&counts);
    let lines: Vec<&str> = ptx.lines().map(str::trim_start).collect();
    let first = lines.iter().position(|l| l.starts_with("ld.global.nc")).unwrap();
    let last = lines.iter().rposition(|l| l.starts_with("atom.shared.add")).unwrap();
    let bars = lines[first..last].iter().filter(|l| l.starts_with("bar.sync")).count();
    assert!(!ptx.contains("match.any"), "{ptx}");
    if per_warp() {
        assert_eq!(bars, 0, "{ptx}");
    } else {
        assert!(bars >= 1, "{ptx}");
    }
}

/// `add_at` of 2^18 float32 into 1024 bins: with the per-warp bins, the kernel matches each
/// warp's rows (`match.any.sync`), votes on what is left (`vote.sync.any`), has no atomic in
/// shared memory and spills nothing; with them off, no match. Float64 into 1024 bins (8 copies
/// of 8 KiB do not fit 48 KiB) keeps the copies of groups.
#[test]
fn one_element_bins_take_a_copy_per_warp() {
    let n = 1 << 18;
    // (Float64 first: `KILN_TEST_PTX_OUT` keeps the float32 kernel's PTX.)
    let wide = scatter_ptx(
        &kiln::zeros(&[1024], DType::Float64)
            .add_at(&labels(n, 1024, 1, 1), &small_values(n, DType::Float64, 2)),
    );
    assert!(!wide.contains("match.any.sync"), "{wide}");
    let ptx = scatter_ptx(
        &kiln::zeros(&[1024], DType::Float32)
            .add_at(&labels(n, 1024, 1, 1), &small_values(n, DType::Float32, 2)),
    );
    let count = |p: &str| ptx.lines().filter(|l| l.trim_start().starts_with(p)).count();
    let (matches, votes, atoms) =
        (count("match.any.sync"), count("vote.sync.any"), count("atom.shared"));
    if per_warp() {
        assert!(!ptx.contains(".local"), "local memory:\n{ptx}");
        assert!(
            matches >= 1 && votes >= 1 && atoms == 0,
            "{matches} matches, {votes} votes, {atoms} shared atomics:\n{ptx}"
        );
        // After the last position's store into a warp's copy, a block barrier before any
        // shared load (the copies' combine reads every warp's copy).
        let lines: Vec<&str> = ptx.lines().map(str::trim_start).collect();
        let last = lines.iter().rposition(|l| l.starts_with("match.any.sync")).unwrap();
        let stored = last + lines[last..].iter().position(|l| l.starts_with("st.shared")).unwrap();
        let next = lines[stored + 1..]
            .iter()
            .find(|l| l.starts_with("ld.shared") || l.starts_with("bar.sync"));
        assert!(next.is_some_and(|l| l.starts_with("bar.sync")), "{ptx}");
    } else {
        assert_eq!(matches, 0, "{ptx}");
    }
}

/// Whether a GPU scatter kernel ran.
fn gpu_scatter_ran(c: &RanCode) -> bool {
    matches!(c, RanCode::Gpu(g) if g.0.kernel.gpu_scatter.is_some())
}

/// On the device, sums, maxima (with NaNs) and minima of one-element rows against the
/// evaluator, bit for bit: float32 and float64, 1024, 100 and 1 bins, rows at random and in
/// runs of 7 and 64 (a warp's positions on one or a few rows), zeros and computed starting
/// arrays, a size that leaves a partial step, a weighted `bincount`; integer bins (one copy,
/// atomics): `bincount`, int32 sums, int64 maxima, uint32 minima.
#[test]
fn gpu_one_element_bins_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    let n = 3 * (1 << 16) + 77;
    for dt in [DType::Float32, DType::Float64] {
        for (bins, run) in [(1024usize, 1usize), (1024, 7), (100, 1), (100, 64), (1, 1)] {
            let what = format!("{dt} into {bins} bins, runs of {run}");
            let idx = labels(n, bins, run, bins as u64 + run as u64);
            let v = small_values(n, dt, 5);
            let sums = kiln::zeros(&[bins], dt).add_at(&idx, &v);
            matches_evaluator_when(&[&sums], gpu_scatter_ran, true, &format!("sums, {what}"));
            let start = (kiln::arange(bins as i64) % 5i64).astype(dt) - 2.0;
            let sums = start.add_at(&idx, &v);
            matches_evaluator_when(
                &[&sums],
                gpu_scatter_ran,
                true,
                &format!("sums on arange, {what}"),
            );
            // NaNs at every 1001st position: NaN maxima and minima in any order.
            let nan = kiln::arange(n as i64) % 1001i64;
            let w = kiln::where_(&nan.equal(0i64), f64::NAN, &v);
            let hi = kiln::full(&[bins], -100.0, dt).maximum_at(&idx, &w);
            let lo = kiln::full(&[bins], 100.0, dt).minimum_at(&idx, &w);
            matches_evaluator_when(&[&hi], gpu_scatter_ran, true, &format!("maxima, {what}"));
            matches_evaluator_when(&[&lo], gpu_scatter_ran, true, &format!("minima, {what}"));
        }
    }
    let idx = labels(n, 100, 3, 9);
    let weights = small_values(n, DType::Float64, 4);
    let counts = kiln::bincount(&idx, Some(&weights), 100);
    matches_evaluator_when(&[&counts], gpu_scatter_ran, true, "weighted bincount");
    // Integer bins: one copy, atomics.
    for bins in [1024usize, 7] {
        let idx = labels(n, bins, 5, 13);
        let counts = kiln::bincount(&idx, None, bins);
        matches_evaluator_when(&[&counts], gpu_scatter_ran, true, &format!("bincount, {bins}"));
        let v = small_values(n, DType::Float32, 6);
        let sums = kiln::zeros(&[bins], DType::Int32).add_at(&idx, &v.astype(DType::Int32));
        let hi = kiln::zeros(&[bins], DType::Int64).maximum_at(&idx, &v.astype(DType::Int64));
        let lo =
            kiln::zeros(&[bins], DType::UInt32).minimum_at(&idx, &(&v + 9.0).astype(DType::UInt32));
        for (out, what) in [(&sums, "int32 sums"), (&hi, "int64 maxima"), (&lo, "uint32 minima")] {
            matches_evaluator_when(&[out], gpu_scatter_ran, true, &format!("{what}, {bins}"));
        }
    }
}

/// On the device, float32 sums whose bits depend on the order (values of many magnitudes) are
/// the same bits on each of 10 runs, within rounding of the evaluator's.
#[test]
fn gpu_one_element_bins_are_the_same_bits_every_run() {
    if !on_gpu() {
        return;
    }
    let n = (1 << 20) + 5;
    let idx = labels(n, 1024, 3, 11);
    let v: Vec<f32> = (0..n as u64).map(|i| (mix(i, 12) % 100_003) as f32 / 977.0 - 51.0).collect();
    let v = Array::from_vec(v, &[n]);
    let first: Vec<f32> = kiln::zeros(&[1024], DType::Float32).add_at(&idx, &v).to_vec();
    for run in 0..9 {
        let again: Vec<f32> = kiln::zeros(&[1024], DType::Float32).add_at(&idx, &v).to_vec();
        let same = first.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "run {run} differs");
    }
    let (vs, is): (Vec<f32>, Vec<i64>) = (v.to_vec(), idx.to_vec());
    let mut want = vec![0f64; 1024];
    let mut mag = vec![0f64; 1024];
    for (&i, &x) in is.iter().zip(&vs) {
        want[i as usize] += x as f64;
        mag[i as usize] += (x as f64).abs();
    }
    for (b, ((g, w), m)) in first.iter().zip(&want).zip(&mag).enumerate() {
        assert!((*g as f64 - w).abs() <= 1e-5 * m.max(1.0), "bin {b}: {g} vs {w}");
    }
}
