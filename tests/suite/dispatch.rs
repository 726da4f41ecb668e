//! Dispatch: a repeated expression finds its plan by the key of its walk (`frontend/src/
//! dispatch.rs`). These tests try to fool the key: expressions that differ only in a constant's
//! bits, in aliasing, in a view, in a dtype, in sizes, in which intermediates are held, in the
//! order of outputs. Each is computed twice (the second time through the key) and compared bit
//! for bit (every NaN as one) with the reference evaluator on its own lowered graph.

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
    // Every NaN as one: its payload is not NumPy's to define (a GPU's multiply makes
    // 0x7fffffff, the host's and constant folding's 0x7fc00000).
    wide.into_iter().map(|v| if v.is_nan() { f64::NAN.to_bits() } else { v.to_bits() }).collect()
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

/// `n` structural-number hits where the numbers are on (`KILN_DISPATCH_STRUCTURE`, default
/// on), none where they are off: every call then takes the walk.
fn by_number(n: usize) -> usize {
    if kiln_cache::config().dispatch_structure {
        n
    } else {
        0
    }
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

/// The structural numbers kept as expressions are built (`frontend/src/array/structure.rs`):
/// a repeated expression of one root finds its plan by its number, with no walk.
#[test]
fn a_repeated_expression_is_found_by_its_structure() {
    let x = data(&[33], 9);
    let f = |x: &Array| ((x * 1.25 - 0.5) * &(x + 2.0)).abs();
    let want = reference(&[&f(&x)]);
    assert_eq!(computed(&[&f(&x)]), want);
    let s0 = kiln::dispatch_structure_hits();
    assert_eq!(computed(&[&f(&x)]), want);
    assert_eq!(kiln::dispatch_structure_hits(), s0 + by_number(1), "the repeat, by its number");
    // Another value of the same structure, by its number too, computes the new value.
    let y = data(&[33], 10);
    let want_y = reference(&[&f(&y)]);
    assert_eq!(computed(&[&f(&y)]), want_y);
    assert_eq!(kiln::dispatch_structure_hits(), s0 + by_number(2));
    // What the walk's key tells apart, the numbers do too (each variant twice; some go by
    // number, and none may hand a plan to another).
    let (a, b) = (data(&[6, 6], 15), data(&[6, 6], 16));
    let held = &a * 2.0;
    held.eval();
    for pass in 0..2 {
        for (name, arrays) in variants(&a, &b, &held) {
            let refs: Vec<&Array> = arrays.iter().collect();
            assert_eq!(computed(&refs), reference(&refs), "{name}, pass {pass}");
        }
    }
}

/// Two distinct arrays holding one value (an export of kiln's read back) are one input of the
/// plan, as the walk numbers inputs by value; a number made when they were distinct values
/// does not hand its plan over.
#[test]
fn leaves_holding_one_value_are_one_input_by_structure_too() {
    let x = data(&[12], 11);
    let y = data(&[12], 12);
    let x2 = kiln::from_dlpack(x.to_dlpack().unwrap()).unwrap();
    let f = |a: &Array, b: &Array| a * 3.0 - b;
    for pass in 0..3 {
        for (name, a, b) in
            [("x, y", &x, &y), ("x, x2", &x, &x2), ("x2, x", &x2, &x), ("x, x", &x, &x)]
        {
            let r = f(a, b);
            let want = reference(&[&r]);
            assert_eq!(computed(&[&r]), want, "{name}, pass {pass}");
        }
    }
    // x·3 − x, whichever handle holds the value.
    let got = f(&x, &x2).to_vec::<f32>();
    let want: Vec<f32> = x.to_vec::<f32>().iter().map(|v| v * 3.0 - v).collect();
    assert_eq!(got, want);
}

/// A lazy intermediate materialised through another handle after an expression over it was
/// built: that expression's number is stale, so its call walks and reads the held value (the
/// same values; the plan differs).
#[test]
fn a_number_made_before_an_intermediate_was_held_is_not_used() {
    let x = data(&[20], 13);
    let f = |t: &Array| (t + 1.0) * 0.5;
    // Warm the structure of f over a lazy t.
    for _ in 0..2 {
        let t = &x * 2.0;
        f(&t).eval();
    }
    let t = &x * 2.0;
    let r = f(&t);
    t.eval();
    let want = reference(&[&r]);
    assert_eq!(kiln::lower(&[&r]).inputs.len(), 1);
    let s0 = kiln::dispatch_structure_hits();
    assert_eq!(computed(&[&r]), want);
    assert_eq!(kiln::dispatch_structure_hits(), s0, "the stale number is not used");
    // Built now, over the held t, the expression has a number again: a second call finds it.
    let r2 = f(&t);
    assert_eq!(computed(&[&r2]), want);
    let r3 = f(&t);
    assert_eq!(computed(&[&r3]), want);
    assert_eq!(kiln::dispatch_structure_hits(), s0 + by_number(1));
}

/// An expression built on one thread and materialised on another takes the walk there (its
/// numbers are its thread's table's), and computes the same values.
#[test]
fn an_expression_built_on_another_thread_is_computed_by_its_walk() {
    let x = data(&[16], 14);
    let f = |x: &Array| (x * 0.75 + 3.0).abs().sqrt() - x;
    let want = reference(&[&f(&x)]);
    for _ in 0..2 {
        assert_eq!(computed(&[&f(&x)]), want);
    }
    let r = f(&x);
    let (hits, got) = std::thread::scope(|s| {
        s.spawn(|| (kiln::dispatch_structure_hits(), computed(&[&r]))).join().unwrap()
    });
    assert_eq!((hits, got), (0, want.clone()));
    // And the other way: built there, computed here.
    let r = std::thread::scope(|s| s.spawn(|| f(&x)).join().unwrap());
    let s0 = kiln::dispatch_structure_hits();
    assert_eq!(computed(&[&r]), want);
    assert_eq!(kiln::dispatch_structure_hits(), s0);
}

/// Past four distinct held arrays an expression has no number: it takes the walk, correctly.
#[test]
fn an_expression_over_many_held_arrays_takes_the_walk() {
    let xs: Vec<Array> = (0..6).map(|k| data(&[10], 20 + k)).collect();
    let f = |n: usize| xs[1..n].iter().fold(xs[0].clone(), |acc, x| acc * 0.5 + x);
    for n in [4, 5, 6] {
        let want = reference(&[&f(n)]);
        let s0 = kiln::dispatch_structure_hits();
        for _ in 0..3 {
            assert_eq!(computed(&[&f(n)]), want, "{n} arrays");
        }
        let found = kiln::dispatch_structure_hits() - s0;
        assert_eq!(found, by_number(if n <= 4 { 2 } else { 0 }), "{n} arrays");
    }
}

/// A thread that builds ever new structures empties its table (a new generation); expressions
/// built before that take the walk, and numbering goes on after it.
#[test]
fn a_full_table_starts_a_new_generation() {
    std::thread::spawn(|| {
        let x = data(&[8], 30);
        let f = |x: &Array| (x + 0.125) * 4.0;
        let want = reference(&[&f(&x)]);
        assert_eq!(computed(&[&f(&x)]), want);
        let before = f(&x);
        // Three new numbers an iteration (a constant, its splat, the multiply).
        for k in 0..30_000 {
            std::hint::black_box(&x * (k as f64 + 0.5));
        }
        let s0 = kiln::dispatch_structure_hits();
        assert_eq!(computed(&[&before]), want);
        assert_eq!(kiln::dispatch_structure_hits(), s0, "a number of the old generation");
        for _ in 0..2 {
            assert_eq!(computed(&[&f(&x)]), want);
        }
        assert_eq!(kiln::dispatch_structure_hits(), s0 + by_number(1), "numbered again");
    })
    .join()
    .unwrap();
}
