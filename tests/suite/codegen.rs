//! Code generation on the host: programs written with kiln's API, partitioned, scheduled and run
//! with compiled kernels, against the reference evaluator.
//!
//! Integers and bools must match bit for bit. Floats must match within a bound in ulps (units
//! in the last place of the reference's value); each test states its bound and why.

use kiln::ir::OpKind;
use kiln::{axis, Array, DType, HostArray};
use kiln_compiler::codegen;

use crate::ulps::{float_values, host_ulps, ulp_distance};
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
    let compiled = kiln_exec::cpu::run_schedule(
        &sched,
        &p.regions,
        &inputs,
        kiln_exec::cpu::HostRun::Compiled,
    )
    .unwrap_or_else(|e| {
        let text = kiln_compiler::fusion::print_regions(&p.regions);
        let mlir: Vec<String> = p
            .regions
            .iter()
            .map(|r| codegen::mlir_text(r).unwrap_or_else(|e| e.to_string()))
            .collect();
        panic!("{e}\n{text}\n{}", mlir.join("\n"))
    });
    // Every region must have been compiled (none fell back to the evaluator).
    for (i, r) in p.regions.iter().enumerate() {
        if let Err(e) = codegen::compile_region(r) {
            panic!(
                "region {i} not compiled: {e}\n{}",
                kiln_compiler::fusion::print_regions(std::slice::from_ref(r))
            );
        }
    }
    (compiled, reference, p)
}

/// Asserts the arrays match: exactly for non-floats, within `max_ulps` for floats. Returns the
/// largest distance seen, in ulps.
fn check(name: &str, got: &[HostArray], want: &[HostArray], max_ulps: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "{name}: number of outputs");
    let mut worst = 0.0f64;
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()), "{name}: output {k}");
        match (float_values(g), float_values(w)) {
            (Some((gv, format)), Some((wv, _))) => {
                for (i, (&a, &b)) in gv.iter().zip(&wv).enumerate() {
                    let d = ulp_distance(a, b, format);
                    if d > 1.0 && std::env::var("KILN_TEST_VERBOSE").is_ok() {
                        eprintln!("  {name}[{i}]: {a:e} vs {b:e} ({d} ulps)");
                    }
                    worst = worst.max(d);
                    assert!(
                        d <= max_ulps,
                        "{name}: output {k} element {i}: {a:e} vs reference {b:e} ({d} ulps > {max_ulps})"
                    );
                }
            }
            _ => assert_eq!(g, w, "{name}: output {k}"),
        }
    }
    eprintln!("{name}: max {worst} ulps");
    worst
}

/// The bound for float32 results of transcendental functions: libm's scalar float functions
/// are within 1 ulp of the correctly rounded result the evaluator gives (2 after a rounding of
/// their own), glibc's vector ones (libmvec, used in vectorised loops) within 4.
pub(crate) fn f32_ulps() -> f64 {
    if codegen::host::libmvec_enabled() {
        4.0
    } else {
        2.0
    }
}

/// softmax = e / sum(e) with e = exp(x - max): exp's error in e, the same (averaged) in the sum,
/// and two roundings.
fn softmax_ulps() -> f64 {
    2.0 * f32_ulps() + 1.0
}

