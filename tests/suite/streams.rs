//! Streams: which stream of the device each region of a schedule runs on
//! (`kiln_compiler::streams`). The plan is made at compile time and is the same on every
//! backend, so it is checked here on the CPU: the fusion report's `stream` column and event
//! lines, snapshotted, and the schedule run region by region against the reference evaluator.
//! The `gpu_*` tests run a multi-stream schedule on a CUDA device (skipped on the CPU backend:
//! `skipped: no GPU`) and check its results against the evaluator and its streams against the
//! report.

use kiln::{Array, HostArray};
use kiln_compiler::pipeline::{compile, Options};
use kiln_compiler::streams::FILL_ELEMENTS;

use crate::fusion::randn;
use crate::numpy_fixtures::{compare, Tol};
use crate::vendor_gpu::on_gpu;

/// `n` reproducible float32 values in [-2, 2).
fn values(n: usize, seed: u64) -> Array {
    randn(&[n], seed)
}

/// Compiles the graph of `outs`, checks its schedule run on the host against the reference
/// evaluator, and returns the report followed by the schedule's text.
fn plan_text(outs: &[&Array]) -> (kiln::FusionReport, String) {
    let lowered = kiln::lower(outs);
    let plan = compile(&lowered.graph, &Options::from_env()).unwrap();
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    let run = kiln_compiler::schedule::run_on_host(&plan.schedule, &plan.partition.regions, &inputs).unwrap();
    assert_eq!(run, reference);
    let report = plan.report();
    assert_eq!(report, kiln::explain(outs).report, "explain's report is the plan's");
    let text = format!("{report}\n{}", plan.stage_text("schedule").unwrap());
    (report, text)
}

/// `(w * a * b * ...).sum()` over a `w` of its own length: a reduction over a space none of
/// the scalars' reductions share, so it is a region of its own reading theirs.
fn combine(scalars: &[&Array], seed: u64) -> Array {
    scalars.iter().fold(values(300, seed), |acc, s| &acc * *s).sum(None)
}

/// Two reductions of unrelated arrays of `n` and `m` elements, and a third reading both.
fn two_reductions_and_their_consumer(n: usize, m: usize) -> Array {
    combine(&[&values(n, 1).sum(None), &values(m, 2).max(None)], 3)
}

