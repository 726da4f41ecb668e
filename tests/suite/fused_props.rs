//! Property test of the whole pipeline on random programs: random DAGs of kiln ops, written with
//! the public API over 1–3 held inputs of random small shapes (≤ 64 elements) and dtypes
//! (elementwise unary and binary ops with broadcasting and weak scalars, `where`, casts,
//! reductions with random axes and keepdims, mean/var/std/softmax/logsumexp, views: transpose,
//! slices with negative steps, integer indices and new axes, reshape, expand_dims, squeeze,
//! flip, broadcast_to, and pairs of them the simplifier composes; a few copies: concatenate,
//! stack, ascontiguousarray; gathers (`take` along an axis or flat) and scatters (`add_at`,
//! `maximum_at`, `minimum_at`, `put`) at indices cast from any array, so they wrap;
//! intermediates materialised mid-program, so later steps read them as
//! held inputs), with a few outputs. Inputs mix in NaN, ±inf, ±0 and integer extremes.
//!
//! `KILN_PROP_CASES=N` runs N cases instead of 1,000; `fused_props_stats` (ignored) prints what
//! the generator makes (ops, graph sizes, region counts, rules that fired).
//!
//! For each program:
//! - the lowered graph, the simplified graph and every region's body pass the verifier, and the
//!   regions' text parses back;
//! - the reference evaluator on the lowered (unsimplified, unfused) graph is the oracle;
//! - the compiled plan (`pipeline::compile`) run by its schedule region by region in the
//!   evaluator (`schedule::run_on_host`) and the regions run directly on the simplified graph
//!   (`fusion::run_regions`) give the oracle's results bit for bit: integers, bools and floats
//!   (the sign of zero included; only NaN payloads may differ, any NaN equals any NaN). Every
//!   simplifier rule is documented as exact (IEEE for floats, wrap-around for integers; the
//!   `fast-math-` rules are off unless `KILN_FAST_MATH` is set) and each region is computed by
//!   the same evaluator, so the bound is 0 ([`FLOAT_ULPS`]);
//! - the CPU backend, compiled host code, run by the plan's schedule
//!   (`codegen::run_schedule_on_host`) and by the public materialisation path
//!   (`kiln::try_eval_all`, the default backend, through the plan cache, which reuses plans
//!   across sizes; and `Hold` steps) gives the oracle's results within the bound of each output
//!   ([`host_bounds`]): bit for bit where only exact ops (integer and bool ops, `+ - * /`,
//!   `sqrt`, casts, comparisons, views, ...) lead to it; within the per-op bound of
//!   `ulps::host_ulps` for a transcendental function (libm and libmvec against the evaluator's
//!   f64-and-round) computed from exact operands, reached through views and copies. Past a
//!   transcendental function a value is not compared: no per-op figure bounds what cancellation,
//!   rounding to integers or a comparison make of an ulp. Float sums of float16, bfloat16 and
//!   float32 (the kernels add in a wider type, reassociated) are exact when every partial sum
//!   is (see [`exactly_summable`]), else not compared either. Nor is `copysign(x, y)` where y
//!   holds a NaN: the sign of a NaN is left open by IEEE 754 and NumPy, and LLVM, free to fold
//!   0/0 or to reorder a NaN's operands, does not keep x86's (0/0 is -NaN there, and +NaN folded).
//!   `fused_props_stats` counts how many outputs each kind of check covers.

use kiln::ir::host::Data;
use kiln::ir::{DType, Graph, OpKind};
use kiln::{Array, HostArray};
use kiln_compiler::pipeline::{compile, Options};
use proptest::prelude::*;

use crate::ulps::{float_format, float_values, host_ulps, pow2, ulp_distance};

/// Largest difference allowed between a float result and the oracle's, in units in the last
/// place (see the module docs: simplification is exact, so none).
const FLOAT_ULPS: u64 = 0;

/// Largest number of elements of any array of a program.
const MAX_ELEMENTS: usize = 64;

#[path = "fused_props/programs.rs"]
mod programs;
use programs::*;

// ------------------------------------------------------------------------------------------------
// Comparing results
// ------------------------------------------------------------------------------------------------

/// Maps a float's bits to an integer ordered as the floats are (so that adjacent floats differ by
/// one); +0 and -0 differ by one.
fn ordered(bits: u64, sign_bit: u64) -> i128 {
    if bits & sign_bit != 0 {
        -((bits & !sign_bit) as i128) - 1
    } else {
        bits as i128
    }
}

/// The distance in ulps between two floats of one format given as (is_nan, bits); 0 for two NaNs,
/// `u64::MAX` for a NaN and a number.
fn ulps((an, ab): (bool, u64), (bn, bb): (bool, u64), sign_bit: u64) -> u64 {
    match (an, bn) {
        (true, true) => 0,
        (false, false) => (ordered(ab, sign_bit) - ordered(bb, sign_bit))
            .unsigned_abs()
            .min(u64::MAX as u128) as u64,
        _ => u64::MAX,
    }
}

