//! Elementwise kernels next to an FFT run inside it as cuFFT JIT callbacks, where a measurement
//! says it is faster (issue 24 §2): a kernel whose only reader is the next step's FFT as its
//! *load* callback, a kernel that is the only reader of the previous step's FFT as its *store*
//! callback (the sites: `kiln_compiler::vendor::fft_callback_sites`; the code:
//! `kiln_compiler::vendor::fft_callback`). One FFT may have both.
//!
//! The first time a site runs with an operand (load) or output (store) of at least
//! [`MEASURE_MIN_BYTES`], it runs as usual (kernel and FFT), and then both ways are timed on the
//! same operands: the kernel and the FFT again, and the FFT with the callback. The faster is
//! kept for that side, callback source and FFT layout, in this process ([`decisions`] lists
//! them; `tracing` target `kiln::fft` logs each). Later calls of a fused site skip the kernel
//! (load: its output buffer is allocated but not written, and the FFT reads the kernel's inputs
//! through the callback) or run the FFT in the consumer's step (store: the FFT's output buffer
//! is allocated but not written, and the callback writes the consumer's output).
//!
//! The callback's caller info is a table of device addresses (the kernel's inputs; a store
//! callback's output after them). cuFFT bakes the caller-info pointer into the plan, so each
//! callback keeps one table for good, rewritten on the stream before each FFT; the next rewrite
//! waits for the previous FFT (an event). The LTO-IR is kept in the disk kernel cache
//! ([`super::compile_lto_cached`]), so a new process compiles no known callback.
//!
//! [`set_mode`] forces either way on a thread (tests); a user's `set_cufft_callbacks` scope
//! turns the fusion off for its FFTs.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use kiln_compiler::fusion::Region;
use kiln_compiler::pipeline::Compiled;
use kiln_compiler::vendor::fft_callback::{self, Callback};
use kiln_compiler::vendor::fft_callback_sites::{self, Site};
use kiln_compiler::vendor::VendorCall;
use kiln_runtime::fft::{callbacks, Callbacks, JitCallback};
use kiln_runtime::{DeviceBuffer, Event, Stream};

pub use kiln_compiler::vendor::fft_callback::Side;

use super::{launch, DeviceArray, Function, Gpu, GpuKernel, Result};
use crate::RanCode;

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
    /// The callback's side of the FFT.
    pub side: Side,
    /// The kernel's ops, in body order.
    pub ops: Vec<&'static str>,
    /// The FFT's input shape and kind.
    pub fft: String,
    /// Milliseconds of the kernel and the FFT.
    pub kernel_then_fft_ms: f32,
    /// Milliseconds of the FFT with the callback (`None`: cuFFT could not make the plan).
    pub callback_ms: Option<f32>,
    /// Whether the callback was kept.
    pub fused: bool,
    /// What it is kept under (`kiln_compiler::vendor::fft_callback_sites::Site::key`; the
    /// fusion report's sites carry the same key).
    pub key: String,
}

/// One callback and FFT layout: the compiled callback with its table, and the choice.
pub(super) struct Entry {
    callback: JitCallback,
    table: DeviceBuffer,
    /// The last FFT that read the table.
    last_use: Option<Arc<Event>>,
    decision: Option<Decision>,
}

/// The entries by device (its table lives there, and cuFFT's plans are per device) and key.
type Entries = HashMap<(usize, String), Arc<Mutex<Entry>>>;

fn entries() -> &'static Mutex<Entries> {
    static E: OnceLock<Mutex<Entries>> = OnceLock::new();
    E.get_or_init(Default::default)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every decision made in this process.
pub fn decisions() -> Vec<Decision> {
    lock(entries()).values().filter_map(|e| lock(e).decision.clone()).collect()
}

/// The decision kept under `key` (a fusion report site's), if one was made (on any device).
pub fn decision(key: &str) -> Option<Decision> {
    let found: Vec<Arc<Mutex<Entry>>> =
        lock(entries()).iter().filter(|((_, k), _)| k == key).map(|(_, e)| e.clone()).collect();
    found.iter().find_map(|e| lock(e).decision.clone())
}

/// In [`Mode::Measure`], FFT operands (load) or outputs (store) smaller than this are not
/// measured (the kernel stays): making a plan with a callback takes 0.1 to 1 s, which only
/// large, repeated transforms repay.
pub const MEASURE_MIN_BYTES: usize = 4 << 20;

/// The callback is kept only where it is faster by more than this fraction: on an H200 most
/// sites measured within 2% of the kernel (noise, and a choice that would flip between
/// processes), and the callback's plan costs 0.1 to 1 s to make in each process.
pub const MARGIN: f32 = 0.02;