pub(crate) fn check_program(name: &str, outs: &[&Array], max_ulps: f64) -> f64 {
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

/// The GPU's fast tier compiles one copy of an elementwise region's code, one item at a time
/// (scalar loads, one `ex2` for the chain's `exp`), with the same math library; the optimised
/// tier has the unrolled 4-wide path beside it (vector loads, five copies). Both lowerings are
/// shape-generic and differ from each other, and each tier's PTX is cached apart.
#[test]
fn the_gpu_fast_tier_has_one_copy_of_the_code_and_no_vector_path() {
    use kiln_compiler::codegen::Tier;
    if kiln_compiler::codegen::gpu::libdevice_path().is_none() {
        eprintln!("skipped: no libdevice (scripts/setup.sh fetches it)");
        return;
    }
    let x = uniform_f32(&[1000], -3.0, 3.0, 5);
    let y = ((&(&x - 1.5).square() * 0.5) + &x.sin()) * &(&(-&x) * &x).exp();
    let lowered = kiln::lower(&[&y]);
    let p = partition(&lowered.graph);
    assert_eq!(p.regions.len(), 1, "{p:?}");
    let compile = |tier| {
        let kernel = kiln_compiler::codegen::lower(
            &p.regions[0],
            &kiln_compiler::codegen::LowerOptions::gpu_tier(tier),
        )
        .unwrap();
        crate::support::gpu_compile(kernel, Default::default(), tier).unwrap()
    };
    let (fast, optimized) = (compile(Tier::Fast), compile(Tier::Optimized));
    assert_eq!((fast.tier, optimized.tier), (Tier::Fast, Tier::Optimized));
    assert_ne!(fast.kernel.mlir, optimized.kernel.mlir, "the tiers' lowerings differ");
    assert_eq!(fast.kernel.min_chunk, 1, "fast: a thread takes one item at a time");
    assert_eq!(optimized.kernel.min_chunk, 4, "optimised: four items at a time");
    let count =
        |ptx: &str, op: &str| ptx.lines().filter(|l| l.trim_start().starts_with(op)).count();
    assert_eq!(count(&fast.ptx, "ex2.approx"), 1, "fast: one copy of exp\n{}", fast.ptx);
    assert_eq!(count(&fast.ptx, "ld.global.nc.v4"), 0, "fast: no vector loads\n{}", fast.ptx);
    assert_eq!(
        count(&optimized.ptx, "ex2.approx"),
        5,
        "optimised: five copies of exp\n{}",
        optimized.ptx
    );
    assert!(
        count(&optimized.ptx, "ld.global.nc.v4") >= 1,
        "optimised: vector loads\n{}",
        optimized.ptx
    );
    // Cached apart: asking again gives each tier its own PTX, compiled no more.
    let again = compile(Tier::Fast);
    assert_eq!((again.ptx.as_ref(), again.compile_ms), (fast.ptx.as_ref(), 0.0));
}

/// On a GPU, a new region runs fast-tier code first and optimised code once it is hot (unless
/// `KILN_GPU_TIER` picks one tier): from its `GPU_HOT_CALLS`-th call when its calls have done
/// `GPU_HOT_WORK` (a large kernel), else from its `GPU_HOT_CALLS_SMALL`-th; the same values
/// every time.
#[test]
fn gpu_kernels_start_fast_and_are_optimised_once_hot() {
    use kiln_compiler::codegen::gpu::{GPU_HOT_CALLS, GPU_HOT_CALLS_SMALL};
    use kiln_compiler::codegen::Tier;
    if !crate::vendor_gpu::on_gpu() {
        return;
    }
    // Tiers of compiled code: no first call interpreted while its code compiles.
    let _compiled = kiln_exec::cuda::interp::no_interpreter();
    let forced = match kiln_compiler::codegen::gpu::gpu_tier() {
        (tier, false) => Some(tier),
        (_, true) => None,
    };
    // Structures no other test builds, so their plans and kernels are new here. The large one
    // does at least 2^24 element operations a call: four calls reach GPU_HOT_WORK.
    let small = uniform_f32(&[3000], -3.0, 3.0, 11);
    let big = uniform_f32(&[1 << 24], -3.0, 3.0, 12);
    let exprs: [(&Array, fn(&Array) -> Array, u64); 2] = [
        (&small, |x| (&(&x.cos() * 0.375) - 2.25).tanh() * &x.abs(), GPU_HOT_CALLS_SMALL),
        (&big, |x| (&(&x.sin() * 0.625) + 0.125).exp(), GPU_HOT_CALLS),
    ];
    for (x, expr, hot) in exprs {
        let want = expr(x).to_vec::<f32>();
        let mut tiers = Vec::new();
        for call in 0..hot as usize + 1 {
            let got = expr(x).to_vec::<f32>();
            assert!(got == want, "call {call} on {:?} computed other values", x.shape());
            let ran = kiln::gpu::last_run_streams();
            assert_eq!(ran.len(), 1, "{ran:?}");
            tiers.push(ran[0].tier.expect("generated code ran"));
        }
        let expected: Vec<Tier> = match forced {
            Some(t) => vec![t; tiers.len()],
            // The first materialisation (`want`) was call 1.
            None => (2..=tiers.len() as u64 + 1)
                .map(|c| if c < hot { Tier::Fast } else { Tier::Optimized })
                .collect(),
        };
        assert_eq!(tiers, expected, "{:?}", x.shape());
    }
    // The count is the kernel's, not the plan's: the same structure over ever new shapes (a
    // plan resized each time) is optimised at the same call.
    let mut tiers = Vec::new();
    for call in 0..GPU_HOT_CALLS_SMALL as usize + 1 {
        let x = uniform_f32(&[2000 + 17 * call], -3.0, 3.0, 13 + call as u64);
        let _ = (&x.cos() * &x.sinh()).to_vec::<f32>();
        tiers.push(kiln::gpu::last_run_streams()[0].tier.expect("generated code ran"));
    }
    let expected: Vec<Tier> = match forced {
        Some(t) => vec![t; tiers.len()],
        None => (1..=tiers.len() as u64)
            .map(|c| if c < GPU_HOT_CALLS_SMALL { Tier::Fast } else { Tier::Optimized })
            .collect(),
    };
    assert_eq!(tiers, expected, "one structure over new shapes");
}

#[test]
fn ew_chain_matches_the_evaluator() {
    let x = uniform_f32(&[10_000], -4.0, 4.0, 3);
    let y = ((&x - 1.5).square() * 0.5 + x.sin()) * (-(&x * &x)).exp();
    check_program("ew_chain", &[&y], f32_ulps());
}

/// Floats with the awkward values mixed in: NaN, ±inf, ±0, tiny and huge values.
fn specials_f64(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let sp = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1e-300,
        -1e300,
        0.5,
        -0.5,
        1.0,
        -1.0,
        2.5,
        -2.5,
        3e9,
        -3e9,
        1e19,
    ];
    let mut r = Rng(seed);
    (0..n).map(|i| if i % 7 == 3 { sp[(i / 7) % sp.len()] } else { r.uniform(lo, hi) }).collect()
}

