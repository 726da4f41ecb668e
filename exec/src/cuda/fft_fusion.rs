//! An elementwise kernel whose only reader is the next step's FFT, run instead as a cuFFT JIT
//! load callback of that FFT, where a measurement says it is faster (issue 24 §2).
//!
//! The first time a plan's step qualifies ([`candidate`]), it runs as usual (kernel, then FFT),
//! and then both ways are timed on the same operands: the kernel and the FFT again, and the FFT
//! with the callback generated from the kernel's region
//! (`kiln_compiler::vendor::fft_callback`). The faster is kept for that callback source and FFT
//! layout, in this process ([`decisions`] lists them; `tracing` target `kiln::fft` logs each).
//! Later calls of a fused step skip the kernel: its output buffer is allocated but not written,
//! and the FFT reads the kernel's inputs through the callback.
//!
//! The callback's caller info is a table of the inputs' device addresses. cuFFT bakes the
//! caller-info pointer into the plan, so each callback keeps one table for good, rewritten on
//! the stream before each FFT; the next rewrite waits for the previous FFT (an event).
//!
//! [`set_mode`] forces either way on a thread (tests); a user's `set_cufft_callbacks` scope
//! turns the fusion off for its FFTs.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use kiln_compiler::fusion::Region;
use kiln_compiler::pipeline::Compiled;
use kiln_compiler::vendor::fft_callback::{self, LoadCallback};
use kiln_compiler::vendor::fft_steps::{self, Buffer};
use kiln_compiler::vendor::{FftCall, FftKind, VendorCall};
use kiln_runtime::fft::{callbacks, Callbacks, JitCallback};
use kiln_runtime::nvrtc::{self, Program};
use kiln_runtime::{DeviceBuffer, Event, Stream};

use super::{DeviceArray, Gpu, Result};

/// How the executor chooses (per thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Measure once per callback and FFT layout, keep the faster (the default).
    Measure,
    /// Always fuse where the step qualifies (tests).
    Always,
    /// Never fuse.
    Never,
}

thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Measure) };
}

/// Sets this thread's mode; returns the previous one.
pub fn set_mode(mode: Mode) -> Mode {
    MODE.with(|m| m.replace(mode))
}

/// A measured choice.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The producer's ops, in body order.
    pub ops: Vec<&'static str>,
    /// The FFT's input shape and kind.
    pub fft: String,
    /// Milliseconds of the kernel and the FFT.
    pub kernel_then_fft_ms: f32,
    /// Milliseconds of the FFT with the load callback (`None`: cuFFT could not make the plan).
    pub callback_ms: Option<f32>,
    /// Whether the callback was kept.
    pub fused: bool,
}

/// One callback and FFT layout: the compiled callback with its table, and the choice.
pub(super) struct Entry {
    callbacks: Arc<Callbacks>,
    table: DeviceBuffer,
    /// The last FFT that read the table.
    last_use: Option<Event>,
    decision: Option<Decision>,
}

fn entries() -> &'static Mutex<HashMap<String, Arc<Mutex<Entry>>>> {
    static E: OnceLock<Mutex<HashMap<String, Arc<Mutex<Entry>>>>> = OnceLock::new();
    E.get_or_init(Default::default)
}

/// Every decision made in this process, in order.
pub fn decisions() -> Vec<Decision> {
    let entries = entries().lock().unwrap_or_else(|e| e.into_inner());
    entries
        .values()
        .filter_map(|e| e.lock().unwrap_or_else(|p| p.into_inner()).decision.clone())
        .collect()
}

/// In [`Mode::Measure`], FFT operands smaller than this are not measured (the kernel stays):
/// making a plan with a callback takes 0.1 to 1 s, which only large, repeated transforms repay.
pub const MEASURE_MIN_BYTES: usize = 4 << 20;

/// A step that may run as a callback: the producer region and the FFT reading it.
pub(super) struct Candidate {
    callback: LoadCallback,
    /// The FFT operand's bytes.
    bytes: usize,
    key: String,
    ops: Vec<&'static str>,
    fft: String,
}

