//! Whole-line sorts on a CUDA device: the radix sort of `kiln-exec`'s `cuda/radix_sort.cu`
//! (lines longer than the row sort's 8192: `rowsort_gpu.rs`) against the
//! reference evaluator, bit for bit (NaN last, -0.0 equal to 0.0 and kept in its place, ±inf),
//! for every real dtype, sizes around the tiles (7296 keys, 8832 for argsort, 4608 for 8-byte
//! ones; 4096, 3072 and 6144, earlier tiles, too), several lines, axis None of an N-d array, passes
//! skipped where every key has the same digit, and argsort's stability and determinism. Every
//! test is named `gpu_...` and prints `skipped: no GPU` without a CUDA backend (`on_gpu`).
//!
//! Run on the GPU machine: `KILN_DEVICE=cuda:0 ./main gpu_radix`.

use kiln::{Array, DType, HostArray};
use kiln_exec::RanCode;

use crate::numpy_fixtures::{compare, Tol};
use crate::vendor_gpu::on_gpu;

/// Every real dtype.
pub(crate) const REAL: [DType; 13] = [
    DType::Bool,
    DType::Int8,
    DType::Int16,
    DType::Int32,
    DType::Int64,
    DType::UInt8,
    DType::UInt16,
    DType::UInt32,
    DType::UInt64,
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
];

