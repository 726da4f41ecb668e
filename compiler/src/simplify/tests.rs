//! Whole-program simplifications, options, limits and the report.

use std::time::{Duration, Instant};

use kiln_ir::text::print;
use kiln_ir::verify::verify;

use super::rules::testing::{check, opts, run_with, text, unchanged};
use super::testgen::random_elementwise_graph;
use super::{
    simplify, SimplifyOptions, DEFAULT_ITER_LIMIT, DEFAULT_NODE_LIMIT, DEFAULT_TIME_LIMIT_MS,
};

#[test]
fn options_from_the_environment() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    };
    let d = SimplifyOptions::from_vars(vars(&[]));
    assert_eq!(d, SimplifyOptions::default());
    assert_eq!(
        (d.iter_limit, d.node_limit, d.time_limit),
        (DEFAULT_ITER_LIMIT, DEFAULT_NODE_LIMIT, Duration::from_millis(DEFAULT_TIME_LIMIT_MS))
    );
    assert!(!d.fast_math);
    let o = SimplifyOptions::from_vars(vars(&[
        ("KILN_EGG_ITERS", "3"),
        ("KILN_EGG_NODES", " 500 "),
        ("KILN_EGG_TIME_MS", "lots"),
    ]));
    assert_eq!(
        (o.iter_limit, o.node_limit, o.time_limit),
        (3, 500, Duration::from_millis(DEFAULT_TIME_LIMIT_MS))
    );
}

#[test]
fn the_docs_example_is_already_simple() {
    unchanged(
        "
%0 = input {index=0} : f32[1797,64]
%1 = const {value=2.5} : f32[]
%2 = broadcast_to(%1) {shape=[1797,64]} : f32[1797,64]
%3 = multiply(%0, %2) : f32[1797,64]
%4 = sum(%3) {axes=[0], keepdims=false} : f32[64]
return %4
",
    );
}

#[test]
fn report_and_limits() {
    let body = "
%0 = input {index=0} : f32[4]
%1 = negative(%0) : f32[4]
%2 = negative(%1) : f32[4]
%3 = negative(%2) : f32[4]
%4 = negative(%3) : f32[4]
return %4
";
    let s = run_with(body, &opts());
    assert_eq!(print(&s.graph), text("%0 = input {index=0} : f32[4]\nreturn %0\n"));
    let r = &s.report;
    assert_eq!(r.stop_reason, "saturated");
    assert_eq!((r.nodes_before, r.nodes_after), (5, 1));
    assert!(r.rules_applied["neg-neg"] >= 2, "{r}");
    assert!(r.iterations >= 2 && r.enodes >= 2 && r.eclasses >= 1, "{r}");
    assert!(r.cost_after < r.cost_before);
    assert!(r.to_string().contains("stopped: saturated"), "{r}");

    let one = SimplifyOptions { iter_limit: 1, ..opts() };
    let s = run_with(body, &one);
    assert_eq!(s.report.stop_reason, "iteration limit (1)");
    // One iteration already removes both pairs.
    assert_eq!(s.graph.len(), 1);

    let tiny = SimplifyOptions { node_limit: 1, ..opts() };
    assert!(run_with(body, &tiny).report.stop_reason.starts_with("node limit"));
}

#[test]
fn rejects_an_ill_typed_graph() {
    let g = kiln_ir::text::parse(&text(
        "
%0 = input {index=0} : f32[4]
%1 = negative(%0) : f64[4]
return %1
",
    ))
    .unwrap();
    assert!(matches!(simplify(&g, &opts()), Err(crate::error::CompileError::Ir(_))));
}

#[test]
fn softmax_row_slice() {
    // softmax(x)[0:2] * 1: the product goes, the slice moves before the division and through
    // the broadcast of the row sums; exp(x - max) stays whole, as the sums need all of it.
    check(
        "slice-elementwise",
        "
%0 = input {index=0} : f32[8,16]
%1 = max(%0) {axes=[1], keepdims=true} : f32[8,1]
%2 = broadcast_to(%1) {shape=[8,16]} : f32[8,16]
%3 = subtract(%0, %2) : f32[8,16]
%4 = exp(%3) : f32[8,16]
%5 = sum(%4) {axes=[1], keepdims=true} : f32[8,1]
%6 = broadcast_to(%5) {shape=[8,16]} : f32[8,16]
%7 = divide(%4, %6) : f32[8,16]
%8 = const {value=1.0} : f32[]
%9 = broadcast_to(%8) {shape=[8,16]} : f32[8,16]
%10 = multiply(%7, %9) : f32[8,16]
%11 = slice(%10) {start=[0,0], step=[1,1], len=[2,16]} : f32[2,16]
return %11
",
        "
%0 = input {index=0} : f32[8,16]
%1 = max(%0) {axes=[1], keepdims=true} : f32[8,1]
%2 = broadcast_to(%1) {shape=[8,16]} : f32[8,16]
%3 = subtract(%0, %2) : f32[8,16]
%4 = exp(%3) : f32[8,16]
%5 = slice(%4) {start=[0,0], step=[1,1], len=[2,16]} : f32[2,16]
%6 = sum(%4) {axes=[1], keepdims=true} : f32[8,1]
%7 = slice(%6) {start=[0,0], step=[1,1], len=[2,1]} : f32[2,1]
%8 = broadcast_to(%7) {shape=[2,16]} : f32[2,16]
%9 = divide(%5, %8) : f32[2,16]
return %9
",
    );
}

