//! Materialisation: from lazy arrays to an IR graph, computed, with results kept for reuse.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use kiln_cache::config::Codegen;
use kiln_compiler::fusion::FusionReport;
use kiln_compiler::pipeline::{Compiled, Options};
use kiln_compiler::plan_cache::{Lookup, PlanCache};

use kiln_ir::{Graph, HostArray, HostElement, Node, NodeId};

use crate::array::Array;
use crate::dispatch::{self, Dispatch, Visit};
use crate::dump;
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu};
use kiln_compiler::pipeline::Stage;
use kiln_exec::cpu::HostRun;
use kiln_exec::{Inputs, Outputs};
use kiln_runtime::{Backend, Device};

/// The IR graph of some arrays: arrays already held become `input` nodes (numbered in the order
/// first met), the rest their ops. Identical subexpressions become one node (hash-consing).
pub struct Lowered {
    pub graph: Graph,
    /// The held arrays the graph reads, by input index.
    pub inputs: Vec<Arc<HostArray>>,
}

/// Builds the graph whose outputs are `arrays` (in order; held arrays are outputs too, as
/// inputs passed through). Values held only in device memory are copied to the host.
///
/// Panics if such a copy fails (a device error); materialisation itself never copies down.
pub fn lower(arrays: &[&Array]) -> Lowered {
    let (graph, held) = lower_held(arrays);
    let inputs = held
        .iter()
        .map(|a| crate::unwrap(a.host_value()).expect("a held array has a value"))
        .collect();
    Lowered { graph, inputs }
}

/// The graph of `arrays`, and the held arrays its inputs read, by input index. Held arrays are
/// one input per value (two handles on one value are one input).
fn lower_held(arrays: &[&Array]) -> (Graph, Vec<Array>) {
    let mut g = GraphWalk(Graph::new());
    let held = dispatch::walk(arrays, &mut g);
    (g.0, held)
}

/// The [`Visit`] that builds the IR graph (hash-consed: identical subexpressions are one node).
struct GraphWalk(Graph);

impl Visit for GraphWalk {
    type Id = NodeId;

    fn held(&mut self, a: &Array, index: u32) -> NodeId {
        self.0.input(index, a.dtype(), a.shape())
    }

    fn node(&mut self, a: &Array, inputs: &[NodeId]) -> NodeId {
        self.0.insert(Node {
            op: a.e.op,
            attrs: a.e.attrs.clone(),
            inputs: inputs.iter().copied().collect(),
            dtype: a.e.dtype,
            shape: a.e.shape.clone(),
        })
    }

    fn output(&mut self, id: NodeId) {
        self.0.push_output(id);
    }
}

static MATERIALIZATIONS: AtomicUsize = AtomicUsize::new(0);

/// Nanoseconds of host time spent in each phase of materialisation, summed over the process
/// (for the benchmark's breakdown of per-call overhead): lowering to a graph, the plan cache,
/// inputs to the device, running the schedule.
pub(crate) static PHASE_NS: [AtomicU64; 4] =
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// The phases of [`PHASE_NS`] with their names, in microseconds, and the number of
/// materialisations.
pub fn host_phase_times() -> (Vec<(&'static str, f64)>, usize) {
    let names = ["lower", "plan", "inputs", "run"];
    (
        names
            .iter()
            .zip(&PHASE_NS)
            .map(|(n, t)| (*n, t.load(Ordering::Relaxed) as f64 / 1e3))
            .collect(),
        MATERIALIZATIONS.load(Ordering::Relaxed),
    )
}

fn phase(k: usize, t: &mut std::time::Instant) {
    let now = std::time::Instant::now();
    PHASE_NS[k].fetch_add((now - *t).as_nanos() as u64, Ordering::Relaxed);
    *t = now;
}

fn plans() -> &'static PlanCache {
    static PLANS: OnceLock<PlanCache> = OnceLock::new();
    PLANS.get_or_init(PlanCache::new)
}

/// How the CPU runs a schedule's regions (`KILN_CODEGEN`): compiled host code, a region the
/// code generator does not support run by the reference evaluator (the default, `host`); or
/// every region but library calls in the evaluator (`eval`).
fn host_run() -> HostRun {
    match kiln_cache::config().codegen {
        Codegen::Host => HostRun::Compiled,
        Codegen::Eval => HostRun::Libraries,
    }
}

fn options() -> &'static Options {
    static OPTIONS: OnceLock<Options> = OnceLock::new();
    OPTIONS.get_or_init(Options::from_env)
}

