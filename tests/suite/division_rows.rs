//! Float32 division by a row's value in GPU row kernels' output pass (`codegen/division.rs`,
//! `by_invariant`; `lower/coop.rs`, `output_elements`): the reciprocal once a row, two FMA
//! corrections per element, one range check per output step and the whole step again with
//! IEEE divisions where it fails. The `gpu_*` tests run on a CUDA device (they return at once
//! without one) and compare with IEEE division bit for bit (NaN as NaN) or with the reference
//! evaluator: divisors of every class (±0, subnormal, the edges of the normal range and of the
//! reciprocal's, ±inf, NaN), dividends of random bits and next to rounding boundaries and the
//! fast path's edges; row kernels of layer norm's shape (exact reductions) over values of
//! every class. The lowering test reads the MLIR on any machine.
//!
//! Run on the GPU machine: `KILN_DEVICE=cuda:0 ./main division_rows`.

use kiln::{Array, DType};

use crate::sorts_gpu::matches_evaluator_exactly as matches_evaluator;
use crate::vendor_gpu::on_gpu;

/// A reproducible stream of 64-bit numbers (SplitMix64).
fn mix(i: u64, seed: u64) -> u64 {
    let mut z = i.wrapping_add(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` dividends for divisor `y`: random bits, `RN(q·y)` of random `q` and their neighbours,
/// the neighbours of `2^k` and `2^k·|y|` over the whole exponent range, and the specials.
fn dividends(y: f32, n: usize, seed: u64) -> Vec<f32> {
    let mut v = Vec::with_capacity(n);
    let mut i = 0u64;
    while v.len() < n {
        let r = mix(i, seed);
        i += 1;
        match i % 4 {
            0 => v.push(f32::from_bits(r as u32)),
            1 | 2 => {
                let q = f32::from_bits(0x3F80_0000 | (r >> 41) as u32)
                    * 2f32.powi((r % 61) as i32 - 30);
                let x = q * if y.is_finite() && y != 0.0 { y } else { 1.5 };
                let d = (r >> 32) as i32 % 3;
                v.push(f32::from_bits((x.to_bits() as i32).wrapping_add(d) as u32));
            }
            _ => {
                let k = (r % 280) as i32 - 150;
                let base = if r & 1 == 0 { 2f32.powi(k) } else { 2f32.powi(k) * y.abs() };
                let d = ((r >> 8) % 5) as i32 - 2;
                let x = f32::from_bits((base.to_bits() as i32).wrapping_add(d) as u32);
                v.push(if r & 2 == 0 { x } else { -x });
            }
        }
    }
    let specials = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, 1e-45];
    for (k, s) in specials.into_iter().enumerate() {
        v[k * 97 % n] = s;
    }
    v
}

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Divisors of every class.
const DIVISORS: [f32; 19] = [
    1.0,
    -3.0,
    0.1,
    7e25,
    1e-30,
    0.0,
    -0.0,
    1e-40,
    1.1754944e-38, // 2^-126, the least normal
    -8.507059e37,  // -2^126, the greatest with a normal reciprocal
    1.2760589e38,  // 1.5·2^126
    1.7014118e38,  // 2^127
    f32::MAX,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    0.9,
    3.4e-5,
    -65504.0,
];

/// `x / m.max(axis 1)` for rows of `m` all `y`: a row kernel dividing by its row's value,
/// against IEEE division, bit for bit.
#[test]
fn gpu_division_rows_by_a_row_value_is_ieee_division() {
    if !on_gpu() {
        return;
    }
    for (rows, cols) in [(6, 8192), (3, 5000), (5, 37)] {
        for (k, &y) in DIVISORS.iter().enumerate() {
            let x = dividends(y, rows * cols, (k * 1000 + cols) as u64);
            let xa = Array::from_vec(x.clone(), &[rows, cols]);
            let m = Array::from_vec(vec![y; rows * cols], &[rows, cols]);
            let got = (&xa / &m.max(kiln::axis(1).keepdims())).to_vec::<f32>();
            for (a, g) in x.iter().zip(&got) {
                assert!(same32(*g, a / y), "{rows}x{cols}: {a:e} / {y:e}: {g:e}, IEEE {:e}", a / y);
            }
        }
    }
}

/// `rows × cols` float32: mostly values of random sign and significand within 2^±20, rows
/// 0..8 with some of every class (±0, subnormals, 2^±70, ±inf, NaN), and rows scaled by 2^-90
/// and 2^90 (their sums and deviations outside the fast path's range).
fn data(rows: usize, cols: usize, seed: u64) -> Array {
    let v: Vec<f32> = (0..rows * cols)
        .map(|i| {
            let r = mix(i as u64, seed);
            let row = i / cols;
            let special = [0.0, -0.0, 1e-40, -3e-39, 2f32.powi(-70), 2f32.powi(70)];
            let base = match (row, r % 97) {
                (0..8, 0) => f32::INFINITY,
                (0..8, 1) => f32::NEG_INFINITY,
                (0..8, 2) if row % 2 == 0 => f32::NAN,
                (0..8, k) if k < 9 => special[(k % 6) as usize],
                _ => {
                    let m = 1.0 + (r >> 40) as f32 / (1u64 << 24) as f32;
                    let e = ((r >> 8) % 41) as i32 - 20;
                    let s = if r & 1 == 1 { -1.0 } else { 1.0 };
                    s * m * 2f32.powi(e)
                }
            };
            match row % 16 {
                14 => base * 2f32.powi(-90),
                15 => base * 2f32.powi(90),
                _ => base,
            }
        })
        .collect();
    Array::from_vec(v, &[rows, cols]).eval().clone()
}

fn layer_norm(x: &Array) -> Array {
    let mu = x.mean(kiln::axis(1).keepdims());
    let d = x - &mu;
    let var = (&d * &d).mean(kiln::axis(1).keepdims());
    &d / (var + 1e-5).sqrt()
}

/// Row kernels of layer norm's shape over values of every class, against the evaluator bit
/// for bit: rows centred by their max and divided by the root of their largest square (with
/// and without γ and β), by their largest magnitude (and then by 0.9: a constant's check
/// joins the step's), and float16 rows by theirs. Their reductions are exact (max), so every
/// bit of a difference would be the division's; layer norm and softmax themselves fold their
/// sums in one pass, within ulps of the evaluator (`row_kernels`).
#[test]
fn gpu_division_rows_of_row_kernels_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for (rows, cols) in [(64, 8192), (48, 1000), (300, 37)] {
        let x = data(rows, cols, (rows * cols) as u64);
        let what = format!("{rows}x{cols}");
        let g = Array::from_vec((0..cols).map(|i| 0.5 + (i % 7) as f32 * 0.25).collect(), &[cols]);
        let b = Array::from_vec((0..cols).map(|i| (i % 5) as f32 - 2.0).collect(), &[cols]);
        let d = &x - &x.max(kiln::axis(1).keepdims());
        let n = &d / ((&d * &d).max(kiln::axis(1).keepdims()) + 1e-5).sqrt();
        matches_evaluator(
            &[&n],
            &format!("centred by the max, by the root of the largest square {what}"),
        );
        matches_evaluator(&[&(&n * &g + &b)], &format!("the same, γ, β {what}"));
        let s = x.abs().max(kiln::axis(1).keepdims());
        matches_evaluator(&[&(&x / &s)], &format!("x / row max |x| {what}"));
        matches_evaluator(&[&(&x / &s / 0.9f32)], &format!("x / row max |x| / 0.9 {what}"));
        let h = x.astype(DType::Float16);
        let sh = h.abs().max(kiln::axis(1).keepdims());
        matches_evaluator(&[&(&h / &sh)], &format!("float16 x / row max {what}"));
    }
}

/// The GPU kernel of layer norm: the output step's quotients are products corrected by FMAs,
/// the sign of zero by `copysign`, with one branch for the step (its values yielded together)
/// and the IEEE division only inside it; launch bounds of four blocks.
#[test]
fn division_rows_layer_norm_divides_by_the_reciprocal() {
    let x = data(16, 4096, 3);
    let mlir = kiln::kernel_code(&[&layer_norm(&x)], kiln::CodeStage::GpuMlir).unwrap();
    // `KILN_GPU_ROW_DIV=off` or `hoist` (measuring) keeps the division.
    if std::env::var("KILN_GPU_ROW_DIV").is_ok_and(|v| !v.trim().eq_ignore_ascii_case("on")) {
        return;
    }
    assert!(mlir.contains("math.copysign"), "{mlir}");
    assert!(mlir.matches("math.fma").count() >= 16, "{mlir}");
    assert!(mlir.contains("llvm.inline_asm \"div.rn.f32"), "{mlir}");
    let unroll: usize = std::env::var("KILN_GPU_WRITE_UNROLL")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|u| [1, 2, 4, 8].contains(u))
        .unwrap_or(4);
    let step = format!("-> ({})", vec!["f32"; unroll].join(", "));
    assert!(mlir.contains(&step), "one branch for the step's {unroll} values: {mlir}");
    // Launch bounds that keep four blocks a multiprocessor (`KILN_GPU_ROW_BOUNDS` unset).
    if std::env::var_os("KILN_GPU_ROW_BOUNDS").is_none() {
        assert!(mlir.contains("nvvm.minctasm = 4"), "{mlir}");
    }
}
