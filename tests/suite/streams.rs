//! Streams: which stream of the device each region of a schedule runs on
//! (`kiln_compiler::streams`). The plan is made at compile time and is the same on every
//! backend, so it is checked here on the CPU: the fusion report's `stream` column and event
//! lines, snapshotted, and the schedule run region by region against the reference evaluator.
//! The `gpu_*` tests run a multi-stream schedule on a CUDA device (skipped on the CPU backend:
//! `skipped: no GPU`) and check its results against the evaluator and its streams against the
//! report. `stress_concurrent_threads_match_the_evaluator` runs many threads materialising at
//! once on whichever backend runs the suite (`KILN_STRESS_ITERS`, `KILN_STRESS_THREADS`).

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
    let run = kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Evaluator).unwrap();
    assert_eq!(run, reference);
    let report = plan.report();
    assert_eq!(report, kiln::explain(outs).report, "explain's report is the plan's");
    let text =
        format!("{report}\n{}", plan.stage_text(kiln_compiler::pipeline::Stage::Schedule).unwrap());
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
      code: host reduction rows; gpu row groups
      inputs: %1: f32 (1000,)
      outputs: %2: f32 ()
    region 1 reduction reduce shape=[500] axes=[0] (2004 bytes) stream 1
      ops: max
      code: host reduction rows; gpu row groups
      inputs: %5: f32 (500,)
      outputs: %6: f32 ()
    region 2 reduction reduce shape=[300] axes=[0] (1212 bytes) stream 0
      ops: broadcast_to multiply broadcast_to multiply sum
      code: host reduction rows; gpu row groups
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
      code: host reduction rows; gpu row groups
      inputs: %2: f32 (1000,)
      outputs: %3: f32 ()
    region 1 reduction reduce shape=[500] axes=[0] (2008 bytes)
      ops: broadcast_to multiply max
      code: host reduction rows; gpu row groups
      inputs: %1: f32 (500,), %3: f32 ()
      outputs: %6: f32 ()
    region 2 reduction reduce shape=[300] axes=[0] (1208 bytes)
      ops: broadcast_to multiply sum
      code: host reduction rows; gpu row groups
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
    let (report, text) =
        plan_text(&[&two_reductions_and_their_consumer(FILL_ELEMENTS, FILL_ELEMENTS + 8)]);
    assert_eq!(report.kernel_count(), 3, "{report}");
    assert!(report.is_single_stream() && report.events.is_empty(), "{report}");
    insta::assert_snapshot!(text, @r"
    3 region(s)
    region 0 reduction reduce shape=[270336] axes=[0] (1081348 bytes)
      ops: sum
      code: host reduction rows; gpu split rows
      inputs: %1: f32 (270336,)
      outputs: %2: f32 ()
    region 1 reduction reduce shape=[270344] axes=[0] (1081380 bytes)
      ops: max
      code: host reduction rows; gpu split rows
      inputs: %5: f32 (270344,)
      outputs: %6: f32 ()
    region 2 reduction reduce shape=[300] axes=[0] (1212 bytes)
      ops: broadcast_to multiply broadcast_to multiply sum
      code: host reduction rows; gpu row groups
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
    assert_eq!(how, kiln_compiler::plan_cache::Lookup::HitResized { kept: true });
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
        let sums: Vec<Array> = (0..4)
            .map(|k| values(1000 + 100 * k, 10 + k as u64 + round).square().sum(None))
            .collect();
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
                assert_eq!(
                    a.stream == b.stream,
                    a.cuda_stream == b.cuda_stream,
                    "{report}\n{ran:?}"
                );
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

/// Cycles the late fill spins: 200M (about 0.1 s on an H200), none under compute-sanitizer
/// (`KILN_GPU_SANITIZER=1`, set by `run.sh`), which runs the 16384 spinning threads one after
/// another and never got past them (the ordering is then shown without the head start).
pub(crate) fn late_fill_spin() -> i64 {
    if std::env::var("KILN_GPU_SANITIZER").is_ok_and(|v| v == "1") {
        0
    } else {
        200_000_000
    }
}

/// A float64 array of `n` elements, `y[i] = i % 7`, written on a non-blocking stream by a
/// kernel that first spins ([`late_fill_spin`]): its buffer is ordered on that stream, and its
/// writer may still run there when this returns.
fn filled_late_on_another_stream(n: usize) -> Array {
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
        let args: &mut [kiln::RawArg] =
            &mut [(&mut y).into(), (n as i64).into(), late_fill_spin().into()];
        // SAFETY: late_fill writes n float64 elements, y's size.
        unsafe { late_fill.launch(64, 256, args, 0, None) };
        y
    };
    assert_eq!(
        y.to_device_array().buffer().stream().id(),
        stream.id(),
        "y's buffer is ordered on the other stream"
    );
    y
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
    let y = filled_late_on_another_stream(n);
    let total = (&y * 2.0).sum(None).item::<f64>();
    let want: f64 = (0..n).map(|i| 2.0 * (i % 7) as f64).sum();
    assert_eq!(total, want, "the sum read y before its writer on the other stream ran");
}