/// Where materialisation runs: `KILN_DEVICE`, or a CUDA device when there is one, else the
/// CPU (see [`kiln_runtime::select_backend`]). Chosen once per process; on CUDA, which device
/// runs a materialisation is the thread's current one ([`current_backend`]).
pub fn backend() -> Backend {
    static BACKEND: OnceLock<Backend> = OnceLock::new();
    *BACKEND.get_or_init(|| {
        let b = kiln_runtime::select_backend();
        // The compiler's one-time state, made while the program sets up (`kiln_compiler::warm`).
        kiln_compiler::warm::warm_up(options(), matches!(b, Backend::Cuda(_)));
        if let Backend::Cuda(ordinal) = b {
            kiln_exec::cuda::warm_up(ordinal);
        }
        b
    })
}

/// Where a materialisation started now runs: the CPU, or on the CUDA backend the calling
/// thread's current device (`kiln::cuda::Device::use_scoped`, CuPy's `with Device(n):`; by
/// default `KILN_DEVICE`'s `cuda:N`, else device 0).
pub fn current_backend() -> Backend {
    match backend() {
        Backend::Cpu => Backend::Cpu,
        Backend::Cuda(ordinal) => Backend::Cuda(Device::current().map_or(ordinal, |d| d.id())),
    }
}

/// Computes every array of `arrays` not yet held, in one graph (shared work is done once), and
/// keeps the results in the arrays.
///
/// The graph goes through the compiler's pipeline (a plan reused when a graph of the same
/// structure was compiled before) and its schedule runs region by region on the [`backend`]:
/// on a CUDA device as PTX kernels, the results staying in device memory until read (small
/// independent kernels side by side on the device's pool streams, ordered by events and joined
/// to the current stream: `kiln_compiler::streams`); on the CPU as compiled host code
/// (`kiln_compiler::codegen::run_schedule_on_host`, vendor regions through the host libraries),
/// or in the reference evaluator with `KILN_CODEGEN=eval`. `KILN_DUMP` writes each stage's text.
///
/// Errors: a compilation, evaluation or device failure (the arrays are left unmaterialised and
/// still valid).
pub fn try_eval_all(arrays: &[&Array]) -> Result<()> {
    try_eval_dispatched(arrays).map(|_| ())
}

/// What a materialisation ran: its plan (`cached`: the plan cache keeps it, see
/// [`Dispatch`]) and the held arrays it read, by input index. For a caller that runs the same
/// plan again on other arguments of the same structure ([`run_plan`]).
pub(crate) struct Ran {
    pub plan: Arc<Compiled>,
    pub cached: bool,
    pub held: Vec<Array>,
}

/// [`try_eval_all`], returning what ran: `None` where nothing had to be computed (or a view
/// of a copy's buffer was materialised first).
pub(crate) fn try_eval_dispatched(arrays: &[&Array]) -> Result<Option<Ran>> {
    // A view of a copy's buffer (an F-ordered copy) materialises that buffer (`layout.rs`).
    if let Some(buffers) = crate::layout::buffers(arrays) {
        try_eval_all(&buffers.iter().collect::<Vec<_>>())?;
        return Ok(None);
    }
    let pending: Vec<&Array> = arrays.iter().copied().filter(|a| !a.is_materialized()).collect();
    if pending.is_empty() {
        return Ok(None);
    }
    crate::kernels::check_not_traced(&pending)?;
    let mut t = std::time::Instant::now();
    let seq = MATERIALIZATIONS.fetch_add(1, Ordering::Relaxed);
    let target = current_backend();
    // One root whose structural number is valid: its plan by the number, no walk.
    let by_structure = match pending[..] {
        [root] if !dumping() && kiln_cache::config().dispatch_structure => {
            dispatch::structure_key(root, target)
        }
        _ => None,
    };
    if let Some(k) = &by_structure {
        if let Some((Dispatch { plan, cached }, held)) = dispatch::get_by_structure(pending[0], k) {
            dispatch::count(true);
            phase(0, &mut t);
            kiln_runtime::host_trace::point("dispatch by structure");
            return run_and_keep(target, &pending, plan, cached, held, seq, &mut t);
        }
    }
    let (key, held) = dispatch::key(&pending, target);
    kiln_runtime::host_trace::point("dispatch key");
    let (plan, cached) = match dispatch::get(&key).filter(|_| !dumping()) {
        Some(Dispatch { plan, cached }) => {
            dispatch::count(true);
            phase(0, &mut t);
            (plan, cached)
        }
        None => {
            dispatch::count(false);
            let (graph, lowered_held) = lower_held(&pending);
            debug_assert!(held.iter().zip(&lowered_held).all(|(a, b)| a.same_expr(b)));
            dump::graph(seq, &graph);
            phase(0, &mut t);
            let (plan, lookup) = plans().get_or_compile(&graph, options())?;
            // A plan the cache keeps (a resized one too, once stored for its sizes) may keep
            // its prepared kernels: without that, every call at a second size re-prepared them.
            let cached = !matches!(lookup, Lookup::HitResized { kept: false });
            dispatch::insert(key, Dispatch { plan: plan.clone(), cached });
            for &stage in Stage::ALL.iter().filter(|s| Compiled::holds(**s)) {
                dump::write(seq, stage, || plan.stage_text(stage).expect("a stage the plan holds"));
            }
            (plan, cached)
        }
    };
    phase(1, &mut t);
    kiln_runtime::host_trace::point("dispatch lookup");
    if let Some(k) = by_structure {
        // The number's inputs are the walk's (checked here, where the walk was taken: a
        // number that disagreed would be a fault of `structure.rs`, and is not kept).
        let by = pending[0].e.structure.held(k.2);
        let same = by.len() == held.len() && by.iter().zip(&held).all(|(a, b)| a.same_expr(b));
        debug_assert!(same, "a structural number's inputs differ from the walk's");
        if same {
            dispatch::insert_by_structure(k, Dispatch { plan: plan.clone(), cached });
        }
    }
    run_and_keep(target, &pending, plan, cached, held, seq, &mut t)
}

