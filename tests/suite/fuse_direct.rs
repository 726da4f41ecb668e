//! Direct runs of a fused closure (`Fused::try_run`, `frontend/src/kernels/fuse_direct.rs`): a
//! call matching an earlier one's arguments runs its plan with no trace and no expression
//! built. These tests try to make a direct run compute the wrong thing: other scalars (`-0.0`
//! against `0.0`), aliased arguments, an argument that is the closure's captured array, lazy
//! arguments, other shapes, evicted entries. Each result is compared bit for bit with the lazy
//! call (`Fused::call`, evaluated) on the same arguments.

use kiln::{Array, DType, Operand};

fn data(shape: &[usize], seed: u32) -> Array {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i as u32 * 7 + seed * 13) % 23) as f32 - 11.0).collect();
    Array::from_vec(v, shape)
}

fn bits(a: &Array) -> Vec<u32> {
    a.to_vec::<f32>().into_iter().map(f32::to_bits).collect()
}

/// `x * s - y`, the scalar `s` folded into the plan.
fn scaled_diff() -> kiln::Fused<impl Fn(&[Operand]) -> kiln::Result<Array>> {
    kiln::fuse("scaled_diff", |a: &[Operand]| {
        a[0].to_array().try_multiply(a[1].clone())?.try_subtract(a[2].clone())
    })
}

/// The lazy call's results on `args`, evaluated.
fn lazy<F: Fn(&[Operand]) -> kiln::Result<Array>>(
    f: &kiln::Fused<F>,
    args: &[Operand],
) -> Vec<u32> {
    bits(&f.call(args).remove(0))
}

#[test]
fn a_repeated_call_runs_directly_on_new_data() {
    let f = scaled_diff();
    let (x, y) = (data(&[3, 5], 1), data(&[3, 5], 2));
    let args: [Operand; 3] = [(&x).into(), 2.5.into(), (&y).into()];
    let first = f.run(&args).remove(0);
    assert!(first.is_materialized());
    assert_eq!((f.direct_runs(), bits(&first)), (0, lazy(&f, &args)));
    let traces = f.traces();
    // The same structure, other data: direct, and the new data's result.
    let (x2, y2) = (data(&[3, 5], 3), data(&[3, 5], 4));
    let args2: [Operand; 3] = [(&x2).into(), 2.5.into(), (&y2).into()];
    let (hits, _) = kiln::dispatch_stats();
    let again = f.run(&args2).remove(0);
    assert_eq!(f.direct_runs(), 1);
    assert_eq!(f.traces(), traces, "a direct run does not trace");
    assert_eq!(kiln::dispatch_stats().0, hits + 1, "counted as a dispatch hit");
    assert!(again.is_materialized());
    assert_eq!((again.dtype(), again.shape()), (DType::Float32, &[3usize, 5][..]));
    assert_eq!(bits(&again), lazy(&f, &args2));
    assert_ne!(bits(&again), bits(&first));
}

#[test]
fn other_scalars_are_other_plans() {
    let f = scaled_diff();
    let (x, y) = (data(&[8], 5), data(&[8], 6));
    for s in [0.0, -0.0, 0.0, 3.0, -0.0, 3.0f64] {
        let args: [Operand; 3] = [(&x).into(), s.into(), (&y).into()];
        let got = f.run(&args).remove(0);
        assert_eq!(bits(&got), lazy(&f, &args), "scalar {s:?}");
    }
    // 0.0, -0.0 and 3.0 each ran once through the lazy path, then directly.
    assert_eq!(f.direct_runs(), 3);
}

#[test]
fn aliased_arguments_are_another_structure() {
    let f = scaled_diff();
    let (x, y) = (data(&[4, 4], 7), data(&[4, 4], 8));
    let apart: [Operand; 3] = [(&x).into(), 1.0.into(), (&y).into()];
    let same: [Operand; 3] = [(&x).into(), 1.0.into(), (&x).into()];
    let x2 = x.clone();
    let same_by_clone: [Operand; 3] = [(&x).into(), 1.0.into(), (&x2).into()];
    let y3 = data(&[4, 4], 9);
    let apart_again: [Operand; 3] = [(&y3).into(), 1.0.into(), (&y).into()];
    for (k, args) in [&apart, &same, &same_by_clone, &apart_again, &same].iter().enumerate() {
        let got = f.run(&args[..]).remove(0);
        assert_eq!(bits(&got), lazy(&f, &args[..]), "call {k}");
    }
    assert!(bits(&f.run(&same).remove(0)).iter().all(|&b| b == 0), "x * 1 - x is +0");
    assert_eq!(f.direct_runs(), 4);
}