/// The first element where `got` differs from `want` by more than the bound, as text.
fn difference(want: &HostArray, got: &HostArray) -> Option<String> {
    if want.dtype() != got.dtype() || want.shape() != got.shape() {
        return Some(format!(
            "type differs: want {} {:?}, got {} {:?}",
            want.dtype().short_name(),
            want.shape(),
            got.dtype().short_name(),
            got.shape()
        ));
    }
    fn floats<T: Copy + std::fmt::Debug>(
        w: &[T],
        g: &[T],
        key: impl Fn(T) -> (bool, u64),
        sign: u64,
    ) -> Option<String> {
        w.iter().zip(g).enumerate().find_map(|(i, (&a, &b))| {
            let d = ulps(key(a), key(b), sign);
            (d > FLOAT_ULPS).then(|| format!("element {i}: want {a:?}, got {b:?} ({d} ulps)"))
        })
    }
    const S16: u64 = 1 << 15;
    const S32: u64 = 1 << 31;
    const S64: u64 = 1 << 63;
    match (want.data(), got.data()) {
        (Data::Float16(w), Data::Float16(g)) => {
            floats(w, g, |v| (v.is_nan(), v.to_bits() as u64), S16)
        }
        (Data::BFloat16(w), Data::BFloat16(g)) => {
            floats(w, g, |v| (v.is_nan(), v.to_bits() as u64), S16)
        }
        (Data::Float32(w), Data::Float32(g)) => {
            floats(w, g, |v| (v.is_nan(), v.to_bits() as u64), S32)
        }
        (Data::Float64(w), Data::Float64(g)) => floats(w, g, |v| (v.is_nan(), v.to_bits()), S64),
        (Data::Complex64(w), Data::Complex64(g)) => {
            floats(w, g, |v| (v.re.is_nan(), v.re.to_bits() as u64), S32)
                .or_else(|| floats(w, g, |v| (v.im.is_nan(), v.im.to_bits() as u64), S32))
        }
        (Data::Complex128(w), Data::Complex128(g)) => {
            floats(w, g, |v| (v.re.is_nan(), v.re.to_bits()), S64)
                .or_else(|| floats(w, g, |v| (v.im.is_nan(), v.im.to_bits()), S64))
        }
        (w, g) => (w != g).then(|| format!("want {w:?}\n got {g:?}")),
    }
}

// ------------------------------------------------------------------------------------------------
// The property
// ------------------------------------------------------------------------------------------------

fn check(p: &Program) -> Result<(), TestCaseError> {
    let (_pool, outs) = build(p);
    let refs: Vec<&Array> = outs.iter().collect();
    let lowered = kiln::lower(&refs);
    let g = &lowered.graph;
    let graph_text = kiln::ir::text::print(g);
    log_case(p, &graph_text);
    let ctx = |what: &str| format!("{what}\n--- graph ---\n{graph_text}");
    kiln::ir::verify::verify(g)
        .map_err(|e| TestCaseError::fail(ctx(&format!("lowered graph fails the verifier: {e}"))))?;
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference = kiln::ir::eval::evaluate(g, &inputs)
        .map_err(|e| TestCaseError::fail(ctx(&format!("reference: {e}"))))?;

    let plan = compile(g, &Options::from_env())
        .map_err(|e| TestCaseError::fail(ctx(&format!("compile: {e}"))))?;
    let simplified_text = kiln::ir::text::print(&plan.simplified);
    let regions_text = kiln_compiler::fusion::print_regions(&plan.partition.regions);
    let ctx = |what: &str| {
        format!(
            "{what}\n--- graph ---\n{graph_text}--- simplified ---\n{simplified_text}--- regions ---\n{regions_text}--- schedule ---\n{}",
            plan.schedule
        )
    };
    kiln::ir::verify::verify(&plan.simplified).map_err(|e| {
        TestCaseError::fail(ctx(&format!("simplified graph fails the verifier: {e}")))
    })?;
    for (k, r) in plan.partition.regions.iter().enumerate() {
        kiln::ir::verify::verify(&r.body).map_err(|e| {
            TestCaseError::fail(ctx(&format!("region {k} fails the verifier: {e}")))
        })?;
    }
    let parsed = kiln_compiler::fusion::parse_regions(&regions_text)
        .map_err(|e| TestCaseError::fail(ctx(&format!("regions text: {e}"))))?;
    prop_assert!(
        parsed == plan.partition.regions,
        "{}",
        ctx("regions text does not parse back to the regions")
    );

    let runs: [(&str, Result<Vec<HostArray>, String>); 2] = [
        (
            "cpu::run_schedule (evaluator)",
            kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Evaluator)
                .map_err(|e| e.to_string()),
        ),
        (
            "fusion::run_regions",
            kiln_compiler::fusion::run_regions(&plan.simplified, &plan.partition.regions, &inputs)
                .map_err(|e| e.to_string()),
        ),
    ];
    for (name, run) in runs {
        let got = run.map_err(|e| TestCaseError::fail(ctx(&format!("{name}: {e}"))))?;
        prop_assert_eq!(got.len(), reference.len());
        for (k, (w, g)) in reference.iter().zip(&got).enumerate() {
            if let Some(d) = difference(w, g) {
                return Err(TestCaseError::fail(ctx(&format!(
                    "{name}: output {k} differs from the reference: {d}"
                ))));
            }
        }
    }

    // The CPU backend: the plan's schedule as compiled host code, then the public path
    // (materialisation through the plan cache).
    let host = kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Compiled)
        .map_err(|e| TestCaseError::fail(ctx(&format!("cpu::run_schedule: {e}"))))?;
    compare_host(g, &inputs, &host)
        .map_err(|d| TestCaseError::fail(ctx(&format!("cpu::run_schedule: {d}"))))?;
    kiln::try_eval_all(&refs).map_err(|e| TestCaseError::fail(ctx(&format!("eval_all: {e}"))))?;
    let mut got = Vec::new();
    for a in &outs {
        got.push(
            a.try_to_host()
                .map_err(|e| TestCaseError::fail(ctx(&format!("to_host: {e}"))))?
                .as_ref()
                .clone(),
        );
    }
    compare_host(g, &inputs, &got)
        .map_err(|d| TestCaseError::fail(ctx(&format!("eval_all (plan cache): {d}"))))?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// How closely the CPU backend must match