/// Runs `plan` on `held` and keeps its outputs in `pending` (see [`try_eval_dispatched`]).
fn run_and_keep(
    target: Backend,
    pending: &[&Array],
    plan: Arc<Compiled>,
    cached: bool,
    held: Vec<Array>,
    seq: usize,
    t: &mut std::time::Instant,
) -> Result<Option<Ran>> {
    let outputs = run_plan(target, &plan, cached, &held, pending[0].e.op.name(), t)?;
    if Stage::ALL.iter().any(|s| s.is_code() && dump::enabled(*s)) {
        dump::ran_code(seq, &kiln_exec::last_run_code());
    }
    match outputs {
        Outputs::Cuda(results) => {
            for (a, r) in pending.iter().zip(results) {
                let _ = a.e.device.set(r);
            }
        }
        Outputs::Host(results) => {
            for (a, r) in pending.iter().zip(results) {
                let _ = a.e.value.set(Arc::new(r));
            }
        }
    }
    // A result another handle holds (another expression's operand, perhaps) is an input of
    // that expression's walk from now on: the structural numbers made so far may be stale.
    // (After the values are set: a number made in the new epoch sees them held.)
    if pending.iter().any(|a| Arc::strong_count(&a.e) > 1) {
        crate::array::held_intermediate();
    }
    kiln_runtime::host_trace::point("results kept");
    Ok(Some(Ran { plan, cached, held }))
}

/// Whether `KILN_DUMP` asks for stages: every materialisation then lowers (the dumps are
/// written from the lowered graph).
pub(crate) fn dumping() -> bool {
    !kiln_cache::config().dump.is_empty()
}

/// Runs `plan` on `target` with `held[k]` as its input `k` (each copied to the device where it
/// is not there yet; `op` names the materialisation in a copy's error), counting the phases
/// from `t`.
pub(crate) fn run_plan<A: std::borrow::Borrow<Array>>(
    target: Backend,
    plan: &Arc<Compiled>,
    cached: bool,
    held: &[A],
    op: &str,
    t: &mut std::time::Instant,
) -> Result<Outputs> {
    let outputs = match target {
        Backend::Cuda(ordinal) => {
            let gpu = Gpu::get(ordinal)?;
            kiln_runtime::host_trace::point("gpu get");
            // The plan's new kernels compile while the inputs are copied (a process's first
            // copy waits for the device's context).
            kiln_exec::run_cuda(plan, gpu, cached, || {
                let inputs: Vec<Arc<DeviceArray>> = held
                    .iter()
                    .map(|a| on_device_at(a.borrow(), gpu.device(), op))
                    .collect::<Result<_>>()?;
                phase(2, t);
                kiln_runtime::host_trace::point("inputs on device");
                Ok::<_, Error>(inputs)
            })?
        }
        Backend::Cpu => {
            let host: Vec<Arc<HostArray>> = held
                .iter()
                .map(|a| Ok(a.borrow().host_value()?.expect("a held array has a value")))
                .collect::<Result<_>>()?;
            let inputs: Vec<&HostArray> = host.iter().map(|a| a.as_ref()).collect();
            phase(2, t);
            kiln_exec::run(plan, Inputs::Host(&inputs, host_run(), cached))?
        }
    };
    phase(3, t);
    kiln_runtime::host_trace::point("run: return");
    Ok(outputs)
}