/// A reproducible stream of 64-bit numbers (SplitMix64).
fn mix(i: u64, seed: u64) -> u64 {
    let mut z = i.wrapping_add(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` held elements of `dt` on the device: floats with NaN, ±0, ±inf and many ties among
/// values of both signs; integers from a range that wraps in the narrow types, with ties.
pub(crate) fn data(dt: DType, n: usize, seed: u64) -> Array {
    let x = if dt.is_float() {
        let v: Vec<f64> = (0..n as u64)
            .map(|i| match mix(i, seed) % 41 {
                0 => f64::NAN,
                1 => -f64::NAN,
                2 => -0.0,
                3 => 0.0,
                4 => f64::INFINITY,
                5 => f64::NEG_INFINITY,
                k if k < 20 => (k as f64 - 12.0) * 0.5,
                _ => (mix(i, seed + 7) % 20001) as f64 / 37.0 - 270.0,
            })
            .collect();
        Array::from_vec(v, &[n])
    } else {
        let v: Vec<i64> = (0..n as u64)
            .map(|i| (mix(i, seed) % 1201) as i64 - 600 + ((i % 5) as i64) * (1 << 40))
            .collect();
        Array::from_vec(v, &[n])
    };
    if dt == DType::Bool {
        return (&x % 3i64).astype(DType::Bool).eval().clone();
    }
    x.astype(dt).eval().clone()
}

/// Materialises `outs` on the device, checks that the GPU radix sort ran (`radix`), and
/// compares each with the reference evaluator's value of the same graph, bit for bit but NaN
/// payloads.
fn matches_evaluator(outs: &[&Array], radix: bool, what: &str) {
    let ran = |c: &RanCode| matches!(c, RanCode::GpuRadixSort);
    matches_evaluator_when(outs, ran, radix, &format!("{what}: the GPU radix sort ran"));
}

/// Materialises `outs` on the device, checks that a region ran as `ran` says exactly when
/// `expected` (`claim` names it), and compares each output with the reference evaluator's value
/// of the same graph, bit for bit but NaN payloads.
pub(crate) fn matches_evaluator_when(
    outs: &[&Array],
    ran: impl Fn(&RanCode) -> bool,
    expected: bool,
    claim: &str,
) {
    let lowered = kiln::lower(outs);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    kiln::eval_all(outs);
    let got = kiln_exec::last_run_code().iter().any(|(_, c)| ran(c));
    assert_eq!(got, expected, "{claim}: {got}");
    for (k, (a, w)) in outs.iter().zip(&want).enumerate() {
        let g = a.try_to_host().unwrap();
        assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()), "{claim}: output {k}");
        if let Err(msg) = compare(w, &g, Tol::Exact, true) {
            panic!("{claim}: output {k} ({} {:?}): {msg}", w.dtype(), w.shape());
        }
    }
}

/// Materialises `outs` on the device and compares each with the reference evaluator's value of
/// the same graph, bit for bit but NaN payloads (whatever code ran).
pub(crate) fn matches_evaluator_exactly(outs: &[&Array], what: &str) {
    matches_evaluator_when(outs, |_| false, false, what);
}

#[test]
fn gpu_radix_sort_of_every_real_dtype_matches_the_evaluator() {
    if !on_gpu() {
        return;
    }
    // Longer than the line sort takes, not a multiple of either tile.
    let n = 3 * 4096 + 17;
    for (k, dt) in REAL.into_iter().enumerate() {
        let x = data(dt, n, k as u64);
        matches_evaluator(&[&x.sort(None)], true, &format!("sort {dt}"));
        matches_evaluator(&[&x.argsort(None)], true, &format!("argsort {dt}"));
    }
}

#[test]
fn gpu_radix_sort_of_sizes_around_the_tiles() {
    if !on_gpu() {
        return;
    }
    // Lines of at most 8192 elements are the row sort's (`rowsort_gpu.rs`); longer ones of
    // every dtype the radix sort's, around its tiles of 7296 keys (8832 for argsort, 4608 of 8
    // bytes; 4096 and 3072 before).
    for n in [8193, 12287, 12288, 12289, 14592, 14593, 16385, 17663, 17665, 24575, 24577] {
        for dt in [DType::Float16, DType::Int16, DType::UInt8] {
            let x = data(dt, n, n as u64);
            matches_evaluator(&[&x.sort(Some(0))], true, &format!("sort {dt} of {n}"));
            matches_evaluator(&[&x.argsort(Some(0))], true, &format!("argsort {dt} of {n}"));
        }
    }
    let sizes =
        [8193, 12289, 3072 * 5 + 1, 4608 * 3, 4608 * 3 + 1, 7296 * 2, 8832 * 3 + 1, (1 << 20) + 5];
    for n in sizes {
        for dt in [DType::Float32, DType::Int64, DType::Float64, DType::UInt32] {
            let x = data(dt, n, n as u64 + 3);
            matches_evaluator(&[&x.sort(None)], true, &format!("sort {dt} of {n}"));
            matches_evaluator(&[&x.argsort(None)], true, &format!("argsort {dt} of {n}"));
        }
    }
    // Empty: the host's (nothing to sort).
    let e = Array::from_vec(Vec::<f32>::new(), &[0]);
    assert!(e.sort(None).to_vec::<f32>().is_empty());
    assert!(e.argsort(None).to_vec::<i64>().is_empty());
}

#[test]
fn gpu_radix_sort_of_lines_and_of_axis_none() {
    if !on_gpu() {
        return;
    }
    let x = data(DType::Float32, 3 * 20000, 5).reshape(&[3, 20000]).eval().clone();
    matches_evaluator(&[&x.sort(Some(-1))], true, "sort of 3 lines");
    matches_evaluator(&[&x.argsort(Some(1))], true, "argsort of 3 lines");
    // Axis None of a 3-d array: the reshape of the held buffer.
    let y = data(DType::Float64, 2 * 3 * 5000, 6).reshape(&[2, 3, 5000]).eval().clone();
    matches_evaluator(&[&y.sort(None)], true, "sort of a 3-d array, axis None");
    matches_evaluator(&[&y.argsort(None)], true, "argsort of a 3-d array, axis None");
    // More lines than the radix sort takes one by one: the host's.
    let z = data(DType::Int32, 65 * 9000, 7).reshape(&[65, 9000]).eval().clone();
    matches_evaluator(&[&z.sort(Some(1))], false, "sort of 65 lines");
    // Another axis than the last: the host's.
    matches_evaluator(&[&x.sort(Some(0))], false, "sort along axis 0");
}

/// Keys whose order-preserving bits have bytes that are the same for every key: those passes
/// are skipped, wherever they fall (high bytes of small integers, a middle byte, every byte of
/// equal keys: the last pass copies), an even and an odd number of passes left.
#[test]
fn gpu_radix_sort_skips_the_passes_of_one_digit() {
    if !on_gpu() {
        return;
    }
    let n = 6144 * 3 + 17;
    let ints = |f: &dyn Fn(u64) -> i64| -> Vec<i64> { (0..n as u64).map(f).collect() };
    let cases: Vec<(&str, Array)> = vec![
        (
            "int32 in [0, 1000)",
            Array::from_vec(ints(&|i| (mix(i, 1) % 1000) as i64), &[n]).astype(DType::Int32),
        ),
        ("int64 in [0, 1000)", Array::from_vec(ints(&|i| (mix(i, 2) % 1000) as i64), &[n])),
        (
            "uint32, bytes 1 and 2 zero",
            Array::from_vec(ints(&|i| (((mix(i, 3) % 7) << 24) | (mix(i, 4) % 5)) as i64), &[n])
                .astype(DType::UInt32),
        ),
        (
            "uint32, byte 2 zero",
            Array::from_vec(
                ints(&|i| (((mix(i, 5) % 3) << 24) | (mix(i, 6) % 0xffff)) as i64),
                &[n],
            )
            .astype(DType::UInt32),
        ),
        ("equal float32", Array::from_vec(vec![1.5f32; n], &[n])),
        ("equal int16", Array::from_vec(vec![-7i64; n], &[n]).astype(DType::Int16)),
    ];
    for (what, x) in cases {
        let x = x.eval().clone();
        matches_evaluator(&[&x.sort(None)], true, &format!("sort of {what}"));
        matches_evaluator(&[&x.argsort(None)], true, &format!("argsort of {what}"));
    }
}

/// Argsort of 2^22 keys with few distinct values (long runs of ties across many tiles): the
/// stable order (Rust's stable sort of the positions) and the same bits on a second run.
#[test]
fn gpu_radix_argsort_is_stable_and_deterministic() {
    if !on_gpu() {
        return;
    }
    let n = 1 << 22;
    let keys: Vec<f32> = (0..n as u64)
        .map(|i| match mix(i, 11) % 1003 {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            k => (k % 97) as f32 - 48.0,
        })
        .collect();
    let x = Array::from_vec(keys.clone(), &[n]).eval().clone();
    let first = x.argsort(None).to_vec::<i64>();
    assert!(kiln_exec::last_run_code().iter().any(|(_, c)| matches!(c, RanCode::GpuRadixSort)));
    let second = x.argsort(None).to_vec::<i64>();
    assert!(first == second, "two runs differ");
    let order = |a: f32, b: f32| match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap(),
        (p, q) => p.cmp(&q),
    };
    let mut want: Vec<i64> = (0..n as i64).collect();
    want.sort_by(|&i, &j| order(keys[i as usize], keys[j as usize]));
    assert!(first == want, "not the stable order");
    // sort keeps each element's bits in the same order.
    let got: Vec<u32> = x.sort(None).to_vec::<f32>().iter().map(|v| v.to_bits()).collect();
    let bits: Vec<u32> = want.iter().map(|&i| keys[i as usize].to_bits()).collect();
    assert!(got == bits, "sort's bits are not the stable order's");
}
