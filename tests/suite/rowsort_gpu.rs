//! Sorts of short lines on a CUDA device: the block radix sort per line of `kiln-exec`'s
//! `cuda/radix_rows.cu` (lines of at most 8192 elements along the last axis, every real dtype)
//! against the reference evaluator, bit for bit (NaN last, -0.0 equal to 0.0 and kept in its
//! place, ±inf, ties), for lengths around a warp's and a block's keys, several lines, axis
//! None of an N-d array, passes skipped where every key of a line has the same digit, lines it
//! does not take (longer, another axis), and argsort's stability (Rust's stable sort) and
//! determinism. Every test is named `gpu_rowsort_...` and returns at once without a CUDA
//! backend (`on_gpu`).
//!
//! Run on the GPU machine: `KILN_DEVICE=cuda:0 ./main gpu_rowsort`.

use kiln::{Array, DType};
use kiln_exec::RanCode;

use crate::sorts_gpu::{data, matches_evaluator_when, REAL};
use crate::vendor_gpu::on_gpu;

/// Materialises `outs` on the device, checks that the row sort ran exactly when `rows`, and
/// compares each with the reference evaluator's value of the same graph, bit for bit but NaN
/// payloads.
fn matches_evaluator(outs: &[&Array], rows: bool, what: &str) {
    let ran = |c: &RanCode| matches!(c, RanCode::GpuRowSort);
    matches_evaluator_when(outs, ran, rows, &format!("{what}: the GPU's row sort ran"));
}

/// `lines` lines of `n` elements of `dt` (the evaluator's input held on the device).
fn lines_of(dt: DType, lines: usize, n: usize, seed: u64) -> Array {
    data(dt, lines * n, seed).reshape(&[lines as i64, n as i64]).eval().clone()
}

#[test]
fn gpu_rowsort_of_every_real_dtype_matches_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for (k, dt) in REAL.into_iter().enumerate() {
        for n in [8192, 5000] {
            let x = lines_of(dt, 5, n, k as u64 + n as u64);
            matches_evaluator(&[&x.sort(Some(-1))], true, &format!("sort {dt} of 5 x {n}"));
            matches_evaluator(&[&x.argsort(Some(1))], true, &format!("argsort {dt} of 5 x {n}"));
        }
    }
}

#[test]
fn gpu_rowsort_of_lengths_around_a_warp_and_a_block() {
    if !on_gpu() {
        return;
    }
    let lengths = [1, 2, 15, 16, 17, 31, 32, 33, 511, 512, 513, 1000, 4096, 4097, 8191];
    for n in lengths {
        for dt in [DType::Float32, DType::Float64, DType::Int16, DType::UInt8, DType::BFloat16] {
            let x = lines_of(dt, 3, n, n as u64 * 7 + 1);
            matches_evaluator(&[&x.sort(Some(1))], true, &format!("sort {dt} of 3 x {n}"));
            matches_evaluator(&[&x.argsort(Some(-1))], true, &format!("argsort {dt} of 3 x {n}"));
        }
    }
}

#[test]
fn gpu_rowsort_of_many_lines_axis_none_and_lines_it_does_not_take() {
    if !on_gpu() {
        return;
    }
    // Many short lines (a block each), and a 3-d array's last axis.
    let x = lines_of(DType::Float32, 3000, 37, 3);
    matches_evaluator(&[&x.sort(Some(1))], true, "sort of 3000 x 37");
    matches_evaluator(&[&x.argsort(Some(1))], true, "argsort of 3000 x 37");
    let y = data(DType::Int64, 4 * 6 * 300, 4).reshape(&[4, 6, 300]).eval().clone();
    matches_evaluator(&[&y.argsort(Some(2))], true, "argsort of 4 x 6 x 300, the last axis");
    // Axis None of an N-d array of at most 8192 elements: one line, the reshape of the buffer.
    matches_evaluator(&[&y.sort(None)], true, "sort of 4 x 6 x 300, axis None");
    // A reshape of an array not yet materialised.
    let z = data(DType::Float16, 2 * 700, 5).reshape(&[2, 700]);
    matches_evaluator(&[&z.argsort(Some(1))], true, "argsort of a reshape");
    // Longer lines: the radix sort of whole lines; another axis: the host's.
    let long = lines_of(DType::Float32, 2, 8193, 6);
    matches_evaluator(&[&long.sort(Some(1))], false, "sort of 2 x 8193");
    matches_evaluator(&[&x.sort(Some(0))], false, "sort of 3000 x 37 along axis 0");
}

