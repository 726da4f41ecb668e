//! Launch lists replayed as CUDA graphs.
//!
//! Between [`Recording::begin`] and [`Recording::finish`], kernel launches
//! ([`crate::Function::launch_on`], and cooperative ones,
//! [`crate::Function::launch_cooperative_on`]) and memsets ([`DeviceBuffer::memset`]) queued on the
//! recording stream by this thread are not issued: they are kept, in order, as a launch list.
//! Device buffers this thread drops meanwhile keep their memory until the list has been issued
//! (their pool frees come after it on the stream, so no block is handed to other work while a
//! kept launch may still touch it). `finish` then issues the list:
//!
//! - as plain launches (`cuLaunchKernel`, `cuLaunchCooperativeKernel`, `cuMemsetD8Async`),
//!   the same calls that recording saved; or
//! - as one CUDA graph launch (`cuGraphLaunch`): a list of the same shape (the same kernels,
//!   launch configurations, parameter sizes and memset sizes, on the same device) seen
//!   [`REPLAY_AFTER`] times before on this thread is built once as a graph (a chain of kernel
//!   and memset nodes, a cooperative launch's node with `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`)
//!   and instantiated; each later call updates only the nodes whose
//!   arguments differ from the last call's (`cuGraphExecKernelNodeSetParams`,
//!   `cuGraphExecMemsetNodeSetParams`; the caching pool often hands back the same pointers)
//!   and launches it.
//!
//! Anything else on the stream (a library call, a copy, an event, a host read) must not happen
//! while recording: the executor records only steps made of kernel launches and memsets, and
//! finishes the recording before any other step. [`mode`] is `KILN_GPU_GRAPHS`.

use std::cell::RefCell;
use std::ffi::c_void;

use cudarc::driver::sys;
use rustc_hash::FxHashMap;

use crate::{
    device::DeviceState,
    error::{check_raw, Result},
    launch::{KernelArg, LaunchConfig},
    memory::DeviceMemoryPool,
    module::Function,
    pool::Block,
    stream::{Stream, StreamKey},
};

/// How launch lists are issued (`KILN_GPU_GRAPHS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphMode {
    /// Never recorded: every launch is issued as it is made (`off`).
    Off,
    /// A list is replayed as a graph from its [`REPLAY_AFTER`]-th sighting on (`on`), one
    /// kernel too: on an H200 (session 33, `launch-cost.cu`) `cuGraphLaunch` of a one-node
    /// graph took 1.93 µs of host time (2.34 with its node's arguments set first) against
    /// 4.35 µs for `cuLaunchKernel` of the same kernel.
    On,
    /// The default: as `on` (it measured faster on an H100/H200, see `benches/RESULTS.md`,
    /// session 25).
    Auto,
}

/// How many times a launch list of one shape is issued as plain launches before it is built
/// as a graph.
pub const REPLAY_AFTER: u32 = 2;

/// Graphs kept per thread; past this the thread's graphs are dropped and built again as seen.
const MAX_GRAPHS: usize = 256;

thread_local! {
    static MODE: std::cell::Cell<Option<GraphMode>> = const { std::cell::Cell::new(None) };
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
    static GRAPHS: RefCell<FxHashMap<Shape, Entry>> = RefCell::new(FxHashMap::default());
    static STATS: std::cell::Cell<ReplayStats> = const { std::cell::Cell::new(ReplayStats::ZERO) };
}

/// The mode of this thread: [`set_mode`]'s, else `KILN_GPU_GRAPHS` (`on`, `off`, `auto`;
/// unset is `auto`; another value is reported as invalid by the configuration and taken as
/// `auto`).
pub fn mode() -> GraphMode {
    MODE.with(|m| m.get()).unwrap_or_else(|| match kiln_cache::config().gpu_graphs {
        Some(true) => GraphMode::On,
        Some(false) => GraphMode::Off,
        None => GraphMode::Auto,
    })
}

/// Sets this thread's mode (`None`: back to `KILN_GPU_GRAPHS`).
pub fn set_mode(mode: Option<GraphMode>) {
    MODE.with(|m| m.set(mode));
}

/// Whether launch lists are recorded at all in this thread's mode.
pub fn enabled() -> bool {
    mode() != GraphMode::Off
}

