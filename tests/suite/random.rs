//! `kiln::random`'s lazy draws (the `philox` op): the backend's bits against the reference
//! evaluator's, Kolmogorov-Smirnov tests of the distributions, dropout as one kernel, and a
//! new draw of the same shape reusing the plan.

use kiln::{Array, DType, HostArray};

/// `y` on the active backend against the evaluator on its own graph: the same bits, or within
/// `ulps` for floats (normals go through log, sqrt and cos).
#[track_caller]
fn against_evaluator(name: &str, y: &Array, ulps: f64) {
    let l = kiln::lower(&[y]);
    let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0);
    let got = y.try_to_host().unwrap_or_else(|e| panic!("{name}: {e}"));
    if ulps == 0.0 {
        assert_eq!(*got, want, "{name}");
        return;
    }
    let g = Array::from_host((*got).clone()).astype(DType::Float64).to_vec::<f64>();
    let w = Array::from_host(want).astype(DType::Float64).to_vec::<f64>();
    let eps = if y.dtype() == DType::Float32 { f32::EPSILON as f64 } else { f64::EPSILON };
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= ulps * eps * b.abs().max(1.0), "{name}[{i}]: {a} vs {b}");
    }
}

#[test]
fn draws_match_the_evaluator() {
    let mut g = kiln::random::default_rng(Some(7));
    for dt in [DType::Float32, DType::Float64] {
        against_evaluator("random", &g.random(&[3, 333], dt), 0.0);
        against_evaluator("uniform", &g.uniform(-1.0, 3.0, &[1001], dt), 0.0);
        against_evaluator("standard_normal", &g.standard_normal(&[17, 31], dt), 8.0);
    }
    against_evaluator("integers", &g.integers(-5, 1000, &[4, 77], DType::Int16), 0.0);
    against_evaluator("integers u64", &g.integers(0, i64::MAX, &[99], DType::UInt64), 0.0);
}

/// The same seed gives the same numbers; successive draws of a generator differ; a draw's
/// elements do not depend on the shape it is viewed in (C-order positions).
#[test]
fn streams_are_reproducible_and_advance() {
    let a = kiln::random::default_rng(Some(11)).random(&[64], DType::Float32).to_vec::<f32>();
    let mut g = kiln::random::default_rng(Some(11));
    assert_eq!(g.random(&[64], DType::Float32).to_vec::<f32>(), a);
    let next = g.random(&[64], DType::Float32).to_vec::<f32>();
    assert_ne!(next, a);
    let m = kiln::random::default_rng(Some(11)).random(&[8, 8], DType::Float32);
    assert_eq!(m.to_vec::<f32>(), a);
    // A float32 draw takes four words of a call: 5 elements use two calls, and the next draw
    // starts on a fresh one.
    let mut h = kiln::random::default_rng(Some(3));
    let five = h.random(&[5], DType::Float32).to_vec::<f32>();
    let after = h.random(&[4], DType::Float32).to_vec::<f32>();
    let mut j = kiln::random::default_rng(Some(3));
    let both = j.random(&[12], DType::Float32).to_vec::<f32>();
    assert_eq!(five[..], both[..5]);
    assert_eq!(after[..], both[8..]);
}

/// Kolmogorov-Smirnov statistic of `xs` against the distribution function `cdf` (of `xs`
/// sorted).
fn ks(mut xs: Vec<f64>, cdf: impl Fn(&[f64]) -> Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len() as f64;
    let f = cdf(&xs);
    f.iter()
        .enumerate()
        .map(|(i, &fi)| (fi - i as f64 / n).abs().max(((i + 1) as f64 / n - fi).abs()))
        .fold(0.0, f64::max)
}

#[test]
fn distributions_pass_kolmogorov_smirnov() {
    let mut g = kiln::random::default_rng(Some(2026));
    let n = 1 << 16;
    // The 0.1% critical value: 1.95 / sqrt(n). The draws are fixed by the seed, so this cannot
    // flake; a wrong sampler (a bias, a lost bit, a wrong word) fails it.
    let critical = 1.95 / (n as f64).sqrt();
    let phi = |xs: &[f64]| -> Vec<f64> {
        let x = Array::from_vec(xs.to_vec(), &[xs.len()]);
        ((x * std::f64::consts::FRAC_1_SQRT_2).erf() * 0.5 + 0.5).to_vec::<f64>()
    };
    for dt in [DType::Float32, DType::Float64] {
        let u = g.random(&[n], dt).astype(DType::Float64).to_vec::<f64>();
        assert!(u.iter().all(|x| (0.0..1.0).contains(x)));
        let d = ks(u, |xs| xs.to_vec());
        assert!(d < critical, "{dt} random: D = {d} (critical {critical})");
        let z = g.standard_normal(&[n], dt).astype(DType::Float64).to_vec::<f64>();
        let d = ks(z, phi);
        assert!(d < critical, "{dt} standard_normal: D = {d} (critical {critical})");
    }
    // Integers: each of 10 values about n/10 times (chi-square with 9 degrees, 0.1%: 27.9).
    let k = g.integers(0, 10, &[n], DType::Int64).to_vec::<i64>();
    let e = n as f64 / 10.0;
    let chi2: f64 =
        (0..10).map(|v| (k.iter().filter(|&&x| x == v).count() as f64 - e).powi(2) / e).sum();
    assert!(chi2 < 27.9, "integers: chi-square {chi2}");
}