/// A RawKernel reads and writes arrays made on another stream after their writer there: `y`
/// is filled late on a non-blocking stream; back on the null stream a raw kernel copies it into
/// `z` (an input) and adds one to a second handle of it in place (an output, so its shared
/// buffer is duplicated first). Neither may see the zeros `y` held before its writer ran.
#[test]
fn gpu_a_raw_kernel_uses_arrays_made_on_another_stream_after_their_writer_there() {
    if !on_gpu() {
        return;
    }
    let n = 1usize << 16;
    let copy_and_bump = kiln::RawKernel::new(
        r#"
extern "C" __global__ void copy_and_bump(const double* y, double* z, double* w, long long n) {
    for (long long i = blockDim.x * blockIdx.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        z[i] = y[i];
        w[i] += 1.0;
    }
}
"#,
        "copy_and_bump",
        &[],
    );
    let y = filled_late_on_another_stream(n);
    let mut z = kiln::zeros(&[n], kiln::DType::Float64).eval().clone();
    let mut w = y.clone();
    {
        let args: &mut [kiln::RawArg] =
            &mut [(&y).into(), (&mut z).into(), (&mut w).into(), (n as i64).into()];
        // SAFETY: copy_and_bump reads n float64 elements of y and writes n of z and of w.
        unsafe { copy_and_bump.launch(64, 256, args, 0, None) };
    }
    let want: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
    assert_eq!(
        z.to_vec::<f64>(),
        want,
        "the raw kernel read y before its writer on the other stream ran"
    );
    let bumped: Vec<f64> = want.iter().map(|v| v + 1.0).collect();
    assert_eq!(
        w.to_vec::<f64>(),
        bumped,
        "the copy of y's buffer for w was made before y's writer ran"
    );
    assert_eq!(y.to_vec::<f64>(), want, "y itself is unchanged");
}

// ------------------------------------------------------------------------------------------------
// Stress: many threads materialising at once
// ------------------------------------------------------------------------------------------------

/// A reproducible generator (SplitMix64) for the stress test's choices.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// One expression of the stress test: the arrays it was built from (dropped at a point the
/// test chooses), its outputs and their tolerance against the evaluator.
struct StressCase {
    what: String,
    keep: Vec<Array>,
    outs: Vec<Array>,
    tol: Tol,
}

/// The kinds of expression, each thread going through all of them from its own starting point.
const STRESS_KINDS: usize = 8;