/// Whether `producer` (a kernel region) can be the load callback of `call`, the next step's FFT
/// whose only input is the producer's only output, read from its start in one cuFFT call.
pub(super) fn candidate(producer: &Region, call: &VendorCall) -> Option<Candidate> {
    let VendorCall::Fft(f) = call else { return None };
    if !reads_from_start(f) {
        return None;
    }
    let callback = fft_callback::load_callback(producer).ok()?;
    if callback.dtype != f.in_dtype {
        return None;
    }
    let key = format!("{:?}\n{:?}\n{}", f.kind, f.input.layout, callback.source);
    let fft = format!("{:?} of {} {:?}", f.kind, f.in_dtype, f.input.layout.shape);
    let bytes = f.input.layout.numel() * f.in_dtype.itemsize();
    Some(Candidate { callback, bytes, key, ops: producer.op_names(), fft })
}

/// Whether fusion may run on this thread now: not in [`Mode::Never`], nor inside a user's
/// callback scope.
pub(super) fn enabled() -> bool {
    MODE.with(Cell::get) != Mode::Never && callbacks::active().is_none()
}

/// The candidate of step `si` of `plan`: its region is the elementwise producer whose one
/// output only the next step reads, an FFT on the GPU on the same stream (kept with the step's
/// prepared code, per plan and step).
pub(super) fn find(plan: &Compiled, si: usize) -> Option<Candidate> {
    let sched = &plan.schedule;
    let (step, next) = (sched.steps.get(si)?, sched.steps.get(si + 1)?);
    let [b] = step.writes[..] else { return None };
    let streams = &sched.streams.streams;
    let same_stream = streams.get(step.region) == streams.get(next.region);
    if step.reads.contains(&b)
        || sched.outputs.contains(&b)
        || next.reads != [b]
        || !next.frees.contains(&b)
        || !same_stream
    {
        return None;
    }
    let regions = &plan.partition.regions;
    let call = super::vendor::plan(&regions[next.region])?;
    candidate(&regions[step.region], &call)
}

/// The FFT reads its operand, C-contiguous from offset 0, in its first step's one call, with no
/// gathered copy before: so cuFFT's load offsets are the operand's flat indices.
fn reads_from_start(f: &FftCall) -> bool {
    let l = &f.input.layout;
    let steps = fft_steps::plan(f);
    matches!(f.kind, FftKind::C2C { .. } | FftKind::R2C { .. })
        && l.offset == 0
        && l.is_c_contiguous()
        && steps.scratch.is_none()
        && steps.steps.first().is_some_and(|s| s.from == Buffer::Input && s.calls == [(0, 0)])
}

/// The entry of `c`, compiling its callback the first time.
fn entry(gpu: &Gpu, c: &Candidate) -> Result<Arc<Mutex<Entry>>> {
    if let Some(e) = entries().lock().unwrap_or_else(|e| e.into_inner()).get(&c.key) {
        return Ok(e.clone());
    }
    let options: Vec<String> = fft_callback::NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect();
    let program = Program {
        name: "kiln_fft_load.cu",
        source: &c.callback.source,
        options: &options,
        headers: &[],
        name_expressions: &[],
    };
    let lto = nvrtc::compile_lto(&program, gpu.sm())?;
    let table = DeviceBuffer::alloc(8 * c.callback.inputs.max(1))?;
    let load = JitCallback {
        name: c.callback.name.to_string(),
        lto_ir: Arc::from(lto.code),
        caller_info: table.ptr(),
    };
    let e = Arc::new(Mutex::new(Entry {
        callbacks: Arc::new(Callbacks { load: Some(load), store: None }),
        table,
        last_use: None,
        decision: None,
    }));
    let mut all = entries().lock().unwrap_or_else(|e| e.into_inner());
    Ok(all.entry(c.key.clone()).or_insert(e).clone())
}

