//! A host scatter's labels 16 positions at once (`compiler/src/codegen/lower/label_block.rs`,
//! `KILN_HOST_LABEL_BLOCK`): k-means' argmin labels of a block of points in vector lanes, the
//! points' rows transposed in registers, a lane whose best is not provably apart from its
//! runner-up (or whose sums are not finite) labelled by the one-position code. The host kernel's
//! shape, and its results against the reference evaluator's: counts, the sums of each
//! cluster's positions and of their squares (integers: any wrong label shows) and the float
//! sums, bit for bit where the values are small integers. The defaults take the expanded
//! distances (`KILN_HOST_DISTANCES=expanded`: `Σx² - 2·Σxc + Σc²`, an absolute error bound)
//! and the unrolled scatter (`KILN_HOST_BLOCK_SCATTER=unrolled`); the tests also pass under
//! `direct` and `loop` (the shape test then checks those forms).

use kiln::{Array, DType};

/// Points and centres of fractions in `[-5, 5)`.
fn data(n: usize, d: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    let x = (0..n * d).map(|i| ((i * 7919 % 1000) as f32) / 99.0 - 5.0).collect();
    let c = (0..k * d).map(|i| ((i * 104729 % 1000) as f32) / 99.0 - 5.0).collect();
    (x, c)
}

/// The scatters of one k-means update by `labels` (the argmin, or with `max` the argmax, of
/// the squared distances): the sums of the points, the counts, and the sums of the positions
/// and of their squares.
fn update(x: &Array, c: &Array, max: bool) -> [Array; 4] {
    let (n, k, d) = (x.shape()[0], c.shape()[0], c.shape()[1]);
    let dist = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2);
    let labels = if max { dist.argmax(1) } else { dist.argmin(1) };
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, x);
    let counts = kiln::bincount(&labels, None, k);
    let at = kiln::arange(n as i64);
    let pos = kiln::zeros(&[k], DType::Int64).add_at(&labels, &at);
    let pos2 = kiln::zeros(&[k], DType::Int64).add_at(&labels, &(&at * &at));
    [sums, counts, pos, pos2]
}

/// The update's results against the evaluator's: the integer ones equal, the float sums equal
/// bit for bit with `exact` (small integers: exact in any order), else within a float32 sum's
/// rounding bound (`m` terms of magnitude at most `a`, in any order: `m · 2^-24 · a·m`).
fn check(x: Vec<f32>, c: Vec<f32>, n: usize, d: usize, k: usize, max: bool, exact: bool) {
    let (x, c) = (Array::from_vec(x, &[n, d]), Array::from_vec(c, &[k, d]));
    let [sums, counts, pos, pos2] = update(&x, &c, max);
    let outs = [&sums, &counts, &pos, &pos2];
    let l = kiln::lower(&outs);
    let inputs: Vec<&kiln::ir::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
    kiln::eval_all(&outs);
    let what = format!("n={n} d={d} k={k} max={max}");
    assert_eq!(counts.to_vec::<i64>(), want[1].as_slice::<i64>().unwrap(), "{what}");
    assert_eq!(pos.to_vec::<i64>(), want[2].as_slice::<i64>().unwrap(), "{what}");
    assert_eq!(pos2.to_vec::<i64>(), want[3].as_slice::<i64>().unwrap(), "{what}");
    let got = sums.to_vec::<f32>();
    let m = want[1].as_slice::<i64>().unwrap();
    let a = x.to_vec::<f32>().iter().fold(0f32, |a, v| a.max(v.abs()));
    for (e, (g, w)) in got.iter().zip(want[0].as_slice::<f32>().unwrap()).enumerate() {
        if exact {
            assert_eq!(g.to_bits(), w.to_bits(), "{what}: {g} vs {w}");
        } else {
            let m = m[e / d] as f32;
            let bound = m * a * m * (-24f32).exp2();
            assert!((g - w).abs() <= bound || g.to_bits() == w.to_bits(), "{what}: {g} vs {w}");
        }
    }
}