/// A draw compared with a constant (dropout's mask) is an integer compare of its bits (the
/// simplifier's `compare-int-grid`): the same booleans as comparing the drawn values, for
/// constants on the grid, between grid points, at and beyond the ends, negative and NaN, with
/// the constant on either side (one plan per constant: its five compares together).
#[test]
fn draws_compared_with_constants_match_the_float_compare() {
    let n = 4099;
    let draw = |dt| kiln::random::default_rng(Some(99)).random(&[n], dt);
    for (dt, ulp) in [(DType::Float32, 2f64.powi(-24)), (DType::Float64, 2f64.powi(-53))] {
        let vals = draw(dt).astype(DType::Float64).to_vec::<f64>();
        let on = vals[7];
        let ps = [0.0, -0.0, 1.0, 0.1, 0.5, -0.25, 1.5, f64::NAN, f64::INFINITY, on, on + ulp];
        for p in ps.into_iter().chain([on - ulp / 2.0]) {
            // The constant as the compare sees it (rounded to the draw's dtype).
            let c = kiln::full(&[n], p, dt);
            let pc = c.astype(DType::Float64).to_vec::<f64>()[0];
            let cases: [(&str, Array, fn(f64, f64) -> bool); 5] = [
                (">=", draw(dt).greater_equal(&c), |u, p| u >= p),
                (">", draw(dt).greater(&c), |u, p| u > p),
                ("<=", draw(dt).less_equal(&c), |u, p| u <= p),
                ("<", draw(dt).less(&c), |u, p| u < p),
                ("p <= u", c.less_equal(&draw(dt)), |u, p| u >= p),
            ];
            kiln::eval_all(&cases.iter().map(|(_, m, _)| m).collect::<Vec<_>>());
            for (name, m, f) in &cases {
                let want: Vec<bool> = vals.iter().map(|&u| f(u, pc)).collect();
                assert_eq!(m.to_vec::<bool>(), want, "{dt} u {name} {p}");
            }
        }
        // The rule fired: no float multiply is left of the draw's compare; and the backend
        // agrees with the evaluator of the unsimplified graph.
        let m = draw(dt).greater_equal(0.1);
        let e = kiln::explain(&[&m]);
        assert!(!e.simplified.contains("multiply"), "{}", e.simplified);
        against_evaluator(&format!("{dt} u >= 0.1"), &m, 0.0);
    }
}

/// Dropout: the mask is computed in the kernel that applies it, which reads x once; a new
/// draw of the same shape (a new offset, an input value) reuses the plan.
#[test]
fn dropout_is_one_kernel_and_redraws_reuse_the_plan() {
    let x = Array::from_vec((0..4096).map(|i| i as f32).collect::<Vec<_>>(), &[64, 64]);
    x.eval();
    let mut g = kiln::random::default_rng(Some(5));
    let p = 0.25f32;
    let mut dropout = || &x * g.random(&[64, 64], DType::Float32).greater_equal(p) / (1.0 - p);
    let y = dropout();
    assert_eq!(kiln::explain(&[&y]).report.kernel_count(), 1);
    let kept = y.to_vec::<f32>().iter().filter(|&&v| v != 0.0).count();
    assert!((2800..3350).contains(&kept), "kept {kept} of 4096");
    y.eval();
    let (hits, _) = kiln::dispatch_stats();
    let y2 = dropout();
    y2.eval();
    let (hits2, _) = kiln::dispatch_stats();
    assert!(hits2 > hits, "a redraw of the same shape compiled again");
    assert_ne!(y.to_vec::<f32>(), y2.to_vec::<f32>());
}

/// The dropout kernel's PTX: Philox's 32×32→64 products, 2 a round, 19 or 20 a call (the first
/// round's product of a zero word folds), each a `mul.hi.u32` for its high word and a
/// 32-bit `mul.lo` for its low word: no 64-bit multiply (an `i64` product made LLVM widen the
/// rounds to 64 bits). The four elements a thread takes share one call (the chunk's start has
/// its low bits cleared, so LLVM sees equal counters and merges the rounds); the loop for the
/// rest of a range has one more: at most two calls' products in the kernel, where four
/// elements computing their own would be five. The key and the counter offset (0-d inputs) are
/// loaded once, at the kernel's entry, not in the loop and again in its remainder.
#[test]
fn dropout_gpu_kernel_ptx_shares_a_call_between_four_elements() {
    let x = Array::from_vec((0..4096).map(|i| i as f32).collect::<Vec<_>>(), &[4096]);
    x.eval();
    let mut g = kiln::random::default_rng(Some(5));
    let y = &x * g.random(&[4096], DType::Float32).greater_equal(0.5f32);
    let k = crate::support::only_gpu_kernel(&[&y]);
    let products = k.ptx.lines().filter(|l| l.contains("mul.hi.u32")).count();
    assert!((19..=2 * 20).contains(&products), "{products} Philox products:\n{}", k.ptx);
    assert!(!k.ptx.contains("mul.lo.s64") && !k.ptx.contains("mul.lo.u64"), "{}", k.ptx);
    assert_eq!(k.ptx.matches("ld.global.nc.b64").count(), 2, "{}", k.ptx);
}