fn with_specials_f32(shape: &[usize], seed: u64, lo: f64, hi: f64) -> Array {
    let n: usize = shape.iter().product();
    let a = Array::from_vec(
        specials_f64(n, seed, lo, hi).into_iter().map(|x| x as f32).collect::<Vec<_>>(),
        shape,
    );
    a.eval();
    a
}

fn with_specials_f64(shape: &[usize], seed: u64, lo: f64, hi: f64) -> Array {
    let n: usize = shape.iter().product();
    let a = Array::from_vec(specials_f64(n, seed, lo, hi), shape);
    a.eval();
    a
}

#[test]
fn broadcasting_in_all_directions() {
    let a = uniform_f32(&[64, 1], -2.0, 2.0, 4);
    let b = uniform_f32(&[1, 48], -2.0, 2.0, 5);
    let c = uniform_f32(&[48], -2.0, 2.0, 6);
    let s = uniform_f32(&[], -2.0, 2.0, 7);
    let y = (&a + &b) * &c - &s;
    check_program("broadcast 2d", &[&y], 0.0);
    let d = uniform_f64(&[3, 1, 5], -2.0, 2.0, 8);
    let e = uniform_f64(&[4, 1], -2.0, 2.0, 9);
    let y = (&d * &e).maximum(0.25);
    check_program("broadcast 3d", &[&y], 0.0);
}

#[test]
fn transposed_flipped_and_negative_step_sliced_inputs() {
    let x = uniform_f32(&[40, 30], -2.0, 2.0, 10);
    let y = x.t().slice(&kiln::s![..;-1, 1..27;3]) * 2.0 + 1.0;
    check_program("transposed negative-step slice", &[&y], 0.0);
    let y = &x.flip(Some(&[0])) - &x.flip(None);
    check_program("flips", &[&y], 0.0);
    let z = uniform_f32(&[4, 5, 6], -2.0, 2.0, 11);
    let y = z.permute(&[2, 0, 1]).slice(&kiln::s![1..5, ..;-2, 2..])
        + z.permute(&[2, 0, 1]).slice(&kiln::s![..4, ..2, ..3]);
    check_program("rank-3 permute and slices", &[&y], 0.0);
    // A reshape of a transposed view cannot be a strided view: it ravels and unravels.
    let y = x.t().reshape(&[20, 60]).sin();
    check_program("reshape of a transpose", &[&y], f32_ulps());
    let y = x.expand_dims(&[0, 2]).squeeze(Some(&[0])).reshape(&[30, 40]).t() * 3.0;
    check_program("expand_dims, squeeze, reshape", &[&y], 0.0);
    // Two outputs of one region, one of them a pure view.
    let y1 = x.t() * 1.0;
    let y2 = x.t().exp();
    check_program("two outputs", &[&y1, &y2], f32_ulps());
}

/// Transposed inputs are read in 32x32 tiles: sizes that are not multiples of 32, chunks of work
/// in parallel, a batch axis in front.
#[test]
fn transposed_inputs_in_tiles() {
    let x = uniform_f32(&[700, 500], -2.0, 2.0, 68);
    let y = uniform_f32(&[500, 700], -2.0, 2.0, 69);
    check_program("x.T + y", &[&(x.t() + &y)], 0.0);
    check_program("x.T[::-1] * 2", &[&(x.t().flip(Some(&[0])) * 2.0)], 0.0);
    let z = uniform_f64(&[3, 70, 45], -2.0, 2.0, 70);
    check_program(
        "batched transpose",
        &[&(z.permute(&[0, 2, 1]) - z.permute(&[0, 2, 1]).square())],
        0.0,
    );
}

