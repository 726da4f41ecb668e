//! A GPU scatter's labels screened by expanded distances (`lower/screen/expanded.rs`,
//! `KILN_GPU_SCREEN_EXPANDED=on`; off by default, the suite passes either way): k-means' argmin of `Σ (x − c)²` decided from
//! `‖x‖² − 2·x·c + ‖c‖²` in float32 where its widened bound proves the evaluator's label, the
//! exact fold elsewhere. The labels against the evaluator's (`gpu_*`, on a GPU: the screen is
//! the GPU scatter kernel's), and the kernel's PTX (compiled here, no GPU needed).

use kiln::{Array, DType};

use crate::vendor_gpu::on_gpu;

/// Whether the knob turns expanded distances on (the environment, as the library reads it; off
/// by default).
pub(crate) fn screen_expanded() -> bool {
    std::env::var("KILN_GPU_SCREEN_EXPANDED")
        .is_ok_and(|v| ["1", "on", "true", "yes"].contains(&v.trim().to_lowercase().as_str()))
}

/// A deterministic stream of numbers in `[0, 1)` (multiples of 2^-24).
fn stream(seed: u64) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32
    }
}

const D: usize = 64;
const K: usize = 10;

/// Centres: random in `[-2, 2)` (multiples of 2^-10); centres 1 and 2 the same but for
/// coordinate 0 (−1.5 and 1.5: their bisector is `x₀ = 0`); centre 9 moved by 300 (points near
/// it have norms of about 5.8·10⁶, their distances' float32 cancellation beyond the screen);
/// with `nan_centre`, a NaN in centre 3 (every point's distance to it NaN: the first NaN wins).
fn centres(nan_centre: bool) -> Vec<f32> {
    let mut r = stream(5);
    let mut c: Vec<f32> = (0..K * D).map(|_| ((r() * 4096.0).floor() - 2048.0) / 1024.0).collect();
    c.copy_within(D..2 * D, 2 * D);
    (c[D], c[2 * D]) = (-1.5, 1.5);
    for v in &mut c[9 * D..] {
        *v += 300.0;
    }
    if nan_centre {
        c[3 * D + 5] = f32::NAN;
    }
    c
}

/// `n` points, by position mod 8: 0-2 random in `[-2, 2)`; 3 near centre 9 (cancellation);
/// 4 on the bisector of centres 1 and 2 (an exact tie: the first wins); 5 off it by ±2^-20
/// (a near tie); 6 a centre exactly (zero distance); 7 special: NaN, ±infinity, squares whose
/// sums overflow, subnormal coordinates, or random.
fn points(n: usize, c: &[f32]) -> Vec<f32> {
    let mut r = stream(n as u64);
    let mut x = Vec::with_capacity(n * D);
    for i in 0..n {
        let mut p: Vec<f32> = (0..D).map(|_| ((r() * 4096.0).floor() - 2048.0) / 1024.0).collect();
        match i % 8 {
            3 => p.iter_mut().for_each(|v| *v = *v * 0.25 + 300.0),
            4 => {
                p.copy_from_slice(&c[D..2 * D]);
                p[0] = 0.0;
            }
            5 => {
                p.copy_from_slice(&c[D..2 * D]);
                p[0] = if i % 16 == 5 { 1.0 } else { -1.0 } * (-20f32).exp2();
            }
            6 => p.copy_from_slice(&c[(i / 8 % K) * D..(i / 8 % K + 1) * D]),
            7 => match i / 8 % 8 {
                0 => p[3] = f32::NAN,
                1 => p[0] = f32::INFINITY,
                2 => (p[1], p[2]) = (f32::NEG_INFINITY, f32::INFINITY),
                3 => p.iter_mut().for_each(|v| *v = 1e19),
                4 => p.iter_mut().for_each(|v| *v *= 1e-40),
                _ => {}
            },
            _ => {}
        }
        x.extend(p);
    }
    x
}

/// The labels of `x` among `c` inside one GPU scatter kernel, observed exactly: per label the
/// count of its points and two int64 sums of their positions (`i` and `i² mod 1000003`).
fn label_fingerprint(x: &Array, c: &Array) -> (Array, Array) {
    let n = x.shape()[0];
    let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
    let v: Vec<i64> = (0..n as i64).flat_map(|i| [i, i * i % 1_000_003]).collect();
    let sums = kiln::zeros(&[K, 2], DType::Int64).add_at(&labels, &Array::from_vec(v, &[n, 2]));
    (sums, kiln::bincount(&labels, None, K))
}

