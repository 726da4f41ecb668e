//! Order statistics by selection on a CUDA device: `sort_take` regions (median, quantile,
//! percentile and their NaN-skipping forms) run by `kiln-exec`'s `cuda/radix_select.cu` (a block
//! a line in shared memory) or, for long lines, the radix sort then a gather; against the
//! reference evaluator bit for bit (the element the stable sort puts at each position: ±0 in
//! their order, NaN last), for every real dtype, ties, one-element lines, lines at the shared
//! memory limit and past it, positions per line (`nanmedian`). Every test is named
//! `gpu_select_...` and returns at once without a CUDA backend (`on_gpu`).
//!
//! `topk` (an `argtopk` region: `cuda/radix_topk.cu`) likewise: `gpu_topk_...`.
//!
//! Run on the GPU machine: `KILN_DEVICE=cuda:0 ./main gpu_select`, `./main gpu_topk`.

use kiln::{Array, DType};
use kiln_exec::RanCode;

use crate::sorts_gpu::{data, matches_evaluator_when, REAL};
use crate::vendor_gpu::on_gpu;

/// Materialises `outs` on the device, checks that the GPU's radix select ran (`select`; else
/// its radix sort, for lines too long), and compares each with the reference evaluator's value
/// of the same graph, bit for bit but NaN payloads.
fn matches_evaluator(outs: &[&Array], select: bool, what: &str) {
    let ran = |c: &RanCode| {
        matches!((c, select), (RanCode::GpuRadixSelect, true) | (RanCode::GpuRadixSort, false))
    };
    let how = if select { "radix select" } else { "radix sort" };
    matches_evaluator_when(outs, ran, true, &format!("{what}: the GPU's {how} ran"));
}

#[test]
fn gpu_select_of_every_real_dtype_matches_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for (k, dt) in REAL.into_iter().enumerate() {
        // 23 lines of 601 elements (ties, NaN, ±0, ±inf).
        let x = data(dt, 23 * 601, k as u64).reshape(&[23, 601]);
        let what = |f: &str| format!("{f} {dt}");
        matches_evaluator(&[&x.median(Some(-1))], true, &what("median"));
        matches_evaluator(&[&x.quantile(0.3, Some(1))], true, &what("quantile"));
        matches_evaluator(&[&x.percentile(99.5, Some(-1))], true, &what("percentile"));
        matches_evaluator(&[&x.nanmedian(Some(1))], true, &what("nanmedian"));
        matches_evaluator(&[&x.nanquantile(0.0, Some(1))], true, &what("nanquantile"));
    }
}

#[test]
fn gpu_select_of_signed_zeros_and_nans_keeps_their_order() {
    if !on_gpu() {
        return;
    }
    // The middle element of each line is a zero or a NaN among equal keys: the evaluator's
    // (stable) element, its sign bit included.
    let rows: Vec<f64> = vec![
        -0.0,
        0.0,
        -0.0,
        1.0,
        -1.0, // the second zero in order: +0.0
        0.0,
        -0.0,
        0.0,
        -0.0,
        -0.0, // zeros only: the third: 0.0
        -0.0,
        -0.0,
        5.0,
        0.0,
        -2.0, // -0.0
        f64::NAN,
        1.0,
        -f64::NAN,
        2.0,
        f64::NAN, // NaN last: median NaN
        3.0,
        3.0,
        3.0,
        3.0,
        3.0,
    ];
    for dt in [DType::Float64, DType::Float32, DType::Float16, DType::BFloat16] {
        let x = Array::from_vec(rows.clone(), &[5, 5]).astype(dt).eval().clone();
        matches_evaluator(&[&x.median(Some(1))], true, &format!("median {dt}"));
        matches_evaluator(&[&x.quantile(0.25, Some(1))], true, &format!("quantile {dt}"));
        matches_evaluator(&[&x.nanmedian(Some(1))], true, &format!("nanmedian {dt}"));
    }
}

#[test]
fn gpu_select_of_lines_around_the_shared_memory_limit() {
    if !on_gpu() {
        return;
    }
    // One element, two, a line at SELECT_SHARED bytes (in shared memory) and one past it (the
    // radix sort, then a gather: no radix select), float32 and float64.
    let limit = kiln_compiler::codegen::SELECT_SHARED;
    for (dt, n, lines, select) in [
        (DType::Float32, 1, 3, true),
        (DType::Float32, 2, 5, true),
        (DType::Int64, 3, 1, true),
        (DType::Float32, limit / 4, 2, true),
        (DType::Float64, limit / 8 + 1, 2, false),
        (DType::Int32, limit / 4 + 1, 1, false),
    ] {
        let x = data(dt, n * lines, n as u64).reshape(&[lines as i64, n as i64]);
        let what = format!("{lines} x {n} {dt}");
        matches_evaluator(&[&x.median(Some(1))], select, &format!("median {what}"));
        matches_evaluator(&[&x.quantile(0.61, Some(1))], select, &format!("quantile {what}"));
        matches_evaluator(&[&x.nanmedian(Some(1))], select, &format!("nanmedian {what}"));
    }
}