#[test]
fn casts_follow_numpy() {
    let f = with_specials_f64(&[600], 12, -300.0, 300.0);
    let floats: Vec<DType> = DType::ALL.into_iter().filter(|d| d.is_float()).collect();
    let real: Vec<DType> = DType::ALL.into_iter().filter(|d| !d.is_complex()).collect();
    for &to in &real {
        check_program(&format!("f64 -> {to}"), &[&f.astype(to)], 0.0);
        check_program(&format!("f32 -> {to}"), &[&f.astype(DType::Float32).astype(to)], 0.0);
    }
    // Integers to every type, large int64 values (float16/bfloat16 must round once).
    let big = ints_i64(&[512], 13);
    for &to in &real {
        check_program(&format!("i64 -> {to}"), &[&big.astype(to)], 0.0);
        check_program(&format!("u64 -> {to}"), &[&big.astype(DType::UInt64).astype(to)], 0.0);
        check_program(&format!("i32 -> {to}"), &[&big.astype(DType::Int32).astype(to)], 0.0);
        check_program(&format!("i8 -> {to}"), &[&big.astype(DType::Int8).astype(to)], 0.0);
        check_program(&format!("bool -> {to}"), &[&big.astype(DType::Bool).astype(to)], 0.0);
    }
    for &from in &floats {
        for &to in &floats {
            check_program(&format!("{from} -> {to}"), &[&f.astype(from).astype(to)], 0.0);
        }
    }
}

/// int64 values of every magnitude (including ties for float16/bfloat16 rounding).
fn ints_i64(shape: &[usize], seed: u64) -> Array {
    let mut r = Rng(seed);
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n)
        .map(|i| {
            let bits = r.next() as i64;
            match i % 5 {
                0 => bits >> (r.next() % 63),
                1 => (bits % 1000) - 500,
                2 => (1i64 << 60) + (1 << 52) + (i as i64 % 3),
                3 => -((1i64 << 40) + (1 << 32)) - (i as i64 % 2),
                _ => bits,
            }
        })
        .collect();
    let a = Array::from_vec(v, shape);
    a.eval();
    a
}

#[test]
fn integer_ops_wrap_and_divide_like_numpy() {
    for dt in [
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
    ] {
        let a = ints_i64(&[400], 14).astype(dt);
        let b = ints(&[400], 15, |v| (v % 19) as i64 - 9).astype(dt);
        let n = format!("{dt}");
        check_program(
            &format!("{n} + - *"),
            &[&(&a + &b), &(&a - &b), &(&a * &b), &a.negative(), &a.square()],
            0.0,
        );
        check_program(&format!("{n} // %"), &[&a.floor_divide(&b), &(&a % &b)], 0.0);
        check_program(
            &format!("{n} abs sign reciprocal"),
            &[&a.abs(), &a.sign(), &b.reciprocal()],
            0.0,
        );
        check_program(
            &format!("{n} bitwise"),
            &[&(&a & &b), &(&a | &b), &(&a ^ &b), &a.invert()],
            0.0,
        );
        check_program(&format!("{n} shifts"), &[&(&a << &b), &(&a >> &b)], 0.0);
        check_program(&format!("{n} power"), &[&a.power(&b)], 0.0);
        check_program(
            &format!("{n} max min"),
            &[&a.maximum(&b), &a.minimum(&b), &a.fmax(&b), &a.fmin(&b)],
            0.0,
        );
        check_program(
            &format!("{n} comparisons"),
            &[
                &a.equal(&b),
                &a.not_equal(&b),
                &a.less(&b),
                &a.less_equal(&b),
                &a.greater(&b),
                &a.greater_equal(&b),
            ],
            0.0,
        );
    }
    // int8 wraps: 127 + 1, -128 // -1, -128 % -1, abs(-128).
    let a = Array::from_vec(vec![127i8, -128, -128, -128, 7, -7, 0], &[7]);
    let b = Array::from_vec(vec![1i8, -1, -1, 2, 0, 0, 0], &[7]);
    a.eval();
    b.eval();
    check_program(
        "int8 edge cases",
        &[&(&a + &b), &a.floor_divide(&b), &(&a % &b), &a.abs(), &a.negative()],
        0.0,
    );
}

