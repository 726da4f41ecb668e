//! The tiny workloads, where a call's host work and launches cost more than its kernels:
//!
//! - `tiny_chain_48ops`: 48 elementwise ops on 1,024 float32s (one kernel), wall time from the
//!   host call to the result on the device (synchronised).
//! - `tiny_multi`: several small kernels on 1,024 float32s: a sum, elementwise work on it and
//!   a second reduction (the max), then a scale by both (the kernel count is printed with the
//!   row); CUDA events around the call, the host's work included. A launch list replayed as
//!   one CUDA graph (`KILN_GPU_GRAPHS`) shows its effect here first.

use std::time::Instant;

use kiln::Array;
use kiln_runtime::Stream;

use super::{device_array, median, normal, phases_since, print_host_trace, time_events, Args, Row};

/// `tiny_multi`'s expression of one call.
fn multi_chain(x: &Array) -> Array {
    let s1 = x.sum(None);
    let y = (x - &s1 * (1.0f32 / 1024.0)).abs() * 1.5f32 + 0.25f32;
    let s2 = y.max(None);
    &y / &s2 + s1
}

/// Times `tiny_multi`.
pub(super) fn multi(a: &Args, stream: &Stream, rows: &mut Vec<Row>) {
    let x = device_array(normal(1024, 21), &[1024]);
    let kernels = kiln::explain(&[&multi_chain(&x)]).report.kernel_count();
    let ms = time_events("tiny_multi", stream, a.reps.max(100), || {
        multi_chain(&x).eval();
    });
    let work = "tiny_multi".into();
    rows.push(Row { work, ms, kernel_ms: None, gbps: None, kernels: Some(kernels), tflops: None });
}

/// `tiny_chain_48ops`' expression of one call: 48 scalar ops (peers.py's `tiny`).
fn chain(mut t: Array) -> Array {
    for _ in 0..16 {
        t = t * 1.0001 + 0.5;
        t = t - 0.25;
        t = t * 0.999;
    }
    t
}

/// Times `tiny_chain_48ops_fuse`: the same chain as a `kiln::fuse` closure run per call
/// (`Fused::run`, materialised as `cupy.fuse` runs its kernel; peers.py's `cupy.fuse` row is
/// this), wall time from the host call to the result on the device (synchronised).
pub(super) fn chain_48ops_fuse(a: &Args, stream: &Stream, rows: &mut Vec<Row>) {
    let s = device_array(normal(1024, 6), &[1024]);
    let f = kiln::fuse("tiny", |args: &[kiln::Operand]| chain(args[0].to_array()));
    // The first call runs interpreted while its kernel compiles: the warm-up goes on once
    // the code landed.
    f.run(&[(&s).into()]);
    kiln_exec::cuda::interp::wait_for_compiles();
    for _ in 0..kiln_compiler::codegen::gpu::GPU_HOT_CALLS_SMALL {
        f.run(&[(&s).into()]);
    }
    stream.synchronize().unwrap();
    let (before, n0) = kiln::host_phase_times();
    let direct0 = f.direct_runs();
    let mut ts = Vec::new();
    kiln_runtime::host_trace::report();
    let reps = a.reps.max(100);
    for _ in 0..reps {
        let t0 = Instant::now();
        kiln_runtime::host_trace::begin();
        let r = f.run(&[(&s).into()]);
        kiln_runtime::host_trace::point("bench: run returned");
        drop(r);
        kiln_runtime::host_trace::point("bench: call returned");
        stream.synchronize().unwrap();
        kiln_runtime::host_trace::point("bench: synchronized");
        ts.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "tiny_chain_48ops_fuse host time per call: {} ({} of {reps} calls direct)",
        phases_since(&before, n0).0,
        f.direct_runs() - direct0
    );
    print_host_trace("tiny_chain_48ops_fuse", reps);
    rows.push(Row {
        work: "tiny_chain_48ops_fuse".into(),
        ms: median(ts),
        kernel_ms: None,
        gbps: None,
        kernels: Some(1),
        tflops: None,
    });
}

/// Times `tiny_chain_48ops`.
pub(super) fn chain_48ops(a: &Args, stream: &Stream, rows: &mut Vec<Row>) {
    let s = device_array(normal(1024, 6), &[1024]);
    let tiny = chain;
    tiny(s.clone()).eval();
    kiln_exec::cuda::interp::wait_for_compiles();
    for _ in 0..kiln_compiler::codegen::gpu::GPU_HOT_CALLS_SMALL {
        tiny(s.clone()).eval();
    }
    stream.synchronize().unwrap();
    let (before, n0) = kiln::host_phase_times();
    let mut ts = Vec::new();
    kiln_runtime::host_trace::report();
    for _ in 0..a.reps.max(100) {
        let t0 = Instant::now();
        kiln_runtime::host_trace::begin();
        let r = tiny(s.clone());
        r.eval();
        kiln_runtime::host_trace::point("bench: eval returned");
        drop(r);
        kiln_runtime::host_trace::point("bench: call returned");
        stream.synchronize().unwrap();
        kiln_runtime::host_trace::point("bench: synchronized");
        ts.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    println!("tiny_chain_48ops host time per call: {}", phases_since(&before, n0).0);
    print_host_trace("tiny_chain_48ops", a.reps.max(100));
    rows.push(Row {
        work: "tiny_chain_48ops".into(),
        ms: median(ts),
        kernel_ms: None,
        gbps: None,
        kernels: Some(1),
        tflops: None,
    });
}