/// What the executor does with a candidate step now.
pub(super) enum Plan {
    /// Launch the kernel as usual (and measure after the FFT when `measure`).
    Kernel { measure: Option<Arc<Mutex<Entry>>> },
    /// Skip the kernel; the FFT runs with the callback of this entry.
    Fuse(Arc<Mutex<Entry>>),
}

/// Chooses for a candidate: fused when the decision (or the mode) says so.
pub(super) fn choose(gpu: &Gpu, c: &Candidate) -> Result<Plan> {
    let mode = MODE.with(Cell::get);
    if mode == Mode::Measure && c.bytes < MEASURE_MIN_BYTES {
        return Ok(Plan::Kernel { measure: None });
    }
    let e = entry(gpu, c)?;
    let decided = e.lock().unwrap_or_else(|p| p.into_inner()).decision.as_ref().map(|d| d.fused);
    Ok(match (mode, decided) {
        (Mode::Always, _) | (_, Some(true)) => Plan::Fuse(e),
        (_, Some(false)) | (Mode::Never, None) => Plan::Kernel { measure: None },
        (Mode::Measure, None) => Plan::Kernel { measure: Some(e) },
    })
}

/// Runs the FFT `call` reading `inputs` (the producer's) through the entry's callback; `operand`
/// is the producer's unwritten output (cuFFT's `dataIn`, which the callback does not read).
pub(super) fn run_fused(
    e: &Mutex<Entry>,
    call: &VendorCall,
    operand: &Arc<DeviceArray>,
    inputs: &[Arc<DeviceArray>],
) -> Result<Vec<DeviceArray>> {
    let mut e = e.lock().unwrap_or_else(|p| p.into_inner());
    let stream = Stream::current()?;
    if let Some(last) = &e.last_use {
        stream.wait_event(last)?;
    }
    let table: Vec<u64> = inputs.iter().map(|a| a.buf.ptr()).collect();
    if !table.is_empty() {
        e.table.copy_from_host_on(&table, &stream)?;
    }
    let callbacks = e.callbacks.clone();
    let out =
        callbacks::with_callbacks(callbacks, || super::vendor::run(call, &[operand.clone()]))?;
    e.last_use = Some(stream.record()?);
    Ok(out)
}

/// Times both ways on the operands of a step that just ran as kernel then FFT, and keeps the
/// faster in the entry. `kernel` launches the producer again.
pub(super) fn measure(
    e: &Mutex<Entry>,
    c: &Candidate,
    call: &VendorCall,
    inputs: &[Arc<DeviceArray>],
    kernel: &dyn Fn() -> Result<Vec<DeviceArray>>,
) -> Result<()> {
    let stream = Stream::current()?;
    let time = |f: &dyn Fn() -> Result<()>| -> Result<f32> {
        f()?; // warm (a plan made, a tier chosen)
        let start = stream.record()?;
        for _ in 0..3 {
            f()?;
        }
        let end = stream.record()?;
        end.synchronize()?;
        Ok(end.elapsed_since(&start)? / 3.0)
    };
    let plain = time(&|| {
        let out = kernel()?;
        let operand = Arc::new(out.into_iter().next().expect("the producer's output"));
        super::vendor::run(call, &[operand]).map(|_| ())
    })?;
    let operand = Arc::new(kernel()?.into_iter().next().expect("the producer's output"));
    let fused = time(&|| run_fused(e, call, &operand, inputs).map(|_| ()));
    let callback_ms = match fused {
        Ok(ms) => Some(ms),
        Err(err) => {
            tracing::info!(target: "kiln::fft", error = %err, "an FFT load callback did not run; the kernel stays");
            None
        }
    };
    let d = Decision {
        ops: c.ops.clone(),
        fft: c.fft.clone(),
        kernel_then_fft_ms: plain,
        callback_ms,
        fused: callback_ms.is_some_and(|ms| ms < plain),
    };
    tracing::info!(target: "kiln::fft", decision = ?d, "FFT load callback measured");
    e.lock().unwrap_or_else(|p| p.into_inner()).decision = Some(d);
    Ok(())
}
