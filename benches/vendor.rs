//! Library calls on the host: matrix products through the `gemm` crate, FFTs through `rustfft`.
//!
//! `cargo bench --bench vendor` (release). Each benchmark runs a compiled schedule whose one
//! region is the library call (its output allocated each time), through
//! `kiln_exec::cpu::run_schedule` with `HostRun::Libraries` (host libraries, the rest evaluated).
//!
//! Measured on the 2-core development machine (shared, load ~4; medians): matmul f32 1024^3
//! 44 ms (49 GFLOP/s), with a transposed operand read through its strides 60 ms; fft c64 2^20
//! 12.2 ms; rfft f32 2^20 6.8 ms. NumPy 2.4 on the same machine and load: 46 ms (OpenBLAS),
//! 46 ms, 79 ms and 56 ms (pocketfft).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kiln::{Array, DType, HostArray};
use kiln_compiler::pipeline::{compile, Compiled, Options};
use kiln_exec::cpu::{run_schedule, HostRun};

/// The compiled plan of `y` and its inputs.
fn plan(y: &Array) -> (Compiled, Vec<std::sync::Arc<HostArray>>) {
    let l = kiln::lower(&[y]);
    (compile(&l.graph, &Options::from_env()).unwrap(), l.inputs)
}

fn bench_plan(c: &mut Criterion, group: &str, name: &str, flops: u64, y: &Array) {
    let (p, inputs) = plan(y);
    let refs: Vec<&HostArray> = inputs.iter().map(|a| a.as_ref()).collect();
    assert_eq!(p.report().kernel_count(), 1, "{}", p.report());
    let mut g = c.benchmark_group(group);
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(flops));
    g.bench_function(name, |b| {
        b.iter(|| {
            run_schedule(&p.schedule, &p.partition.regions, &refs, HostRun::Libraries).unwrap()
        })
    });
    g.finish();
}

fn matmul(c: &mut Criterion) {
    let n = 1024;
    let mut rng = kiln::random::default_rng(Some(1));
    let a = rng.standard_normal(&[n, n], DType::Float32);
    let b = rng.standard_normal(&[n, n], DType::Float32);
    let flops = 2 * (n as u64).pow(3);
    bench_plan(c, "matmul", "f32 1024^3", flops, &a.matmul(&b));
    // The transposed operand is read through its strides (no copy kernel: one region).
    bench_plan(c, "matmul", "f32 1024^3, a.T", flops, &a.t().matmul(&b));
}

fn fft(c: &mut Criterion) {
    let n = 1 << 20;
    let mut rng = kiln::random::default_rng(Some(2));
    let re = rng.standard_normal(&[n], DType::Float32);
    let z = (&re
        + &rng.standard_normal(&[n], DType::Float32)
            * Array::scalar(num_complex::Complex32::new(0.0, 1.0)))
    .astype(DType::Complex64);
    z.eval();
    // ~5 n log2 n flops, the usual FFT convention.
    let flops = 5 * n as u64 * 20;
    bench_plan(c, "fft", "c64 2^20", flops, &kiln::fft::fft(&z, None, -1, "backward"));
    bench_plan(c, "fft", "rfft f32 2^20", flops / 2, &kiln::fft::rfft(&re, None, -1, "backward"));
}

criterion_group!(benches, matmul, fft);
criterion_main!(benches);
