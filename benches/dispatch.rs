//! The host's cost of a call of a small expression (issue 22 §1): kiln-bench's
//! `tiny_chain_48ops` (64 scalar ops on 1,024 float32s) built and dropped; built and
//! materialised (its plan found by the root's structural number, `array/structure.rs`, no walk;
//! with `KILN_DISPATCH_STRUCTURE=off` by the dispatch walk's key, as before); and the same chain
//! as a fused closure run directly (nothing built). Each materialisation runs the chain's host
//! kernel (~4 µs on the 2-core development machine).
//!
//! `KILN_DEVICE=cpu cargo bench --bench dispatch`, and again with `KILN_DISPATCH_STRUCTURE=off`.

use criterion::{criterion_group, criterion_main, Criterion};
use kiln::Array;

/// kiln-bench's `tiny_chain_48ops`: 16 rounds of four scalar ops.
fn chain(mut t: Array) -> Array {
    for _ in 0..16 {
        t = t * 1.0001 + 0.5;
        t = t - 0.25;
        t = t * 0.999;
    }
    t
}

fn bench(c: &mut Criterion) {
    let s = Array::from_vec(vec![0.5f32; 1024], &[1024]);
    s.eval();
    let mut g = c.benchmark_group("tiny_chain_48ops (host)");
    g.bench_function("build and drop", |b| b.iter(|| chain(s.clone())));
    g.bench_function("build, find the plan, run", |b| {
        b.iter(|| {
            let r = chain(s.clone());
            r.eval();
            r
        })
    });
    let f = kiln::fuse("tiny", |a: &[kiln::Operand]| chain(a[0].to_array()));
    let arg = [kiln::Operand::from(&s)];
    g.bench_function("fused closure run directly", |b| b.iter(|| f.run(&arg)));
    g.finish();
    let (by_number, (hits, misses)) = (kiln::dispatch_structure_hits(), kiln::dispatch_stats());
    println!("dispatch: {hits} hits ({by_number} by structural number), {misses} misses");
}

criterion_group!(benches, bench);
criterion_main!(benches);