/// A site whose callback was generated, and whose FFT the GPU runs.
pub(super) struct Candidate {
    site: Site,
    callback: Callback,
    /// The kernel's ops.
    ops: Vec<&'static str>,
}

impl Candidate {
    /// The store site's kernel input that is the FFT's output.
    fn fft_output(&self) -> usize {
        self.site.fft_output.unwrap_or(0)
    }
}

/// The candidate of `side` whose FFT is step `fft_step` of `plan` (kept with the step's
/// prepared code, per plan and step: the kernel's step for a load, the FFT's for a store).
pub(super) fn find(plan: &Compiled, fft_step: usize, side: Side) -> Option<Candidate> {
    let site = fft_callback_sites::site(plan, fft_step, side)?;
    super::vendor::plan(&plan.partition.regions[fft_step])?;
    let callback = site.callback.clone().ok()?;
    let ops = plan.partition.regions[site.kernel].op_names();
    Some(Candidate { site, callback, ops })
}

/// Whether fusion may run on this thread now: not in [`Mode::Never`], nor inside a user's
/// callback scope.
pub(super) fn enabled() -> bool {
    MODE.with(Cell::get) != Mode::Never && callbacks::active().is_none()
}

/// The entry of `c`, compiling its callback (or reading it from the disk cache) the first time.
fn entry(gpu: &Gpu, c: &Candidate) -> Result<Arc<Mutex<Entry>>> {
    let key = (gpu.device().id(), c.site.key.clone());
    if let Some(e) = lock(entries()).get(&key) {
        return Ok(e.clone());
    }
    let options: Vec<String> = fft_callback::NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect();
    let name = format!("{}.cu", c.callback.name);
    let lto_ir = super::compile_lto_cached(gpu, &name, &c.callback.source, &options)?;
    let table = DeviceBuffer::alloc(8 * c.callback.table_len().max(1))?;
    let callback =
        JitCallback { name: c.callback.name.to_string(), lto_ir, caller_info: table.ptr() };
    let e = Arc::new(Mutex::new(Entry { callback, table, last_use: None, decision: None }));
    Ok(lock(entries()).entry(key).or_insert(e).clone())
}

/// What the executor does with a candidate now.
pub(super) enum Plan {
    /// Run the kernel as usual (and measure after when `measure`).
    Kernel { measure: Option<Arc<Mutex<Entry>>> },
    /// Run the kernel inside the FFT, as the callback of this entry.
    Fuse(Arc<Mutex<Entry>>),
}

/// Chooses for a candidate: fused when the decision (or the mode) says so.
pub(super) fn choose(gpu: &Gpu, c: &Candidate) -> Result<Plan> {
    let mode = MODE.with(Cell::get);
    if mode == Mode::Measure && c.site.bytes < MEASURE_MIN_BYTES {
        return Ok(Plan::Kernel { measure: None });
    }
    let e = entry(gpu, c)?;
    let decided = lock(&e).decision.as_ref().map(|d| d.fused);
    Ok(match (mode, decided) {
        (Mode::Always, _) | (_, Some(true)) => Plan::Fuse(e),
        (_, Some(false)) | (Mode::Never, None) => Plan::Kernel { measure: None },
        (Mode::Measure, None) => Plan::Kernel { measure: Some(e) },
    })
}

/// A callback of one FFT call: its entry, and the addresses its table is given.
#[derive(Clone)]
pub(super) struct Bound {
    pub(super) entry: Arc<Mutex<Entry>>,
    /// The kernel's inputs, then (store) its output.
    pub(super) table: Vec<u64>,
}

impl Bound {
    /// A load callback reading `inputs`.
    pub(super) fn load(entry: Arc<Mutex<Entry>>, inputs: &[Arc<DeviceArray>]) -> Bound {
        Bound { entry, table: inputs.iter().map(|a| a.buf.ptr()).collect() }
    }

    /// A store callback reading `inputs` and writing `out`.
    pub(super) fn store(
        entry: Arc<Mutex<Entry>>,
        inputs: &[Arc<DeviceArray>],
        out: &DeviceArray,
    ) -> Bound {
        let table = inputs.iter().map(|a| a.buf.ptr()).chain([out.buf.ptr()]).collect();
        Bound { entry, table }
    }
}

