//! Launch lists replayed as CUDA graphs (`KILN_GPU_GRAPHS`, `kiln::cuda::replay`): plans of
//! one kernel or several computed again and again with graphs on, each call against the reference
//! evaluator bit for bit: inputs that change between calls, sizes that make a new plan, results
//! kept alive so that the buffers change between calls, the radix sort's passes (one scratch
//! cleared per line: the memsets keep their place in the list), scatters with cleared outputs.
//! Every test is named `gpu_replay_...` and returns at once without a CUDA backend (`on_gpu`).
//!
//! Run on the GPU machine: `KILN_DEVICE=cuda:0 ./main gpu_replay`.

use kiln::cuda::replay::{set_mode, stats, GraphMode, ReplayStats};
use kiln::{Array, DType};

use crate::sorts_gpu::matches_evaluator_exactly as matches_evaluator;
use crate::vendor_gpu::on_gpu;

/// Graphs on for this test's thread, off again when dropped.
/// Graphs on, and no interpreted step (an interpreted launch is not recorded) on the thread.
struct GraphsOn(#[allow(dead_code)] kiln_exec::cuda::interp::NoInterpreter);

impl GraphsOn {
    fn new() -> GraphsOn {
        set_mode(Some(GraphMode::On));
        GraphsOn(kiln_exec::cuda::interp::no_interpreter())
    }
}

impl Drop for GraphsOn {
    fn drop(&mut self) {
        set_mode(None);
    }
}

/// `n` float32s of call `seed`, on the device (a new buffer each call): small integers, so
/// that sums in any order are exact.
fn data(n: usize, seed: u32) -> Array {
    let v: Vec<f32> = (0..n as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)) % 61) as f32 - 30.0)
        .collect();
    Array::from_vec(v, &[n]).eval().clone()
}

/// A sum, elementwise work on it, a max, a scale by both: several kernels.
fn chain(x: &Array) -> Array {
    let s1 = x.sum(None);
    let y = (x - &s1 * (1.0f32 / 1024.0)).abs() * 1.5f32 + 0.25f32;
    let s2 = y.max(None);
    &y / &s2 + s1
}

fn since(before: ReplayStats) -> ReplayStats {
    let now = stats();
    ReplayStats {
        direct: now.direct - before.direct,
        built: now.built - before.built,
        replayed: now.replayed - before.replayed,
        updated_nodes: now.updated_nodes - before.updated_nodes,
        fallbacks: now.fallbacks - before.fallbacks,
    }
}

/// Elementwise work only: one kernel.
fn one_kernel(x: &Array) -> Array {
    (x * 1.5f32 + 0.25f32).abs() * x - 2.0f32
}

/// `f` of new data of `n` elements at each seed, each result against the evaluator; the
/// replay counts of those calls.
fn new_inputs(f: fn(&Array) -> Array, n: usize, seeds: std::ops::Range<u32>) -> ReplayStats {
    let before = stats();
    for call in seeds {
        matches_evaluator(&[&f(&data(n, call))], &format!("call {call}"));
    }
    since(before)
}

/// [`new_inputs`] with every result kept: the pool cannot hand the same blocks back, so the
/// nodes' pointers change and are updated before each replay. The replay counts of those
/// calls; then each kept result is checked to still hold its own values.
fn kept_results(f: fn(&Array) -> Array, n: usize, seeds: std::ops::Range<u32>) -> ReplayStats {
    let before = stats();
    let mut kept = Vec::new();
    for call in seeds {
        let x = data(n, call);
        let r = f(&x);
        matches_evaluator(&[&r], &format!("call {call}"));
        kept.push((call, x, r));
    }
    let s = since(before);
    for (call, _, r) in &kept {
        let again = f(&data(n, *call));
        assert_eq!(r.to_vec::<f32>(), again.to_vec::<f32>(), "call {call} kept");
    }
    s
}

#[test]
fn gpu_replay_of_a_chain_of_kernels_with_new_inputs_each_call() {
    if !on_gpu() {
        return;
    }
    let _on = GraphsOn::new();
    let s = new_inputs(chain, 1024, 0..8);
    assert!(s.built >= 1 && s.replayed >= 1, "the chain was replayed as a graph: {s:?}");
    assert_eq!(s.fallbacks, 0, "{s:?}");
}

/// A plan of one kernel is replayed as a one-node graph too (its launch costs the host less
/// than `cuLaunchKernel`'s), each call right: new inputs each call, then results kept alive
/// so that the node's pointers change and are updated before each replay.
#[test]
fn gpu_replay_of_one_kernel_with_new_inputs_and_buffers_each_call() {
    if !on_gpu() {
        return;
    }
    let _on = GraphsOn::new();
    let s = new_inputs(one_kernel, 4096, 0..6);
    assert!(s.built >= 1 && s.replayed >= 1, "one kernel replayed as a graph: {s:?}");
    assert_eq!(s.fallbacks, 0, "{s:?}");
    let s = kept_results(one_kernel, 4096, 100..106);
    assert!(s.replayed >= 1 && s.updated_nodes >= 1, "{s:?}");
}