/// Lines whose keys' order-preserving bits have bytes that are the same for every key of the
/// line: those passes are skipped, wherever they fall (high bytes of small integers, a middle
/// byte, every byte of equal keys: the line as it is), the lines of one array differing.
#[test]
fn gpu_rowsort_skips_the_passes_of_one_digit() {
    if !on_gpu() {
        return;
    }
    let n = 3 * 2000;
    let ints = |f: &dyn Fn(u64) -> i64| -> Vec<i64> { (0..n as u64).map(f).collect() };
    let mix = |i: u64, s: u64| (i ^ s).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
    let cases: Vec<(&str, Array)> = vec![
        ("int64 in [0, 1000)", Array::from_vec(ints(&|i| (mix(i, 2) % 1000) as i64), &[3, 2000])),
        (
            "uint32, byte 2 zero",
            Array::from_vec(
                ints(&|i| (((mix(i, 5) % 3) << 24) | (mix(i, 6) % 0xffff)) as i64),
                &[3, 2000],
            )
            .astype(DType::UInt32),
        ),
        ("equal float32", Array::from_vec(vec![1.5f32; n], &[3, 2000])),
        (
            "a line of equal int16 among others",
            Array::from_vec(
                ints(&|i| if i < 2000 { -7 } else { (mix(i, 9) % 77) as i64 }),
                &[3, 2000],
            )
            .astype(DType::Int16),
        ),
        (
            "equal float64 but the sign of zero",
            Array::from_vec(
                (0..n).map(|i| if i % 3 == 0 { -0.0 } else { 0.0 }).collect(),
                &[3, 2000],
            ),
        ),
    ];
    for (what, x) in cases {
        let x = x.eval().clone();
        matches_evaluator(&[&x.sort(Some(1))], true, &format!("sort of {what}"));
        matches_evaluator(&[&x.argsort(Some(1))], true, &format!("argsort of {what}"));
    }
}

/// Argsort of 64 lines of 8192 keys with few distinct values (long runs of ties): the stable
/// order (Rust's stable sort of each line's positions) and the same bits on a second run.
#[test]
fn gpu_rowsort_argsort_is_stable_and_deterministic() {
    if !on_gpu() {
        return;
    }
    let (lines, n) = (64, 8192);
    let keys: Vec<f32> = (0..(lines * n) as u64)
        .map(|i| match i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40 & 1023 {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f32::NEG_INFINITY,
            k => (k % 13) as f32 - 6.0,
        })
        .collect();
    let x = Array::from_vec(keys.clone(), &[lines, n]).eval().clone();
    let first = x.argsort(Some(1)).to_vec::<i64>();
    assert!(kiln_exec::last_run_code().iter().any(|(_, c)| matches!(c, RanCode::GpuRowSort)));
    let second = x.argsort(Some(1)).to_vec::<i64>();
    assert!(first == second, "two runs differ");
    let order = |a: f32, b: f32| match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap(),
        (p, q) => p.cmp(&q),
    };
    for l in 0..lines {
        let line = &keys[l * n..(l + 1) * n];
        let mut want: Vec<i64> = (0..n as i64).collect();
        want.sort_by(|&i, &j| order(line[i as usize], line[j as usize]));
        assert!(first[l * n..(l + 1) * n] == want[..], "line {l}: not the stable order");
    }
}
