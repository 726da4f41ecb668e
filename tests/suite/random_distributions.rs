//! `kiln::random`'s exponential, gamma, beta, poisson and binomial draws against their exact
//! distributions (Kolmogorov-Smirnov, chi-square, moments within a few standard errors), the
//! sorts of random keys (`permutation`, `shuffle`, `choice`), NumPy's ValueErrors as typed
//! errors, and the lazy draws fusing into their readers. Seeds are fixed, so the statistical
//! tests cannot flake; their thresholds are the 0.1% critical values, so a wrong sampler (a
//! wrong constant, a lost round, a biased key) fails them.

use kiln::random::{default_rng, Generator};
use kiln::{Array, DType, Error};

const N: usize = 1 << 16;

/// Kolmogorov-Smirnov statistic of `xs` against the distribution function `cdf`.
fn ks(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len() as f64;
    xs.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// Asserts the KS statistic is below the 0.1% critical value `1.95/sqrt(n)`.
#[track_caller]
fn assert_ks(name: &str, xs: Vec<f64>, cdf: impl Fn(f64) -> f64) {
    let critical = 1.95 / (xs.len() as f64).sqrt();
    let d = ks(xs, cdf);
    assert!(d < critical, "{name}: KS D = {d} (critical {critical})");
}

/// The sample mean and variance within 5 standard errors of `mean` and `var` (the variance's
/// standard error from the fourth central moment `m4`).
#[track_caller]
fn assert_moments(name: &str, xs: &[f64], mean: f64, var: f64, m4: f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    let se_mean = (var / n).sqrt();
    // Var(s²) = (m4 - σ⁴(n-3)/(n-1))/n exactly (not zero for a fair coin).
    let se_var = ((m4 - var * var * (n - 3.0) / (n - 1.0)) / n).sqrt();
    assert!((m - mean).abs() < 5.0 * se_mean, "{name}: mean {m}, exact {mean} (se {se_mean})");
    assert!((v - var).abs() < 5.0 * se_var, "{name}: variance {v}, exact {var} (se {se_var})");
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, about 1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.5203681218851,
        -1259.1392167224028,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507343278686905,
        -0.13857109526572012,
        9.984_369_578_019_572e-6,
        1.5056327351493116e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let s = C[1..].iter().enumerate().fold(C[0], |s, (i, c)| s + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
}

/// The regularised lower incomplete gamma P(a, x) (series below a + 1, Lentz's continued
/// fraction above).
fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let front = (a * x.ln() - x - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        while term.abs() > sum.abs() * 1e-16 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
        }
        return sum * front;
    }
    1.0 - front * lentz(|i| (-i * (i - a), x + 2.0 * i + 1.0 - a), x + 1.0 - a)
}

