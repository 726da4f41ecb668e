//! Simplification of a 1,000-node random elementwise DAG (`cargo bench -p kiln-compiler --bench
//! simplify`). The limits are raised so that the time limit does not cut the measurement short.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use kiln_compiler::simplify::testgen::random_elementwise_graph;
use kiln_compiler::simplify::{simplify, SimplifyOptions};

fn bench(c: &mut Criterion) {
    let g = random_elementwise_graph(1000, &[1024], 7);
    let opts =
        SimplifyOptions { time_limit: Duration::from_secs(10), ..SimplifyOptions::default() };
    let s = simplify(&g, &opts).unwrap();
    eprintln!("{}", s.report);
    c.bench_function("simplify 1000-node elementwise DAG", |b| {
        b.iter(|| simplify(&g, &opts).unwrap())
    });
    let g = random_elementwise_graph(1000, &[1024], 11);
    c.bench_function("simplify 1000-node elementwise DAG (seed 11)", |b| {
        b.iter(|| simplify(&g, &opts).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