#[test]
fn bool_ops() {
    let a = ints(&[100], 16, |v| v % 3 == 0);
    let b = ints(&[100], 17, |v| v % 2 == 0);
    check_program(
        "bools",
        &[
            &a.logical_and(&b),
            &a.logical_or(&b),
            &a.logical_xor(&b),
            &a.logical_not(),
            &(&a & &b),
            &(&a | &b),
            &(&a ^ &b),
            &a.invert(),
        ],
        0.0,
    );
    check_program(
        "bool arithmetic",
        &[
            &(&a + &b),
            &(&a * &b),
            &a.maximum(&b),
            &a.minimum(&b),
            &a.less(&b),
            &a.greater_equal(&b),
        ],
        0.0,
    );
}

#[test]
fn where_and_clip() {
    let x = with_specials_f32(&[30, 20], 18, -3.0, 3.0);
    let y = uniform_f32(&[20], -1.0, 1.0, 19);
    let w = kiln::where_(x.greater(&y), &x, y.square());
    check_program("where", &[&w], 0.0);
    check_program("clip", &[&x.clip(-1.0, 1.5)], 0.0);
    let i = ints(&[30, 20], 20, |v| (v % 200) as i32 - 100);
    check_program("int clip and where", &[&i.clip(-10, 10), &kiln::where_(i.less(0), 0, &i)], 0.0);
}

/// Every float function of the table on float32, float64, float16 and bfloat16.
#[test]
fn float_functions() {
    let x32 = with_specials_f32(&[700], 21, -4.0, 4.0);
    let x64 = with_specials_f64(&[700], 21, -4.0, 4.0);
    let y32 = uniform_f32(&[700], -3.0, 3.0, 22);
    for (dt, x) in [
        (DType::Float32, &x32),
        (DType::Float64, &x64),
        (DType::Float16, &x32.astype(DType::Float16)),
        (DType::BFloat16, &x32.astype(DType::BFloat16)),
    ] {
        let y = y32.astype(dt);
        // The bounds of `ulps::host_ulps`, by the op's IR name.
        let bound_of =
            |name: &str| host_ulps(OpKind::from_name(name).expect("an IR op name"), dt) as f64;
        let unary: Vec<(&str, Array)> = vec![
            ("sqrt", x.sqrt()),
            ("cbrt", x.cbrt()),
            ("exp", x.exp()),
            ("exp2", x.exp2()),
            ("expm1", x.expm1()),
            ("log", x.log()),
            ("log2", x.log2()),
            ("log10", x.log10()),
            ("log1p", x.log1p()),
            ("sin", x.sin()),
            ("cos", x.cos()),
            ("tan", x.tan()),
            ("arcsin", x.arcsin()),
            ("arccos", x.arccos()),
            ("arctan", x.arctan()),
            ("sinh", x.sinh()),
            ("cosh", x.cosh()),
            ("tanh", x.tanh()),
            ("arcsinh", x.arcsinh()),
            ("arccosh", x.arccosh()),
            ("arctanh", x.arctanh()),
            ("floor", x.floor()),
            ("ceil", x.ceil()),
            ("trunc", x.trunc()),
            ("rint", x.rint()),
            ("erf", x.erf()),
            ("absolute", x.abs()),
            ("negative", x.negative()),
            ("sign", x.sign()),
            ("square", x.square()),
            ("reciprocal", x.reciprocal()),
        ];
        for (name, a) in &unary {
            check_program(&format!("{name} {dt}"), &[a], bound_of(name));
        }
        let binary: Vec<(&str, Array)> = vec![
            ("add", x + &y),
            ("subtract", x - &y),
            ("multiply", x * &y),
            ("divide", x / &y),
            ("floor_divide", x.floor_divide(&y)),
            ("remainder", x % &y),
            ("power", x.power(&y)),
            ("maximum", x.maximum(&y)),
            ("minimum", x.minimum(&y)),
            ("fmax", x.fmax(&y)),
            ("fmin", x.fmin(&y)),
            ("arctan2", x.arctan2(&y)),
            ("hypot", x.hypot(&y)),
            ("logaddexp", x.logaddexp(&y)),
            ("copysign", x.copysign(&y)),
        ];
        for (name, a) in &binary {
            check_program(&format!("{name} {dt}"), &[a], bound_of(name));
        }
        // NaN against NaN, for the NaN rules of maximum/fmax.
        check_program(
            &format!("max of NaNs {dt}"),
            &[&x.maximum(x.flip(None)), &x.fmin(x.flip(None))],
            0.0,
        );
        check_program(
            &format!("predicates {dt}"),
            &[
                &x.isnan(),
                &x.isinf(),
                &x.isfinite(),
                &x.equal(&y),
                &x.not_equal(x),
                &x.less(&y),
                &x.greater_equal(x.flip(None)),
            ],
            0.0,
        );
    }
}