/// Lentz's evaluation of `1/(b0 + a1/(b1 + a2/(b2 + ...)))` with `(a_i, b_i) = terms(i)`.
fn lentz(terms: impl Fn(f64) -> (f64, f64), b0: f64) -> f64 {
    let tiny = 1e-300;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b0;
    let mut h = d;
    for i in 1..10_000 {
        let (an, bn) = terms(i as f64);
        d = 1.0 / (bn + an * d).max(tiny).copysign(bn + an * d);
        c = bn + an / c;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta I_x(a, b) (Numerical Recipes' continued fraction).
fn beta_i(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - beta_i(b, a, 1.0 - x);
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp() / a;
    // d_{2m+1} and d_{2m} of the fraction, as terms i = 1, 2, ... of 1/(1 + d1/(1 + d2/...)).
    let d = |i: f64| {
        let m = (i / 2.0).floor();
        if i as u64 % 2 == 0 {
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        } else {
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        }
    };
    front * lentz(|i| (d(i), 1.0), 1.0)
}

/// The 0.1% critical value of chi-square with `k` degrees of freedom (Wilson-Hilferty).
fn chi2_critical(k: usize) -> f64 {
    let k = k as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + 3.0902 * h.sqrt()).powi(3)
}

/// Chi-square of integer samples against the pmf, the tails pooled until each cell expects 5.
#[track_caller]
fn assert_pmf(name: &str, xs: &[i64], pmf: impl Fn(i64) -> f64) {
    let n = xs.len() as f64;
    let mode_range = {
        let (lo, hi) = (*xs.iter().min().unwrap(), *xs.iter().max().unwrap());
        (lo - 5).max(0)..=hi + 5
    };
    // Cells: [lo_cut, each k, hi_cut] where the cut cells take the tails.
    let ks: Vec<i64> = mode_range.collect();
    let mut cells: Vec<(i64, i64, f64)> = Vec::new(); // (from, to inclusive, expected)
    let mut pending: Option<(i64, f64)> = None;
    for &k in &ks {
        let (from, e) = pending.take().unwrap_or((k, 0.0));
        let e = e + pmf(k) * n;
        if e >= 5.0 {
            cells.push((from, k, e));
        } else {
            pending = Some((from, e));
        }
    }
    if let Some((_, e)) = pending {
        if let Some(last) = cells.last_mut() {
            last.2 += e;
        }
    }
    // The outer cells take everything beyond them (exact tail mass).
    let first = cells[0].0;
    let last = cells.last().unwrap().1;
    let below: f64 = (0..first).map(&pmf).sum::<f64>() * n;
    let inside: f64 = cells.iter().map(|c| c.2).sum::<f64>() + below;
    cells[0].0 = i64::MIN;
    cells[0].2 += below;
    let end = cells.len() - 1;
    cells[end].1 = i64::MAX;
    cells[end].2 += n - inside;
    let chi2: f64 = cells
        .iter()
        .map(|&(a, b, e)| {
            let o = xs.iter().filter(|&&x| x >= a && x <= b).count() as f64;
            (o - e).powi(2) / e
        })
        .sum();
    let critical = chi2_critical(cells.len() - 1);
    assert!(
        chi2 < critical,
        "{name}: chi-square {chi2} over {} cells (critical {critical}), {first}..{last}",
        cells.len()
    );
}

fn floats(a: &Array) -> Vec<f64> {
    a.astype(DType::Float64).to_vec::<f64>()
}

#[test]
fn exponential_matches_its_distribution() {
    let mut g = default_rng(Some(101));
    for dt in [DType::Float32, DType::Float64] {
        for scale in [1.0, 2.5] {
            let x = floats(&g.exponential(scale, &[N], dt));
            assert!(x.iter().all(|&v| v >= 0.0 && v.is_finite()));
            let v = scale * scale;
            assert_moments(&format!("exponential {dt} {scale}"), &x, scale, v, 9.0 * v * v);
            assert_ks(&format!("exponential {dt} {scale}"), x, |t| 1.0 - (-t / scale).exp());
        }
    }
}

#[test]
fn gamma_matches_its_distribution() {
    let mut g = default_rng(Some(202));
    for (k, scale) in [(0.3, 1.0), (1.0, 2.0), (2.5, 0.5), (40.0, 1.0), (0.02, 3.0)] {
        // Shape 0.02 puts 13% of its mass below float32's smallest subnormal (P(a, x) ≈
        // x^a/Γ(a+1)): those round to 0, so it is tested in float64 only.
        let dtypes =
            if k < 0.1 { &[DType::Float64][..] } else { &[DType::Float64, DType::Float32] };
        for &dt in dtypes {
            let x = floats(&g.gamma(k, scale, &[N], dt));
            assert!(x.iter().all(|&v| v >= 0.0 && v.is_finite()), "gamma {k}: {dt}");
            let name = format!("gamma({k}, {scale}) {dt}");
            let (mean, var) = (k * scale, k * scale * scale);
            assert_moments(&name, &x, mean, var, (3.0 * k * k + 6.0 * k) * scale.powi(4));
            assert_ks(&name, x, |t| gamma_p(k, t / scale));
        }
    }
    // shape or scale 0: zeros, as NumPy.
    assert!(g.gamma(0.0, 1.0, &[5], DType::Float64).to_vec::<f64>().iter().all(|&v| v == 0.0));
}

#[test]
fn beta_matches_its_distribution() {
    let mut g = default_rng(Some(303));
    for (a, b) in [(0.5, 0.5), (2.0, 5.0), (1.0, 1.0), (0.05, 0.2), (30.0, 3.0)] {
        let x = floats(&g.beta(a, b, &[N], DType::Float64));
        assert!(x.iter().all(|v| (0.0..=1.0).contains(v)), "beta({a}, {b})");
        let s = a + b;
        let mean = a / s;
        let var = a * b / (s * s * (s + 1.0));
        let name = format!("beta({a}, {b})");
        // E[(X-μ)⁴] through the raw moments E[X^j] = Π (a+i)/(s+i).
        let raw = |j: i32| (0..j).map(|i| (a + i as f64) / (s + i as f64)).product::<f64>();
        let m4 = raw(4) - 4.0 * mean * raw(3) + 6.0 * mean * mean * raw(2) - 3.0 * mean.powi(4);
        assert_moments(&name, &x, mean, var, m4);
        assert_ks(&name, x, |t| beta_i(a, b, t));
    }
    let x = floats(&g.beta(2.0, 3.0, &[N], DType::Float32));
    assert_ks("beta float32", x, |t| beta_i(2.0, 3.0, t));
}

fn poisson_pmf(lam: f64) -> impl Fn(i64) -> f64 {
    move |k| (k as f64 * lam.ln() - lam - ln_gamma(k as f64 + 1.0)).exp()
}

fn binomial_pmf(n: i64, p: f64) -> impl Fn(i64) -> f64 {
    move |k| {
        if k < 0 || k > n {
            return 0.0;
        }
        let (nf, kf) = (n as f64, k as f64);
        (ln_gamma(nf + 1.0) - ln_gamma(kf + 1.0) - ln_gamma(nf - kf + 1.0)
            + kf * p.ln()
            + (nf - kf) * (1.0 - p).ln())
        .exp()
    }
}

#[test]
fn poisson_matches_its_pmf() {
    let mut g = default_rng(Some(404));
    // Inversion below 10, PTRS from 10.
    for lam in [0.05, 1.0, 3.5, 9.99, 10.0, 37.5, 1e4] {
        let x = g.poisson(lam, &[N]);
        assert_eq!(x.dtype(), DType::Int64);
        let x = x.to_vec::<i64>();
        assert!(x.iter().all(|&v| v >= 0));
        let name = format!("poisson({lam})");
        let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        assert_moments(&name, &xf, lam, lam, lam * (1.0 + 3.0 * lam));
        assert_pmf(&name, &x, poisson_pmf(lam));
    }
    assert_eq!(g.poisson(0.0, &[3]).to_vec::<i64>(), vec![0, 0, 0]);
}

#[test]
fn binomial_matches_its_pmf() {
    let mut g = default_rng(Some(505));
    // Inversion (n·min(p, 1-p) < 10), BTRS, and p > 1/2 by symmetry for both.
    for (n, p) in
        [(10, 0.3), (45, 0.2), (20, 0.5), (1000, 0.9), (100, 0.95), (5000, 0.013), (1, 0.5)]
    {
        let x = g.binomial(n, p, &[N]).to_vec::<i64>();
        assert!(x.iter().all(|&v| (0..=n).contains(&v)), "binomial({n}, {p})");
        let name = format!("binomial({n}, {p})");
        let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let nf = n as f64;
        let var = nf * p * (1.0 - p);
        let m4 = var * (1.0 + (3.0 * nf - 6.0) * p * (1.0 - p));
        assert_moments(&name, &xf, nf * p, var, m4);
        assert_pmf(&name, &x, binomial_pmf(n, p));
    }
    assert_eq!(g.binomial(7, 1.0, &[2]).to_vec::<i64>(), vec![7, 7]);
    assert_eq!(g.binomial(0, 0.4, &[2]).to_vec::<i64>(), vec![0, 0]);
}

/// Which of the `n!` orders a permutation is (its Lehmer code).
fn order_index(perm: &[i64]) -> usize {
    let mut rest: Vec<i64> = (0..perm.len() as i64).collect();
    perm.iter().fold(0, |acc, &v| {
        let pos = rest.iter().position(|&r| r == v).expect("a permutation");
        rest.remove(pos);
        acc * (rest.len() + 1) + pos
    })
}

#[test]
fn permutations_are_uniform_permutations() {
    let mut g = default_rng(Some(606));
    let mut p = g.permutation(1000).to_vec::<i64>();
    assert_ne!(p, (0..1000).collect::<Vec<_>>());
    p.sort();
    assert_eq!(p, (0..1000).collect::<Vec<_>>());
    assert_eq!(g.permutation(0).shape(), &[0]);
    // The 6 orders of 3 elements equally often.
    let draws = 1200;
    let mut counts = [0.0f64; 6];
    for _ in 0..draws {
        counts[order_index(&g.permutation(3usize).to_vec::<i64>())] += 1.0;
    }
    let e = draws as f64 / 6.0;
    let chi2: f64 = counts.iter().map(|c| (c - e).powi(2) / e).sum();
    assert!(chi2 < chi2_critical(5), "orders {counts:?}: chi-square {chi2}");
}

#[test]
fn shuffle_and_permutation_of_an_array_keep_the_rows() {
    let mut g = default_rng(Some(707));
    let x = Array::from_vec((0..40).map(|v| v as f32).collect::<Vec<_>>(), &[10, 4]);
    for y in [g.shuffle(&x), g.permutation(&x)] {
        assert_eq!(y.shape(), &[10, 4]);
        assert_eq!(y.dtype(), DType::Float32);
        let v = y.to_vec::<f32>();
        let mut rows: Vec<Vec<f32>> = v.chunks(4).map(|r| r.to_vec()).collect();
        assert!(rows.iter().all(|r| r.iter().enumerate().all(|(j, &e)| e == r[0] + j as f32)));
        assert_ne!(v, x.to_vec::<f32>(), "not shuffled");
        rows.sort_by(|a, b| a[0].total_cmp(&b[0]));
        assert_eq!(rows.concat(), x.to_vec::<f32>());
    }
}

#[test]
fn choice_draws_as_numpy_describes() {
    let mut g = default_rng(Some(808));
    // Without replacement: distinct, from the population.
    let c = g.choice(50, &[7, 6], false, None);
    assert_eq!((c.shape(), c.dtype()), (&[7usize, 6][..], DType::Int64));
    let mut v = c.to_vec::<i64>();
    assert!(v.iter().all(|x| (0..50).contains(x)));
    v.sort();
    v.dedup();
    assert_eq!(v.len(), 42);
    // The whole population without replacement is a permutation.
    let mut all = g.choice(20, &[20], false, None).to_vec::<i64>();
    all.sort();
    assert_eq!(all, (0..20).collect::<Vec<_>>());
    // With replacement, uniform: chi-square over 8 values.
    let u = g.choice(8, &[N], true, None).to_vec::<i64>();
    assert_pmf("choice uniform", &u, |k| if (0..8).contains(&k) { 1.0 / 8.0 } else { 0.0 });
    // With p: the frequencies follow p; a zero weight is never drawn.
    let p = [0.1, 0.0, 0.25, 0.4, 0.05, 0.2];
    let w = g.choice(6, &[N], true, Some(&p)).to_vec::<i64>();
    assert!(!w.contains(&1));
    assert_pmf("choice p", &w, |k| if (0..6).contains(&k) { p[k as usize] } else { 0.0 });
    // Without replacement with p: distinct, never a zero weight, and the first pick follows p
    // (successive draws proportional to p among those left).
    let draws = 600;
    let mut first = Vec::with_capacity(draws);
    for _ in 0..draws {
        let s = g.choice(6, &[3], false, Some(&p)).to_vec::<i64>();
        assert!(!s.contains(&1) && s[0] != s[1] && s[1] != s[2] && s[0] != s[2], "{s:?}");
        first.push(s[0]);
    }
    assert_pmf("choice without replacement, first pick", &first, |k| {
        if (0..6).contains(&k) {
            p[k as usize]
        } else {
            0.0
        }
    });
    // From an array: rows of it.
    let a = Array::from_vec((0..12).map(|v| v as f64 * 10.0).collect::<Vec<_>>(), &[6, 2]);
    let rows = g.choice(&a, &[4], false, None);
    assert_eq!(rows.shape(), &[4, 2]);
    let r = rows.to_vec::<f64>();
    assert!(r.chunks(2).all(|row| row[1] == row[0] + 10.0 && (row[0] / 20.0).fract() == 0.0));
    // Nothing asked: an empty result even from an empty population.
    assert_eq!(g.choice(0, &[0], true, None).shape(), &[0]);
}

/// The error's op and message, for a `Value` error.
#[track_caller]
fn value_error(r: kiln::Result<Array>) -> (String, String) {
    match r {
        Err(Error::Value { op, message }) => (op, message),
        other => panic!("expected a value error, got {other:?}"),
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    let mut g: Generator = default_rng(Some(909));
    let f = DType::Float64;
    let cases: Vec<(kiln::Result<Array>, &str, &str)> = vec![
        (g.try_exponential(-1.0, &[3], f), "exponential", "scale < 0"),
        (g.try_gamma(-0.5, 1.0, &[3], f), "gamma", "shape < 0"),
        (g.try_gamma(1.0, f64::NAN, &[3], f), "gamma", "scale < 0"),
        (g.try_beta(0.0, 1.0, &[3], f), "beta", "a <= 0"),
        (g.try_beta(1.0, -2.0, &[3], f), "beta", "b <= 0"),
        (g.try_poisson(-1.0, &[3]), "poisson", "lam < 0"),
        (g.try_poisson(f64::NAN, &[3]), "poisson", "lam < 0"),
        (g.try_poisson(1e19, &[3]), "poisson", "lam value too large"),
        (g.try_binomial(-1, 0.5, &[3]), "binomial", "n < 0"),
        (g.try_binomial(5, 1.5, &[3]), "binomial", "p < 0, p > 1 or p is NaN"),
        (g.try_binomial(5, f64::NAN, &[3]), "binomial", "p < 0, p > 1 or p is NaN"),
        (g.try_choice(5, &[6], false, None), "choice", "larger sample than population"),
        (g.try_choice(0, &[1], true, None), "choice", "a must be a positive integer"),
        (g.try_choice(3, &[1], true, Some(&[0.5, 0.5])), "choice", "a and p must have same size"),
        (g.try_choice(2, &[1], true, Some(&[1.5, -0.5])), "choice", "not non-negative"),
        (g.try_choice(2, &[1], true, Some(&[0.5, 0.6])), "choice", "do not sum to 1"),
        (g.try_choice(2, &[1], true, Some(&[f64::NAN, 1.0])), "choice", "contain NaN"),
        (g.try_choice(3, &[2], false, Some(&[1.0, 0.0, 0.0])), "choice", "Fewer non-zero"),
        (g.try_shuffle(&Array::scalar(1.0)), "shuffle", "at least 1-dimensional"),
        (g.try_permutation(&Array::scalar(1.0)), "permutation", "at least 1-dimensional"),
    ];
    for (r, op, text) in cases {
        let (got_op, message) = value_error(r);
        assert_eq!(got_op, op, "{message}");
        assert!(message.contains(text), "{op}: {message:?} should say {text:?}");
    }
    match g.try_exponential(1.0, &[3], DType::Int32) {
        Err(Error::Ir(kiln::ir::IrError::UnsupportedDType { op, .. })) => {
            assert_eq!(op, "exponential")
        }
        other => panic!("expected a dtype error, got {other:?}"),
    }
    assert!(matches!(g.try_gamma(2.0, 1.0, &[1], DType::Float16), Err(Error::Ir(_))));
}

/// The lazy draws fuse: exponential, gamma (12 rejection rounds) and poisson read by an
/// elementwise consumer are each one kernel.
#[test]
fn lazy_draws_fuse_into_their_consumer() {
    let x = Array::from_vec((0..4096).map(|i| i as f32).collect::<Vec<_>>(), &[64, 64]);
    x.eval();
    let mut g = default_rng(Some(1010));
    let y = &x * g.exponential(2.0, &[64, 64], DType::Float32) + 1.0f32;
    assert_eq!(kiln::explain(&[&y]).report.kernel_count(), 1);
    let e = floats(&g.exponential(2.0, &[64, 64], DType::Float32));
    let want: f64 = e.iter().sum::<f64>() / e.len() as f64;
    assert!((want - 2.0).abs() < 0.2, "exponential mean {want}");
    let gm = &x * g.gamma(3.0, 1.0, &[64, 64], DType::Float32);
    assert_eq!(kiln::explain(&[&gm]).report.kernel_count(), 1);
    let ps = g.poisson(25.0, &[64, 64]).astype(DType::Float32) * &x;
    assert_eq!(kiln::explain(&[&ps]).report.kernel_count(), 1);
    // The module functions draw from the global generator (other tests seed it and compare
    // its draws: only empty draws, which take no counters, and errors here).
    assert_eq!(kiln::random::exponential(1.0, &[0, 3], DType::Float64).shape(), &[0, 3]);
    assert_eq!(kiln::random::choice(4, &[0], false, None).shape(), &[0]);
    let (op, _) = value_error(kiln::random::try_binomial(-3, 0.5, &[2]));
    assert_eq!(op, "binomial");
}

/// The compiled kernels compute what the reference evaluator computes on the same graph (the
/// rejection rounds, `gammaln` and the inversion tables included): integers exactly, floats
/// within a few ulps (log, exp, cos and gammaln differ in their last bits).
#[test]
fn lazy_draws_match_the_evaluator() {
    let mut g = default_rng(Some(1111));
    let draws = [
        ("exponential", g.exponential(1.5, &[999], DType::Float32)),
        ("gamma", g.gamma(0.7, 2.0, &[3, 333], DType::Float64)),
        ("beta", g.beta(2.0, 0.5, &[999], DType::Float64)),
        ("poisson small", g.poisson(4.2, &[999])),
        ("poisson", g.poisson(123.0, &[999])),
        ("binomial small", g.binomial(30, 0.9, &[999])),
        ("binomial", g.binomial(400, 0.3, &[999])),
    ];
    for (name, y) in draws {
        let l = kiln::lower(&[&y]);
        let inputs: Vec<&kiln::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
        let want = Array::from_host(kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0));
        let (got, want) = (floats(&y), floats(&want));
        let tol = if y.dtype() == DType::Float32 { 1e-5 } else { 1e-12 };
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((a - b).abs() <= tol * b.abs().max(1.0), "{name}[{i}]: {a} vs {b}");
        }
    }
}