#[test]
fn mixed_program() {
    // A frontend-style program: promotion casts, scalar constants, a transpose pair, a
    // reduction of a reduction.
    check(
        "reduce-reduce",
        "
%0 = input {index=0} : i8[4,3]
%1 = cast(%0) {dtype=i32} : i32[4,3]
%2 = cast(%1) {dtype=i64} : i64[4,3]
%3 = const {value=0} : i64[]
%4 = broadcast_to(%3) {shape=[4,3]} : i64[4,3]
%5 = add(%2, %4) : i64[4,3]
%6 = permute(%5) {perm=[1,0]} : i64[3,4]
%7 = permute(%6) {perm=[1,0]} : i64[4,3]
%8 = max(%7) {axes=[0], keepdims=false} : i64[3]
%9 = max(%8) {axes=[0], keepdims=false} : i64[]
%10 = const {value=2} : i64[]
%11 = const {value=3} : i64[]
%12 = multiply(%10, %11) : i64[]
%13 = add(%9, %12) : i64[]
return %13
",
        "
%0 = input {index=0} : i8[4,3]
%1 = cast(%0) {dtype=i64} : i64[4,3]
%2 = max(%1) {axes=[0,1], keepdims=false} : i64[]
%3 = const {value=6} : i64[]
%4 = add(%2, %3) : i64[]
return %4
",
    );
}

#[test]
fn random_dag_of_1000_nodes() {
    let g = random_elementwise_graph(1000, &[1024], 7);
    verify(&g).unwrap();
    assert!(g.len() >= 1000);
    // The default limits (50 ms) may stop a debug build early: the result is valid anyway.
    let start = Instant::now();
    let s = simplify(&g, &SimplifyOptions::default()).unwrap();
    let elapsed = start.elapsed();
    verify(&s.graph).unwrap();
    assert_eq!(s.graph.outputs().len(), g.outputs().len());
    for (a, b) in s.graph.outputs().iter().zip(g.outputs()) {
        let (a, b) = (s.graph.node(*a), g.node(*b));
        assert_eq!((a.dtype, &a.shape), (b.dtype, &b.shape));
    }
    assert!(s.report.cost_after <= s.report.cost_before);
    assert!(s.graph.len() < g.len(), "{}", s.report);
    eprintln!("1000-node DAG: {:?}; {}", elapsed, s.report);
}

/// A tiny f32 interpreter for the ops of [`random_elementwise_graph`], so that the simplified
/// random graphs can be checked to compute the same bits (until the reference evaluator lands).
fn eval_f32(g: &kiln_ir::Graph, inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    use kiln_ir::graph::{Attrs, Literal};
    use kiln_ir::OpKind::*;
    let n = inputs[0].len();
    let mut vals: Vec<Vec<f32>> = Vec::with_capacity(g.len());
    for node in g.nodes() {
        let arg = |k: usize| &vals[node.inputs[k].index()];
        let unary = |f: fn(f32) -> f32| arg(0).iter().map(|&x| f(x)).collect::<Vec<f32>>();
        let binary = |f: fn(f32, f32) -> f32| {
            arg(0).iter().zip(arg(1)).map(|(&x, &y)| f(x, y)).collect::<Vec<f32>>()
        };
        let v = match (node.op, &node.attrs) {
            (Input, Attrs::Input { index }) => inputs[*index as usize].clone(),
            (Const, Attrs::Const { value: Literal::Float(bits) }) => {
                vec![f64::from_bits(*bits) as f32]
            }
            (BroadcastTo, _) => vec![arg(0)[0]; n],
            (Neg, _) => unary(|x| -x),
            (Exp, _) => unary(f32::exp),
            (Sin, _) => unary(f32::sin),
            (Abs, _) => unary(f32::abs),
            (Tanh, _) => unary(f32::tanh),
            (Square, _) => unary(|x| x * x),
            (Sqrt, _) => unary(f32::sqrt),
            (Add, _) => binary(|x, y| x + y),
            (Sub, _) => binary(|x, y| x - y),
            (Mul, _) => binary(|x, y| x * y),
            (Div, _) => binary(|x, y| x / y),
            (Maximum, _) => {
                binary(|x, y| if x.is_nan() || y.is_nan() { f32::NAN } else { x.max(y) })
            }
            (Minimum, _) => {
                binary(|x, y| if x.is_nan() || y.is_nan() { f32::NAN } else { x.min(y) })
            }
            // catch-all: the interpreter knows the ops `random_elementwise_graph` writes, and
            // any other is a bug of that generator, named here.
            (op, attrs) => panic!("eval_f32: {op:?} {attrs:?}"),
        };
        vals.push(v);
    }
    g.outputs().iter().map(|o| vals[o.index()].clone()).collect()
}

#[test]
fn random_dags_compute_the_same_bits() {
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        70.0,
        -0.75,
        2.0,
        1e30,
        -1e-3,
    ];
    let inputs: Vec<Vec<f32>> =
        (0..4).map(|k| (0..16).map(|i| specials[(i * 5 + k * 3) % 16]).collect()).collect();
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    for seed in 0..20 {
        let g = random_elementwise_graph(300, &[16], seed);
        let s = simplify(&g, &opts()).unwrap();
        verify(&s.graph).unwrap();
        assert!(s.report.rules_applied.values().sum::<usize>() > 0);
        let (want, got) = (eval_f32(&g, &inputs), eval_f32(&s.graph, &inputs));
        assert_eq!(want.len(), got.len());
        for (k, (w, o)) in want.iter().zip(&got).enumerate() {
            assert!(
                w.iter().zip(o).all(|(&a, &b)| same(a, b)),
                "seed {seed}, output {k}: {w:?} != {o:?}"
            );
        }
    }
}