/// What this thread's recordings did, counted since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Lists issued as plain launches.
    pub direct: u64,
    /// Graphs built (and launched).
    pub built: u64,
    /// Graph launches of a graph built before.
    pub replayed: u64,
    /// Nodes whose arguments were updated before a replay.
    pub updated_nodes: u64,
    /// Lists whose graph failed to build or launch, issued as plain launches instead.
    pub fallbacks: u64,
}

impl ReplayStats {
    const ZERO: ReplayStats =
        ReplayStats { direct: 0, built: 0, replayed: 0, updated_nodes: 0, fallbacks: 0 };
}

/// This thread's [`ReplayStats`].
pub fn stats() -> ReplayStats {
    STATS.with(|s| s.get())
}

fn count(f: impl FnOnce(&mut ReplayStats)) {
    STATS.with(|s| {
        let mut v = s.get();
        f(&mut v);
        s.set(v);
    });
}

/// One kept operation.
enum Op {
    Kernel {
        function: Function,
        config: LaunchConfig,
        /// The argument values, each from an 8-byte boundary of `words`.
        words: Vec<u64>,
        /// Each argument's first word and size in bytes.
        args: Vec<(usize, usize)>,
        /// Every block resident at once (`cuLaunchCooperativeKernel`).
        cooperative: bool,
    },
    Memset {
        ptr: u64,
        len: usize,
        value: u8,
    },
}

impl Op {
    fn shape(&self) -> OpShape {
        match self {
            Op::Kernel { function, config, args, cooperative, .. } => OpShape::Kernel(
                function.raw.0 as usize,
                *config,
                args.iter().map(|a| a.1).collect(),
                *cooperative,
            ),
            Op::Memset { len, .. } => OpShape::Memset(*len),
        }
    }

    /// What a replay compares: the argument words, or the memset's pointer and value.
    fn values(&self) -> Vec<u64> {
        match self {
            Op::Kernel { words, .. } => words.clone(),
            Op::Memset { ptr, value, .. } => vec![*ptr, *value as u64],
        }
    }

    /// Pointers to each argument's value, for the driver to copy.
    fn param_ptrs(words: &[u64], args: &[(usize, usize)]) -> Vec<*mut c_void> {
        args.iter().map(|&(w, _)| words[w..].as_ptr() as *mut c_void).collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum OpShape {
    Kernel(usize, LaunchConfig, Vec<usize>, bool),
    Memset(usize),
}

/// A launch list's shape: what a graph fixes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Shape {
    device: usize,
    ops: Vec<OpShape>,
}

/// A list's shape as seen on this thread: how often, and its graph once built.
struct Entry {
    seen: u32,
    graph: Option<Replay>,
    /// A graph of this shape failed: plain launches from now on.
    broken: bool,
}

/// An instantiated graph of a list, its nodes in list order, and each node's last values.
struct Replay {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    device: &'static DeviceState,
    nodes: Vec<sys::CUgraphNode>,
    last: Vec<Vec<u64>>,
    /// The kernels the nodes launch (their modules stay loaded while the graph lives).
    _functions: Vec<Function>,
}

impl Drop for Replay {
    fn drop(&mut self) {
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: made by `build`, destroyed once; pending launches complete first (the
            // driver keeps them alive).
            unsafe {
                let _ = sys::cuGraphExecDestroy(self.exec);
                let _ = sys::cuGraphDestroy(self.graph);
            }
        }
    }
}

/// The recording in progress on this thread.
struct Active {
    stream: Stream,
    ops: Vec<Op>,
    /// Pool blocks of buffers dropped while recording: freed after the list is issued.
    held: Vec<(Block<StreamKey>, std::sync::Arc<DeviceMemoryPool>)>,
}

/// A recording on this thread (see the module's documentation). Dropped without
/// [`Recording::finish`] (a step failed), its list is discarded and the memory it held freed.
#[must_use]
pub struct Recording {
    _not_send: std::marker::PhantomData<*const ()>,
}

/// How [`Recording::finish`] issued its list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Issued {
    /// Nothing was recorded.
    Empty,
    /// Plain launches (`fallback`: a graph of this shape failed).
    Direct { ops: usize, fallback: bool },
    /// A graph built now and launched.
    Built { ops: usize },
    /// A graph built before, `updated` nodes changed, launched.
    Replayed { ops: usize, updated: usize },
}

