//! Fusion: programs written with kiln's API, partitioned into regions; the report's regions and
//! the region-by-region evaluation against the unfused reference.

use kiln::{axis, Array, DType};
use kiln_compiler::fusion::{self, partition, Partition};

/// Reproducible float32 values in [-2, 2) of `shape` (an LCG from `seed`).
pub(crate) fn randn(shape: &[usize], seed: u64) -> Array {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect();
    Array::from_vec(v, shape)
}

/// Partitions the graph of `outs`, checks region-by-region evaluation equals the reference
/// evaluator bit for bit, and returns the partition with its graph.
fn fused(outs: &[&Array]) -> (kiln::ir::Graph, Partition) {
    let lowered = kiln::lower(outs);
    let g = lowered.graph;
    let p = partition(&g);
    let inputs: Vec<&kiln::HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference = kiln::ir::eval::evaluate(&g, &inputs).unwrap();
    let regioned = fusion::run_regions(&g, &p.regions, &inputs).unwrap();
    assert_eq!(reference, regioned);
    let sched = kiln_compiler::schedule::schedule(&g, &p.regions);
    assert_eq!(
        kiln_exec::cpu::run_schedule(
            &sched,
            &p.regions,
            &inputs,
            kiln_exec::cpu::HostRun::Evaluator
        )
        .unwrap(),
        reference,
        "{sched}"
    );
    let text = fusion::print_regions(&p.regions);
    assert_eq!(fusion::parse_regions(&text).unwrap(), p.regions, "{text}");
    (g, p)
}

#[test]
fn softmax_rows_is_one_region() {
    let x = randn(&[8, 16], 1);
    let y = kiln::nn::softmax(&x, -1).unwrap();
    let (g, p) = fused(&[&y]);
    assert_eq!(p.regions.len(), 1, "{}", p.report(&g));
}

#[test]
fn layernorm_rows_is_one_region() {
    let x = randn(&[8, 16], 2);
    let w = randn(&[16], 3);
    let b = randn(&[16], 4);
    let y = kiln::nn::layer_norm(&x, &w, &b, 1e-5).unwrap();
    let (g, p) = fused(&[&y]);
    assert_eq!(p.regions.len(), 1, "{}", p.report(&g));
}

#[test]
fn ew_chain_is_one_region_reading_x_once() {
    let x = randn(&[1000], 5);
    let y = ((&x - 1.5).square() * 0.5 + x.sin()) * (-(&x * &x)).exp();
    let (g, p) = fused(&[&y]);
    assert_eq!(p.regions.len(), 1, "{}", p.report(&g));
    assert_eq!(p.regions[0].inputs.len(), 1);
}

#[test]
fn transposed_and_broadcast_inputs_need_no_copy() {
    let a = randn(&[16, 8], 6);
    let b = randn(&[16], 7);
    a.eval();
    b.eval();
    let y = a.t() + &b;
    let (g, p) = fused(&[&y]);
    assert_eq!(p.regions.len(), 1, "{}", p.report(&g));
    assert!(p.regions.iter().all(|r| r.kind == fusion::RegionKind::Elementwise));
}

#[test]
fn column_mean_and_std_are_one_region_with_two_outputs() {
    let x = randn(&[50, 8], 8);
    x.eval();
    let (m, s) = (x.mean(0), x.std(0, 0));
    let (g, p) = fused(&[&m, &s]);
    assert_eq!(p.regions.len(), 1, "{}", p.report(&g));
    assert_eq!(p.regions[0].outputs.len(), 2);
}

#[test]
fn l2norm_logsumexp_var() {
    let x = randn(&[8, 16], 9);
    for y in [
        kiln::nn::l2norm_rows(&x).unwrap(),
        kiln::nn::logsumexp(&x, 1).unwrap(),
        x.var(1, 1),
        x.argmax(1),
    ] {
        let (g, p) = fused(&[&y]);
        assert_eq!(p.regions.len(), 1, "{}", p.report(&g));
    }
}

#[test]
fn kmeans_assignment_step() {
    let x = randn(&[64, 4], 10);
    let c = randn(&[5, 4], 11);
    x.eval();
    c.eval();
    let d = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2);
    let labels = d.argmin(1);
    let (g, p) = fused(&[&labels]);
    assert_eq!(p.regions.len(), 1, "{}", p.report(&g));
    let _ = DType::Int64;
    let _ = axis(0);
}

