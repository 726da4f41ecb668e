//! `kiln::linalg` on the host (faer) against NumPy (OpenBLAS/LAPACK) on issue 21's CPU
//! workloads: `cholesky` and `solve` of a 2048×2048 float64 symmetric positive definite matrix
//! (`A·Aᵀ/n + I`, one right-hand side), plus `eigh` and `svd` of 512×512 for scale. Each call
//! is the lazy expression built afresh and materialised, as a user calls it.
//!
//! `cargo bench --bench linalg` (`-- cholesky` for one); NumPy's figures, same matrices:
//! `python3 benches/linalg_numpy.py` in the same sitting.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use kiln::{linalg, Array};

/// The matrix both sides use: entries `sin(i·n + j)` (deterministic, no RNG to match).
fn entries(n: usize) -> Vec<f64> {
    (0..n * n).map(|k| (k as f64).sin()).collect()
}

fn spd(n: usize) -> Array {
    let a = Array::from_vec(entries(n), &[n, n]);
    let s = a.matmul(&a.t()) / n as f64 + kiln::eye(n, None, 0, kiln::DType::Float64);
    s.eval();
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("linalg");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    let n = 2048;
    let a = spd(n);
    let b = Array::from_vec((0..n).map(|i| (i as f64).cos()).collect::<Vec<_>>(), &[n, 1]);
    b.eval();
    g.bench_function("cholesky_2048_f64", |t| t.iter(|| linalg::cholesky(&a).eval().clone()));
    g.bench_function("solve_2048_f64", |t| t.iter(|| linalg::solve(&a, &b).eval().clone()));
    let s = 512;
    let m = Array::from_vec(entries(s), &[s, s]);
    m.eval();
    let sym = spd(s);
    g.bench_function("eigh_512_f64", |t| {
        t.iter(|| {
            let (w, v) = linalg::eigh(&sym);
            kiln::eval_all(&[&w, &v]);
        })
    });
    g.bench_function("svd_512_f64", |t| {
        t.iter(|| {
            let (u, sv, vh) = linalg::svd(&m, false);
            kiln::eval_all(&[&u, &sv, &vh]);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