/// The host kernel of a k-means update takes its labels 16 positions at once where the row is
/// a multiple of 16 long, and one at a time otherwise.
#[test]
fn kmeans_host_kernel_takes_blocks_of_labels() {
    for (d, blocks) in [(64, true), (16, true), (24, false), (4, false)] {
        let (x, c) = data(1000, d, 10);
        let (x, c) = (Array::from_vec(x, &[1000, d]), Array::from_vec(c, &[10, d]));
        let [sums, counts, ..] = update(&x, &c, false);
        let mlir = kiln::kernel_code(&[&sums, &counts], kiln::CodeStage::HostMlir).unwrap();
        // The block's labels (a vector of 16), the transpose's shuffles of two rows, and the
        // loop over the blocks' positions after it.
        let block = mlir.contains(": vector<16xi64>, !llvm.ptr")
            && mlir.contains("llvm.shufflevector")
            && mlir.contains("step %")
            && mlir.contains("-> vector<16xf32>");
        assert_eq!(block, blocks, "d = {d}: {mlir}");
        if blocks {
            // Ten sums a block, and the label -1 where the screen cannot decide.
            assert!(mlir.contains("dense<-1> : vector<16xi64>"), "{mlir}");
            assert!(mlir.contains("dense<9> : vector<16xi64>"), "{mlir}");
            assert!(!mlir.contains("dense<10> : vector<16xi64>"), "{mlir}");
            // The expanded form: one fused multiply-add a term, the centres' `Σc²` before the
            // loop over blocks, `fma(Σxc, -2, Σx² + Σc²)` a centre; the direct form subtracts.
            let fma = mlir.contains("math.fma") && mlir.contains(": vector<16xf32>");
            let direct = setting("KILN_HOST_DISTANCES").is_some_and(|v| v == "direct");
            assert_eq!(fma, !direct, "d = {d}: {mlir}");
            // A vector subtraction a term and centre in the direct form (160 a chunk of 16
            // columns); the expanded form keeps the direct form for blocks after one with many
            // undecided lanes (a loop-carried count, the undecided lanes counted).
            let subs = mlir
                .lines()
                .filter(|l| l.contains("arith.subf") && l.ends_with("vector<16xf32>"))
                .count();
            assert!(subs >= 160, "d = {d}: {subs}: {mlir}");
            assert_eq!(mlir.contains("llvm.intr.vector.reduce.add"), !direct, "{mlir}");
            // The unrolled scatter: one branch a block for the undecided lanes (a reduction of
            // the block's label test), then the 16 positions without a branch.
            let unrolled = mlir.contains("llvm.intr.vector.reduce.or");
            let looped = setting("KILN_HOST_BLOCK_SCATTER").is_some_and(|v| v == "loop");
            assert_eq!(unrolled, !looped, "d = {d}: {mlir}");
        }
    }
}

/// A knob's value in this process's environment (lower case), if set.
fn setting(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_ascii_lowercase()).filter(|v| !v.is_empty())
}

/// The expanded form's terms written otherwise: `(c - x)²` and `(x - c)·(x - c)` take it, and
/// the centres may be an expression (not reading the position). The labels are the evaluator's.
#[test]
fn block_labels_of_other_forms_of_the_distance() {
    let (n, d, k) = (1037, 64, 10);
    let (x, c) = data(n, d, k);
    let (x, c) = (Array::from_vec(x, &[n, d]), Array::from_vec(c, &[k, d]));
    let diffs = [
        c.expand_dims(&[0]) - x.expand_dims(&[1]),
        x.expand_dims(&[1]) - (&c * 0.5f32 + 0.25f32).expand_dims(&[0]),
    ];
    for (i, diff) in diffs.iter().enumerate() {
        for squared in [diff.square(), diff * diff] {
            let labels = squared.sum(2).argmin(1);
            let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, &x);
            let counts = kiln::bincount(&labels, None, k);
            let at = kiln::arange(n as i64);
            let pos = kiln::zeros(&[k], DType::Int64).add_at(&labels, &(&at * &at));
            let outs = [&sums, &counts, &pos];
            let mlir = kiln::kernel_code(&outs, kiln::CodeStage::HostMlir).unwrap();
            let direct = setting("KILN_HOST_DISTANCES").is_some_and(|v| v == "direct");
            assert_eq!(mlir.contains("math.fma"), !direct, "form {i}: {mlir}");
            let l = kiln::lower(&outs);
            let inputs: Vec<&kiln::ir::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
            let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
            kiln::eval_all(&outs);
            assert_eq!(counts.to_vec::<i64>(), want[1].as_slice::<i64>().unwrap(), "form {i}");
            assert_eq!(pos.to_vec::<i64>(), want[2].as_slice::<i64>().unwrap(), "form {i}");
        }
    }
}