/// Counts a materialisation that skipped the dispatch walk (a direct run of a fused closure's
/// plan, `kernels::fuse`) as a dispatch hit, the time since `t` (the argument match) charged
/// to the "lower" phase.
pub(crate) fn count_direct(t: &mut std::time::Instant) {
    MATERIALIZATIONS.fetch_add(1, Ordering::Relaxed);
    dispatch::count(true);
    phase(0, t);
}

/// The array's value in the current device's memory ([`on_device_at`]).
pub(crate) fn on_device(a: &Array) -> Result<Arc<DeviceArray>> {
    on_device_at(a, Device::current()?, "materialize")
}

/// The array's value in `device`'s memory: held there, or copied up from the host (and kept,
/// so later graphs reading it copy nothing; a host value kept on another device is uploaded
/// again, not kept: host data belongs to no device). Errors: a value held only on another
/// device ([`Error::DeviceMismatch`], for `op`), a failed copy.
pub(crate) fn on_device_at(a: &Array, device: Device, op: &str) -> Result<Arc<DeviceArray>> {
    let held = a.device_value();
    if let Some(d) = held.filter(|d| d.buffer().device() == device) {
        return Ok(d.clone());
    }
    let Some(h) = a.value() else {
        let on = held.expect("a held array has a value").buffer().device();
        return Err(Error::DeviceMismatch {
            op: op.to_string(),
            operand: a.describe(),
            on: on.to_string(),
            expected: format!("the current device is {device}"),
        });
    };
    let _current = device.use_scoped()?;
    let d = Arc::new(DeviceArray::upload(h)?);
    if held.is_some() {
        return Ok(d);
    }
    Ok(a.e.device.get_or_init(|| d).clone())
}

/// [`try_eval_all`], panicking on error.
#[track_caller]
pub fn eval_all(arrays: &[&Array]) {
    crate::unwrap(try_eval_all(arrays))
}

/// What materialising some arrays would do, stage by stage: the texts `KILN_DUMP` writes, and
/// the fusion report.
#[derive(Clone, Debug)]
pub struct Explain {
    /// The lowered graph's textual IR.
    pub graph: String,
    /// After e-graph simplification.
    pub simplified: String,
    /// The fused regions.
    pub regions: String,
    /// The schedule: kernels in order, buffers and their lifetimes.
    pub schedule: String,
    /// Regions with their ops, inputs, outputs and bytes; unfused edges with reasons.
    pub report: FusionReport,
}

impl std::fmt::Display for Explain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n{}\n{}\n{}\n{}",
            self.graph, self.simplified, self.regions, self.schedule, self.report
        )
    }
}

/// Compiles (without running) the graph that materialising `arrays` would run, and returns each
/// stage's text (kiln's `explain`). Errors: a compiler failure.
pub fn try_explain(arrays: &[&Array]) -> Result<Explain> {
    let (graph, _held) = lower_held(arrays);
    let (plan, _) = plans().get_or_compile(&graph, options())?;
    let stage = |s: Stage| plan.stage_text(s).expect("a stage the plan holds");
    Ok(Explain {
        graph: kiln_ir::text::print(&graph),
        simplified: stage(Stage::IntMatmul),
        regions: stage(Stage::Regions),
        schedule: stage(Stage::Schedule),
        report: with_fft_callback_decisions(plan.report()),
    })
}

/// `report` with the executor's measured choice for each FFT callback site it has measured
/// in this process (the compiler finds the sites; only the executor has run them).
fn with_fft_callback_decisions(mut report: FusionReport) -> FusionReport {
    for site in &mut report.fft_callbacks {
        site.decision = kiln_exec::cuda::fft_callback_decision(&site.key).map(|d| {
            kiln_compiler::fusion::FftCallbackChoice {
                kernel_then_fft_ms: d.kernel_then_fft_ms,
                callback_ms: d.callback_ms,
                fused: d.fused,
            }
        });
    }
    report
}