/// Where the ULP table samples one argument of a function, in float32 and in float64: an
/// interval, and points near which to sample densely (relative steps down to below an ulp).
#[derive(Clone, Copy)]
pub(crate) struct Dom {
    f32: (f64, f64),
    f64: (f64, f64),
    near: &'static [f64],
}

const ALL: Dom = Dom { f32: (-3.4e38, 3.4e38), f64: (-1.7e308, 1.7e308), near: &[0.0, 1.0, -1.0] };
const POSITIVE: Dom = Dom { f32: (0.0, 3.4e38), f64: (0.0, 1.7e308), near: &[0.0, 1.0] };
const UNIT: Dom = Dom { f32: (-1.0, 1.0), f64: (-1.0, 1.0), near: &[-1.0, 0.0, 1.0, 0.5, -0.5] };
const TRIG: Dom = Dom {
    f32: (-1e6, 1e6),
    f64: (-1e6, 1e6),
    near: &[0.0, std::f64::consts::FRAC_PI_2, std::f64::consts::PI],
};
/// sinh and cosh, up to their overflow.
const HYPERBOLIC: Dom = Dom { f32: (-90.0, 90.0), f64: (-711.0, 711.0), near: &[0.0] };

/// Two arguments sampled together.
type Pair = fn(&mut Rng) -> (f64, f64);

/// One function of the ULP table: its IR name, how it is called, its arguments' domains, and
/// optionally pairs of arguments sampled together (a quarter of the samples).
pub(crate) struct Func {
    pub name: &'static str,
    pub apply: fn(&[Array]) -> Array,
    args: &'static [Dom],
    pairs: Option<Pair>,
}

/// A sample of `dom` for a float format `(mantissa, min_exp)` and largest finite value `max`:
/// uniform over the interval, log-uniform in magnitude (every binade, subnormals included), or
/// near one of its points.
fn sample(
    r: &mut Rng,
    (lo, hi): (f64, f64),
    near: &[f64],
    (mantissa, min_exp): (u32, i32),
    max: f64,
) -> f64 {
    let tiny = 2f64.powi(min_exp - (mantissa as i32 - 1));
    loop {
        let sign = if r.next() & 1 == 1 { -1.0 } else { 1.0 };
        let x = match r.next() % 4 {
            0 => r.uniform(lo, hi),
            1 | 2 => {
                let top = lo.abs().max(hi.abs()).min(max);
                sign * r.uniform(tiny.log2(), top.log2()).exp2()
            }
            _ => {
                let c = near[(r.next() % near.len() as u64) as usize];
                c + sign
                    * c.abs().max(tiny.sqrt())
                    * (-r.uniform(0.0, mantissa as f64 + 2.0)).exp2()
            }
        };
        if (lo..=hi).contains(&x) && x.abs() <= max {
            return x;
        }
    }
}

/// logaddexp(x, y) near 0, where NumPy's formula cancels: y close to log(1 - e^x), x < 0.
fn logaddexp_near_zero(r: &mut Rng) -> (f64, f64) {
    let x = -r.uniform(1e-3, 8.0);
    let y = (-x.exp()).ln_1p() * (1.0 + r.uniform(-1e-3, 1e-3));
    (x, y)
}

/// Arrays of `n` samples of each argument of `f` in dtype `dt` (float16 and bfloat16 sample
/// as float32, then round; unary functions of them take every value of the type).
pub(crate) fn table_inputs(f: &Func, dt: DType, n: usize, seed: u64) -> Vec<Array> {
    use half::{bf16, f16};
    let narrow = matches!(dt, DType::Float16 | DType::BFloat16);
    if narrow && f.args.len() == 1 {
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let a = if dt == DType::Float16 {
            Array::from_vec(
                all.iter().map(|&b| f16::from_bits(b)).collect::<Vec<_>>(),
                &[all.len()],
            )
        } else {
            Array::from_vec(
                all.iter().map(|&b| bf16::from_bits(b)).collect::<Vec<_>>(),
                &[all.len()],
            )
        };
        return vec![a];
    }
    let (format, max, wide) = match dt {
        DType::Float64 => ((53, -1022), f64::MAX, true),
        DType::Float16 => ((11, -14), 65504.0, false),
        _ => ((24, -126), f32::MAX as f64, false),
    };
    let mut r = Rng(seed);
    let mut cols: Vec<Vec<f64>> = vec![Vec::with_capacity(n); f.args.len()];
    for i in 0..n {
        if let (Some(pair), true) = (f.pairs, i % 4 == 3) {
            let (x, y) = pair(&mut r);
            cols[0].push(x);
            cols[1].push(y);
            continue;
        }
        for (col, dom) in cols.iter_mut().zip(f.args) {
            col.push(sample(&mut r, if wide { dom.f64 } else { dom.f32 }, dom.near, format, max));
        }
    }
    cols.into_iter()
        .map(|c| {
            let a = if wide {
                Array::from_vec(c, &[n])
            } else {
                Array::from_vec(c.iter().map(|&x| x as f32).collect::<Vec<_>>(), &[n])
            };
            let a = a.astype(dt);
            a.eval();
            a
        })
        .collect()
}