// ------------------------------------------------------------------------------------------------

/// How far the compiled host code's value of a node may be from the reference's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Bound {
    /// Bit for bit (any NaN equals any NaN).
    Exact,
    /// Within this many ulps of the given float dtype (the dtype of the value that carries the
    /// error, which a widening cast keeps).
    Ulps(u64, DType),
    /// Not compared (see the module docs).
    Unbounded,
}

impl Bound {
    /// The bound of a value that may be either `self` or `other`: the looser (errors counted in
    /// different dtypes are not compared).
    fn join(self, other: Bound) -> Bound {
        match (self, other) {
            (Bound::Ulps(_, d), Bound::Ulps(_, e)) if d != e => Bound::Unbounded,
            _ => self.max(other),
        }
    }
}

/// Whether every value of `from` is a value of `to` (a cast between them is exact).
fn widens(from: DType, to: DType) -> bool {
    from == to
        || matches!(
            (from, to),
            (DType::Float16 | DType::BFloat16, DType::Float32 | DType::Float64)
                | (DType::Float32, DType::Float64)
        )
}

/// Whether the kernels' float sum of `x` (float16, bfloat16: in f32; float32: in f64; in any
/// order) is exact: every partial sum is a multiple of the ulp q of the smallest nonzero |x|,
/// no larger than the sum of all |x|, so it is exact if that sum is below 2^p q (p the
/// accumulator's precision) and far from overflow. Then the kernel's sum rounded to the dtype
/// is the evaluator's (its compensated sum is exact too). NaNs (whose sign the order decides)
/// and infinities of both signs make it false.
fn exactly_summable(x: &HostArray) -> bool {
    let Some((v, (mantissa, min_exp))) = float_values(x) else { return true };
    let (acc_bits, acc_max) = match x.dtype() {
        DType::Float16 | DType::BFloat16 => (24, f32::MAX as f64),
        DType::Float32 => (53, f64::MAX),
        // The GPU's cooperative sums combine partials in a tree, not in the evaluator's order:
        // exact only where every partial sum is.
        DType::Float64 if on_gpu() => (53, f64::MAX),
        _ => return true,
    };
    if v.iter().any(|x| x.is_nan()) || v.contains(&f64::INFINITY) && v.contains(&f64::NEG_INFINITY)
    {
        return false;
    }
    let finite: Vec<f64> =
        v.iter().filter(|x| x.is_finite() && **x != 0.0).map(|x| x.abs()).collect();
    let Some(least) = finite.iter().copied().reduce(f64::min) else { return true };
    let q = pow2((least.log2().floor() as i32).max(min_exp) - (mantissa as i32 - 1));
    let total: f64 = finite.iter().sum();
    total < q * pow2(acc_bits - 1) && total < acc_max / 4.0
}

