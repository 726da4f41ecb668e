//! The CPU backend on the workloads of `../shared/bench/cpu_peers.py`, same definitions and
//! sizes (float32; N = 2^24, R×C = 4096×4096, matmul 1024³, FFT complex64 2^20), through the
//! public API as a user calls it: the lazy expression built afresh and materialised (`eval`)
//! on inputs already materialised, kiln's host work (lowering, plan cache) included.
//!
//! `cargo bench --bench cpu_peers` (`-- ew_chain` for one); NumPy's figures come from
//! `python3 ../shared/bench/cpu_peers.py` on the same machine; `benches/RESULTS.md` puts them
//! side by side.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kiln::Array;
use num_complex::Complex32;

/// Standard-normal-ish float32s (sum of uniforms) from a fixed seed.
fn normal(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut u = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n).map(|_| (0..4).map(|_| u()).sum::<f32>() * 1.732 - 3.464).collect()
}

fn array(v: Vec<f32>, shape: &[usize]) -> Array {
    let a = Array::from_vec(v, shape);
    a.eval();
    a
}

fn cpu_peers(c: &mut Criterion) {
    const N: usize = 1 << 24;
    const R: usize = 4096;
    const C: usize = 4096;
    let x = array(normal(N, 1), &[N]);
    let m = array(normal(R * C, 2), &[R, C]);
    let v = array(normal(C, 3), &[C]);
    let mut g = c.benchmark_group("cpu_peers");
    g.sample_size(15)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    type Work<'a> = (&'static str, Box<dyn Fn() -> Array + 'a>, usize);
    let works: Vec<Work> = vec![
        (
            "ew_chain",
            Box::new(|| ((&x - 1.5).power(2.0) * 0.5 + x.sin()) * (-(&x * &x)).exp()),
            8 * N,
        ),
        ("sqdiff_bcast", Box::new(|| (&m - &v) * (&m - &v)), 8 * R * C),
        ("l2norm_rows", Box::new(|| (&m * &m).sum(1).sqrt()), 4 * R * C),
        ("softmax_rows", Box::new(|| kiln::nn::softmax(&m, 1).unwrap()), 8 * R * C),
        ("sum_all", Box::new(|| x.sum(None)), 4 * N),
    ];
    for (name, f, bytes) in &works {
        g.throughput(Throughput::Bytes(*bytes as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                f().eval();
            })
        });
    }
    const K: usize = 1024;
    let a = array(normal(K * K, 4), &[K, K]);
    g.throughput(Throughput::Elements((2 * K * K * K) as u64));
    g.bench_function("matmul_f32_1024", |b| {
        b.iter(|| {
            kiln::matmul(&a, &a).eval();
        })
    });
    const F: usize = 1 << 20;
    let (re, im) = (normal(F, 5), normal(F, 6));
    let z = Array::from_vec(
        re.iter().zip(&im).map(|(&r, &i)| Complex32::new(r, i)).collect::<Vec<_>>(),
        &[F],
    );
    z.eval();
    g.throughput(Throughput::Elements(F as u64));
    g.bench_function("fft_c64_1M", |b| {
        b.iter(|| {
            kiln::fft::fft(&z, None, -1, "backward").eval();
        })
    });
    // One k-means iteration as `kmeans_peers.py` defines it (assign by squared distances and
    // argmin, update by sums and counts per cluster), against scikit-learn's Lloyd iteration
    // (`python3 benches/sklearn_kmeans.py`): 2^18 points of 64 float32s, k = 10.
    const KN: usize = 1 << 18;
    const KD: usize = 64;
    const KK: usize = 10;
    let px = array(normal(KN * KD, 7), &[KN, KD]);
    let pc = px.slice(&kiln::s![..KK as i64]);
    pc.eval();
    g.throughput(Throughput::Bytes((4 * KN * KD) as u64));
    g.bench_function("kmeans_iter_262144x64_k10", |b| {
        b.iter(|| {
            let labels = (px.expand_dims(&[1]) - pc.expand_dims(&[0])).square().sum(2).argmin(1);
            let sums = kiln::zeros(&[KK, KD], kiln::DType::Float32).add_at(&labels, &px);
            let counts = kiln::bincount(&labels, None, KK).astype(kiln::DType::Float32);
            (&sums / counts.maximum(1.0f32).expand_dims(&[1])).eval();
        })
    });
    // scatter_add of 2^24 float32s into 1024 bins (peers_ops.py's workload, a quarter of its size).
    const SN: usize = 1 << 24;
    let sv = array(normal(SN, 8), &[SN]);
    let si = Array::from_vec(
        (0..SN as u64)
            .map(|i| ((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 1024) as i64)
            .collect(),
        &[SN],
    );
    si.eval();
    g.throughput(Throughput::Bytes((12 * SN) as u64));
    g.bench_function("scatter_add_2^24_into_1024", |b| {
        b.iter(|| {
            kiln::zeros(&[1024], kiln::DType::Float32).add_at(&si, &sv).eval();
        })
    });
    // The CPU figures: sort and cumsum of 2^24 float32 (np.sort, np.cumsum beside them).
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("sort_f32_2^24", |b| {
        b.iter(|| {
            x.sort(None).eval();
        })
    });
    g.bench_function("argsort_f32_2^24", |b| {
        b.iter(|| {
            x.argsort(None).eval();
        })
    });
    g.bench_function("cumsum_f32_2^24", |b| {
        b.iter(|| {
            x.cumsum(None).eval();
        })
    });
    g.finish();
}

criterion_group!(benches, cpu_peers);
criterion_main!(benches);