/// Builds expression `kind` on fresh random inputs of sizes drawn from `r`.
fn stress_case(kind: usize, r: &mut Mix, seed: u64) -> StressCase {
    let case = |what: String, keep: Vec<Array>, outs: Vec<Array>, tol: Tol| StressCase {
        what,
        keep,
        outs,
        tol,
    };
    match kind {
        // NumPy fixture `square_u8`'s expression on bytes copied up from the host.
        0 => {
            let n = r.range(1, 5000);
            let data: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
            let a = Array::from_vec(data, &[n]);
            case(format!("square of uint8 [{n}]"), vec![a.clone()], vec![a.square()], Tol::Exact)
        }
        // A fused float32 elementwise chain.
        1 => {
            let n = r.range(1, 20_000);
            let (a, b) = (values(n, seed), values(n, seed + 1));
            let out = (&(&a * &b) + 1.5).sin() + &(&a - &b).exp() * 0.25;
            case(format!("float32 chain [{n}]"), vec![a, b], vec![out], Tol::Norm(1e-5))
        }
        // Reductions along each axis, and an exact integer sum.
        2 => {
            let (rows, cols) = (r.range(1, 64), r.range(1, 300));
            let x = randn(&[rows, cols], seed);
            let outs = vec![x.sum(0), x.max(1), (&x * 100.0).astype(kiln::DType::Int32).sum(None)];
            case(format!("reductions of float32 [{rows}, {cols}]"), vec![x], outs, Tol::Norm(1e-4))
        }
        // Small independent reductions: pool streams, events and the join.
        3 => {
            let sizes: Vec<usize> = (0..4).map(|_| r.range(500, 3000)).collect();
            let sums: Vec<Array> = sizes
                .iter()
                .enumerate()
                .map(|(k, &n)| values(n, seed + k as u64).square().sum(None))
                .collect();
            let chained = (&values(r.range(200, 900), seed + 7) * &sums[1]).max(None);
            let out = combine(&[&sums[0], &chained, &sums[2], &sums[3]], seed + 8);
            let outs = vec![out, sums[2].clone()];
            let report = kiln::explain(&outs.iter().collect::<Vec<_>>()).report;
            assert!(
                report.regions.iter().any(|g| g.stream > 0),
                "the schedule uses no pool stream:\n{report}"
            );
            case(format!("independent reductions of {sizes:?}"), sums, outs, Tol::Norm(1e-4))
        }
        // A library call: cuBLAS on a GPU.
        4 => {
            let (m, k, n) = (r.range(1, 48), r.range(1, 48), r.range(1, 48));
            let (a, b) = (randn(&[m, k], seed), randn(&[k, n], seed + 1));
            let out = kiln::matmul(&a, &b);
            case(format!("matmul [{m}, {k}] @ [{k}, {n}]"), vec![a, b], vec![out], Tol::Norm(1e-4))
        }
        // Library calls: cuFFT, and cuBLAS's scale for the orthonormal norm.
        5 => {
            let n = r.range(2, 300);
            let x = values(n, seed);
            let outs = vec![
                kiln::fft::rfft(&x, None, -1, "ortho"),
                kiln::fft::fft(&x, None, -1, "backward"),
            ];
            case(format!("FFTs of float32 [{n}]"), vec![x], outs, Tol::Norm(1e-4))
        }
        // Inputs drawn on the device (cuRAND on a GPU), then read back for the evaluator.
        6 => {
            let n = r.range(1, 10_000);
            let x =
                kiln::random::default_rng(Some(seed)).standard_normal(&[n], kiln::DType::Float32);
            let outs = vec![&(&x * 2.0) + 1.0, x.square().sum(None)];
            case(format!("random normal float32 [{n}]"), vec![x], outs, Tol::Norm(1e-4))
        }
        // A result computed on its own, its input dropped, and then read by two more.
        _ => {
            let n = r.range(1, 8000);
            let y = {
                let x = values(n, seed);
                (&x.square() + 1.0).eval().clone()
            };
            let outs = vec![(&y * 3.0).sum(None), (&y - 2.5).abs()];
            case(format!("reads of an evaluated float32 [{n}]"), vec![y], outs, Tol::Norm(1e-4))
        }
    }
}

/// Checks a case against the evaluator: the reference first, then the outputs materialised
/// together or one by one, the inputs dropped before, between or after.
fn run_stress_case(case: StressCase, r: &mut Mix) -> Result<(), String> {
    let StressCase { keep, outs, tol, .. } = case;
    let refs: Vec<&Array> = outs.iter().collect();
    let lowered = kiln::lower(&refs);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs)
        .map_err(|e| format!("the evaluator: {e}"))?;
    drop(lowered);
    let drop_at = r.range(0, 2);
    let mut keep = Some(keep);
    if drop_at == 0 {
        keep = None;
    }
    if r.range(0, 1) == 0 {
        kiln::try_eval_all(&refs).map_err(|e| format!("materialising: {e}"))?;
    }
    if drop_at == 1 {
        keep = None;
    }
    for (k, (a, w)) in refs.iter().zip(&want).enumerate() {
        let got = a.try_to_host().map_err(|e| format!("output {k}: {e}"))?;
        // Integers exactly; floats within the case's tolerance.
        let tol =
            if w.dtype().is_integer() || w.dtype() == kiln::DType::Bool { Tol::Exact } else { tol };
        compare(w, &got, tol, false)
            .map_err(|m| format!("output {k} ({} {:?}): {m}", w.dtype(), w.shape()))?;
    }
    drop(keep);
    Ok(())
}