/// The generated code of the kernels that materialising `arrays` would run, one text for all
/// regions (each under a `region N` comment), as `KILN_DUMP` writes it: made for snapshot
/// tests of generated kernels (`insta::assert_snapshot!(kiln::kernel_code(&[&y],
/// CodeStage::GpuMlir)?)`). Compiles but runs nothing; no GPU is needed, even for PTX.
///
/// Errors: a compiler failure of the plan (a region's code generation failure is written in
/// the text).
pub fn kernel_code(arrays: &[&Array], stage: crate::dump::CodeStage) -> Result<String> {
    let (graph, _held) = lower_held(arrays);
    let (plan, _) = plans().get_or_compile(&graph, options())?;
    Ok(crate::dump::code_text(&plan.partition.regions, stage))
}

/// [`try_explain`], panicking on error.
#[track_caller]
pub fn explain(arrays: &[&Array]) -> Explain {
    crate::unwrap(try_explain(arrays))
}

impl Array {
    /// Computes the array now and keeps the result, so later uses read it instead of
    /// recomputing. Errors as [`try_eval_all`].
    pub fn try_eval(&self) -> Result<&Array> {
        try_eval_all(&[self])?;
        Ok(self)
    }

    /// Computes the array now and keeps the result. Panics where [`Array::try_eval`] errs.
    #[track_caller]
    pub fn eval(&self) -> &Array {
        crate::unwrap(self.try_eval())
    }

    /// The computed value in host memory.
    pub fn try_to_host(&self) -> Result<Arc<HostArray>> {
        self.try_eval()?;
        if let Some(c) = crate::layout::c_order_reader(self) {
            return c.try_to_host();
        }
        Ok(self.host_value()?.expect("evaluated"))
    }

    /// Materialises the array and returns its value in device memory, copying it to the
    /// current device if it is held on the host (`cupy.asarray`). Errors: no CUDA backend
    /// ([`backend`] is the CPU), a value held on another device ([`Error::DeviceMismatch`]), an
    /// evaluation or copy failure.
    pub fn try_to_device_array(&self) -> Result<Arc<DeviceArray>> {
        if !matches!(backend(), Backend::Cuda(_)) {
            return Err(crate::error::value_err(
                "to_device_array",
                "the backend is the CPU (no CUDA device, or KILN_DEVICE=cpu)",
            ));
        }
        self.try_eval()?;
        if let Some(c) = crate::layout::c_order_reader(self) {
            return c.try_to_device_array();
        }
        on_device(self)
    }

    /// [`Array::try_to_device_array`], panicking on error.
    #[track_caller]
    pub fn to_device_array(&self) -> Arc<DeviceArray> {
        crate::unwrap(self.try_to_device_array())
    }

    /// The elements in C order as a `Vec<T>`; `T` must be the array's element type
    /// (`x.get().ravel().tolist()` in CuPy). Errors: another `T`, or an evaluation failure.
    pub fn try_to_vec<T: HostElement>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::ElementType {
                op: "to_vec".into(),
                dtype: self.dtype(),
                wanted: T::DTYPE,
            });
        }
        Ok(self.try_to_host()?.as_slice::<T>()?.to_vec())
    }

    /// The elements in C order. Panics where [`Array::try_to_vec`] errs.
    #[track_caller]
    pub fn to_vec<T: HostElement>(&self) -> Vec<T> {
        crate::unwrap(self.try_to_vec())
    }

    /// The value as an `ndarray::ArrayD<T>` (`cupy.asnumpy`).
    pub fn try_to_ndarray<T: HostElement>(&self) -> Result<ndarray::ArrayD<T>> {
        let v = self.try_to_vec::<T>()?;
        Ok(ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(self.shape()), v).expect("sizes agree"))
    }

    /// The value as an `ndarray::ArrayD<T>`. Panics where [`Array::try_to_ndarray`] errs.
    #[track_caller]
    pub fn to_ndarray<T: HostElement>(&self) -> ndarray::ArrayD<T> {
        crate::unwrap(self.try_to_ndarray())
    }

    /// The single element of a size-1 array (`ndarray.item()`). Errors: a size other than 1,
    /// another `T`.
    pub fn try_item<T: HostElement>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(crate::error::value_err(
                "item",
                format!("can only convert an array of size 1, size is {}", self.size()),
            ));
        }
        Ok(self.try_to_vec::<T>()?[0])
    }

    /// The single element of a size-1 array. Panics where [`Array::try_item`] errs.
    #[track_caller]
    pub fn item<T: HostElement>(&self) -> T {
        crate::unwrap(self.try_item())
    }
}