/// Whether node `id` of `g` reads a reduction through elementwise ops and views.
fn reads_reduction(g: &Graph, id: kiln::ir::NodeId) -> bool {
    let n = g.node(id);
    match n.op.class() {
        kiln::ir::OpClass::Reduce => true,
        kiln::ir::OpClass::Elementwise | kiln::ir::OpClass::View => {
            n.inputs.iter().any(|&i| reads_reduction(g, i))
        }
        _ => false,
    }
}

/// Whether materialisation runs on the GPU backend.
fn on_gpu() -> bool {
    matches!(kiln::backend(), kiln_runtime::Backend::Cuda(_))
}

/// Whether a float (or complex) array holds a NaN.
fn has_nan(x: &HostArray) -> bool {
    match x.data() {
        Data::Complex64(v) => v.iter().any(|z| z.is_nan()),
        Data::Complex128(v) => v.iter().any(|z| z.is_nan()),
        _ => float_values(x).is_some_and(|(v, _)| v.iter().any(|x| x.is_nan())),
    }
}

/// The bound of each node of `g` (see the module docs); `values[i]` is the reference's value of
/// node `i`.
fn host_bounds(g: &Graph, values: &[HostArray]) -> Vec<Bound> {
    use OpKind::*;
    let mut bounds: Vec<Bound> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let ins: Vec<Bound> = n.inputs.iter().map(|i| bounds[i.index()]).collect();
        let worst = ins.iter().copied().fold(Bound::Exact, Bound::join);
        let operand = n.inputs.first().map(|i| g.node(*i).dtype).unwrap_or(n.dtype);
        // An op computed exactly from its operands.
        let exact = if worst == Bound::Exact { Bound::Exact } else { Bound::Unbounded };
        let b = match n.op {
            Input | Const | Iota => Bound::Exact,
            // The values of the input, element for element (or a choice among them).
            Reshape | Permute | BroadcastTo | Slice | ExpandDims | Squeeze | Flip | Concatenate
            | Stack | Contiguous | Neg | Real | Imag | Conj | Label | Take | Scatter => worst,
            // Float sums of duplicates in another order than the evaluator's; on the GPU also
            // maxima and minima, whose ties of ±0 take the sign of the first met.
            ScatterAdd if n.dtype.is_inexact() => Bound::Unbounded,
            ScatterMax | ScatterMin if n.dtype.is_inexact() && on_gpu() => Bound::Unbounded,
            ScatterAdd | ScatterMax | ScatterMin => worst,
            Abs if !operand.is_complex() => worst,
            Where if ins[0] == Bound::Exact => ins[1].join(ins[2]),
            Cast if widens(operand, n.dtype) => worst,
            Sum if !exactly_summable(&values[n.inputs[0].index()]) => Bound::Unbounded,
            // `sum((x - mean)²)` may be folded with the mean's sum in one pass of shifted sums
            // (`codegen/moments.rs`), which does not round each square to the element type.
            Sum if reads_reduction(g, n.inputs[0]) => Bound::Unbounded,
            // On the GPU, float products by a tree of lanes, not the evaluator's running
            // product: they round otherwise (seen on an H200, session 37: `prod` of four
            // float64s 1 ulp apart).
            Prod if n.dtype.is_inexact() && on_gpu() => Bound::Unbounded,
            // On the GPU, libdevice's log1p and exp: their error is magnified where the sum
            // cancels (see `numpy_fixtures::gpu_tolerance`).
            LogAddExp | LogAddExp2 if on_gpu() => Bound::Unbounded,
            // libdevice's erfc, erfinv and lgamma (5, 5 and unbounded ulps in float64 by CUDA's
            // table) and digamma's tan and log, not the evaluator's calls; `special` checks them.
            Erfc | Erfinv | Gammaln | Digamma if on_gpu() => Bound::Unbounded,
            // On the host the evaluator's formulas with its own libm calls, bit for bit.
            Gammaln | Digamma => exact,
            // On the GPU, complex `abs` and `exp` go through libdevice's hypot, exp, sin and cos,
            // not the host's libm that the evaluator calls; `complex::*` checks their bounds.
            Abs | Exp if on_gpu() && operand.is_complex() => Bound::Unbounded,
            // The sign of a NaN is copied: compiled code does not define it (see the module docs).
            CopySign if has_nan(&values[n.inputs[1].index()]) => Bound::Unbounded,
            Cbrt | Exp | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Sin | Cos | Tan | Arcsin
            | Arccos | Arctan | Sinh | Cosh | Tanh | Arcsinh | Arccosh | Arctanh | Erf | Power
            | Arctan2 | Hypot | LogAddExp | LogAddExp2 | Erfc | Erfinv => {
                match host_ulps(n.op, operand) {
                    0 => exact,
                    k if worst == Bound::Exact => Bound::Ulps(k, operand),
                    _ => Bound::Unbounded,
                }
            }
            Abs | Where | Cast | Sum | Sign | Sqrt | Square | Reciprocal | Floor | Ceil | Trunc
            | Rint | IsNan | IsInf | IsFinite | LogicalNot | Invert | Add | Sub | Mul | Div
            | FloorDiv | Remainder | Maximum | Minimum | Fmax | Fmin | CopySign | Eq | Ne | Lt
            | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor | BitwiseAnd | BitwiseOr
            | BitwiseXor | LeftShift | RightShift | Prod | Max | Min | ArgMax | ArgMin | All
            | Any | MatMul | Fft | Rfft | Irfft | CustomKernel => exact,
            // faer's factorisations are not the reference's textbook algorithms, bit for bit.
            Cholesky | Solve | Inv | Det | Slogdet | Qr | Svd | Eigh => Bound::Unbounded,
            FrexpMantissa | FrexpExponent | Fmod | Ldexp | NextAfter | MakeComplex => exact,
            Gcd | Lcm | Philox | PhiloxHigh | PhiloxBits | Bitcast => exact,
            // Float32 normals from random bits through the log of libm or libdevice, not the
            // evaluator's; `random` checks them against it.
            BoxMullerCos | BoxMullerSin => Bound::Unbounded,
            // On the GPU, float sums and products along the last axis by tiles: associated
            // otherwise than the evaluator's running value (`codegen/lower/scan.rs`).
            Cumsum | Cumprod if n.dtype.is_inexact() && on_gpu() => Bound::Unbounded,
            // Each step rounded as the evaluator rounds it.
            Cumsum | Cumprod | Cummax | Cummin | Compact | CompactCount => exact,
            // A sorted line is within its input's bound of the reference's (sorting moves no
            // element further than the largest error); positions only follow exact inputs.
            Sort | SortTake => worst,
            Argsort | Argtopk => exact,
        };
        bounds.push(b);
    }
    bounds
}