/// The look-ahead scan of a long line (a cooperative launch of persistent blocks, its tiles'
/// words the stream's, kept) is replayed as a graph of one cooperative kernel node: new inputs
/// each call, then results kept alive so that the node's pointers change.
#[test]
fn gpu_replay_of_the_lookahead_scan() {
    if !on_gpu() {
        return;
    }
    let _on = GraphsOn::new();
    // A line past the look-ahead's least length (2^21), with a partial last tile.
    let n = (1 << 21) + 4321;
    let cumsum: fn(&Array) -> Array = |x| x.cumsum(None);
    let s = new_inputs(cumsum, n, 0..5);
    assert!(s.built >= 1 && s.replayed >= 1, "the scan replayed as a graph: {s:?}");
    assert_eq!(s.fallbacks, 0, "{s:?}");
    let s = kept_results(cumsum, n, 100..105);
    assert!(s.replayed >= 1 && s.updated_nodes >= 1, "{s:?}");
    assert_eq!(s.fallbacks, 0, "{s:?}");
}

#[test]
fn gpu_replay_across_sizes_that_make_new_plans() {
    if !on_gpu() {
        return;
    }
    let _on = GraphsOn::new();
    let before = stats();
    for call in 0..12u32 {
        let n = [1024, 3001, 70_000][call as usize % 3];
        let x = data(n, call);
        matches_evaluator(&[&chain(&x)], &format!("call {call}, {n} elements"));
    }
    let s = since(before);
    assert!(s.replayed >= 1, "{s:?}");
    assert_eq!(s.fallbacks, 0, "{s:?}");
}

#[test]
fn gpu_replay_when_the_buffers_change_between_calls() {
    if !on_gpu() {
        return;
    }
    let _on = GraphsOn::new();
    let s = kept_results(chain, 5000, 0..8);
    assert!(s.replayed >= 1 && s.updated_nodes >= 1, "{s:?}");
}

#[test]
fn gpu_replay_of_the_radix_sort_and_its_lines() {
    if !on_gpu() {
        return;
    }
    let _on = GraphsOn::new();
    let before = stats();
    for call in 0..5 {
        let x = data(20_000, call);
        matches_evaluator(&[&x.sort(None)], &format!("sort, call {call}"));
        // Three lines: one scratch cleared before each line's histogram.
        let m = data(3 * 20_000, call + 100).reshape(&[3, 20_000]);
        matches_evaluator(&[&(m.sort(Some(1)) * 2.0f32)], &format!("3 lines, call {call}"));
    }
    let s = since(before);
    assert!(s.replayed >= 1, "{s:?}");
    assert_eq!(s.fallbacks, 0, "{s:?}");
}

#[test]
fn gpu_replay_of_scatters_with_cleared_outputs() {
    if !on_gpu() {
        return;
    }
    let _on = GraphsOn::new();
    let (n, d, k) = (1797usize, 16usize, 10usize);
    for call in 0..6 {
        let x = data(n * d, call).reshape(&[n as i64, d as i64]);
        let c = data(k * d, call + 50).reshape(&[k as i64, d as i64]);
        let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
        let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, &x);
        let counts = kiln::bincount(&labels, None, k);
        // Sums of small integers: exact in any order.
        matches_evaluator(&[&labels, &sums, &counts], &format!("k-means update, call {call}"));
    }
}

#[test]
fn gpu_replay_off_records_nothing() {
    if !on_gpu() {
        return;
    }
    set_mode(Some(GraphMode::Off));
    let before = stats();
    for call in 0..4 {
        matches_evaluator(&[&chain(&data(1024, call))], &format!("off, call {call}"));
    }
    set_mode(None);
    assert_eq!(since(before), ReplayStats::default());
}

/// A device array held by a thread-local that outlives the recording's own state: at the
/// thread's exit the array is dropped after the recording's thread-local was destroyed, and
/// its buffer goes straight back to the pool (this aborted the process when the drop asked the
/// destroyed state whether to hold the buffer).
#[test]
fn gpu_replay_a_buffer_dropped_by_a_thread_local_at_thread_exit() {
    if !on_gpu() {
        return;
    }
    thread_local! {
        static KEPT: std::cell::RefCell<Option<Array>> = const { std::cell::RefCell::new(None) };
    }
    let h = std::thread::spawn(|| {
        // Registered first, so destroyed after the recording state registered by the runs.
        KEPT.with(|k| k.borrow_mut().take());
        let _on = GraphsOn::new();
        for call in 0..4 {
            let x = data(1024, call + 100);
            matches_evaluator(&[&chain(&x)], &format!("call {call}"));
        }
        let kept = chain(&data(1024, 7));
        kept.eval();
        KEPT.with(|k| *k.borrow_mut() = Some(kept));
    });
    h.join().expect("the thread and its thread-locals' destructors ran");
    let x = data(1024, 8);
    matches_evaluator(&[&chain(&x)], "after the thread's exit");
}