impl Recording {
    /// Starts recording what this thread queues on `stream`. `None` if a recording is already
    /// in progress on this thread (the launches go to that one).
    pub fn begin(stream: &Stream) -> Option<Recording> {
        ACTIVE.with(|a| {
            let mut a = a.borrow_mut();
            if a.is_some() {
                return None;
            }
            *a = Some(Active { stream: stream.clone(), ops: Vec::new(), held: Vec::new() });
            Some(Recording { _not_send: std::marker::PhantomData })
        })
    }

    /// Issues the list recorded (see the module's documentation), then frees what it held.
    /// Errors: a launch or memset the driver refuses (the memory held is freed after whatever
    /// was queued).
    pub fn finish(self) -> Result<Issued> {
        let active = ACTIVE.with(|a| a.borrow_mut().take());
        std::mem::forget(self);
        let Some(Active { stream, ops, held }) = active else { return Ok(Issued::Empty) };
        let issued = issue(&stream, &ops);
        drop(ops);
        for (block, pool) in held {
            pool.free(block);
        }
        issued
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(active) = ACTIVE.try_with(|a| a.borrow_mut().take()).ok().flatten() {
            for (block, pool) in active.held {
                pool.free(block);
            }
        }
    }
}

/// Keeps a kernel launch (`cooperative`: every block resident at once) if this thread is
/// recording on `stream`; `false` if it must be issued.
pub(crate) fn record_launch(
    stream: &Stream,
    function: &Function,
    config: LaunchConfig,
    args: &[&dyn KernelArg],
    cooperative: bool,
) -> bool {
    // `try_with`: a launch from a thread-local's destructor at thread exit finds no recording.
    ACTIVE
        .try_with(|a| {
            let mut a = a.borrow_mut();
            let Some(active) = a.as_mut().filter(|a| a.stream.raw() == stream.raw()) else {
                return false;
            };
            let mut words = Vec::with_capacity(args.len());
            let mut spans = Vec::with_capacity(args.len());
            for arg in args {
                let size = arg.param_size();
                let first = words.len();
                words.resize(first + size.div_ceil(8).max(1), 0u64);
                // SAFETY: `as_kernel_param` points at `size` readable bytes (`KernelArg`'s
                // contract); they are copied into the words just made for them.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        arg.as_kernel_param() as *const u8,
                        words[first..].as_mut_ptr() as *mut u8,
                        size,
                    );
                }
                spans.push((first, size));
            }
            active.ops.push(Op::Kernel {
                function: function.clone(),
                config,
                words,
                args: spans,
                cooperative,
            });
            true
        })
        .unwrap_or(false)
}

/// Keeps a memset if this thread is recording on `stream`; `false` if it must be issued.
pub(crate) fn record_memset(stream: &Stream, ptr: u64, len: usize, value: u8) -> bool {
    ACTIVE
        .try_with(|a| {
            let mut a = a.borrow_mut();
            match a.as_mut().filter(|a| a.stream.raw() == stream.raw()) {
                Some(active) => {
                    active.ops.push(Op::Memset { ptr, len, value });
                    true
                }
                None => false,
            }
        })
        .unwrap_or(false)
}

/// Keeps a dropped buffer's block until the list is issued; gives it back if not recording
/// (also where this thread's recording state is gone: a buffer dropped by another
/// thread-local's destructor at thread exit, such as the frontend's cache of scalar splats).
pub(crate) fn hold(
    block: Block<StreamKey>,
    pool: &std::sync::Arc<DeviceMemoryPool>,
) -> Option<Block<StreamKey>> {
    let mut block = Some(block);
    let _ = ACTIVE.try_with(|a| {
        if let Some(active) = a.try_borrow_mut().ok().as_deref_mut().and_then(|a| a.as_mut()) {
            active.held.push((block.take().expect("the block"), pool.clone()));
        }
    });
    block
}