/// How many outputs each kind of check covered.
#[derive(Clone, Copy, Debug, Default)]
struct Coverage {
    exact: usize,
    ulps: usize,
    unbounded: usize,
}

/// Checks `got`, the CPU backend's outputs of `g` on `inputs`, against the reference evaluator's
/// within each output's [`Bound`].
fn compare_host(g: &Graph, inputs: &[&HostArray], got: &[HostArray]) -> Result<Coverage, String> {
    // The reference's value of every node.
    let mut all = g.clone();
    for i in 0..g.len() {
        all.push_output(kiln::ir::NodeId(i as u32));
    }
    let values = kiln::ir::eval::evaluate(&all, inputs).map_err(|e| format!("reference: {e}"))?;
    let values = values[g.outputs().len()..].to_vec();
    let bounds = host_bounds(g, &values);
    if got.len() != g.outputs().len() {
        return Err(format!("{} outputs, the graph has {}", got.len(), g.outputs().len()));
    }
    let mut cov = Coverage::default();
    for (k, (&o, got)) in g.outputs().iter().zip(got).enumerate() {
        let want = &values[o.index()];
        match bounds[o.index()] {
            Bound::Exact => {
                cov.exact += 1;
                if let Some(d) = difference(want, got) {
                    return Err(format!("output {k} (exact) differs from the reference: {d}"));
                }
            }
            Bound::Ulps(n, dt) => {
                cov.ulps += 1;
                if (want.dtype(), want.shape()) != (got.dtype(), got.shape()) {
                    return Err(format!(
                        "output {k}: type differs: {:?} {:?}",
                        got.dtype(),
                        got.shape()
                    ));
                }
                let format = float_format(dt).expect("a float dtype");
                let (w, _) = float_values(want).expect("a float output");
                let (v, _) = float_values(got).expect("a float output");
                for (i, (&a, &b)) in v.iter().zip(&w).enumerate() {
                    let d = ulp_distance(a, b, format);
                    if d > n as f64 {
                        return Err(format!("output {k} element {i}: {a:e}, reference {b:e}: {d} ulps of {dt} > {n}"));
                    }
                }
            }
            Bound::Unbounded => cov.unbounded += 1,
        }
    }
    Ok(cov)
}

/// `KILN_PROP_LOG=FILE` appends each case (the program and its graph) to FILE before it runs:
/// when a GPU error is sticky (an illegal address spoils the context, so every later case and
/// every shrink fails too), the first failing case is the last one logged before the failure.
fn log_case(p: &Program, graph_text: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("KILN_PROP_LOG") else { return };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("KILN_PROP_LOG is writable");
    writeln!(f, "=== case\n{p:?}\n{graph_text}").expect("KILN_PROP_LOG is writable");
}

