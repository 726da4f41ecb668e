//! kiln's host time per materialisation of a small expression (kiln-bench's tiny_chain_48ops:
//! 48 scalar ops on 1024 float32) and of kiln-bench's lazy random draws (standard_normal and
//! dropout, at 1024 elements): building the expression, then the phases
//! `kiln::host_phase_times` counts (lowering to a graph or the dispatch key, the plan cache; on a
//! GPU also inputs and the run), and the nodes of each lowered graph; and the chain as a
//! `kiln::fuse` closure run per call (`Fused::run`, its plan run directly):
//! `KILN_DEVICE=cpu cargo run --release --example host_overhead`.
use kiln::{Array, DType};

/// Prints the host time per call of materialising `f()`, `n` calls after a warm-up.
fn measure(name: &str, n: usize, mut f: impl FnMut() -> Array) {
    let nodes = kiln::lower(&[&f()]).graph.len();
    for _ in 0..10 {
        f().eval();
    }
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(f());
    }
    let build = t0.elapsed().as_secs_f64() * 1e6 / n as f64;
    let (b, n0) = kiln::host_phase_times();
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        f().eval();
    }
    let el = t0.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("{name} ({nodes} nodes): per call {el:.1} µs: build {build:.1}, {}", phases(b, n0));
}

/// The phases' microseconds per materialisation since `before` (at `n0` materialisations).
fn phases(before: Vec<(&str, f64)>, n0: usize) -> String {
    let (after, n1) = kiln::host_phase_times();
    let per: Vec<String> = before
        .iter()
        .zip(&after)
        .map(|((k, x), (_, y))| format!("{k} {:.1}", (y - x) / (n1 - n0) as f64))
        .collect();
    per.join(", ")
}

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
    measure("tiny_chain_48ops", 20000, || tiny(s.clone()));
    // The same chain as a fused closure run per call (`Fused::run`: a repeated call runs its
    // plan directly, nothing built): host time per call, the run included.
    let fused = kiln::fuse("tiny", |a: &[kiln::Operand]| tiny(a[0].to_array()));
    let (n, arg) = (20000, [kiln::Operand::from(&s)]);
    for _ in 0..10 {
        fused.run(&arg);
    }
    let (b, n0) = kiln::host_phase_times();
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(fused.run(&arg));
    }
    let el = t0.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("tiny_chain_48ops, fused run: per call {el:.1} µs: {}", phases(b, n0));
    let rng = std::cell::RefCell::new(kiln::random::default_rng(Some(1)));
    measure("standard_normal", 5000, || rng.borrow_mut().standard_normal(&[1024], DType::Float32));
    measure("dropout", 5000, || {
        &s * rng.borrow_mut().random(&[1024], DType::Float32).greater_equal(0.1f32) / 0.9f32
    });
}