/// One thread of the stress test: `iters` cases, each reported with its thread, iteration,
/// expression and seed when it fails (a panic included).
fn stress_thread(t: usize, iters: usize) -> Vec<String> {
    // On a GPU, every other thread queues its work on a non-blocking stream of its own: its
    // buffers are freed there, its library calls share the handles with the null stream's.
    let stream = match kiln::backend() {
        kiln_runtime::Backend::Cuda(ordinal) if t % 2 == 1 => Some(
            kiln_runtime::Stream::non_blocking(kiln_runtime::Device::new(ordinal).unwrap())
                .unwrap(),
        ),
        _ => None,
    };
    let _current = stream.as_ref().map(|s| s.use_scoped());
    let mut failures = Vec::new();
    for i in 0..iters {
        let seed = 1_000_003 * t as u64 + 7919 * i as u64 + 17;
        let mut r = Mix(seed);
        let kind = (3 * t + i) % STRESS_KINDS;
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let case = stress_case(kind, &mut r, seed);
            let what = case.what.clone();
            run_stress_case(case, &mut r).map_err(|e| format!("{what}: {e}"))
        }));
        let failed = match run {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(panic) => {
                let text = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                format!("kind {kind} panicked: {}", text.unwrap_or_default())
            }
        };
        failures.push(format!("thread {t}, iteration {i} (seed {seed}): {failed}"));
    }
    failures
}

/// Many threads materialise at once on one device (or the CPU), each its own expressions on
/// fresh random inputs of varied sizes and dtypes: uint8 squares copied up through the pinned
/// staging pool, float32 chains and reductions, schedules of small independent reductions on
/// the pool streams, matmuls and FFTs through the libraries, inputs drawn on the device, arrays
/// dropped before, between or after the reads; on a GPU half the threads on a non-blocking
/// stream of their own. Every result is checked against the reference evaluator; a mismatch
/// names the thread, iteration, expression and seed. On the CPU it checks the shared plan and
/// kernel caches and the host executor under concurrent use. `KILN_STRESS_ITERS` (default 20)
/// iterations per thread, `KILN_STRESS_THREADS` (default 8) threads; nothing is timed.
#[test]
fn stress_concurrent_threads_match_the_evaluator() {
    let env = |name: &str, default: usize| {
        std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    let (threads, iters) = (env("KILN_STRESS_THREADS", 8), env("KILN_STRESS_ITERS", 20));
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            (0..threads).map(|t| scope.spawn(move || stress_thread(t, iters))).collect();
        handles.into_iter().flat_map(|h| h.join().expect("a stress thread")).collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} cases failed ({:?} backend):\n{}",
        failures.len(),
        threads * iters,
        kiln::backend(),
        failures.join("\n")
    );
}

/// Split reductions' and scatters' counters are the stream's, kept and zeroed once (each
/// launch's last blocks set them back to zero): whole sums (split over blocks) of several
/// lengths and bincounts (a scatter's last blocks) in turn, sharing kept counters, on the
/// default stream and on a stream of their own, each exact.
#[test]
fn gpu_kept_counters_across_kernels_lengths_and_streams() {
    if !on_gpu() {
        return;
    }
    let check = |call: usize| {
        let n = [1 << 20, (1 << 22) + 77, 3 << 19][call % 3];
        let v: Vec<i32> = (0..n).map(|i| ((i * 7919 + call * 13) % 201) as i32 - 100).collect();
        let x = Array::from_vec(v.clone(), &[n]);
        let want: i64 = v.iter().map(|&a| a as i64).sum();
        assert_eq!(x.sum(None).item::<i64>(), want, "call {call}: the sum of {n} int32");
        let labels: Vec<i64> = v.iter().map(|&a| (a + 100) as i64 % 37).collect();
        let mut counts = vec![0i64; 37];
        labels.iter().for_each(|&l| counts[l as usize] += 1);
        let got = kiln::bincount(&Array::from_vec(labels, &[n]), None, 37).to_vec::<i64>();
        assert_eq!(got, counts, "call {call}: bincount of {n} labels");
    };
    for call in 0..9 {
        check(call);
    }
    let stream = kiln_runtime::Stream::non_blocking(kiln_runtime::Device::new(0).unwrap()).unwrap();
    {
        let _on = stream.use_scoped();
        for call in 9..13 {
            check(call);
        }
    }
    check(13);
}