/// 1,000 cases; `KILN_PROP_CASES` asks for another number (a longer hunt).
fn cases() -> u32 {
    std::env::var("KILN_PROP_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000)
}

proptest! {
    // No regression file: proptest would write it outside tests/ (the minimal counterexamples
    // found so far are tests of their own below).
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(cases()) })]

    #[test]
    fn fused_plans_compute_what_the_reference_computes(p in program()) {
        check(&p)?;
    }
}

/// What the generator makes, for tuning it: `cargo test --release --test main fused_props_stats
/// -- --ignored --nocapture` prints how often each op appears in the lowered graphs, and the
/// distribution of graph sizes and region counts over 1,000 programs.
#[test]
#[ignore]
fn fused_props_stats() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeMap;
    let mut runner = TestRunner::deterministic();
    let strategy = program();
    let mut ops: BTreeMap<&str, usize> = BTreeMap::new();
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let mut regions: BTreeMap<usize, usize> = BTreeMap::new();
    let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
    let mut dtypes: BTreeMap<String, usize> = BTreeMap::new();
    let mut rules: BTreeMap<String, usize> = BTreeMap::new();
    let (mut steps, mut made, mut changed) = (0, 0, 0);
    let mut coverage = Coverage::default();
    for _ in 0..1000 {
        let p = strategy.new_tree(&mut runner).unwrap().current();
        let (pool, outs) = build(&p);
        steps += p.steps.len();
        made += pool.len() - p.inputs.len();
        let refs: Vec<&Array> = outs.iter().collect();
        let lowered = kiln::lower(&refs);
        let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
        let got: Vec<HostArray> =
            outs.iter().map(|a| a.try_to_host().unwrap().as_ref().clone()).collect();
        let c = compare_host(&lowered.graph, &inputs, &got).unwrap();
        coverage.exact += c.exact;
        coverage.ulps += c.ulps;
        coverage.unbounded += c.unbounded;
        let g = lowered.graph;
        for n in g.nodes() {
            *ops.entry(n.op.name()).or_default() += 1;
            *dtypes.entry(n.dtype.short_name().to_string()).or_default() += 1;
        }
        *sizes.entry(g.len() / 10 * 10).or_default() += 1;
        let plan = compile(&g, &Options::from_env()).unwrap();
        changed += (plan.simplified != g) as usize;
        for r in plan.simplify_report.rules_applied.keys() {
            *rules.entry(r.clone()).or_default() += 1;
        }
        *regions.entry(plan.partition.regions.len()).or_default() += 1;
        for r in &plan.partition.regions {
            *kinds.entry(r.kind.name()).or_default() += 1;
        }
    }
    println!("steps {steps}, arrays made {made}; graphs changed by simplification: {changed}/1000");
    println!(
        "outputs checked against the reference: {} bit for bit, {} within a per-op ulp bound, {} not compared",
        coverage.exact, coverage.ulps, coverage.unbounded
    );
    println!("graph nodes (by tens): {sizes:?}");
    println!("regions per program: {regions:?}");
    println!("region kinds: {kinds:?}");
    println!("node dtypes: {dtypes:?}");
    println!("ops: {ops:?}");
    println!("programs where each rule fired: {rules:?}");
}

/// Found by the property above: constant folding canonicalised a NaN it computed (`Literal`
/// keeps one NaN, positive), while the same NaN computed at run time is the hardware's (x86's
/// default NaN `0/0` has its sign bit set, as in NumPy there), and `copysign` makes the NaN's
/// sign visible: `copysign(1, 0/0)` is -1.0 unfused (and in NumPy on x86-64). Folding now leaves
/// NaN results alone, and the compiled host code computes an op of constants with the evaluator
/// (`codegen::fold`) rather than letting LLVM fold it (to +NaN). (A NaN LLVM makes of values it
/// proves constant keeps LLVM's sign: see the module docs.)
#[test]
fn folded_nan_keeps_the_computed_sign() {
    let z = kiln::zeros(&[], DType::Float64);
    let y = kiln::full(&[], 1.0, DType::Float64).copysign(&z / &z);
    let explained = kiln::explain(&[&y]);
    // The NaN-producing division is not folded away.
    assert!(explained.simplified.contains("divide("), "\n{explained}");
    let lowered = kiln::lower(&[&y]);
    let want = kiln::ir::eval::evaluate(&lowered.graph, &[]).unwrap();
    let got = y.try_to_host().unwrap();
    if kiln::backend().to_string() == "cpu" {
        // The host computes what the reference (on the host) computes.
        assert_eq!(difference(&want[0], &got), None, "\n{explained}");
    } else {
        // A GPU's default NaN has its own sign (NVIDIA's is positive): ±1, computed, not folded.
        let v = got.as_slice::<f64>().unwrap()[0];
        assert!(v == 1.0 || v == -1.0, "copysign(1, 0/0) = {v}\n{explained}");
    }
}