/// The functions of the ULP tables (this module's host table, and `polynomial`'s), with the
/// domains they are measured over.
pub(crate) const TABLE_FUNCS: &[Func] = &[
    Func { name: "sqrt", apply: |a| a[0].sqrt(), args: &[POSITIVE], pairs: None },
    Func { name: "cbrt", apply: |a| a[0].cbrt(), args: &[ALL], pairs: None },
    Func {
        name: "exp",
        apply: |a| a[0].exp(),
        args: &[Dom { f32: (-104.0, 89.0), f64: (-746.0, 710.0), near: &[0.0, 88.72, 709.78] }],
        pairs: None,
    },
    Func {
        name: "exp2",
        apply: |a| a[0].exp2(),
        args: &[Dom { f32: (-150.0, 128.0), f64: (-1075.0, 1024.0), near: &[0.0, 1.0] }],
        pairs: None,
    },
    Func {
        name: "expm1",
        apply: |a| a[0].expm1(),
        args: &[Dom { f32: (-90.0, 89.0), f64: (-710.0, 710.0), near: &[0.0] }],
        pairs: None,
    },
    Func { name: "log", apply: |a| a[0].log(), args: &[POSITIVE], pairs: None },
    Func { name: "log2", apply: |a| a[0].log2(), args: &[POSITIVE], pairs: None },
    Func { name: "log10", apply: |a| a[0].log10(), args: &[POSITIVE], pairs: None },
    Func {
        name: "log1p",
        apply: |a| a[0].log1p(),
        args: &[Dom { f32: (-1.0, 3.4e38), f64: (-1.0, 1.7e308), near: &[-1.0, 0.0] }],
        pairs: None,
    },
    Func { name: "sin", apply: |a| a[0].sin(), args: &[TRIG], pairs: None },
    Func { name: "cos", apply: |a| a[0].cos(), args: &[TRIG], pairs: None },
    Func { name: "tan", apply: |a| a[0].tan(), args: &[TRIG], pairs: None },
    Func { name: "arcsin", apply: |a| a[0].arcsin(), args: &[UNIT], pairs: None },
    Func { name: "arccos", apply: |a| a[0].arccos(), args: &[UNIT], pairs: None },
    Func { name: "arctan", apply: |a| a[0].arctan(), args: &[ALL], pairs: None },
    Func { name: "sinh", apply: |a| a[0].sinh(), args: &[HYPERBOLIC], pairs: None },
    Func { name: "cosh", apply: |a| a[0].cosh(), args: &[HYPERBOLIC], pairs: None },
    Func { name: "tanh", apply: |a| a[0].tanh(), args: &[ALL], pairs: None },
    Func { name: "arcsinh", apply: |a| a[0].arcsinh(), args: &[ALL], pairs: None },
    Func {
        name: "arccosh",
        apply: |a| a[0].arccosh(),
        args: &[Dom { f32: (1.0, 3.4e38), f64: (1.0, 1.7e308), near: &[1.0, 2.0] }],
        pairs: None,
    },
    Func { name: "arctanh", apply: |a| a[0].arctanh(), args: &[UNIT], pairs: None },
    Func { name: "erf", apply: |a| a[0].erf(), args: &[ALL], pairs: None },
    Func {
        name: "power",
        apply: |a| a[0].power(&a[1]),
        args: &[
            Dom { f32: (-1e4, 1e4), f64: (-1e4, 1e4), near: &[0.0, 1.0, -1.0] },
            Dom { f32: (-40.0, 40.0), f64: (-300.0, 300.0), near: &[0.0, 0.5, 2.0, -1.0] },
        ],
        pairs: None,
    },
    Func { name: "arctan2", apply: |a| a[0].arctan2(&a[1]), args: &[ALL, ALL], pairs: None },
    Func { name: "hypot", apply: |a| a[0].hypot(&a[1]), args: &[ALL, ALL], pairs: None },
    Func {
        name: "logaddexp",
        apply: |a| a[0].logaddexp(&a[1]),
        args: &[
            Dom { f32: (-1e3, 1e3), f64: (-1e3, 1e3), near: &[0.0] },
            Dom { f32: (-1e3, 1e3), f64: (-1e3, 1e3), near: &[0.0] },
        ],
        pairs: Some(logaddexp_near_zero),
    },
];