#[test]
fn an_argument_holding_the_captured_array_is_not_run_directly() {
    // (Of one element: the stand-ins' sentinel extents broadcast against it, so the template
    // is shape-generic and the closure traced once.)
    let w = data(&[1], 10);
    let wc = w.clone();
    let f = kiln::fuse("times_w", move |a: &[Operand]| a[0].to_array().try_multiply(&wc));
    let z = data(&[1], 11);
    for (k, arg) in [&z, &w, &z, &w, &z].iter().enumerate() {
        let args: [Operand; 1] = [(*arg).into()];
        assert_eq!(bits(&f.run(&args).remove(0)), lazy(&f, &args), "call {k}");
    }
    // `z` runs directly after its first call; `w` (the captured array) never does.
    assert_eq!(f.direct_runs(), 2);
}

#[test]
fn lazy_arguments_and_other_shapes_take_the_lazy_path() {
    let f = scaled_diff();
    let (x, y) = (data(&[2, 3], 12), data(&[2, 3], 13));
    let args: [Operand; 3] = [(&x).into(), 2.0.into(), (&y).into()];
    f.run(&args);
    // A lazy argument of the same dtype and shape: computed, not matched.
    let lazy_x = &x + 1.0f32;
    let args_lazy: [Operand; 3] = [(&lazy_x).into(), 2.0.into(), (&y).into()];
    assert_eq!(bits(&f.run(&args_lazy).remove(0)), lazy(&f, &args_lazy));
    assert_eq!(f.direct_runs(), 0);
    // Another shape, and a broadcast one: their own entries.
    let (x4, y4, row) = (data(&[4, 3], 14), data(&[4, 3], 15), data(&[3], 16));
    for args in [
        [(&x4).into(), 2.0.into(), (&y4).into()],
        [(&x4).into(), 2.0.into(), (&row).into()],
        [(&x4).into(), 2.0.into(), (&y4).into()],
        [(&x4).into(), 2.0.into(), (&row).into()],
    ] {
        let args: [Operand; 3] = args;
        assert_eq!(bits(&f.run(&args).remove(0)), lazy(&f, &args));
    }
    assert_eq!(f.direct_runs(), 2);
}

#[test]
fn more_argument_sets_than_kept_still_compute_right() {
    let f = scaled_diff();
    let (x, y) = (data(&[5], 17), data(&[5], 18));
    // 20 scalars (16 kept): the first ones evicted run through the lazy path again.
    for round in 0..2 {
        for s in 0..20 {
            let args: [Operand; 3] = [(&x).into(), (s as f64).into(), (&y).into()];
            assert_eq!(bits(&f.run(&args).remove(0)), lazy(&f, &args), "round {round}, {s}");
        }
    }
    assert!(f.direct_runs() < 20, "{}", f.direct_runs());
}

#[test]
fn several_results_and_integer_arguments() {
    let f = kiln::fuse("sum_and_scaled", |a: &[Operand]| -> kiln::Result<Vec<Array>> {
        let x = a[0].to_array();
        Ok(vec![x.try_sum(None)?, x.try_multiply(a[1].clone())?])
    });
    let x = Array::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4]);
    let x2 = Array::from_vec((5..17).collect::<Vec<i32>>(), &[3, 4]);
    for v in [&x, &x2, &x] {
        let args: [Operand; 2] = [v.into(), 3.into()];
        let got = f.run(&args);
        let want = f.call(&args);
        assert_eq!(got.len(), 2);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()));
            assert_eq!(
                g.astype(DType::Int64).to_vec::<i64>(),
                w.astype(DType::Int64).to_vec::<i64>()
            );
        }
    }
    assert_eq!(f.direct_runs(), 2);
}

/// A closure of many scalar ops (kiln-bench's `tiny_chain_48ops_fuse`, and chains with more
/// constants) is traced into one shape-generic template, so its repeated calls run directly:
/// the two traces at different shapes build the same nodes, whichever of its scalars' splats
/// the thread's cache shares between ops (`elementwise.rs`; a cache whose slots depended on
/// the shape made one trace's splats again and the other's not, and no call ran directly).
#[test]
fn a_chain_of_scalar_ops_runs_directly() {
    let chain = |n: usize| {
        move |a: &[Operand]| {
            let mut t = a[0].to_array();
            for k in 0..16 {
                t = t * 1.0001 + 0.5;
                t = t - 0.25;
                t = t * 0.999;
                // More constants, one an op: a fuller cache.
                for j in 0..n {
                    t = t + (k * n + j) as f64 * 1e-3;
                }
            }
            Ok(t)
        }
    };
    for n in [0, 1, 3] {
        let f = kiln::fuse("chain", chain(n));
        let x = data(&[64], 9);
        for _ in 0..4 {
            let args: [Operand; 1] = [(&x).into()];
            let got = bits(&f.run(&args).remove(0));
            assert_eq!(got, lazy(&f, &args), "{n} more constants an iteration");
        }
        assert_eq!(f.direct_runs(), 3, "{n} more constants an iteration");
    }
}
