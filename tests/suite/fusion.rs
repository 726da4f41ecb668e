//! Fusion: programs written with kiln's API, partitioned into regions; the report's regions and
//! the region-by-region evaluation against the unfused reference.

use kiln::{axis, Array, DType};
use kiln_compiler::fusion::{self, partition, Partition};

fn randn(shape: &[usize], seed: u64) -> Array {
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
    assert_eq!(kiln_compiler::schedule::run_on_host(&sched, &p.regions, &inputs).unwrap(), reference, "{sched}");
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
    for y in [kiln::nn::l2norm_rows(&x).unwrap(), kiln::nn::logsumexp(&x, 1).unwrap(), x.var(1, 1), x.argmax(1)] {
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
