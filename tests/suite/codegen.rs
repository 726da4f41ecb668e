//! Code generation on the host: programs written with kiln's API, partitioned, scheduled and run
//! with compiled kernels, against the reference evaluator.
//!
//! Integers and bools must match bit for bit. Floats must match within a bound in ulps (units
//! in the last place of the reference's value); each test states its bound and why.

use kiln::{axis, Array, DType, HostArray};
use kiln_compiler::codegen::{self, run_schedule_on_host};
use kiln_compiler::fusion::{partition, Partition};
use kiln_compiler::schedule::schedule;
use num_complex::Complex32;

/// A deterministic generator (an LCG): uniform floats in [lo, hi).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() as f64 / (1u64 << 53) as f64)
    }
}

fn uniform_f32(shape: &[usize], lo: f64, hi: f64, seed: u64) -> Array {
    let mut r = Rng(seed);
    let n: usize = shape.iter().product();
    let a = Array::from_vec((0..n).map(|_| r.uniform(lo, hi) as f32).collect::<Vec<_>>(), shape);
    a.eval();
    a
}

fn uniform_f64(shape: &[usize], lo: f64, hi: f64, seed: u64) -> Array {
    let mut r = Rng(seed);
    let n: usize = shape.iter().product();
    let a = Array::from_vec((0..n).map(|_| r.uniform(lo, hi)).collect::<Vec<_>>(), shape);
    a.eval();
    a
}

fn ints<T: kiln::ir::HostElement>(shape: &[usize], seed: u64, f: impl Fn(u64) -> T) -> Array {
    let mut r = Rng(seed);
    let n: usize = shape.iter().product();
    let a = Array::from_vec((0..n).map(|_| f(r.next())).collect::<Vec<_>>(), shape);
    a.eval();
    a
}

/// The graph of `outs`, partitioned and scheduled; results from compiled code and from the
/// reference evaluator.
fn run_both(outs: &[&Array]) -> (Vec<HostArray>, Vec<HostArray>, Partition) {
    let lowered = kiln::lower(outs);
    let g = lowered.graph;
    let p = partition(&g);
    let sched = schedule(&g, &p.regions);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference = kiln::ir::eval::evaluate(&g, &inputs).unwrap();
    let compiled = run_schedule_on_host(&sched, &p.regions, &inputs).unwrap_or_else(|e| {
        let text = kiln_compiler::fusion::print_regions(&p.regions);
        let mlir: Vec<String> = p.regions.iter().map(|r| codegen::mlir_text(r).unwrap_or_else(|e| e.to_string())).collect();
        panic!("{e}\n{text}\n{}", mlir.join("\n"))
    });
    // Every region must have been compiled (none fell back to the evaluator).
    for (i, r) in p.regions.iter().enumerate() {
        if let Err(e) = codegen::compile_region(r) {
            panic!("region {i} not compiled: {e}\n{}", kiln_compiler::fusion::print_regions(std::slice::from_ref(r)));
        }
    }
    (compiled, reference, p)
}

/// Distance in ulps between two floats of a float dtype (as f64), the ulp being that of the
/// reference `want`'s magnitude in the dtype; NaNs equal NaNs, infinities must match exactly.
fn ulps(got: f64, want: f64, mantissa: u32, min_exp: i32) -> f64 {
    if got.is_nan() && want.is_nan() || got == want {
        return 0.0;
    }
    if !got.is_finite() || !want.is_finite() {
        return f64::INFINITY;
    }
    let e = if want == 0.0 { min_exp } else { (want.abs().log2().floor() as i32).max(min_exp) };
    let ulp = 2f64.powi(e - (mantissa as i32 - 1));
    (got - want).abs() / ulp
}

fn as_f64(a: &HostArray) -> Option<(Vec<f64>, u32, i32)> {
    use kiln::ir::host::Data;
    Some(match a.data() {
        Data::Float32(v) => (v.iter().map(|&x| x as f64).collect(), 24, -126),
        Data::Float64(v) => (v.clone(), 53, -1022),
        Data::Float16(v) => (v.iter().map(|x| x.to_f64()).collect(), 11, -14),
        Data::BFloat16(v) => (v.iter().map(|x| x.to_f64()).collect(), 8, -126),
        _ => return None,
    })
}

/// Asserts the arrays match: exactly for non-floats, within `max_ulps` for floats. Returns the
/// largest distance seen, in ulps.
fn check(name: &str, got: &[HostArray], want: &[HostArray], max_ulps: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "{name}: number of outputs");
    let mut worst = 0.0f64;
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()), "{name}: output {k}");
        match (as_f64(g), as_f64(w)) {
            (Some((gv, m, e)), Some((wv, _, _))) => {
                for (i, (&a, &b)) in gv.iter().zip(&wv).enumerate() {
                    let d = ulps(a, b, m, e);
                    worst = worst.max(d);
                    assert!(d <= max_ulps, "{name}: output {k} element {i}: {a:e} vs reference {b:e} ({d} ulps > {max_ulps})");
                }
            }
            _ => assert_eq!(g, w, "{name}: output {k}"),
        }
    }
    eprintln!("{name}: max {worst} ulps");
    worst
}

fn check_program(name: &str, outs: &[&Array], max_ulps: f64) -> f64 {
    let (got, want, _) = run_both(outs);
    check(name, &got, &want, max_ulps)
}

#[test]
fn mlir_of_the_chain_is_canonical_and_shape_generic() {
    let x = uniform_f32(&[1000], -3.0, 3.0, 1);
    let y = ((&x - 1.5).square() * 0.5 + x.sin()) * (-(&x * &x)).exp();
    let l = kiln::lower(&[&y]);
    let p = partition(&l.graph);
    let a = codegen::mlir_text(&p.regions[0]).unwrap();
    eprintln!("{a}");
    assert_eq!(a, codegen::mlir_text(&p.regions[0]).unwrap());
    // The same program on another size gives the same kernel text.
    let x2 = uniform_f32(&[77], -3.0, 3.0, 2);
    let y2 = ((&x2 - 1.5).square() * 0.5 + x2.sin()) * (-(&x2 * &x2)).exp();
    let l2 = kiln::lower(&[&y2]);
    let p2 = partition(&l2.graph);
    assert_eq!(a, codegen::mlir_text(&p2.regions[0]).unwrap());
    let ir = codegen::llvm_ir_text(&p.regions[0]).unwrap();
    assert!(ir.contains("define void @kiln_kernel_host"), "{ir}");
    assert!(!a.contains("1000"), "sizes are parameters:\n{a}");
}

#[test]
fn ew_chain_matches_the_evaluator() {
    let x = uniform_f32(&[10_000], -4.0, 4.0, 3);
    let y = ((&x - 1.5).square() * 0.5 + x.sin()) * (-(&x * &x)).exp();
    check_program("ew_chain", &[&y], 2.0);
}

#[allow(dead_code)]
fn unused(_: Complex32, _: DType) {
    let _ = axis(0);
}
