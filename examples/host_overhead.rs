//! kiln's host time per materialisation of a small expression (kiln-bench's tiny_chain_48ops:
//! 48 scalar ops on 1024 float32): building the expression, then the phases
//! `kiln::host_phase_times` counts (lowering to a graph or the dispatch key, the plan cache; on a
//! GPU also inputs and the run): `KILN_DEVICE=cpu cargo run --release --example host_overhead`.
use kiln::Array;
fn main() {
    let s = Array::from_vec(vec![0.5f32; 1024], &[1024]);
    let s = s.eval().clone();
    let tiny = |mut t: Array| {
        for _ in 0..16 {
            t = t * 1.0001 + 0.5;
            t = t - 0.25;
            t = t * 0.999;
        }
        t
    };
    for _ in 0..10 {
        tiny(s.clone()).eval();
    }
    let n = 20000;
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(tiny(s.clone()));
    }
    let build = t0.elapsed().as_secs_f64() * 1e6 / n as f64;
    let (b, n0) = kiln::host_phase_times();
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        tiny(s.clone()).eval();
    }
    let el = t0.elapsed().as_secs_f64() * 1e6 / n as f64;
    let (a, n1) = kiln::host_phase_times();
    let per: Vec<String> = b
        .iter()
        .zip(&a)
        .map(|((k, x), (_, y))| format!("{k} {:.1}", (y - x) / (n1 - n0) as f64))
        .collect();
    println!("per call {el:.1} µs: build {build:.1}, {}", per.join(", "));
}