/// The accuracy table of the compiled host code (`compiler/src/codegen/mod.rs`, "Accuracy"):
/// each math function's largest distance from the reference evaluator over its domain, in ulps
/// of the reference's value, for float16 and bfloat16 (unary functions: every value of the
/// type; binary: 2^16 pairs), float32 and float64 (2^16 samples: uniform, every binade, and
/// densely near the domain's edges and special points), each checked against the bound of
/// `ulps::host_ulps`. The markdown table goes to stderr:
/// `cargo test --release --test main codegen::ulp_table -- --nocapture`.
#[test]
fn ulp_table() {
    const DTYPES: [DType; 4] = [DType::Float16, DType::BFloat16, DType::Float32, DType::Float64];
    let mut over = Vec::new();
    let mut table = String::from(
        "| function | float16 | bfloat16 | float32 | float64 | bound (16/bf16, 32, 64) |\n|---|---|---|---|---|---|\n",
    );
    for (k, f) in TABLE_FUNCS.iter().enumerate() {
        let op = OpKind::from_name(f.name).expect("an IR op name");
        let mut row = format!("| `{}` |", f.name);
        for (j, dt) in DTYPES.into_iter().enumerate() {
            let args = table_inputs(f, dt, 1 << 16, 1000 + 10 * k as u64 + j as u64);
            let y = (f.apply)(&args);
            let (got, want, _) = run_both(&[&y]);
            let (gv, format) = float_values(&got[0]).expect("a float result");
            let (wv, _) = float_values(&want[0]).expect("a float result");
            let (mut worst, mut at) = (0.0f64, 0);
            for (i, (&g, &w)) in gv.iter().zip(&wv).enumerate() {
                let d = ulp_distance(g, w, format);
                if d > worst {
                    (worst, at) = (d, i);
                }
            }
            let bound = host_ulps(op, dt) as f64;
            if worst > bound {
                let x: Vec<String> = args
                    .iter()
                    .map(|a| {
                        format!("{:e}", float_values(&a.try_to_host().unwrap()).unwrap().0[at])
                    })
                    .collect();
                let (name, x, g, w) = (f.name, x.join(", "), gv[at], wv[at]);
                over.push(format!(
                    "{name} {dt}: {worst} ulps > {bound} at ({x}): {g:e}, reference {w:e}"
                ));
            }
            row += &format!(" {worst} |");
        }
        let b = |dt| host_ulps(op, dt);
        row += &format!(" {}, {}, {} |\n", b(DType::Float16), b(DType::Float32), b(DType::Float64));
        table += &row;
    }
    eprintln!("{table}");
    assert!(over.is_empty(), "beyond the bounds of ulps::host_ulps:\n{}", over.join("\n"));
}

/// logaddexp's `exp` and `log1p` are scalar libm calls in both tiers, never glibc's vector
/// functions (whose few-ulp errors its cancellation near 0 magnifies): the formula is a function
/// of the module that the (vectorised) loop calls, not inlined. It then computes the evaluator's
/// (and NumPy's) values bit for bit.
#[test]
fn logaddexp_calls_scalar_libm() {
    let x = uniform_f64(&[4096], -5.0, 5.0, 80);
    let y = uniform_f64(&[4096], -5.0, 5.0, 81);
    let z = x.logaddexp(&y);
    let p = partition(&kiln::lower(&[&z]).graph);
    for tier in [codegen::Tier::Fast, codegen::Tier::Optimized] {
        let ir = codegen::optimized_llvm_ir_text(&p.regions[0], tier).unwrap();
        assert!(
            ir.contains("@kiln_logaddexp(double") && ir.contains("noinline"),
            "{tier:?}:\n{ir}"
        );
        let vector_call = ir.lines().any(|l| l.contains("call ") && l.contains("@_ZGV"));
        assert!(!vector_call, "{tier:?}: a vector math function is called:\n{ir}");
    }
    check_program(
        "logaddexp",
        &[&z, &x.astype(DType::Float32).logaddexp(y.astype(DType::Float32))],
        0.0,
    );
}

#[path = "codegen/runs.rs"]
mod runs;