#[test]
fn independent_small_reductions_take_streams_0_and_1_and_their_consumer_waits() {
    let (report, text) = plan_text(&[&two_reductions_and_their_consumer(1000, 500)]);
    assert_eq!(report.regions.iter().map(|r| r.stream).collect::<Vec<_>>(), [0, 1, 0], "{report}");
    insta::assert_snapshot!(text, @r"
    3 region(s)
    region 0 reduction reduce shape=[1000] axes=[0] (4004 bytes) stream 0
      ops: sum
      inputs: %1: f32 (1000,)
      outputs: %2: f32 ()
    region 1 reduction reduce shape=[500] axes=[0] (2004 bytes) stream 1
      ops: max
      inputs: %5: f32 (500,)
      outputs: %6: f32 ()
    region 2 reduction reduce shape=[300] axes=[0] (1212 bytes) stream 0
      ops: broadcast_to multiply broadcast_to multiply sum
      inputs: %0: f32 (300,), %2: f32 (), %6: f32 ()
      outputs: %9: f32 ()
    unfused %2 -> %3: reduction_space_mismatch
    unfused %6 -> %7: reduction_space_mismatch
    event region 1 -> region 2: stream 1 -> stream 0

    kiln.schedule v1
    b0 = input {index=0} : f32[300]
    b1 = input {index=1} : f32[1000]
    b2 = input {index=2} : f32[500]
    step 0 = region 0 reads(b1) writes(b3: f32[]) stream 0
    step 1 = region 1 reads(b2) writes(b4: f32[]) stream 1
    step 2 = region 2 reads(b0, b3, b4) writes(b5: f32[]) frees(b3, b4) stream 0 waits(region 1)
    return b5
    ");
}

#[test]
fn a_chain_of_small_regions_stays_on_stream_0() {
    // Each reduction reads the one before, over a space of its own.
    let s = values(1000, 4).sum(None);
    let t = (&values(500, 5) * &s).max(None);
    let y = combine(&[&t], 6);
    let (report, text) = plan_text(&[&y]);
    assert_eq!(report.kernel_count(), 3, "{report}");
    assert!(report.is_single_stream() && report.events.is_empty(), "{report}");
    insta::assert_snapshot!(text, @r"
    3 region(s)
    region 0 reduction reduce shape=[1000] axes=[0] (4004 bytes)
      ops: sum
      inputs: %2: f32 (1000,)
      outputs: %3: f32 ()
    region 1 reduction reduce shape=[500] axes=[0] (2008 bytes)
      ops: broadcast_to multiply max
      inputs: %1: f32 (500,), %3: f32 ()
      outputs: %6: f32 ()
    region 2 reduction reduce shape=[300] axes=[0] (1208 bytes)
      ops: broadcast_to multiply sum
      inputs: %0: f32 (300,), %6: f32 ()
      outputs: %9: f32 ()
    unfused %3 -> %4: reduction_space_mismatch
    unfused %6 -> %7: reduction_space_mismatch

    kiln.schedule v1
    b0 = input {index=0} : f32[300]
    b1 = input {index=1} : f32[500]
    b2 = input {index=2} : f32[1000]
    step 0 = region 0 reads(b2) writes(b3: f32[])
    step 1 = region 1 reads(b1, b3) writes(b4: f32[]) frees(b3)
    step 2 = region 2 reads(b0, b4) writes(b5: f32[]) frees(b4)
    return b5
    ");
}

#[test]
fn independent_regions_too_big_for_a_pool_stream_stay_on_stream_0() {
    let (report, text) = plan_text(&[&two_reductions_and_their_consumer(FILL_ELEMENTS, FILL_ELEMENTS + 8)]);
    assert_eq!(report.kernel_count(), 3, "{report}");
    assert!(report.is_single_stream() && report.events.is_empty(), "{report}");
    insta::assert_snapshot!(text, @r"
    3 region(s)
    region 0 reduction reduce shape=[270336] axes=[0] (1081348 bytes)
      ops: sum
      inputs: %1: f32 (270336,)
      outputs: %2: f32 ()
    region 1 reduction reduce shape=[270344] axes=[0] (1081380 bytes)
      ops: max
      inputs: %5: f32 (270344,)
      outputs: %6: f32 ()
    region 2 reduction reduce shape=[300] axes=[0] (1212 bytes)
      ops: broadcast_to multiply broadcast_to multiply sum
      inputs: %0: f32 (300,), %2: f32 (), %6: f32 ()
      outputs: %9: f32 ()
    unfused %2 -> %3: reduction_space_mismatch
    unfused %6 -> %7: reduction_space_mismatch

    kiln.schedule v1
    b0 = input {index=0} : f32[300]
    b1 = input {index=1} : f32[270336]
    b2 = input {index=2} : f32[270344]
    step 0 = region 0 reads(b1) writes(b3: f32[])
    step 1 = region 1 reads(b2) writes(b4: f32[])
    step 2 = region 2 reads(b0, b3, b4) writes(b5: f32[]) frees(b3, b4)
    return b5
    ");
}

#[test]
fn a_plan_reused_for_other_sizes_assigns_streams_again() {
    let cache = kiln_compiler::plan_cache::PlanCache::new();
    let opts = Options::from_env();
    let graph = |n: usize, m: usize| kiln::lower(&[&two_reductions_and_their_consumer(n, m)]).graph;
    let (small, _) = cache.get_or_compile(&graph(1000, 500), &opts).unwrap();
    assert_eq!(small.schedule.streams.streams, [0, 1, 0]);
    let (big, how) = cache.get_or_compile(&graph(FILL_ELEMENTS, FILL_ELEMENTS + 8), &opts).unwrap();
    assert_eq!(how, kiln_compiler::plan_cache::Lookup::HitResized);
    assert!(big.schedule.streams.is_single_stream(), "{}", big.report());
    assert_eq!(big.report().regions.iter().map(|r| r.stream).collect::<Vec<_>>(), [0, 0, 0]);
}


#[test]
fn gpu_independent_small_kernels_run_on_pool_streams_and_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    // Four small reductions of unrelated arrays (streams 0..=3), a chain after one of them
    // (on its stream), and their combination on stream 0 waiting for the others; repeated so
    // a reused plan and pooled buffers run too.
    for round in 0..3 {
        let sums: Vec<Array> =
            (0..4).map(|k| values(1000 + 100 * k, 10 + k as u64 + round).square().sum(None)).collect();
        let chained = (&values(700, 20 + round) * &sums[1]).max(None);
        let out = combine(&[&sums[0], &chained, &sums[2], &sums[3]], 30 + round);
        let outs = [&out, &sums[2]];
        let report = kiln::explain(&outs).report;
        // The four independent reductions take four streams.
        assert_eq!(report.regions.iter().map(|r| r.stream).max(), Some(3), "{report}");

        let lowered = kiln::lower(&outs);
        let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
        let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
        kiln::eval_all(&outs);
        let ran = kiln::gpu::last_run_streams();
        let column: Vec<u32> = report.regions.iter().map(|r| r.stream).collect();
        assert_eq!(ran.iter().map(|r| r.stream).collect::<Vec<_>>(), column, "{report}\n{ran:?}");
        // Regions of one report stream ran on one CUDA stream, of different ones on different.
        for a in &ran {
            for b in &ran {
                assert_eq!(a.stream == b.stream, a.cuda_stream == b.cuda_stream, "{report}\n{ran:?}");
            }
        }
        for (k, (a, w)) in outs.iter().zip(&want).enumerate() {
            let g = a.try_to_host().unwrap();
            if let Err(msg) = compare(w, &g, Tol::Norm(1e-5), true) {
                panic!("round {round}, output {k}: {msg}\n{report}");
            }
        }
    }
}

/// An input whose buffer is ordered on another stream (made while that stream was current) is
/// read after its writer there: a kernel on a non-blocking stream spins, then fills the array;
/// a reduction of it with the null stream current again must see the values, not the zeros
/// (the null stream does not wait for a non-blocking stream by itself).
#[test]
fn gpu_an_input_made_on_another_stream_is_read_after_its_writer_there() {
    if !on_gpu() {
        return;
    }
    let n = 1usize << 16;
    let stream = kiln_runtime::Stream::non_blocking(kiln_runtime::Device::new(0).unwrap()).unwrap();
    let late_fill = kiln::RawKernel::new(
        r#"
extern "C" __global__ void late_fill(double* y, long long n, long long spin) {
    long long t0 = clock64();
    while (clock64() - t0 < spin) {}
    for (long long i = blockDim.x * blockIdx.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = (double)(i % 7);
    }
}
"#,
        "late_fill",
        &[],
    );
    let y = {
        let _current = stream.use_scoped();
        let mut y = kiln::zeros(&[n], kiln::DType::Float64);
        let args: &mut [kiln::RawArg] = &mut [(&mut y).into(), (n as i64).into(), 200_000_000i64.into()];
        // SAFETY: late_fill writes n float64 elements, y's size.
        unsafe { late_fill.launch(64, 256, args, 0, None) };
        y
    };
    assert_eq!(y.to_device().buffer().stream().id(), stream.id(), "y's buffer is ordered on the other stream");
    let total = (&y * 2.0).sum(None).item::<f64>();
    let want: f64 = (0..n).map(|i| 2.0 * (i % 7) as f64).sum();
    assert_eq!(total, want, "the sum read y before its writer on the other stream ran");
}