/// Found by the property above on an H200: `maximum(x, -0.0)` where x is +0.0 converted from an
/// integer gave +0.0 on the GPU; NumPy's maximum (and the evaluator's) gives the second operand
/// on ties, -0.0. On a GPU the kernel's PTX is printed, to see what the NVPTX pipeline made of
/// the select (printed on the CPU too: PTX is made on the host).
/// Checks `y` against the reference evaluator, bit for bit, after printing its kernel's PTX (to
/// see what the NVPTX pipeline made of it; PTX is made on the host, so on the CPU too).
fn same_as_the_evaluator_printing_ptx(y: &Array) {
    let lowered = kiln::lower(&[y]);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    let ptx = kiln::CodeStage::Ptx(kiln_compiler::toolchain::ptx::PtxTarget::default());
    if let Ok(code) = kiln::kernel_code(&[y], ptx) {
        println!("{code}");
    }
    let got = y.try_to_host().unwrap();
    assert_eq!(difference(&want[0], &got), None, "{:?} vs {:?}", want[0].data(), got.data());
}

/// The property test's find on an H200 (session 41): a row's variance (the row's mean, then
/// the mean of its squared deviations: two divisions by 2.0) under a `where` whose condition
/// reads the row. The GPU kernel's MLIR failed to verify (`use of undeclared SSA value`).
/// Its PTX must compile here (no GPU needed), and the result match the evaluator.
#[test]
fn a_row_variance_under_a_where_compiles_for_the_gpu() {
    let x = Array::from_vec(vec![1.5f32, -2.0, 0.0, 3.25], &[1, 2, 2]);
    x.eval();
    let n = x.negative();
    let y = kiln::where_(&n.astype(DType::Bool), &x.var(2, 0), &n);
    let ptx = kiln::CodeStage::Ptx(kiln_compiler::toolchain::ptx::PtxTarget::default());
    let code = kiln::kernel_code(&[&y], ptx).unwrap();
    assert!(!code.contains("compilation failed"), "{code}");
    same_as_the_evaluator_printing_ptx(&y);
}

/// The property test's find on an H200 once kernels were loaded as PTX (the driver's
/// whole-program JIT): `maximum(float64(False), -0.0)` of a 0-d array gave +0.0.
#[test]
fn maximum_of_a_converted_false_and_negative_zero_keeps_the_tie_rule() {
    let x = Array::from_vec(vec![false], &[]);
    x.eval();
    let y = x.astype(DType::Float64).maximum(kiln::full(&[], -0.0, DType::Float64));
    same_as_the_evaluator_printing_ptx(&y);
}

#[test]
fn maximum_of_a_converted_zero_and_negative_zero_keeps_the_tie_rule() {
    let x = Array::from_vec(vec![0.0f32, -0.0, 4.0, -9.0], &[4]);
    x.eval();
    let i =
        x.negative().sqrt().sqrt().astype(DType::Float64).astype(DType::Int32).astype(DType::Int64);
    let y =
        i.negative().abs().astype(DType::Float64).maximum(kiln::full(&[], -0.0, DType::Float64));
    same_as_the_evaluator_printing_ptx(&y);
}

/// A case the property test found on the H200 (session 7, once in six runs of the suite): the
/// GPU gave 3.0 where the evaluator gives -0.0 for `-(f32(-(3 << -x)))` with `x = 2^62` (this
/// input spec's value), at both tiers: LLVM's NVPTX back end made `y < 64 ? x << y : 0` a bare
/// `shl.b64` of the count truncated to 32 bits (0). Each call of the expression (the GPU's fast
/// tier for three calls, then optimised code) must match the evaluator; the PTX clamps the
/// 64-bit count first (`min.u64`).
#[test]
fn shift_by_a_negated_extreme_matches_the_evaluator_on_every_call() {
    let spec = InputSpec {
        drop: 0,
        ones: 0,
        dtype: DType::Int64,
        seed: 16465429925602929477,
        special: true,
    };
    let x = input_array(&spec, &[]);
    x.eval();
    for call in 0..6 {
        let zero = Array::from_vec(vec![0i64], &[]);
        let s = &zero + &(&zero + &(-&x));
        let mut t = Array::from_vec(vec![3i64], &[]).left_shift(&s);
        for _ in 0..5 {
            t = -&t;
        }
        let y = -&t.astype(DType::Float32);
        let l = kiln::lower(&[&y]);
        let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
        let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0);
        let got = y.try_to_host().unwrap().as_ref().clone();
        let (g, w) = (float_values(&got).unwrap().0, float_values(&want).unwrap().0);
        assert_eq!(
            g[0].to_bits(),
            w[0].to_bits(),
            "call {call}: {} against {}, x = {:?}",
            g[0],
            w[0],
            x.try_to_host().unwrap()
        );
        if call == 0 {
            let plan = kiln_compiler::pipeline::compile(
                &l.graph,
                &kiln_compiler::pipeline::Options::from_env(),
            )
            .unwrap();
            let target = kiln_compiler::toolchain::ptx::PtxTarget::default();
            let k = crate::support::gpu_kernel(
                &plan.partition.regions[0],
                target,
                kiln_compiler::codegen::Tier::Optimized,
            )
            .unwrap();
            let ptx = k.ptx.to_string();
            // The shift by a register count (`shl.b64 %rdA, %rdB, %rC;`, not the index math's
            // shifts by an immediate).
            let by_register = |l: &str| {
                let last = l.trim_end().trim_end_matches(';').rsplit(", ").next().unwrap_or("");
                l.trim_start().starts_with("shl.b64")
                    && last.starts_with("%r")
                    && !last.starts_with("%rd")
            };
            let count = ptx.lines().position(by_register).expect("a shift by a register");
            let before: Vec<&str> = ptx.lines().take(count).collect();
            assert!(
                before.iter().rev().take(4).any(|l| l.contains("min.u64")),
                "the count clamped first\n{ptx}"
            );
        }
    }
}