#[test]
fn schedule_text_lists_input_buffers() {
    let x = randn(&[8, 16], 12);
    x.eval();
    // A reduction, then two elementwise kernels chained through a materialised value.
    let s = x.sum(1);
    let y = (&x / s.expand_dims(&[1])).exp();
    let (g, p) = fused(&[&y]);
    let sched = kiln_compiler::schedule::schedule(&g, &p.regions);
    let text = sched.to_string();
    assert!(text.starts_with("kiln.schedule v1\nb0 = input {index=0} : f32[8,16]\n"), "{text}");
}

#[test]
fn plan_cache_reuses_a_plan_across_sizes() {
    use kiln_compiler::pipeline::Options;
    use kiln_compiler::plan_cache::{Lookup, PlanCache};
    let cache = PlanCache::new();
    let opts = Options::from_env();
    let program = |n: usize, m: usize| {
        let x = randn(&[n, m], 13);
        let y = kiln::nn::softmax(&(&x * 2.0), -1).unwrap();
        kiln::lower(&[&y])
    };
    let run = |l: &kiln::Lowered, plan: &kiln_compiler::pipeline::Compiled| {
        let inputs: Vec<&kiln::HostArray> = l.inputs.iter().map(|a| a.as_ref()).collect();
        let got =
            kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Evaluator).unwrap();
        assert_eq!(got, kiln::ir::eval::evaluate(&l.graph, &inputs).unwrap());
    };
    let a = program(8, 16);
    let (p, how) = cache.get_or_compile(&a.graph, &opts).unwrap();
    assert_eq!(how, Lookup::Miss);
    run(&a, &p);
    let (_, how) = cache.get_or_compile(&program(8, 16).graph, &opts).unwrap();
    assert_eq!(how, Lookup::Hit);
    // Other sizes, same structure: the plan is reused with its sizes mapped, and still right.
    let b = program(5, 40);
    let (p, how) = cache.get_or_compile(&b.graph, &opts).unwrap();
    assert_eq!(how, Lookup::HitResized { kept: true });
    assert_eq!(p.partition.regions.len(), 1);
    run(&b, &p);
    // The resized plan is kept: the same sizes again are an exact hit (the GPU's prepared
    // kernels are kept by plan), and the first sizes still are.
    let (q, how) = cache.get_or_compile(&program(5, 40).graph, &opts).unwrap();
    assert_eq!(how, Lookup::Hit);
    assert!(std::sync::Arc::ptr_eq(&p, &q));
    let (_, how) = cache.get_or_compile(&program(8, 16).graph, &opts).unwrap();
    assert_eq!(how, Lookup::Hit);
    // Equal sizes where there were two: another structure (a new plan).
    let (_, how) = cache.get_or_compile(&program(16, 16).graph, &opts).unwrap();
    assert_eq!(how, Lookup::Miss);
    // Extent 1 decides broadcasting: never renamed.
    let (_, how) = cache.get_or_compile(&program(1, 16).graph, &opts).unwrap();
    assert_eq!(how, Lookup::Miss);
    assert_eq!(cache.len(), 3);
    // Eight sizes a structure are kept (two so far); past them a resized plan is made for the
    // call and not kept (the executor must not keep work prepared for it by its address).
    let kept: Vec<bool> = (0..8)
        .map(|i| match cache.get_or_compile(&program(20 + i, 60 + i).graph, &opts).unwrap().1 {
            Lookup::HitResized { kept } => kept,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kept, [true, true, true, true, true, true, false, false]);
}

#[test]
fn unfused_edges_name_their_reason() {
    let x = randn(&[4, 8], 14);
    let y = x.sum(1);
    let z = &y + 1.0; // y is an output and read by z: materialised, z reads it.
    let (g, p) = fused(&[&y, &z]);
    let report = p.report(&g);
    assert!(
        report.unfused.iter().any(|e| e.reason == kiln::UnfusedReason::GraphOutput),
        "{report}"
    );
    // A join is an index map: its operands' producers fuse into it.
    let c = kiln::concatenate(&[&x.exp(), &x], 0);
    let (g, p) = fused(&[&c]);
    let report = p.report(&g);
    assert!(report.unfused.is_empty(), "{report}");
    assert_eq!(report.kernel_count(), 1, "{report}");
}

#[test]
fn a_row_reduction_feeding_a_column_reduction_is_two_regions() {
    let x = randn(&[8, 16], 15);
    x.eval();
    let y = (&x - x.max(kiln::axis(1).keepdims())).sum(0);
    let (g, p) = fused(&[&y]);
    let report = p.report(&g);
    assert_eq!(report.kernel_count(), 2, "{report}");
    assert!(
        report.unfused.iter().any(|e| e.reason == kiln::UnfusedReason::ReductionSpaceMismatch),
        "{report}"
    );
}