/// Issues `ops` on `stream`: as a graph where the shape has been seen often enough.
fn issue(stream: &Stream, ops: &[Op]) -> Result<Issued> {
    if ops.is_empty() {
        return Ok(Issued::Empty);
    }
    let device = stream.state();
    let _bound = device.bind()?;
    if mode() == GraphMode::Off {
        count(|s| s.direct += 1);
        direct(stream, ops)?;
        return Ok(Issued::Direct { ops: ops.len(), fallback: false });
    }
    let shape = Shape { device: device.id, ops: ops.iter().map(Op::shape).collect() };
    crate::host_trace::point("replay: shape");
    let tried = GRAPHS.with(|g| {
        let mut graphs = g.borrow_mut();
        if graphs.len() >= MAX_GRAPHS && !graphs.contains_key(&shape) {
            graphs.clear();
        }
        let entry = graphs.entry(shape).or_insert(Entry { seen: 0, graph: None, broken: false });
        entry.seen = entry.seen.saturating_add(1);
        if entry.broken || entry.seen <= REPLAY_AFTER {
            return None;
        }
        let result = match &mut entry.graph {
            Some(replay) => replay.run(stream, ops).map(|updated| {
                count(|s| {
                    s.replayed += 1;
                    s.updated_nodes += updated as u64;
                });
                Issued::Replayed { ops: ops.len(), updated }
            }),
            None => build(device, ops).and_then(|replay| {
                let r = replay.launch(stream);
                entry.graph = Some(replay);
                count(|s| s.built += 1);
                r.map(|()| Issued::Built { ops: ops.len() })
            }),
        };
        if let Err(e) = &result {
            tracing::debug!(error = %e, "a launch list's CUDA graph failed; plain launches");
            entry.broken = true;
            entry.graph = None;
        }
        Some(result)
    });
    match tried {
        Some(Ok(issued)) => Ok(issued),
        Some(Err(_)) => {
            count(|s| s.fallbacks += 1);
            direct(stream, ops)?;
            Ok(Issued::Direct { ops: ops.len(), fallback: true })
        }
        None => {
            count(|s| s.direct += 1);
            direct(stream, ops)?;
            Ok(Issued::Direct { ops: ops.len(), fallback: false })
        }
    }
}

/// Issues `ops` as plain launches and memsets, in order (the context bound).
fn direct(stream: &Stream, ops: &[Op]) -> Result<()> {
    for op in ops {
        match op {
            Op::Kernel { function, config, words, args, cooperative } => {
                let mut params = Op::param_ptrs(words, args);
                // SAFETY: a live function (kept by the op) and stream, the context bound;
                // `params` points at the argument values copied when the launch was recorded,
                // which outlive the call; the launch's caller vouched for their meaning then.
                let (call, status) =
                    unsafe { function.issue(stream, *config, &mut params, *cooperative) };
                check_raw(call, status)?;
            }
            Op::Memset { ptr, len, value } => {
                // SAFETY: the range of a buffer that was live when the memset was recorded and
                // whose block is held until the list is issued.
                check_raw("cuMemsetD8Async", unsafe {
                    sys::cuMemsetD8Async(*ptr, *value, *len, stream.raw())
                })?;
            }
        }
    }
    Ok(())
}