/// Data far from the origin (the expanded form's bound, relative to `Σx² + Σc²`, then
/// decides few lanes: the one-position code labels the rest), points whose `Σx²` overflows
/// float32 while their distances do not, and tiny values whose squares are subnormal.
#[test]
fn block_labels_where_the_expanded_bound_is_wide() {
    let (n, d, k) = (1500, 64, 10);
    let (x, c) = data(n, d, k);
    for (shift, scale) in [(1000.0f32, 1.0f32), (-3e4, 1.0), (3e18, 1e17), (0.0, 1e-21)] {
        let f = |v: &f32| shift + v * scale;
        let (xs, cs) = (x.iter().map(f).collect(), c.iter().map(f).collect());
        check(xs, cs, n, d, k, false, false);
    }
    // Centres far from the origin, the first 100 blocks near them (few lanes decided in the
    // expanded form), then the rest at the origin: the direct form after a block with many
    // undecided lanes, the expanded form tried again after 64 blocks.
    let n2 = 16 * 200;
    let (x2, c2) = data(n2, d, k);
    let x2: Vec<f32> =
        x2.iter().enumerate().map(|(i, v)| if i < n2 * d / 2 { v + 300.0 } else { *v }).collect();
    let c2 = c2.iter().map(|v| v + 300.0).collect();
    check(x2, c2, n2, d, k, false, false);
    // Half the points near the origin, half far: blocks of both kinds.
    let xs: Vec<f32> =
        x.iter().enumerate().map(|(i, v)| v + ((i / d) % 2) as f32 * 500.0).collect();
    check(xs, c, n, d, k, false, false);
}

/// Sizes with and without a partial block, centres from 2 to 16, rows of 16 to 128, argmin
/// and argmax.
#[test]
fn block_labels_match_the_evaluator() {
    for (n, d, k, max) in [
        (1000, 64, 10, false),
        (4099, 64, 10, false),
        (16, 16, 2, false),
        (17, 16, 2, true),
        (777, 128, 16, false),
        (1024, 32, 3, true),
        (50_000, 64, 10, false),
    ] {
        let (x, c) = data(n, d, k);
        check(x, c, n, d, k, max, false);
    }
}

/// Ties and near ties: two equal centres, points on the bisector of two centres, and small
/// integers (many exact ties): the first best, as NumPy's argmin.
#[test]
fn block_labels_resolve_ties_as_the_evaluator() {
    let (n, d, k) = (3001, 32, 6);
    // Small integers in [-2, 2]: distances tie often.
    let x: Vec<f32> = (0..n * d).map(|i| ((i * 7919 + i / d) % 5) as f32 - 2.0).collect();
    let mut c: Vec<f32> = (0..k * d).map(|i| ((i * 104729 + 3) % 5) as f32 - 2.0).collect();
    // Centre 4 repeats centre 1.
    let (one, four) = (c[d..2 * d].to_vec(), 4 * d);
    c[four..four + d].copy_from_slice(&one);
    check(x, c, n, d, k, false, true);
    // Points halfway between centres 0 and 1 (equal distances but for rounding), and a hair off.
    let (x, c) = data(2048, 64, 10);
    let mut x = x;
    for p in 0..2048 {
        for j in 0..64 {
            let mid = 0.5 * (c[j] + c[64 + j]);
            x[p * 64 + j] = if p % 3 == 0 { mid } else { mid + (p % 7) as f32 * 1e-7 };
        }
    }
    check(x, c, 2048, 64, 10, false, false);
}

/// NaN and infinite points: NumPy's argmin takes the first NaN; the block leaves them to the
/// one-position code.
#[test]
fn block_labels_of_nan_and_infinite_points() {
    let (n, d, k) = (700, 64, 10);
    let (mut x, c) = data(n, d, k);
    for p in (0..n).step_by(37) {
        x[p * d + p % d] = f32::NAN;
    }
    for p in (5..n).step_by(41) {
        x[p * d + 3] = f32::INFINITY;
    }
    for p in (9..n).step_by(53) {
        x[p * d + 60] = 3e19;
    }
    let (xs, cs) = (Array::from_vec(x, &[n, d]), Array::from_vec(c, &[k, d]));
    let [_, counts, pos, pos2] = update(&xs, &cs, false);
    let outs = [&counts, &pos, &pos2];
    let l = kiln::lower(&outs);
    let inputs: Vec<&kiln::ir::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap();
    kiln::eval_all(&outs);
    for (g, w) in outs.iter().zip(&want) {
        assert_eq!(g.to_vec::<i64>(), w.as_slice::<i64>().unwrap());
    }
}