/// The property test's find on an H200 (session 9): the standard deviation (ddof 1) of 12
/// float32s, whose sum of squared deviations the GPU folds with the mean's sum in one pass of
/// shifted sums (`codegen/moments.rs`), was held to the evaluator's bits (its squares rounded
/// to float32) and was 1 ulp off; such a sum is now unbounded, as the module's docs say.
#[test]
fn std_of_twelve_by_shifted_sums_is_not_held_to_the_two_pass_bits() {
    let spec = |drop, ones, dtype, seed| InputSpec { drop, ones, dtype, seed, special: false };
    let p = Program {
        base: vec![1, 4, 3],
        inputs: vec![
            spec(0, 0, DType::Float32, 0),
            spec(34, 0, DType::Int32, 0),
            spec(124, 248, DType::Float32, 493861791663530900),
        ],
        steps: vec![
            Step::Squeeze { a: 104 },
            Step::Gather { a: 0, b: 0, axis: 0 },
            Step::Where { c: 0, a: 0, b: 0, scalar: None },
            Step::Unary { op: 0, a: 0 },
            Step::ScalarRight { op: 29, a: 0, s: 0 },
            Step::Reduce { op: 205, a: 172, axes: 127, keepdims: false },
        ],
        outputs: vec![],
    };
    check(&p).unwrap();
}

/// The property test's find on an H200 (session 20, seed 21 of `PROPTEST_RNG_SEED`, case 3,078):
/// an illegal address (CUDA 700) with the caching pool on, after `eval_all`, in a program of
/// empty slices (`f32[0,1]`), the moments of an empty array and `maximum(-0.0, f64(i32))`. The
/// intermittent fault of the parallel GPU suite (sessions 8 and 19) was this kind of case.
#[test]
fn moments_of_an_empty_slice_beside_a_broadcast_maximum() {
    let p = Program {
        base: vec![3, 4, 1],
        inputs: vec![
            InputSpec {
                drop: 109,
                ones: 43,
                dtype: DType::Float32,
                seed: 16904952912247559277,
                special: false,
            },
            InputSpec {
                drop: 45,
                ones: 84,
                dtype: DType::Int32,
                seed: 13441354433308921426,
                special: true,
            },
        ],
        steps: vec![
            Step::Permute { a: 237, seed: 12 },
            Step::ScalarLeft { op: 106, a: 142, s: 198 },
            Step::Slice { a: 91, dims: [147, 152, 166] },
            Step::Binary { op: 209, a: 66, b: 225 },
            Step::Reduce { op: 40, a: 25, axes: 63, keepdims: false },
        ],
        outputs: vec![243, 254],
    };
    for _ in 0..3 {
        check(&p).unwrap();
    }
}

/// The cause of the case above: the one-pass moments (`codegen/moments.rs`) read each row's
/// first element as the shift, and an empty row has none (a read at a zero-size buffer's null
/// address on the GPU). Rows of length 0, of a computed array (so a kernel reads them), and a
/// whole empty array: NaN as NumPy's (and the evaluator's), with no read.
#[test]
fn moments_of_empty_rows_read_nothing() {
    let x = kiln::zeros(&[3, 0], DType::Float32);
    x.eval();
    let y = &x * 2.0f32;
    for v in [y.var(1, 0), y.std(None, 1), y.var(0, 0)] {
        let l = kiln::lower(&[&v]);
        let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
        let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().remove(0);
        let got = v.try_to_host().unwrap().as_ref().clone();
        assert_eq!(difference(&want, &got), None, "{:?} vs {:?}", want.data(), got.data());
    }
}