fn kernel_params(
    function: &Function,
    config: &LaunchConfig,
    params: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    let (g, b) = (config.grid, config.block);
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: function.raw.0,
        gridDimX: g.0,
        gridDimY: g.1,
        gridDimZ: g.2,
        blockDimX: b.0,
        blockDimY: b.1,
        blockDimZ: b.2,
        sharedMemBytes: config.shared_mem_bytes,
        kernelParams: params.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

fn memset_params(ptr: u64, len: usize, value: u8) -> sys::CUDA_MEMSET_NODE_PARAMS {
    sys::CUDA_MEMSET_NODE_PARAMS {
        dst: ptr,
        pitch: 0,
        value: value as u32,
        elementSize: 1,
        width: len,
        height: 1,
    }
}

/// Builds `ops` as a chain of graph nodes and instantiates it (the context bound).
fn build(device: &'static DeviceState, ops: &[Op]) -> Result<Replay> {
    let ctx = device.ctx.cu_ctx();
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: an out-pointer to a local.
    check_raw("cuGraphCreate", unsafe { sys::cuGraphCreate(&mut graph, 0) })?;
    let mut replay = Replay {
        graph,
        exec: std::ptr::null_mut(),
        device,
        nodes: Vec::with_capacity(ops.len()),
        last: Vec::with_capacity(ops.len()),
        _functions: Vec::new(),
    };
    for op in ops {
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let deps: Vec<sys::CUgraphNode> = replay.nodes.last().copied().into_iter().collect();
        match op {
            Op::Kernel { function, config, words, args, cooperative } => {
                let mut ptrs = Op::param_ptrs(words, args);
                let p = kernel_params(function, config, &mut ptrs);
                // SAFETY: a live graph; the dependency is a node of it; `p` names a live
                // function and points at argument values that outlive the call (copied).
                check_raw("cuGraphAddKernelNode", unsafe {
                    sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &p)
                })?;
                replay._functions.push(function.clone());
                if *cooperative {
                    // SAFETY: an all-zero attribute value is valid plain data (a union of
                    // integers and structs of integers); its `cooperative` member is then set.
                    let mut value: sys::CUkernelNodeAttrValue = unsafe { std::mem::zeroed() };
                    value.cooperative = 1;
                    // SAFETY: a kernel node of the live graph just added; `value` outlives the
                    // call (the driver copies it).
                    check_raw("cuGraphKernelNodeSetAttribute", unsafe {
                        sys::cuGraphKernelNodeSetAttribute(
                            node,
                            sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                            &value,
                        )
                    })?;
                }
            }
            Op::Memset { ptr, len, value } => {
                let p = memset_params(*ptr, *len, *value);
                // SAFETY: a live graph and context; the dependency is a node of it.
                check_raw("cuGraphAddMemsetNode", unsafe {
                    sys::cuGraphAddMemsetNode(&mut node, graph, deps.as_ptr(), deps.len(), &p, ctx)
                })?;
            }
        }
        replay.nodes.push(node);
        replay.last.push(op.values());
    }
    // SAFETY: a live graph; an out-pointer to a field (destroyed by `Replay`'s drop).
    check_raw("cuGraphInstantiateWithFlags", unsafe {
        sys::cuGraphInstantiateWithFlags(&mut replay.exec, graph, 0)
    })?;
    Ok(replay)
}

impl Replay {
    /// Updates the nodes whose values differ from the last call's, then launches. Returns how
    /// many were updated.
    fn run(&mut self, stream: &Stream, ops: &[Op]) -> Result<usize> {
        let ctx = self.device.ctx.cu_ctx();
        let mut updated = 0;
        for ((op, node), last) in ops.iter().zip(&self.nodes).zip(&mut self.last) {
            let same = match op {
                Op::Kernel { words, .. } => words == last,
                Op::Memset { ptr, value, .. } => last[..] == [*ptr, *value as u64],
            };
            if same {
                continue;
            }
            match op {
                Op::Kernel { function, config, words, args, .. } => {
                    let mut ptrs = Op::param_ptrs(words, args);
                    let p = kernel_params(function, config, &mut ptrs);
                    // SAFETY: a live executable graph and its kernel node of the same function
                    // and configuration; the argument values outlive the call (copied).
                    check_raw("cuGraphExecKernelNodeSetParams", unsafe {
                        sys::cuGraphExecKernelNodeSetParams_v2(self.exec, *node, &p)
                    })?;
                }
                Op::Memset { ptr, len, value } => {
                    let p = memset_params(*ptr, *len, *value);
                    // SAFETY: a live executable graph and its memset node of the same size.
                    check_raw("cuGraphExecMemsetNodeSetParams", unsafe {
                        sys::cuGraphExecMemsetNodeSetParams(self.exec, *node, &p, ctx)
                    })?;
                }
            }
            *last = op.values();
            updated += 1;
        }
        crate::host_trace::point("replay: nodes compared, updated");
        self.launch(stream)?;
        crate::host_trace::point("replay: cuGraphLaunch");
        Ok(updated)
    }

    fn launch(&self, stream: &Stream) -> Result<()> {
        // SAFETY: a live executable graph and a stream of its device.
        check_raw("cuGraphLaunch", unsafe { sys::cuGraphLaunch(self.exec, stream.raw()) })
    }
}
