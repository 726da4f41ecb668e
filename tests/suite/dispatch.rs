//! Dispatch: a repeated expression finds its plan by the key of its walk (`frontend/src/
//! dispatch.rs`). These tests try to fool the key: expressions that differ only in a constant's
//! bits, in aliasing, in a view, in a dtype, in sizes, in which intermediates are held, in the
//! order of outputs. Each is computed twice (the second time through the key) and compared bit
//! for bit with the reference evaluator on its own lowered graph.

use kiln::ir::HostArray;
use kiln::{s, Array, DType};

/// The elements as f64 bits (f32 and i32 widen exactly, so -0.0 and 0.0 stay apart).
fn bits(h: &HostArray) -> Vec<u64> {
    let wide: Vec<f64> = match h.dtype() {
        DType::Float32 => h.as_slice::<f32>().unwrap().iter().map(|&v| v as f64).collect(),
        DType::Float64 => h.as_slice::<f64>().unwrap().to_vec(),
        DType::Int32 => h.as_slice::<i32>().unwrap().iter().map(|&v| v as f64).collect(),
        DType::Int64 => h.as_slice::<i64>().unwrap().iter().map(|&v| v as f64).collect(),
        other => panic!("bits: {other} not used here"),
    };
    wide.into_iter().map(f64::to_bits).collect()
}

/// What the reference evaluator computes for `arrays` (lowered before they are computed).
fn reference(arrays: &[&Array]) -> Vec<Vec<u64>> {
    let l = kiln::lower(arrays);
    let inputs: Vec<&HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap().iter().map(bits).collect()
}

/// Computes `arrays` (one materialisation) and returns their bits.
fn computed(arrays: &[&Array]) -> Vec<Vec<u64>> {
    kiln::eval_all(arrays);
    arrays.iter().map(|a| bits(&a.try_to_host().unwrap())).collect()
}

fn data(shape: &[usize], seed: u32) -> Array {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i as u32 * 7 + seed * 13) % 23) as f32 - 11.0).collect();
    Array::from_vec(v, shape)
}

#[test]
fn a_repeated_expression_is_found_by_its_key() {
    let x = data(&[41], 1);
    let f = |x: &Array| (x * 1.5 + 0.25).abs().sqrt();
    let (h0, m0) = kiln::dispatch_stats();
    let a = f(&x).to_vec::<f32>();
    let (h1, m1) = kiln::dispatch_stats();
    let b = f(&x).to_vec::<f32>();
    let (h2, m2) = kiln::dispatch_stats();
    assert_eq!((h1 - h0) + (m1 - m0), 1, "one materialisation");
    assert_eq!((h2 - h1, m2 - m1), (1, 0), "the second call is a hit");
    assert_eq!(a, b);
    // A new value of the same structure is a hit too, and computes the new value.
    let y = data(&[41], 2);
    let c = f(&y).to_vec::<f32>();
    assert_eq!(kiln::dispatch_stats().0, h2 + 1);
    let want: Vec<f32> = y.to_vec::<f32>().iter().map(|v| (v * 1.5 + 0.25).abs().sqrt()).collect();
    assert_eq!(c, want);
}

/// Expressions of one family: each differs from another in one thing the key must see.
fn variants(x: &Array, y: &Array, held: &Array) -> Vec<(&'static str, Vec<Array>)> {
    let x7 = data(&[7, 6], 3);
    let xd = x.astype(DType::Float64);
    let xi = x.astype(DType::Int32);
    let t = x * 2.0;
    vec![
        ("times 2", vec![x * 2.0]),
        ("times 3", vec![x * 3.0]),
        ("times +0", vec![x * 0.0]),
        ("times -0", vec![x * -0.0]),
        ("times nan", vec![x * f32::NAN]),
        ("x + x", vec![x + x]),
        ("x + y", vec![x + y]),
        ("y + x", vec![y + x]),
        ("x + x.clone()", vec![x + x.clone()]),
        ("x.T + y", vec![x.t() + y]),
        ("x + y.T", vec![x + y.t()]),
        ("x[1:] + y[:5]", vec![x.slice(&s![1.., ..]) + y.slice(&s![..5, ..])]),
        ("x[:5] + y[1:]", vec![x.slice(&s![..5, ..]) + y.slice(&s![1.., ..])]),
        ("x[::-1] + y", vec![x.slice(&s![..;-1, ..]) + y]),
        ("x[::2] + y[1::2]", vec![x.slice(&s![..;2, ..]) + y.slice(&s![1..;2, ..])]),
        ("float64 times 2", vec![&xd * 2.0]),
        ("int32 times 2", vec![&xi * 2]),
        ("7 rows times 2", vec![&x7 * 2.0]),
        ("shared t + t", vec![&t + &t]),
        ("unshared", vec![x * 2.0 + x * 2.0]),
        ("held + 1", vec![held + 1.0]),
        ("computed + 1", vec![x * 2.0 + 1.0]),
        ("held + x", vec![held + x]),
        ("held + held", vec![held + held]),
        ("two outputs", vec![x * 2.0, x * 3.0]),
        ("two outputs swapped", vec![x * 3.0, x * 2.0]),
        ("sum rows", vec![x.sum(1)]),
        ("sum columns", vec![x.sum(0)]),
    ]
}