/// On a GPU, the digits' size (blocks of one tile: one lane a position) and 2^17 (blocks of two
/// tiles: two lanes a position, two terms a step): ties, near ties, cancellation, zero
/// distances, NaN, infinities and overflow among ordinary points, and a NaN centre, labelled as
/// the evaluator labels them.
#[test]
fn gpu_expanded_screen_labels_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for (n, nan_centre) in [(1797, false), (1 << 17, false), (1797, true)] {
        let c = centres(nan_centre);
        let x = points(n, &c);
        let (x, c) = (Array::from_vec(x, &[n, D]), Array::from_vec(c, &[K, D]));
        let (sums, counts) = label_fingerprint(&x, &c);
        let what = format!("{n} points, NaN centre: {nan_centre}");
        crate::sorts_gpu::matches_evaluator_exactly(&[&sums, &counts], &what);
        let ran = kiln_exec::last_run_code();
        assert!(
            ran.iter().any(|(_, c)| matches!(c, kiln_exec::RanCode::Gpu(_))),
            "{what}: a GPU kernel"
        );
        // The cases are there: centre 1 takes the bisector's points (an eighth), centre 3
        // every point with the NaN centre but the NaN ones (centre 0).
        let m = counts.to_vec::<i64>();
        match nan_centre {
            false => assert!(m[1] >= (n / 8) as i64 && m[9] >= (n / 8) as i64, "{what}: {m:?}"),
            true => assert!(m[3] > (n * 9 / 10) as i64, "{what}: {m:?}"),
        }
    }
}

/// The 2^17 iteration's GPU kernel (`scatter_epilogue`'s k-means, blocks of two tiles taken
/// together: without bulk copies, `support::only_tiled_gpu_kernel`), its
/// float32 arithmetic counted by opcode in the PTX: with expanded distances the screen's loop
/// is fused multiply-adds only, the exact fold's float32 subtracts (and float64 adds) left in
/// their branch; with the knob off (the default), a subtract beside each multiply-add.
/// Snapshotted per knob (`*_plain` with the knob off).
#[test]
fn kmeans_iteration_expanded_screen_ptx() {
    let x: Vec<f32> = (0..(1 << 17) * D).map(|i| ((i * 7919 % 1000) as f32) / 99.0 - 5.0).collect();
    let c: Vec<f32> = (0..K * D).map(|i| ((i * 104729 % 1000) as f32) / 99.0 - 5.0).collect();
    let (x, c) = (Array::from_vec(x, &[1 << 17, D]), Array::from_vec(c, &[K, D]));
    let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
    let sums = kiln::zeros(&[K, D], DType::Float32).add_at(&labels, &x);
    let counts = kiln::bincount(&labels, None, K);
    let centres = &sums / counts.astype(DType::Float32).maximum(1.0f32).expand_dims(&[1]);
    let k = crate::support::only_tiled_gpu_kernel(&[&centres]);
    assert!(k.kernel.gpu_scatter.is_some(), "a GPU scatter kernel");
    let ptx = &k.ptx;
    assert!(!ptx.contains(".local"), "local memory:\n{ptx}");
    let mut ops: std::collections::BTreeMap<&str, usize> = Default::default();
    for l in ptx.lines().map(str::trim) {
        let op = l.split_whitespace().next().unwrap_or("");
        if op.ends_with(".f32") || op.ends_with(".f64") {
            *ops.entry(op).or_default() += 1;
        }
    }
    let count = |op: &str| ops.get(op).copied().unwrap_or(0);
    let (fma, sub) = (count("fma.rn.f32"), count("sub.rn.f32"));
    let profile: Vec<String> = ops.iter().map(|(op, c)| format!("{op} {c}")).collect();
    let profile = profile.join("\n");
    if screen_expanded() {
        // 2 terms a step, 10 dot products and ‖x‖²: 22 in the loop, the norms' one; the
        // exact fold's 10 subtracts and a few more (30 with the knob off).
        assert!(fma >= 23 && sub <= 21, "fused multiply-adds, subtracts:\n{profile}\n{ptx}");
        insta::assert_snapshot!("kmeans_iteration_expanded_screen_ops", profile);
    } else {
        // The screen's 20 subtracts (2 terms a step, 10 centres) and the exact fold's 10.
        assert!(sub >= 30, "subtracts:\n{profile}\n{ptx}");
        insta::assert_snapshot!("kmeans_iteration_expanded_screen_ops_plain", profile);
    }
}