/// Runs the FFT `call` on `operand` with the callbacks given (none: the plain FFT). With a
/// store callback the FFT's own output is not written (nor scaled: the callback applies the
/// norm's factor). The tables are rewritten on the stream after the previous FFT that read them.
pub(super) fn run_fft(
    call: &VendorCall,
    operand: &Arc<DeviceArray>,
    load: Option<&Bound>,
    store: Option<&Bound>,
) -> Result<DeviceArray> {
    let VendorCall::Fft(f) = call else {
        return Err(super::Error::InvalidInput("an FFT callback on a call that is no FFT".into()));
    };
    if load.is_none() && store.is_none() {
        return super::vendor::run_fft(f, operand, true, false);
    }
    let stream = Stream::current()?;
    // Load before store: one lock order for every thread.
    let mut guards: Vec<(MutexGuard<'_, Entry>, &[u64])> =
        [load, store].into_iter().flatten().map(|b| (lock(&b.entry), b.table.as_slice())).collect();
    for (e, table) in &mut guards {
        if let Some(last) = &e.last_use {
            stream.wait_event(last)?;
        }
        if !table.is_empty() {
            e.table.copy_from_host_on(table, &stream)?;
        }
    }
    let mut g = guards.iter().map(|(e, _)| e.callback.clone());
    let callbacks = Arc::new(Callbacks {
        load: load.and_then(|_| g.next()),
        store: store.and_then(|_| g.next()),
    });
    // With a load callback the operand is the producer's unwritten output, which only this FFT
    // reads: a complex-to-real transform may overwrite it instead of a copy.
    let out = callbacks::with_callbacks(callbacks, || {
        super::vendor::run_fft(f, operand, store.is_none(), load.is_some())
    })?;
    let done = Arc::new(stream.record()?);
    for (e, _) in &mut guards {
        e.last_use = Some(done.clone());
    }
    Ok(out)
}

/// Times `plain` (the kernel and the FFT) and `fused` (the FFT with the callback) on the
/// current stream, and keeps the faster in `e`.
pub(super) fn measure(
    e: &Mutex<Entry>,
    c: &Candidate,
    plain: &dyn Fn() -> Result<()>,
    fused: &dyn Fn() -> Result<()>,
) -> Result<()> {
    let stream = Stream::current()?;
    // The fastest of three timed runs after a warm one (a plan made, a tier chosen): a run
    // slowed by the host (another thread's plan or compile, an evicted plan made again)
    // does not decide.
    let time = |f: &dyn Fn() -> Result<()>| -> Result<f32> {
        f()?;
        let mut best = f32::INFINITY;
        for _ in 0..3 {
            let start = stream.record()?;
            f()?;
            let end = stream.record()?;
            end.synchronize()?;
            best = best.min(end.elapsed_since(&start)?);
        }
        Ok(best)
    };
    let plain = time(plain)?;
    let callback_ms = match time(fused) {
        Ok(ms) => Some(ms),
        Err(err) => {
            tracing::info!(target: "kiln::fft", side = c.site.side.name(), error = %err, "an FFT callback did not run; the kernel stays");
            None
        }
    };
    let d = Decision {
        side: c.site.side,
        ops: c.ops.clone(),
        fft: c.site.description.clone(),
        kernel_then_fft_ms: plain,
        callback_ms,
        fused: callback_ms.is_some_and(|ms| ms < plain * (1.0 - MARGIN)),
        key: c.site.key.clone(),
    };
    tracing::info!(target: "kiln::fft", decision = ?d, "FFT callback measured");
    lock(e).decision = Some(d);
    Ok(())
}

/// The code of a kernel step.
pub(super) type Code = Arc<(GpuKernel, Function)>;

/// What a step left for the next one.
pub(super) enum Pending {
    /// A producer step, for the FFT of the next step: skipped (`measure: None`; the FFT runs
    /// it as its load callback), or run, to be measured after the FFT (its candidate and code).
    Load {
        step: usize,
        entry: Arc<Mutex<Entry>>,
        /// The producer's inputs.
        inputs: Vec<Arc<DeviceArray>>,
        measure: Option<(Arc<Candidate>, Code)>,
    },
    /// An FFT step, for its consumer (the next step): skipped (`measure: None`; the consumer's
    /// step runs the FFT with its store callback), or run, to be measured after the consumer.
    Store {
        step: usize,
        entry: Arc<Mutex<Entry>>,
        call: VendorCall,
        operand: Arc<DeviceArray>,
        /// The FFT's load callback, where its producer was fused.
        load: Option<Bound>,
        measure: Option<Arc<Candidate>>,
    },
}

impl Pending {
    /// The step that left it.
    pub(super) fn step(&self) -> usize {
        match self {
            Pending::Load { step, .. } | Pending::Store { step, .. } => *step,
        }
    }
}

/// The decision for a candidate of this step, where fusion is on.
pub(super) fn plan_for(
    gpu: &Gpu,
    c: Option<&Arc<Candidate>>,
) -> Result<Option<(Plan, Arc<Candidate>)>> {
    match c {
        Some(c) if enabled() => Ok(Some((choose(gpu, c)?, c.clone()))),
        _ => Ok(None),
    }
}

/// The step of an FFT `call` on its operand among `reads`: with the load callback of a fused producer; a
/// producer run to be measured is measured after it; with a store candidate, the FFT is left
/// to its consumer (fused) or run and its consumer measured after. Returns the step's output
/// and what it leaves for the next step.
pub(super) fn fft_step(
    gpu: &Gpu,
    si: usize,
    call: &VendorCall,
    reads: &[Arc<DeviceArray>],
    pending: Option<Pending>,
    store: Option<&Arc<Candidate>>,
) -> Result<(Vec<DeviceArray>, Option<Pending>)> {
    let VendorCall::Fft(f) = call else {
        return Err(super::Error::InvalidInput("an FFT step of a call that is no FFT".into()));
    };
    let operand = super::region_input(reads, f.input.input, "an FFT step")?;
    let load = match pending {
        Some(Pending::Load { entry, inputs, measure: None, .. }) => {
            Some(Bound::load(entry, &inputs))
        }
        Some(Pending::Load { entry, inputs, measure: Some((c, k)), .. }) => {
            // The producer ran: measure its load callback; no store callback this time.
            let out = run_fft(call, operand, None, None)?;
            let kernel = || -> Result<Arc<DeviceArray>> {
                let out = launch(gpu, &k.0, &k.1, &inputs)?;
                Ok(Arc::new(out.into_iter().next().expect("the producer's output")))
            };
            let plain = || run_fft(call, &kernel()?, None, None).map(drop);
            let unwritten = kernel()?;
            let bound = Bound::load(entry.clone(), &inputs);
            let fused = || run_fft(call, &unwritten, Some(&bound), None).map(drop);
            measure(&entry, &c, &plain, &fused)?;
            return Ok((vec![out], None));
        }
        _ => None,
    };
    Ok(match plan_for(gpu, store)? {
        Some((Plan::Fuse(entry), _)) => {
            let out = DeviceArray::empty(f.out_dtype, &f.out_shape)?;
            let operand = operand.clone();
            let call = call.clone();
            (
                vec![out],
                Some(Pending::Store { step: si, entry, call, operand, load, measure: None }),
            )
        }
        Some((Plan::Kernel { measure: Some(entry) }, c)) => {
            let out = run_fft(call, operand, load.as_ref(), None)?;
            let (operand, call) = (operand.clone(), call.clone());
            let pending = Pending::Store { step: si, entry, call, operand, load, measure: Some(c) };
            (vec![out], Some(pending))
        }
        _ => (vec![run_fft(call, operand, load.as_ref(), None)?], None),
    })
}

/// The consumer step of an FFT left by [`fft_step`] (`pending` is its `Store`): the FFT with
/// the store callback writes the consumer's output; or the consumer's kernel (`code`) runs and
/// both ways are measured. `None`: nothing to measure without a kernel (the consumer runs as
/// usual; its FFT ran).
pub(super) fn store_step(
    gpu: &Gpu,
    region: &Region,
    code: Option<&Code>,
    reads: &[Arc<DeviceArray>],
    pending: Pending,
) -> Result<Option<(Vec<DeviceArray>, RanCode)>> {
    let Pending::Store { entry, call, operand, load, measure: m, .. } = pending else {
        return Err(super::Error::InvalidInput("a store step without its FFT".into()));
    };
    let out = || -> Result<DeviceArray> {
        let node = region.body.node(region.body.outputs()[0]);
        DeviceArray::empty(node.dtype, &node.shape)
    };
    let (c, code) = match (m, code) {
        (None, _) => {
            let out = out()?;
            run_fft(&call, &operand, load.as_ref(), Some(&Bound::store(entry, reads, &out)))?;
            return Ok(Some((vec![out], RanCode::Library)));
        }
        (Some(c), Some(code)) => (c, code),
        (Some(_), None) => return Ok(None),
    };
    let outs = launch(gpu, &code.0, &code.1, reads)?;
    let k = c.fft_output();
    let plain = || {
        let mut r = reads.to_vec();
        r[k] = Arc::new(run_fft(&call, &operand, load.as_ref(), None)?);
        launch(gpu, &code.0, &code.1, &r).map(drop)
    };
    let scratch = out()?;
    let bound = Bound::store(entry.clone(), reads, &scratch);
    let fused = || run_fft(&call, &operand, load.as_ref(), Some(&bound)).map(drop);
    measure(&entry, &c, &plain, &fused)?;
    Ok(Some((outs, RanCode::Gpu(code.clone()))))
}