#[test]
fn expressions_that_differ_in_one_thing_never_share_a_plan_by_mistake() {
    let x = data(&[6, 6], 4);
    let y = data(&[6, 6], 5);
    let held = &x * 2.0;
    held.eval();
    // Twice over, in opposite orders: the second pass finds every key, in an order where a key
    // that forgot something would hand the previous variant's plan to the next.
    for pass in 0..2 {
        let mut vs = variants(&x, &y, &held);
        if pass == 1 {
            vs.reverse();
        }
        for (name, arrays) in vs {
            let refs: Vec<&Array> = arrays.iter().collect();
            let want = reference(&refs);
            assert_eq!(computed(&refs), want, "{name}, pass {pass}");
        }
    }
}

#[test]
fn a_held_intermediate_changes_the_key() {
    let x = data(&[5, 3], 6);
    // Not held: one graph computes x * 2 + 1.
    let lazy = &x * 2.0;
    let a = &lazy + 1.0;
    let want = reference(&[&a]);
    assert_eq!(computed(&[&a]), want);
    // The same expression objects, now with the intermediate held: the graph reads it.
    let lazy2 = &x * 2.0;
    let b = &lazy2 + 1.0;
    lazy2.eval();
    assert_eq!(computed(&[&b]), want);
    // And the other way round again.
    let c = &x * 2.0 + 1.0;
    assert_eq!(computed(&[&c]), want);
}

/// The walk remembers only expressions it can meet twice (held by more than one handle, or a
/// root): a root asked for twice by one handle, a node its reader reads twice, a node two
/// readers share with no handle of the user's left, and an unshared chain all compute what
/// the evaluator computes, the first time and through the key.
#[test]
fn the_walk_meets_each_expression_once_however_it_is_held() {
    let x = data(&[9], 7);
    for pass in 0..2 {
        let chain = ((&x * 2.0 + 1.0).abs() - 0.5).sqrt();
        let twice = {
            let t = &x * 3.0 - 1.0;
            &t * &t
        };
        let diamond = {
            let t = (&x + 0.25).abs();
            let (u, v) = (&t * 2.0, &t + 1.0);
            u - v
        };
        let cases: Vec<(&str, Vec<&Array>)> = vec![
            ("chain", vec![&chain]),
            ("chain asked twice", vec![&chain, &chain]),
            ("a node read twice", vec![&twice]),
            ("a diamond", vec![&diamond]),
            ("all", vec![&diamond, &chain, &twice, &chain]),
        ];
        for (name, arrays) in cases {
            let want = reference(&arrays);
            assert_eq!(computed(&arrays), want, "{name}, pass {pass}");
        }
    }
}

/// Dropping the last handle on a long chain of ops does not recurse once per op (it would
/// overflow this thread's 128 KiB stack).
#[test]
fn a_long_chain_is_dropped_without_recursion() {
    std::thread::Builder::new()
        .stack_size(128 << 10)
        .spawn(|| {
            let mut t = data(&[2], 8);
            for _ in 0..100_000 {
                t = t + 1.0;
            }
            drop(t);
        })
        .unwrap()
        .join()
        .expect("the chain's drop overflowed the stack");
}

#[test]
fn the_plan_cache_says_why_it_compiles() {
    use kiln_compiler::pipeline::Options;
    use kiln_compiler::plan_cache::PlanCache;
    let cache = PlanCache::new();
    let x = data(&[4, 4], 7);
    let g = |c: f64| kiln::lower(&[&(&x * c).exp()]).graph;
    assert_eq!(cache.why_compile(&g(2.0)), "no plan has been compiled yet");
    cache.get_or_compile(&g(2.0), &Options::from_env()).unwrap();
    let why = cache.why_compile(&g(3.0));
    assert!(why.starts_with("no plan of this structure among 1; the nearest differs first at node"));
    // The constant's node, as each key writes it (literals as their f64 bits).
    assert!(why.contains("const:f32") && why.contains(&format!("{}", 3.0f64.to_bits())), "{why}");
    assert!(why.contains(&format!("{}", 2.0f64.to_bits())), "{why}");
}