#[test]
fn gpu_select_of_many_lines_and_whole_arrays() {
    if !on_gpu() {
        return;
    }
    // 4096 lines of 96 (small blocks), a 3-d array's last axis, and axis None of a long array
    // (the radix sort of one line).
    let x = data(DType::Float32, 4096 * 96, 5).reshape(&[4096, 96]);
    matches_evaluator(&[&x.median(Some(1))], true, "median 4096 x 96");
    let y = data(DType::Int16, 6 * 7 * 300, 6).reshape(&[6, 7, 300]);
    matches_evaluator(&[&y.percentile(12.5, Some(-1))], true, "percentile 6 x 7 x 300");
    let z = data(DType::Float32, (1 << 18) + 3, 7);
    matches_evaluator(&[&z.median(None)], false, "median of 2^18 + 3");
}

/// `topk`'s positions (an `argtopk` region, `cuda/radix_topk.cu`) and values against the
/// evaluator, exactly: equal elements in line order, NaN the largest, ±0 equal.
fn topk_matches(x: &Array, k: usize, largest: bool, on_gpu_kernel: bool, what: &str) {
    let (vals, pos) = kiln::topk(x, k, -1, largest);
    let ran = |c: &RanCode| matches!(c, RanCode::GpuRadixSelect);
    let claim = format!("topk {what} k={k} largest={largest}: the GPU's top-k ran");
    crate::sorts_gpu::matches_evaluator_when(&[&pos, &vals], ran, on_gpu_kernel, &claim);
}

#[test]
fn gpu_topk_of_every_real_dtype_matches_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for (s, dt) in REAL.into_iter().enumerate() {
        // 23 lines of 601 elements (ties, NaN, ±0, ±inf).
        let x = data(dt, 23 * 601, 40 + s as u64).reshape(&[23, 601]);
        for k in [1, 2, 16, 300, 601] {
            for largest in [true, false] {
                topk_matches(&x, k, largest, true, &format!("23 x 601 {dt}"));
            }
        }
    }
}

#[test]
fn gpu_topk_of_ties_many_lines_and_limits() {
    if !on_gpu() {
        return;
    }
    // Lines of one repeated value (every element ties with the threshold), of few values.
    let same = Array::from_vec(vec![-0.0f32; 5 * 700], &[5, 700]);
    let few: Vec<i32> = (0..7 * 999).map(|i| (i * 7919 % 13) % 3).collect();
    let few = Array::from_vec(few, &[7, 999]);
    for largest in [true, false] {
        topk_matches(&same, 33, largest, true, "zeros");
        topk_matches(&few, 700, largest, true, "three values");
    }
    // Many short lines, a 3-d array's last axis, 1024 positions (the most), a line at the
    // shared-memory limit, one element.
    let limit = kiln_compiler::codegen::SELECT_SHARED;
    let max = kiln_compiler::codegen::TOPK_MAX;
    let cases: [(DType, &[i64], usize); 5] = [
        (DType::Float32, &[4096, 96], 5),
        (DType::Int16, &[6, 7, 300], 9),
        (DType::Float64, &[3, 5000], max),
        (DType::Float32, &[2, (limit / 4) as i64], 7),
        (DType::UInt8, &[4, 1], 1),
    ];
    for (dt, shape, k) in cases {
        let x = data(dt, shape.iter().product::<i64>() as usize, k as u64).reshape(shape);
        topk_matches(&x, k, true, true, &format!("{shape:?} {dt}"));
    }
    // Past the kernel's reach: more positions than TOPK_MAX, a line past the shared memory
    // (the host selects, the same positions).
    let x = data(DType::Float32, 2 * 3000, 9).reshape(&[2, 3000]);
    topk_matches(&x, max + 1, true, false, "past TOPK_MAX");
    let x = data(DType::Float32, limit / 4 + 1, 10).reshape(&[1, (limit / 4 + 1) as i64]);
    topk_matches(&x, 3, false, false, "past the shared memory");
}
