//! A region lowered to an MLIR module: one kernel function over a range of work items.
//!
//! ```mlir
//! func.func @kiln_kernel(%in0: !llvm.ptr, ..., %out0: !llvm.ptr, ..., %params: !llvm.ptr,
//!                        %start: i64, %end: i64)
//! func.func @kiln_kernel_host(%bufs: !llvm.ptr, %params: !llvm.ptr, %start: i64, %end: i64)
//! ```
//!
//! `@kiln_kernel` computes work items `start..end`; `@kiln_kernel_host` takes the buffer pointers
//! as one array (inputs then outputs), for a uniform host call. `params` holds the i64 sizes,
//! slice starts and steps the index math reads (`Builder::param`), so one kernel serves every
//! shape with the same structure: it is specialised on dtypes, ranks, which axes broadcast, and
//! which sizes are equal (equal values share a parameter).
//!
//! - **Elementwise** regions: a work item is an element of the output, by its C-order flat
//!   position. If no op needs the multi-index (every load is at the same flat position: inputs
//!   contiguous and unbroadcast, scalars), the kernel is one flat loop, which LLVM vectorises.
//!   Otherwise it walks row segments: the outer multi-index is unravelled once per row, and an
//!   inner loop runs along the last axis.
//! - **Reduction** regions (`reduce shape=S axes=A`): a work item is an element of the kept axes.
//!   The reductions of the body over `(S, A)` are computed first, in body order, each by its own
//!   loop nest over `A` (so a later one's prologue can read an earlier one's result: softmax,
//!   layernorm); then outputs of the kept shape are written once, and outputs of shape `S` by a
//!   final pass over `A`. Other reductions (a k-means distance inside an argmin) are loops nested
//!   where their value is needed. On the GPU these passes are cooperative (see [`Coop`]): a
//!   group of threads per work item, combining by warp shuffles; an input the passes share is
//!   copied to shared memory before them (see [`RowCache`]), so softmax and layer norm read
//!   their row from global memory once when it fits.
//!
//! Each node is emitted *at an index* of its result (`Ix`): elementwise ops pass the index to
//! their operands, views transform it (`through_view`), loads turn it into a buffer position.

use std::collections::HashMap;

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, DType, Graph, Node, NodeId, OpClass, OpKind};

use super::builder::Builder;
use super::index::{extent, ravel, through_view, unravel, Ix, NeedsDims};
use super::moments::Moments;
use super::online::Online;
use super::reduce::{Acc, Combine};
use super::types::{check_dtype, literal, load, store, work_ty, Val};
use super::{scalar, MathLib, Target, Unsupported};
use crate::fusion::{Region, RegionKind, Space};

mod nested;
pub(crate) mod scan;
pub(crate) mod scan_gpu;
pub mod scatter;
pub(crate) mod sort_gpu;

/// Name of the kernel function.
pub const KERNEL: &str = "kiln_kernel";
/// Name of the host entry point: `(void **buffers, const int64_t *params, int64_t start,
/// int64_t end)`, buffers being the inputs then the outputs.
pub const HOST_ENTRY: &str = "kiln_kernel_host";
/// Name of the GPU entry point (a `.entry` in PTX): `(inputs..., outputs..., p0: i64, ...,
/// p{P-1}: i64, n: i64, chunk: i64)`, the kernel parameters by value; thread `t` of the grid
/// runs chunks `t, t + threads, ...` of `chunk` work items each, up to `n` work items.
pub const GPU_ENTRY: &str = "kiln_gpu";

/// Attributes of an `scf.for` LLVM must not unroll (carried to its latch branch's
/// `!llvm.loop` metadata): the loops of a GPU elementwise kernel's slow paths, which run at most
/// [`GPU_VEC`] items per call. LLVM's cost model would otherwise unroll them where libdevice's
/// functions are still calls (they are inlined after the kernel is optimised: see
/// `codegen::gpu`), copying those functions' bodies for nothing.
const NO_UNROLL: &str = "{loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}";

/// A region lowered to MLIR, with what it takes to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The module: canonical (the same region always gives the same bytes) and shape-generic.
    pub mlir: String,
    /// The values of the kernel's i64 parameters for this region's shapes.
    pub params: Vec<i64>,
    /// Number of work items (`end` runs up to this).
    pub work_items: usize,
    /// Elements a work item reads, roughly: 1 for elementwise regions, the reduced size times
    /// the passes over it for reductions (to size chunks of work).
    pub cost_per_item: usize,
    /// Chunks of work must hold a multiple of this many work items (but the last): a block of
    /// a block-mode reduction, or the rows of a tile of a tiled elementwise kernel.
    pub min_chunk: usize,
    /// GPU kernels of cooperative reductions: `Some((threads, items))`, blocks of exactly
    /// `threads` threads each handling `items` work items (launch `ceil(work_items / items)`
    /// blocks or fewer: the entry loops over the rest). `None`: any block size, one thread per
    /// chunk of work items.
    pub gpu_block: Option<(usize, usize)>,
    /// GPU reductions of few work items over many elements, split across blocks (see
    /// [`GpuSplit`]); `None` otherwise.
    pub gpu_split: Option<GpuSplit>,
    /// Bytes of dynamic shared memory a block of a GPU kernel takes (its row cache, see
    /// [`Lower::row_cache_plan`]); 0 for none.
    pub gpu_shared: usize,
    /// dtype and shape of each input buffer, by the body's `input {index=k}`.
    pub inputs: Vec<(DType, Vec<usize>)>,
    /// dtype and shape of each output buffer.
    pub outputs: Vec<(DType, Vec<usize>)>,
    /// How its math functions are computed (also recorded in `mlir`).
    pub math: MathLib,
    /// Scatter regions: the elementwise op combining values into each output (`add`,
    /// `maximum`, `minimum`); the kernel accumulates into outputs its caller initialised (see
    /// module `scatter`). Empty for other regions.
    pub scatter: Vec<OpKind>,
    /// GPU scatter kernels: their launch (see [`scatter::GpuScatter`]); `None` otherwise.
    pub gpu_scatter: Option<scatter::GpuScatter>,
    /// GPU scan kernels by tiles and GPU line sorts: their launch (see [`scan_gpu::GpuGrid`]);
    /// `None` otherwise.
    pub gpu_grid: Option<scan_gpu::GpuGrid>,
}

/// A GPU reduction split across blocks: the deterministic two-stage tree of reductions with
/// too few work items to fill the GPU (whole arrays, few rows, few columns). The cooperative
/// kernel's groups of `items` work items (see [`Coop`]) each get `splits` blocks: block `b`
/// (of `groups × splits`, `groups = ceil(work_items / items)`) folds the `b % splits`-th
/// contiguous chunk of the reduced elements of group `b / splits`'s items and writes their
/// partial accumulators to the scratch buffer; the group's last block to finish (an atomic
/// counter per group, counted by thread 0 after a barrier) combines each item's partials in a
/// fixed order and writes the outputs. The same input gives the same bits every run. Row
/// groups read their chunk in 16-byte runs per thread, several loads in flight
/// ([`Lower::split_lane_loop`]). Launch:
/// the kernel's buffers are followed by the scratch buffer (`slots × work_items × splits`
/// 8-byte slots) and the counters (`work_items` u32s, zero before the launch; the last block
/// sets its group's back to zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSplit {
    /// Blocks per work item.
    pub splits: usize,
    /// Accumulator components per work item and block (8 bytes each).
    pub slots: usize,
}

impl GpuSplit {
    /// Bytes of the scratch buffer for `work_items` work items.
    pub fn scratch_bytes(&self, work_items: usize) -> usize {
        8 * self.slots * self.splits * work_items
    }
}

/// The module attribute naming a kernel's [`MathLib`] when it is not the target's default.
pub(crate) const MATH_ATTR: &str = "kiln.math";

/// Reductions are split across blocks when they would launch fewer than SPLIT_BLOCKS blocks
/// and reduce at least SPLIT_MIN_REDUCED elements per item; the splits bring the grid to about
/// SPLIT_BLOCKS blocks, each lane folding at least SPLIT_MIN_PER_LANE elements.
const SPLIT_BLOCKS: usize = 1024;
const SPLIT_MIN_REDUCED: usize = 4096;
const SPLIT_MIN_PER_LANE: usize = 64;

/// A reduction computed ahead of its uses, per work item.
#[derive(Clone, Debug)]
enum Hoisted {
    /// Row mode: the value.
    Val(Val),
    /// Block mode: one value per work item of the block, in a stack array.
    Scratch { ptr: String, dt: DType },
}

/// Work items a block-mode kernel handles together (the size of its stack arrays).
const BLOCK: usize = 256;

/// Side of the tiles of elementwise kernels reading a transposed input.
const TILE: usize = 32;

/// Why emission stopped.
enum Stop {
    Unsupported(Unsupported),
    NeedsDims,
}

impl From<Unsupported> for Stop {
    fn from(u: Unsupported) -> Stop {
        Stop::Unsupported(u)
    }
}

impl From<NeedsDims> for Stop {
    fn from(_: NeedsDims) -> Stop {
        Stop::NeedsDims
    }
}

/// Lowers a region to a host kernel. Errors: an op, dtype or region kind not supported yet.
pub fn lower(region: &Region) -> Result<Kernel, Unsupported> {
    lower_for(region, Target::Host)
}

/// Lowers a region to a kernel for `target`: for [`Target::Gpu`] the module also holds the
/// `@kiln_gpu` entry ([`GPU_ENTRY`]). Math functions through the target's library on this
/// machine ([`MathLib::for_target`]).
pub fn lower_for(region: &Region, target: Target) -> Result<Kernel, Unsupported> {
    lower_with(region, target, MathLib::for_target(target))
}

/// Lowers a region to a kernel for `target` with math functions computed by `math`.
/// Errors: as [`lower_for`]; a library that `target` cannot call (libm on the GPU, libdevice on
/// the host); under [`MathLib::Polynomial`] a function it has no approximation for (float64).
pub fn lower_with(region: &Region, target: Target, math: MathLib) -> Result<Kernel, Unsupported> {
    lower_vec(region, target, math, true)
}

/// [`lower_with`], for [`Target::Gpu`] with or without the elementwise kernels' unrolled
/// paths that take [`GPU_VEC`] items at a time (`gpu_vec`; without them a thread takes one
/// item at a time: one copy of the region's code, not five, for the fast tier of GPU code).
pub fn lower_vec(
    region: &Region,
    target: Target,
    math: MathLib,
    gpu_vec: bool,
) -> Result<Kernel, Unsupported> {
    lower_options(region, target, Options { math, gpu_vec, online_softmax: online_softmax(target) })
}

/// How a region is lowered for its target (see [`lower_options`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Where math functions come from.
    pub math: MathLib,
    /// GPU elementwise kernels' unrolled paths (see [`lower_vec`]).
    pub gpu_vec: bool,
    /// Softmaxes fold their max and sum in one pass over the row (module `online`), layer
    /// norms their sum and sum of squares (module `moments`); by default on the GPU only (see
    /// [`online_softmax`]'s figures).
    pub online_softmax: bool,
}

/// Lowers a region to a kernel for `target` as `options` say. Errors: as [`lower_with`].
pub fn lower_options(
    region: &Region,
    target: Target,
    options: Options,
) -> Result<Kernel, Unsupported> {
    let Options { math, gpu_vec, online_softmax } = options;
    if matches!((target, math), (Target::Host, MathLib::Libdevice) | (Target::Gpu, MathLib::Libm)) {
        return Err(Unsupported::new(
            None,
            format!("{} math functions on the {target:?} target", math.name()),
        ));
    }
    let body = &region.body;
    let mut inputs: Vec<(DType, Vec<usize>)> = vec![(DType::Bool, Vec::new()); body.num_inputs()];
    for n in body.nodes() {
        if let (OpKind::Input, Attrs::Input { index }) = (n.op, &n.attrs) {
            inputs[*index as usize] = (n.dtype, n.shape.to_vec());
        }
    }
    let outputs: Vec<(DType, Vec<usize>)> =
        body.outputs().iter().map(|&o| (body.node(o).dtype, body.node(o).shape.to_vec())).collect();
    for (dt, _) in inputs.iter().chain(&outputs) {
        check_dtype(*dt)?;
    }
    let scatter = match &region.space {
        Space::Scatter { .. } => scatter::combines(body, target)?,
        _ => Vec::new(),
    };
    let (work_items, cost_per_item, flat_first) = match &region.space {
        Space::Elementwise { shape } => (numel(shape), 1, true),
        Space::Reduce { shape, axes } => {
            let kept: usize =
                (0..shape.len()).filter(|a| !axes.contains(a)).map(|a| shape[a]).product();
            let reduced: usize = axes.iter().map(|&a| shape[a]).product();
            let passes = body.nodes().iter().filter(|n| n.op.is_reduction()).count() + 1;
            (kept, reduced.max(1) * passes, false)
        }
        Space::Scatter { items } => (numel(items), scatter::cost_per_item(body, items), false),
        Space::Scan { shape, axis } => (scan::rows(shape, *axis), shape[*axis].max(1), false),
        Space::Opaque if region.kind == RegionKind::Sort && target == Target::Gpu => {
            let s = sort_gpu::plan(region)?;
            (s.lines(), 1, false)
        }
        Space::Opaque => {
            let op = region.op_names().first().copied().unwrap_or("?");
            return Err(Unsupported::new(
                Some(op),
                format!("a {} region (no code generation for it yet)", region.kind.name()),
            ));
        }
    };
    // 32-bit index divisions on the GPU when every index fits (arrays of 2^31 elements or more
    // get 64-bit ones).
    let index32 =
        target == Target::Gpu && body.nodes().iter().all(|n| numel(&n.shape) < (1usize << 31));
    let attempt = |flat: bool| -> Result<(String, Vec<i64>, Launch), Stop> {
        let mut cx = Lower::new(body, inputs.len(), outputs.len(), target);
        cx.gpu_vec = gpu_vec && target == Target::Gpu;
        cx.online = online_softmax;
        cx.b.math = math;
        cx.b.index32 = index32;
        match &region.space {
            Space::Elementwise { shape } => cx.elementwise(shape, flat)?,
            Space::Reduce { shape, axes } => cx.reduction(shape, axes)?,
            Space::Scatter { items } if target == Target::Gpu => {
                cx.b.const_extents = scatter::CONST_EXTENTS;
                cx.scatter_gpu(items)?
            }
            Space::Scatter { items } => {
                cx.b.const_extents = scatter::CONST_EXTENTS;
                cx.scatter(items)?
            }
            Space::Scan { shape, axis }
                if target == Target::Gpu
                    && let Some(tiles) = scan_gpu::gpu_tiles(body, shape, *axis) =>
            {
                cx.scan_gpu(shape, *axis, tiles)?
            }
            Space::Scan { shape, axis } => cx.scan(shape, *axis)?,
            Space::Opaque => cx.sort_lines_gpu(&sort_gpu::plan(region)?)?,
        }
        Ok(cx.finish())
    };
    let (
        mlir,
        params,
        Launch { min_chunk, gpu_block, gpu_split, gpu_shared, gpu_scatter, gpu_grid },
    ) = match attempt(flat_first) {
        Ok(r) => r,
        Err(Stop::NeedsDims) if flat_first => match attempt(false) {
            Ok(r) => r,
            Err(Stop::Unsupported(u)) => return Err(u),
            Err(Stop::NeedsDims) => unreachable!("row loops always have a multi-index"),
        },
        Err(Stop::NeedsDims) => unreachable!("reductions and scatters always have a multi-index"),
        Err(Stop::Unsupported(u)) => return Err(u),
    };
    Ok(Kernel {
        mlir,
        params,
        work_items,
        cost_per_item,
        min_chunk,
        gpu_block,
        gpu_split,
        gpu_shared,
        inputs,
        outputs,
        math,
        scatter,
        gpu_scatter,
        gpu_grid,
    })
}

/// How a kernel is launched: see the fields of the same names in [`Kernel`].
struct Launch {
    min_chunk: usize,
    gpu_block: Option<(usize, usize)>,
    gpu_split: Option<GpuSplit>,
    gpu_shared: usize,
    gpu_scatter: Option<scatter::GpuScatter>,
    gpu_grid: Option<scan_gpu::GpuGrid>,
}

struct Lower<'g> {
    body: &'g Graph,
    b: Builder,
    n_in: usize,
    n_out: usize,
    /// Values already emitted, by (node, index), one map per open region.
    memo: Vec<HashMap<(NodeId, String), Val>>,
    /// Reductions over the region's own space, computed once per work item.
    hoisted: HashMap<NodeId, Hoisted>,
    /// In block mode, the index of the current work item within its block.
    block_jj: Option<String>,
    /// The kept-axes index of the current work item (reduction regions).
    work: Vec<String>,
    /// Values staged in an output buffer: (value, output, the hoisted reduction whose loop
    /// stores it). See [`staged_values`].
    staged: Vec<(NodeId, usize, NodeId)>,
    /// The hoisted reduction being emitted, if any.
    hoisting: Option<NodeId>,
    /// See [`Kernel::min_chunk`].
    min_chunk: usize,
    /// Which nodes are constant subexpressions (`fold::constant_nodes`).
    constant: Vec<bool>,
    /// On the GPU, a reduction shared by the threads of a group (see [`Coop`]).
    coop: Option<Coop>,
    /// A cooperative reduction split across blocks (see [`GpuSplit`]): the number of splits.
    split: Option<usize>,
    /// In a split kernel: the block's split index and the work item (SSA names; the group is
    /// `%group`).
    split_at: Option<(String, String)>,
    /// In a split kernel: accumulator components written so far (slots).
    split_slots: usize,
    /// Work items of a reduction kernel.
    work_items: usize,
    /// Group combines emitted so far (see [`Lower::group_combine_warps`]).
    combines: usize,
    /// The row cache of a cooperative row kernel, if it has one (see [`Lower::row_cache_plan`]).
    row_cache: Option<RowCache>,
    /// The pass over the reduced axes being emitted: the `k`-th reduction over the region's
    /// space, then the output pass (see [`RowCache`]).
    pass: usize,
    /// An elementwise kernel in one flat loop (no multi-index).
    flat: bool,
    /// GPU elementwise kernels take [`GPU_VEC`] items at a time (unrolled, vector loads).
    gpu_vec: bool,
    /// Softmaxes and layer norms fold their two reductions in one pass (see [`Pair`]).
    online: bool,
    /// A GPU scatter kernel's staged inputs and current tile (module `scatter`).
    tile: Option<scatter::Tile>,
    /// A GPU scatter kernel's launch and its bytes of shared memory.
    scatter_launch: Option<(scatter::GpuScatter, usize)>,
    /// A GPU scan or line-sort kernel's launch and its bytes of shared memory.
    grid_launch: Option<(scan_gpu::GpuGrid, usize)>,
}

/// Two reductions over a row region's space folded in one pass over the row: a softmax's max
/// and sum (module `online`), a layer norm's sum and sum of squared deviations (`moments`).
enum Pair {
    Softmax(Online),
    Moments(Moments),
}

impl Pair {
    /// The pairs among `level1` (the reductions over a row region's axes of `shape`, the kept
    /// shape with those axes at 1 being `keep_ones`), no reduction in two. Softmaxes' rescale
    /// factors are float64 on the host only (see [`Online::find`]).
    fn find(
        body: &Graph,
        shape: &[usize],
        keep_ones: &[usize],
        level1: &[NodeId],
        math: MathLib,
        target: Target,
    ) -> Vec<Pair> {
        let wide = target == Target::Host;
        let mut pairs: Vec<Pair> = Online::find(body, shape, keep_ones, level1, math, wide)
            .into_iter()
            .map(Pair::Softmax)
            .collect();
        for m in Moments::find(body, shape, keep_ones, level1) {
            if !pairs
                .iter()
                .any(|p| [p.first(), p.second()].iter().any(|&r| r == m.sum || r == m.squares))
            {
                pairs.push(Pair::Moments(m));
            }
        }
        pairs
    }

    /// The reduction at whose pass both fold.
    fn first(&self) -> NodeId {
        match self {
            Pair::Softmax(o) => o.max,
            Pair::Moments(m) => m.sum,
        }
    }

    /// The reduction folded with it.
    fn second(&self) -> NodeId {
        match self {
            Pair::Softmax(o) => o.sum,
            Pair::Moments(m) => m.squares,
        }
    }

    fn combiner(&self) -> &dyn Combine {
        match self {
            Pair::Softmax(o) => o,
            Pair::Moments(m) => m,
        }
    }

    fn init(&self, b: &mut Builder) -> Vec<String> {
        match self {
            Pair::Softmax(o) => o.init(b),
            Pair::Moments(m) => m.init(b),
        }
    }
}

/// Elements of a row each lane of a cooperative kernel takes at a step of a [`Pair`]'s fold.
const PAIR_UNROLL: usize = 8;

/// Work items a GPU thread takes at a time in elementwise kernels.
const GPU_VEC: usize = 4;

/// Threads per block of cooperative GPU reductions.
const COOP_BLOCK: usize = 256;

/// Threads of a warp.
const WARP: usize = 32;

/// The lane a warp shuffle reads (see [`Lower::shfl`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shfl {
    Bfly,
    Up,
    Idx,
}

/// Warps per block of cooperative GPU reductions.
const BLOCK_WARPS: usize = COOP_BLOCK / WARP;

/// Accumulator components a reduction has at most (`Acc::tys`).
const MAX_ACC: usize = 2;

/// A cooperative GPU reduction: `lanes` threads of a block share each work item, each folding
/// the elements `lane, lane + lanes, ...` of the reduced axes (flattened); the partial
/// accumulators are combined by a fixed tree, so every lane holds the same result.
/// Row layout: the lanes of an item are consecutive threads, whole warps (coalesced along a
/// contiguous reduced axis); they combine by warp shuffles, then across the item's warps
/// through shared memory with one barrier ([`Lower::group_combine_warps`]), and a region input
/// that several passes over the row read is read from global memory once when the block's
/// rows fit in shared memory ([`RowCache`]). Column layout: consecutive threads take
/// consecutive items, the lanes of an item `items` threads apart (coalesced along a contiguous
/// kept axis); they combine by a tree in shared memory, a barrier per step.
#[derive(Clone, Copy, Debug)]
struct Coop {
    lanes: usize,
    items: usize,
    columns: bool,
}

/// The fences of split reductions (see [`GpuSplit`]): the blocks that exchange partials are of
/// one launch on one device, so a device-scope fence (`fence.acq_rel.gpu`) orders them; the
/// system scope's (`.sys`) would also wait for the host's view of memory.
const DEVICE_FENCE: &str = "llvm.fence syncscope(\"device\") acq_rel";

/// Loads a thread of a split row kernel has in flight in its lane loop (see
/// [`Lower::split_lane_loop`]), each of [`SPLIT_VEC_BYTES`]. The kernel alone, sum of 2^26
/// float32 on an H200 (1024 blocks, its cubin linked as kiln links it, `cuLinkAddData`): 0.072
/// ms with 2, 0.070 with 4 (40 registers) and with 8 (42), against 0.118 for the scalar lane
/// loop before it (whose loads that JIT issued one after another) and a device-to-device copy
/// at 4.1 TB/s.
const SPLIT_UNROLL: usize = 4;

/// Bytes of consecutive elements a thread of a split row kernel reads at once: a 128-bit load.
const SPLIT_VEC_BYTES: usize = 16;

/// The split lane loop's loads in flight per thread, for measuring it (read once per process):
/// `KILN_GPU_SPLIT_UNROLL` = 1, 2, 4 or 8 (default [`SPLIT_UNROLL`]). It changes the kernel's
/// text, so its cache key.
fn split_unroll() -> usize {
    static SETTING: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SETTING.get_or_init(|| {
        std::env::var("KILN_GPU_SPLIT_UNROLL")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|u: &usize| [1, 2, 4, 8].contains(u))
            .unwrap_or(SPLIT_UNROLL)
    })
}

/// Whether softmaxes and layer norms fold their two reductions in one pass (see [`Pair`]) on
/// `target`, read once per process: `KILN_ONLINE_SOFTMAX=on|off` for both targets; by default
/// on the GPU only.
/// It changes the kernel's text, so its cache key. On the host the one pass does not vectorise
/// (a branch per element, a scalar `expf` call): softmax over the rows of 4096×4096 float32
/// took 105–108 ms with it against 22–24 ms in three passes (`cargo bench --bench cpu_peers
/// -- softmax`, the 2-core development machine), whose row is in cache after its first pass.
pub fn online_softmax(target: Target) -> bool {
    static SETTING: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    let setting =
        *SETTING.get_or_init(|| match std::env::var("KILN_ONLINE_SOFTMAX").ok().as_deref() {
            Some("on") => Some(true),
            Some("off") => Some(false),
            _ => None,
        });
    setting.unwrap_or(target == Target::Gpu)
}

/// Bytes of dynamic shared memory a row cache may take per block: with the static shared
/// memory of a row kernel (under 1 KiB) within the 48 KiB a launch gets without opting in.
const ROW_CACHE_BYTES: usize = 44 * 1024;

/// Elements of a row each thread loads at once when filling the row cache (its loads in flight:
/// a lane loop's load is used before the next is issued). On an H200, rows of 8192 float32:
/// softmax 0.220 ms with 4, 0.221 with 8, 0.218 with 16 (0.356 without the cache); layernorm
/// 0.317, 0.268, 0.270 (0.252 without).
const ROW_CACHE_UNROLL: usize = 8;

/// The row cache's tuning, for measuring it (read once per process): `KILN_GPU_ROW_CACHE=off`
/// leaves row kernels multi-pass over global memory; a number sets the fill's loads in flight
/// per thread (default [`ROW_CACHE_UNROLL`]). Both change the kernel's text, so its cache key.
fn row_cache_setting() -> Option<usize> {
    static SETTING: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *SETTING.get_or_init(|| match std::env::var("KILN_GPU_ROW_CACHE").ok().as_deref() {
        Some("off") => None,
        Some(n) => Some(
            n.parse().ok().filter(|&u: &usize| (1..=32).contains(&u)).unwrap_or(ROW_CACHE_UNROLL),
        ),
        None => Some(ROW_CACHE_UNROLL),
    })
}

/// The row cache of a cooperative row kernel (see [`Lower::row_cache_plan`]): the region
/// inputs that several passes over a work item's row read, copied to shared memory before the
/// first pass ([`Lower::row_cache_fill`]: [`ROW_CACHE_UNROLL`] loads in flight per thread) and
/// read from there by the passes. Each thread reads back only the elements it stored (the fill
/// and the lane loops of all passes visit the same positions), so no barrier guards it.
#[derive(Clone, Debug)]
struct RowCache {
    /// The cached inputs, largest elements first (each part stays aligned).
    inputs: Vec<CachedRow>,
    /// Elements of a row (the reduced axes' size).
    row: usize,
    /// Bytes per block: `items × row ×` the sum of the inputs' element sizes.
    bytes: usize,
}

#[derive(Clone, Debug)]
struct CachedRow {
    /// The `input` node.
    node: NodeId,
    /// Its dtype, its register type and that type's size in bytes.
    dt: DType,
    ty: &'static str,
    size: usize,
    /// Bytes of the inputs before it, per row element and work item.
    offset: usize,
    /// The passes reading it (see [`Lower::pass`]), in order.
    passes: Vec<usize>,
    /// `None` for a region input, copied in by the fill. `Some(p)` for a value the prologue of
    /// reduction pass `p` computes (softmax's `exp(x - max)`): that pass stores it, the later
    /// passes in `passes` read it back instead of computing it again. It may share the slot of
    /// an input no pass after `p` reads (each thread overwrites only elements it has read).
    written_in: Option<usize>,
}

impl<'g> Lower<'g> {
    fn new(body: &'g Graph, n_in: usize, n_out: usize, target: Target) -> Lower<'g> {
        Lower {
            body,
            b: Builder::new("%params", target),
            n_in,
            n_out,
            memo: vec![HashMap::new()],
            hoisted: HashMap::new(),
            block_jj: None,
            work: Vec::new(),
            staged: Vec::new(),
            hoisting: None,
            min_chunk: 1,
            coop: None,
            split: None,
            split_at: None,
            split_slots: 0,
            work_items: 0,
            combines: 0,
            row_cache: None,
            pass: 0,
            flat: false,
            gpu_vec: false,
            online: false,
            tile: None,
            scatter_launch: None,
            grid_launch: None,
            constant: super::fold::constant_nodes(body),
        }
    }

    fn in_ptr(k: usize) -> String {
        format!("%in{k}")
    }

    fn out_ptr(k: usize) -> String {
        format!("%out{k}")
    }

    /// Opens a region of an op (see [`Builder::open`]) and a memo scope with it.
    fn open(&mut self, n: usize, header: &str) -> Vec<String> {
        self.memo.push(HashMap::new());
        self.b.open(n, header)
    }

    fn close(&mut self) {
        self.memo.pop();
        self.b.close();
    }

    /// Closes an `scf.for` LLVM must not unroll ([`NO_UNROLL`]).
    fn close_no_unroll(&mut self) {
        self.memo.pop();
        self.b.close_with(NO_UNROLL);
    }

    /// `scf.for %iv = lb to ub` with accumulators; returns (iv, iter arg names, results).
    fn open_for(
        &mut self,
        lb: &str,
        ub: &str,
        init: &[String],
        tys: &[&str],
    ) -> (String, Vec<String>, Vec<String>) {
        self.open_for_step(lb, ub, None, init, tys)
    }

    /// `scf.for %iv = lb to ub step step` (1 for `None`) with accumulators (`init`, of types
    /// `tys`; none for a loop without results); returns (iv, iter arg names, results).
    fn open_for_step(
        &mut self,
        lb: &str,
        ub: &str,
        step: Option<&str>,
        init: &[String],
        tys: &[&str],
    ) -> (String, Vec<String>, Vec<String>) {
        let iv = self.b.fresh();
        let step = match step {
            Some(s) => s.to_string(),
            None => self.b.i64(1),
        };
        let args: Vec<String> = init.iter().map(|_| self.b.fresh()).collect();
        let header = if init.is_empty() {
            format!("scf.for {iv} = {lb} to {ub} step {step} : i64")
        } else {
            let iter: Vec<String> =
                args.iter().zip(init).map(|(a, i)| format!("{a} = {i}")).collect();
            format!(
                "scf.for {iv} = {lb} to {ub} step {step} iter_args({}) -> ({}) : i64",
                iter.join(", "),
                tys.join(", ")
            )
        };
        let results = self.open(init.len(), &header);
        (iv, args, results)
    }

    fn yield_(&mut self, vals: &[String], tys: &[&str]) {
        if !vals.is_empty() {
            self.b.stmt(&format!("scf.yield {} : {}", vals.join(", "), tys.join(", ")));
        }
    }

    fn lookup(&self, key: &(NodeId, String)) -> Option<Val> {
        self.memo.iter().rev().find_map(|m| m.get(key).cloned())
    }

    /// The value of node `id` at index `ix` of its result.
    fn emit(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        let key = (id, ix.key());
        if let Some(v) = self.lookup(&key) {
            return Ok(v);
        }
        let node: &'g Node = self.body.node(id);
        let v = match node.op.class() {
            OpClass::Leaf => match (&node.op, &node.attrs) {
                (OpKind::Input, Attrs::Input { index }) => {
                    let pos = match &ix.flat {
                        Some(f) => f.clone(),
                        None => ravel(&mut self.b, ix.dims()?, &node.shape),
                    };
                    let staged = self
                        .tile
                        .as_ref()
                        .and_then(|t| t.staged.iter().find(|s| s.index() == *index as usize))
                        .cloned();
                    match (staged, &ix.dims) {
                        (Some(st), Some(dims))
                            if self.tile.as_ref().is_some_and(|t| t.at.is_some()) =>
                        {
                            let dims = dims.clone();
                            self.staged_load(&st, &dims, &pos).expect("inside a tile")
                        }
                        _ => load(&mut self.b, &Self::in_ptr(*index as usize), &pos, node.dtype),
                    }
                }
                (OpKind::Const, Attrs::Const { value }) => {
                    literal(&mut self.b, *value, node.dtype)?
                }
                (OpKind::Iota, Attrs::Iota { axis }) => {
                    let i = Val::new(ix.dims()?[*axis].clone(), DType::Int64);
                    super::cast::cast(&mut self.b, &i, node.dtype)?
                }
                _ => unreachable!("a leaf with the wrong attributes"),
            },
            // Computed now, by the evaluator (see `fold`).
            OpClass::Elementwise if self.constant[id.index()] => {
                super::fold::constant_value(&mut self.b, self.body, id)?
            }
            OpClass::Elementwise => {
                let mut args = Vec::with_capacity(node.inputs.len());
                for &i in &node.inputs {
                    args.push(self.emit(i, ix)?);
                }
                scalar::elementwise(&mut self.b, node, &args)?
            }
            OpClass::View => {
                let input = self.body.node(node.inputs[0]);
                let inner = through_view(&mut self.b, node, input, ix)?;
                self.emit(node.inputs[0], &inner)?
            }
            OpClass::Reduce => self.reduction_value(id, ix)?,
            OpClass::Gather => {
                // Fusion leaves the gathered operand a region input: a buffer read at a position.
                let src = self.body.node(node.inputs[0]);
                let (OpKind::Input, Attrs::Input { index }) = (src.op, &src.attrs) else {
                    return Err(Unsupported::new(
                        Some(node.op.name()),
                        "gathering from a value computed in the region".into(),
                    )
                    .into());
                };
                let k = self.emit(node.inputs[1], ix)?;
                super::gather::take(
                    &mut self.b,
                    &Self::in_ptr(*index as usize),
                    &src.shape,
                    &k,
                    node.dtype,
                )
            }
            OpClass::Scatter
            | OpClass::Scan
            | OpClass::Sort
            | OpClass::Copy
            | OpClass::Vendor
            | OpClass::Custom => {
                return Err(
                    Unsupported::new(Some(node.op.name()), "inside a fused region".into()).into()
                )
            }
        };
        self.memo.last_mut().expect("a memo scope is open").insert(key, v.clone());
        Ok(v)
    }

    /// A reduction's value at `ix`: the hoisted one if `ix` is the current work item's, else a
    /// loop nest right here.
    fn reduction_value(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        if let Some(h) = self.hoisted.get(&id).cloned() {
            let node = self.body.node(id);
            let Attrs::Reduce { axes, keepdims } = &node.attrs else { unreachable!("verified") };
            let dims = ix.dims()?;
            let kept: Vec<&String> = if *keepdims {
                dims.iter().enumerate().filter(|(k, _)| !axes.contains(k)).map(|(_, d)| d).collect()
            } else {
                dims.iter().collect()
            };
            if kept.len() == self.work.len() && kept.iter().zip(&self.work).all(|(a, b)| *a == b) {
                match h {
                    Hoisted::Val(v) => return Ok(v),
                    Hoisted::Scratch { ptr, dt } => {
                        if let Some(jj) = self.block_jj.clone() {
                            let ty = work_ty(dt)?;
                            let addr = self.b.op(&format!(
                                "llvm.getelementptr inbounds {ptr}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}"
                            ));
                            let v = self.b.op(&format!("llvm.load {addr} : !llvm.ptr -> {ty}"));
                            return Ok(Val::new(v, dt));
                        }
                    }
                }
            }
        }
        self.emit_reduction(id, ix)
    }

    /// Emits the loop nest computing reduction `id` at index `ix` of its result.
    fn emit_reduction(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        if let Some(v) = self.unrolled_reduction(id, ix)? {
            return Ok(v);
        }
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let acc = Acc::new(node.op, self.body.node(input).dtype)?;
        let init = acc.init(&mut self.b);
        let tys = acc.tys.clone();
        let zero = self.b.i64(0);
        let (full, ivs, results, cur) = self.open_fold_loops(id, ix, init, &tys)?;
        if ivs.is_empty() {
            // No axis to reduce: one step from the identity.
            let v = self.emit(input, &Ix { dims: Some(full), flat: None })?;
            let next = acc.step(&mut self.b, &cur, &v, &zero)?;
            return Ok(acc.finish(&mut self.b, &next, node.dtype)?);
        }
        let full_ix = Ix { dims: Some(full), flat: None };
        let v = self.emit(input, &full_ix)?;
        // Values this loop computes for a full-shape output: keep them in its buffer.
        let staged: Vec<(NodeId, usize)> =
            self.staged.iter().filter(|s| Some(s.2) == self.hoisting).map(|s| (s.0, s.1)).collect();
        for (e, k) in staged {
            if let Some(val) = self.lookup(&(e, full_ix.key())) {
                let pos = ravel(&mut self.b, full_ix.dims.as_deref().expect("dims"), &in_shape);
                store(&mut self.b, &Self::out_ptr(k), &pos, &val);
            }
        }
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| in_shape[a]).collect();
        let pos =
            if acc.needs_pos() { ravel(&mut self.b, &ivs, &reduced_shape) } else { zero.clone() };
        let next = acc.step(&mut self.b, &cur, &v, &pos)?;
        self.close_fold_loops(&next, &results, &tys);
        Ok(acc.finish(&mut self.b, &results[0], node.dtype)?)
    }

    /// Opens the loops of reduction `id` at index `ix` of its result, one per reduced axis,
    /// folding `init` (of types `tys`). Returns the input's full index, the loops' induction
    /// variables, their results (outermost first) and the innermost body's accumulators; none
    /// is opened when no axis is reduced. Close them with [`Lower::close_fold_loops`].
    #[allow(clippy::type_complexity)]
    fn open_fold_loops(
        &mut self,
        id: NodeId,
        ix: &Ix,
        init: Vec<String>,
        tys: &[&str],
    ) -> Result<(Vec<String>, Vec<String>, Vec<Vec<String>>, Vec<String>), Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = self.body.node(node.inputs[0]).shape.clone();
        let mut kept = self.kept_index(id, ix)?.into_iter();
        let zero = self.b.i64(0);
        let mut full: Vec<String> = Vec::with_capacity(in_shape.len());
        let mut ivs: Vec<String> = Vec::new();
        let mut results: Vec<Vec<String>> = Vec::new();
        let mut cur = init;
        for (k, &n) in in_shape.iter().enumerate() {
            if axes.contains(&k) {
                let ub = extent(&mut self.b, n);
                let (iv, args, res) = self.open_for(&zero, &ub, &cur, tys);
                full.push(iv.clone());
                ivs.push(iv);
                results.push(res);
                cur = args;
            } else {
                full.push(kept.next().expect("kept axes match the result's"));
            }
        }
        Ok((full, ivs, results, cur))
    }

    /// How many elements reduction `id` folds into each of its results (a kernel parameter).
    fn reduced_count(&mut self, id: NodeId) -> String {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = &self.body.node(node.inputs[0]).shape;
        self.b.param(axes.iter().map(|&a| in_shape[a]).product::<usize>() as i64)
    }

    /// The kept part of reduction `id`'s input index at index `ix` of its result, in input-axis
    /// order.
    fn kept_index(&self, id: NodeId, ix: &Ix) -> Result<Vec<String>, Stop> {
        let Attrs::Reduce { axes, keepdims } = &self.body.node(id).attrs else {
            unreachable!("verified")
        };
        let dims = ix.dims()?;
        Ok(if *keepdims {
            dims.iter()
                .enumerate()
                .filter(|(k, _)| !axes.contains(k))
                .map(|(_, d)| d.clone())
                .collect()
        } else {
            dims.to_vec()
        })
    }

    /// Yields `next` from the innermost loop of [`Lower::open_fold_loops`] and closes the loops
    /// inside out, each outer body yielding its inner loop's results.
    fn close_fold_loops(&mut self, next: &[String], results: &[Vec<String>], tys: &[&str]) {
        self.yield_(next, tys);
        for level in (0..results.len()).rev() {
            self.close();
            if level > 0 {
                self.yield_(&results[level], tys);
            }
        }
    }

    /// One element of a softmax's one-pass fold (see [`Online`]) at the input's index `ix`:
    /// the running max raised by `x`, the sum rescaled to it, then `exp(x - max)` added (the
    /// region's own nodes, the max read as the running one).
    fn online_step(&mut self, on: &Online, args: &[String], ix: &Ix) -> Result<Vec<String>, Stop> {
        let x = self.emit(on.x, ix)?;
        let m = on.raise(&mut self.b, &args[0], &x);
        let s = on.rescale(&mut self.b, &args[1], &args[0], &m)?;
        let e = self.online_terms(on, &m, std::slice::from_ref(ix))?;
        let s = on.add(&mut self.b, &s, &e[0], &m)?;
        Ok(vec![m, s])
    }

    /// A softmax's terms `exp(x - m)` at `ixs`, the max read as the running one `m` (the
    /// region's own nodes).
    fn online_terms(&mut self, on: &Online, m: &str, ixs: &[Ix]) -> Result<Vec<Val>, Stop> {
        self.hoisted.insert(on.max, Hoisted::Val(on.running(m)));
        let terms = ixs.iter().map(|ix| self.emit(on.exp, ix)).collect();
        self.hoisted.remove(&on.max);
        terms
    }

    /// Two reductions at the work item `ix` in one loop nest (see [`Pair`]).
    fn emit_pair(&mut self, p: &Pair, ix: &Ix) -> Result<(Val, Val), Stop> {
        let shift = self.pair_prelude(p, ix)?;
        let init = p.init(&mut self.b);
        let tys = p.combiner().tys().to_vec();
        let (full, _, results, cur) = self.open_fold_loops(p.first(), ix, init, &tys)?;
        let next =
            self.pair_step(p, &cur, &Ix { dims: Some(full), flat: None }, shift.as_deref())?;
        self.close_fold_loops(&next, &results, &tys);
        self.pair_finish(p, &results[0], ix, shift.as_deref())
    }

    /// Before a pair's loop: a layer norm's shift, the row's first element (see [`Moments`]).
    fn pair_prelude(&mut self, p: &Pair, ix: &Ix) -> Result<Option<String>, Stop> {
        let Pair::Moments(m) = p else { return Ok(None) };
        let Attrs::Reduce { axes, .. } = &self.body.node(m.sum).attrs else {
            unreachable!("verified")
        };
        let rank = self.body.node(m.x).shape.len();
        let zero = self.b.i64(0);
        let mut kept = self.kept_index(m.sum, ix)?.into_iter();
        let full: Vec<String> = (0..rank)
            .map(|a| if axes.contains(&a) { zero.clone() } else { kept.next().expect("kept axes") })
            .collect();
        let first = self.emit(m.x, &Ix { dims: Some(full), flat: None })?;
        Ok(Some(m.shift(&mut self.b, &first)?))
    }

    /// One element of a pair's fold at the input's index `ix`.
    fn pair_step(
        &mut self,
        p: &Pair,
        args: &[String],
        ix: &Ix,
        shift: Option<&str>,
    ) -> Result<Vec<String>, Stop> {
        match p {
            Pair::Softmax(on) => self.online_step(on, args, ix),
            Pair::Moments(m) => {
                let x = self.emit(m.x, ix)?;
                Ok(m.step(&mut self.b, args, &x, shift.expect("a layer norm's shift"))?)
            }
        }
    }

    /// A pair's two values from its fold `acc` (a layer norm's mean computed from its sum at
    /// `ix`, by the region's own ops, for its sum of squares).
    fn pair_finish(
        &mut self,
        p: &Pair,
        acc: &[String],
        ix: &Ix,
        shift: Option<&str>,
    ) -> Result<(Val, Val), Stop> {
        match p {
            Pair::Softmax(on) => Ok(on.finish(&mut self.b, acc)?),
            Pair::Moments(m) => {
                let c = shift.expect("a layer norm's shift");
                let n = self.reduced_count(m.sum);
                let s1 = m.sum_value(&mut self.b, acc, c, &n)?;
                self.hoisted.insert(m.sum, Hoisted::Val(s1.clone()));
                let mu = self.emit(m.mean, ix)?;
                let s2 = m.squares_value(&mut self.b, acc, c, &n, &mu)?;
                Ok((s1, s2))
            }
        }
    }

    /// The kernel of an elementwise region over `shape`.
    fn elementwise(&mut self, shape: &[usize], flat: bool) -> Result<(), Stop> {
        let outs: Vec<NodeId> = self.body.outputs().to_vec();
        for &o in &outs {
            if self.body.node(o).shape.as_slice() != shape {
                return Err(Unsupported::new(
                    None,
                    format!(
                        "an output of shape {:?} in a region over {shape:?}",
                        self.body.node(o).shape
                    ),
                )
                .into());
            }
        }
        let store_all = |cx: &mut Lower, ix: &Ix, pos: &str| -> Result<(), Stop> {
            for (k, &o) in outs.iter().enumerate() {
                let v = cx.emit(o, ix)?;
                store(&mut cx.b, &Self::out_ptr(k), pos, &v);
            }
            Ok(())
        };
        if flat || shape.is_empty() {
            self.flat = true;
            if self.gpu_vec && !shape.is_empty() {
                // A full chunk of GPU_VEC elements (its start a multiple of GPU_VEC, see
                // `gpu_entry`): every input's elements are loaded first, in one basic block, so
                // LLVM merges them into vector loads (`ld.global.nc.v4.f32`); then computed;
                // then stored (merged likewise).
                let len = self.b.op("arith.subi %end, %start : i64");
                let vec = self.b.i64(GPU_VEC as i64);
                let full = self.b.op(&format!("arith.cmpi eq, {len}, {vec} : i64"));
                self.open(0, &format!("scf.if {full}"));
                let ixs: Vec<Ix> = (0..GPU_VEC)
                    .map(|k| {
                        let off = self.b.i64(k as i64);
                        let pos = self
                            .b
                            .op(&format!("arith.addi %start, {off} overflow<nsw, nuw> : i64"));
                        Ix { dims: None, flat: Some(pos) }
                    })
                    .collect();
                self.preload_and_store(shape, &outs, &ixs)?;
                self.b.next_region("else");
                self.memo.pop();
                self.memo.push(HashMap::new());
                let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
                store_all(self, &Ix { dims: None, flat: Some(iv.clone()) }, &iv)?;
                self.close_no_unroll();
                self.close();
                return Ok(());
            }
            let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
            let dims = if shape.is_empty() { Some(Vec::new()) } else { None };
            store_all(self, &Ix { dims, flat: Some(iv.clone()) }, &iv)?;
            self.close();
            return Ok(());
        }
        let r = shape.len();
        // A transposed input (contiguous along the second-to-last axis, strided along the last)
        // is read tile by tile, so its cache lines are used while they are loaded.
        let transposed = r >= 2
            && shape[r - 1] > 1
            && shape[r - 2] > 1
            && input_strides(self.body, shape)
                .iter()
                .any(|(_, st)| st[r - 1].abs() > 1 && st[r - 2].abs() == 1);
        if transposed {
            return self.elementwise_tiles(shape, &outs);
        }
        // Row segments: f runs from start to end; each iteration covers the rest of f's row.
        let e = extent(&mut self.b, shape[r - 1]);
        let gpu_full = self.gpu_vec && self.min_chunk == 1;
        if gpu_full {
            // A full chunk of GPU_VEC elements within one row: unrolled, inputs of the region's
            // shape loaded first at flat positions `start + k` (aligned: see `gpu_entry`), so
            // LLVM merges them into vector loads; then computed and stored.
            let len = self.b.op("arith.subi %end, %start : i64");
            let vec = self.b.i64(GPU_VEC as i64);
            let full = self.b.op(&format!("arith.cmpi eq, {len}, {vec} : i64"));
            let (row, j0) = self.b.divrem("%start", &e);
            let j_end = self.b.op(&format!("arith.addi {j0}, {vec} : i64"));
            let in_row = self.b.op(&format!("arith.cmpi ule, {j_end}, {e} : i64"));
            let fast = self.b.op(&format!("arith.andi {full}, {in_row} : i1"));
            self.open(0, &format!("scf.if {fast}"));
            let outer = unravel(&mut self.b, &row, &shape[..r - 1]);
            let ixs: Vec<Ix> = (0..GPU_VEC)
                .map(|k| {
                    let off = self.b.i64(k as i64);
                    let pos =
                        self.b.op(&format!("arith.addi %start, {off} overflow<nsw, nuw> : i64"));
                    let j = self.b.op(&format!("arith.addi {j0}, {off} overflow<nsw, nuw> : i64"));
                    let mut dims = outer.clone();
                    dims.push(j);
                    Ix { dims: Some(dims), flat: Some(pos) }
                })
                .collect();
            self.preload_and_store(shape, &outs, &ixs)?;
            self.b.next_region("else");
            self.memo.pop();
            self.memo.push(HashMap::new());
        }
        let f = self.b.fresh();
        let g = self.b.fresh();
        self.open(1, &format!("scf.while ({f} = %start) : (i64) -> i64"));
        let more = self.b.op(&format!("arith.cmpi slt, {f}, %end : i64"));
        self.b.stmt(&format!("scf.condition({more}) {f} : i64"));
        self.memo.pop();
        self.memo.push(HashMap::new());
        self.b.next_region("do");
        self.b.stmt(&format!("^bb0({g}: i64):"));
        let (row, j0) = self.b.divrem(&g, &e);
        let base = self.b.op(&format!("arith.subi {g}, {j0} : i64"));
        let row_end = self.b.op(&format!("arith.addi {base}, {e} : i64"));
        let seg_end = self.b.op(&format!("arith.minsi {row_end}, %end : i64"));
        let j1 = self.b.op(&format!("arith.subi {seg_end}, {base} : i64"));
        let outer = unravel(&mut self.b, &row, &shape[..r - 1]);
        let (j, _, _) = self.open_for(&j0, &j1, &[], &[]);
        let pos = self.b.op(&format!("arith.addi {base}, {j} overflow<nsw, nuw> : i64"));
        let mut dims = outer;
        dims.push(j.clone());
        store_all(self, &Ix { dims: Some(dims), flat: Some(pos.clone()) }, &pos)?;
        if gpu_full {
            self.close_no_unroll();
        } else {
            self.close();
        }
        self.b.stmt(&format!("scf.yield {seg_end} : i64"));
        self.close();
        if gpu_full {
            self.close();
        }
        Ok(())
    }

    /// The elements at `ixs` (consecutive flat positions) of a GPU elementwise kernel: the
    /// inputs of the region's size loaded first, in one basic block (LLVM's load-store
    /// vectoriser merges them), then the outputs computed, then stored.
    fn preload_and_store(
        &mut self,
        shape: &[usize],
        outs: &[NodeId],
        ixs: &[Ix],
    ) -> Result<(), Stop> {
        let n = numel(shape);
        let body = self.body;
        let direct: Vec<NodeId> = (0..body.len())
            .map(|i| NodeId(i as u32))
            .filter(|&i| body.node(i).op == OpKind::Input && numel(&body.node(i).shape) == n)
            .collect();
        for &i in &direct {
            for ix in ixs {
                self.emit(i, ix)?;
            }
        }
        let mut vals = Vec::new();
        for ix in ixs {
            for &o in outs {
                vals.push(self.emit(o, ix)?);
            }
        }
        let mut it = vals.iter();
        for ix in ixs {
            let pos = ix.flat.clone().expect("a flat index");
            for k in 0..outs.len() {
                store(&mut self.b, &Self::out_ptr(k), &pos, it.next().expect("a value per output"));
            }
        }
        Ok(())
    }

    /// Tiles of TILE x TILE elements over the last two axes (rows being every axis but the
    /// last, flattened). Work ranges hold whole rows: [`Kernel::min_chunk`] is TILE rows.
    fn elementwise_tiles(&mut self, shape: &[usize], outs: &[NodeId]) -> Result<(), Stop> {
        let r = shape.len();
        self.min_chunk = TILE * shape[r - 1];
        let len = extent(&mut self.b, shape[r - 1]);
        let tile = self.b.i64(TILE as i64);
        let zero = self.b.i64(0);
        let row0 = self.b.op(&format!("arith.divui %start, {len} : i64"));
        let row1 = self.b.op(&format!("arith.divui %end, {len} : i64"));
        let step = |cx: &mut Lower, lb: &str, ub: &str| -> String {
            let iv = cx.b.fresh();
            cx.open(0, &format!("scf.for {iv} = {lb} to {ub} step {tile} : i64"));
            iv
        };
        let rb = step(self, &row0, &row1);
        let rb_end = self.b.op(&format!("arith.addi {rb}, {tile} : i64"));
        let rb_end = self.b.op(&format!("arith.minsi {rb_end}, {row1} : i64"));
        let cb = step(self, &zero, &len);
        let cb_end = self.b.op(&format!("arith.addi {cb}, {tile} : i64"));
        let cb_end = self.b.op(&format!("arith.minsi {cb_end}, {len} : i64"));
        let (row, _, _) = self.open_for(&rb, &rb_end, &[], &[]);
        let mut dims = unravel(&mut self.b, &row, &shape[..r - 1]);
        let base = self.b.op(&format!("arith.muli {row}, {len} overflow<nsw, nuw> : i64"));
        let (c, _, _) = self.open_for(&cb, &cb_end, &[], &[]);
        let pos = self.b.op(&format!("arith.addi {base}, {c} overflow<nsw, nuw> : i64"));
        dims.push(c);
        let ix = Ix { dims: Some(dims), flat: Some(pos.clone()) };
        for (k, &o) in outs.iter().enumerate() {
            let v = self.emit(o, &ix)?;
            store(&mut self.b, &Self::out_ptr(k), &pos, &v);
        }
        for _ in 0..4 {
            self.close();
        }
        Ok(())
    }

    /// The kernel of a reduction region over `shape`, reducing `axes`: in block mode when the
    /// last axis is kept and the region's main input is contiguous along it (column sums: a
    /// block of columns is reduced row after row, reading memory in order), else one work item
    /// after another (row mode).
    fn reduction(&mut self, shape: &[usize], axes: &[usize]) -> Result<(), Stop> {
        let last = shape.len().wrapping_sub(1);
        let blocked = !axes.is_empty() && !shape.is_empty() && !axes.contains(&last) && {
            let strides = input_strides(self.body, shape);
            match strides.iter().max_by_key(|(bytes, _)| *bytes) {
                Some((_, st)) if st[last].abs() > 1 => !axes.iter().any(|&a| st[a].abs() == 1),
                _ => true,
            }
        };
        if self.b.target == Target::Gpu {
            let reduced: usize = axes.iter().map(|&a| shape[a]).product();
            if !axes.is_empty() && reduced > 1 {
                self.coop = Some(if blocked {
                    Coop { lanes: 8, items: COOP_BLOCK / 8, columns: true }
                } else {
                    let lanes = if reduced >= 2048 {
                        COOP_BLOCK
                    } else if reduced >= 256 {
                        64
                    } else {
                        32
                    };
                    Coop { lanes, items: COOP_BLOCK / lanes, columns: false }
                });
                let coop = self.coop.expect("set above");
                let groups = (numel(shape) / reduced.max(1)).div_ceil(coop.items);
                if groups < SPLIT_BLOCKS / 2 && reduced >= SPLIT_MIN_REDUCED {
                    let by_work = reduced / (coop.lanes * SPLIT_MIN_PER_LANE);
                    let splits = (SPLIT_BLOCKS / groups.max(1)).min(by_work).min(1024);
                    if splits >= 2 {
                        self.split = Some(splits);
                    }
                }
            }
            return self.reduction_rows(shape, axes);
        }
        if blocked {
            self.reduction_blocks(shape, axes)
        } else {
            self.reduction_rows(shape, axes)
        }
    }

    /// Opens `scf.if cond` (close it with [`Lower::close`]).
    fn open_if(&mut self, cond: &str) {
        self.open(0, &format!("scf.if {cond}"));
    }

    /// `%active`, and for kept outputs also lane 0: the stores a cooperative kernel's thread
    /// makes (see [`Coop`]).
    fn coop_guard(&mut self, lane0: bool) -> String {
        if !lane0 {
            return "%active".into();
        }
        let zero = self.b.i64(0);
        let first = self.b.op(&format!("arith.cmpi eq, %lane, {zero} : i64"));
        self.b.op(&format!("arith.andi {first}, %active : i1"))
    }

    /// The shared-memory slot of component `c` for thread index `tid` (a generic pointer).
    fn smem_slot(&mut self, c: usize, tid: &str) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>");
        let p = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        let off = self.b.i64((c * COOP_BLOCK) as i64);
        let i = self.b.op(&format!("arith.addi {tid}, {off} : i64"));
        self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// The group's accumulators combined (see [`Coop`]): every lane gets the total, the same
    /// bits in every lane and on every run (a fixed tree).
    fn group_combine(&mut self, acc: &dyn Combine, vals: &[String]) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        if coop.columns {
            self.group_combine_smem(acc, vals)
        } else {
            self.group_combine_warps(acc, vals)
        }
    }

    /// Row groups (a multiple of 32 consecutive threads, whole warps): a butterfly of warp
    /// shuffles (xor 16, 8, 4, 2, 1) gives every lane of a warp its warp's total; with more
    /// than one warp to the group, lane 0 of each warp writes it to its shared-memory slot and
    /// after one barrier every thread folds its group's warp totals (a tree in registers). At
    /// each step the lower lane's value is the left operand, so all lanes compute the same
    /// tree as the shared-memory one (pairs `i`, `i + s`, halving `s`); with one warp to a
    /// group the bits are the same as that tree's.
    ///
    /// Shared memory holds two sets of warp slots, used alternately by successive combines:
    /// a combine's slots are rewritten two combines later, after the next one's barrier (all
    /// reads done); the kernel's first combine waits for a barrier first (the previous work
    /// item's last combine may have used the same set).
    fn group_combine_warps(
        &mut self,
        acc: &dyn Combine,
        vals: &[String],
    ) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        debug_assert!(coop.lanes.is_multiple_of(WARP), "row groups are whole warps");
        let tys = acc.tys().to_vec();
        let set = self.combines % 2;
        let first_combine = self.combines == 0;
        self.combines += 1;
        // Within the warp.
        let m31 = self.b.i64((WARP - 1) as i64);
        let wlane = self.b.op(&format!("arith.andi %lane, {m31} : i64"));
        let zero = self.b.i64(0);
        let mut cur: Vec<String> = vals.to_vec();
        let mut s = WARP / 2;
        while s > 0 {
            let other: Vec<String> =
                cur.iter().zip(&tys).map(|(v, t)| self.shfl_xor(v, t, s)).collect();
            let sv = self.b.i64(s as i64);
            let bit = self.b.op(&format!("arith.andi {wlane}, {sv} : i64"));
            let upper = self.b.op(&format!("arith.cmpi ne, {bit}, {zero} : i64"));
            let mut lo = Vec::new();
            let mut hi = Vec::new();
            for ((m, o), t) in cur.iter().zip(&other).zip(&tys) {
                lo.push(self.b.op(&format!("arith.select {upper}, {o}, {m} : {t}")));
                hi.push(self.b.op(&format!("arith.select {upper}, {m}, {o} : {t}")));
            }
            cur = acc.combine(&mut self.b, &lo, &hi)?;
            s /= 2;
        }
        let warps = coop.lanes / WARP;
        if warps == 1 {
            return Ok(cur);
        }
        // Across the group's warps, through shared memory.
        if first_combine {
            self.b.stmt("nvvm.barrier0");
        }
        let c5 = self.b.i64(WARP.trailing_zeros() as i64);
        let warp = self.b.op(&format!("arith.shrui %tid, {c5} : i64"));
        let lead = self.b.op(&format!("arith.cmpi eq, {wlane}, {zero} : i64"));
        self.open_if(&lead);
        for (c, (v, t)) in cur.iter().zip(&tys).enumerate() {
            let slot = self.warp_slot(c, set, &warp);
            self.b.stmt(&format!("llvm.store {v}, {slot} : {t}, !llvm.ptr"));
        }
        self.close();
        self.b.stmt("nvvm.barrier0");
        // The group's first warp: the thread's warp less its warp within the group.
        let lw = self.b.op(&format!("arith.shrui %lane, {c5} : i64"));
        let base = self.b.op(&format!("arith.subi {warp}, {lw} : i64"));
        let mut totals: Vec<Vec<String>> = Vec::with_capacity(warps);
        for w in 0..warps {
            let wi = self.b.i64(w as i64);
            let idx = self.b.op(&format!("arith.addi {base}, {wi} : i64"));
            let mut comps = Vec::new();
            for (c, t) in tys.iter().enumerate() {
                let slot = self.warp_slot(c, set, &idx);
                // Not CSE'd: a fresh load after the barrier.
                let n = self.b.fresh();
                self.b.stmt(&format!("{n} = llvm.load {slot} : !llvm.ptr -> {t}"));
                comps.push(n);
            }
            totals.push(comps);
        }
        let mut s = warps / 2;
        while s > 0 {
            for i in 0..s {
                totals[i] = acc.combine(&mut self.b, &totals[i], &totals[i + s])?;
            }
            s /= 2;
        }
        Ok(totals.swap_remove(0))
    }

    /// `nvvm.shfl.sync bfly` of one value by `offset` lanes (xor), through 32-bit pieces: a
    /// 64-bit value in two, a narrower integer widened.
    fn shfl_xor(&mut self, v: &str, ty: &str, offset: usize) -> String {
        self.shfl(Shfl::Bfly, v, ty, offset)
    }

    /// `nvvm.shfl.sync` of one value (every lane of the warp takes part): `Bfly` from lane
    /// `lane ^ arg`, `Up` from lane `lane - arg` (a lane below `arg` keeps its own), `Idx` from
    /// lane `arg`. Through 32-bit pieces: a 64-bit value in two, a narrower integer widened.
    fn shfl(&mut self, mode: Shfl, v: &str, ty: &str, arg: usize) -> String {
        let mask = self.b.constant("-1", "i32");
        // PTX's `c` operand: the segment's last lane, or for `up` its first.
        let clamp = self.b.constant(if mode == Shfl::Up { "0" } else { "31" }, "i32");
        let off = self.b.constant(&arg.to_string(), "i32");
        let kind = match mode {
            Shfl::Bfly => "bfly",
            Shfl::Up => "up",
            Shfl::Idx => "idx",
        };
        let shfl = |b: &mut Builder, x: &str, t: &str| -> String {
            let n = b.fresh();
            b.stmt(&format!(
                "{n} = nvvm.shfl.sync {kind} {mask}, {x}, {off}, {clamp} : {t} -> {t}"
            ));
            n
        };
        match ty {
            "i32" | "f32" => shfl(&mut self.b, v, ty),
            "i1" | "i8" | "i16" => {
                let w = self.b.op(&format!("arith.extui {v} : {ty} to i32"));
                let r = shfl(&mut self.b, &w, "i32");
                self.b.op(&format!("arith.trunci {r} : i32 to {ty}"))
            }
            "i64" | "f64" => {
                let x = if ty == "f64" {
                    self.b.op(&format!("arith.bitcast {v} : f64 to i64"))
                } else {
                    v.to_string()
                };
                let lo = self.b.op(&format!("arith.trunci {x} : i64 to i32"));
                let c32 = self.b.i64(32);
                let hs = self.b.op(&format!("arith.shrui {x}, {c32} : i64"));
                let hi = self.b.op(&format!("arith.trunci {hs} : i64 to i32"));
                let lo = shfl(&mut self.b, &lo, "i32");
                let hi = shfl(&mut self.b, &hi, "i32");
                let lo = self.b.op(&format!("arith.extui {lo} : i32 to i64"));
                let hi = self.b.op(&format!("arith.extui {hi} : i32 to i64"));
                let hi = self.b.op(&format!("arith.shli {hi}, {c32} : i64"));
                let x = self.b.op(&format!("arith.ori {hi}, {lo} : i64"));
                if ty == "f64" {
                    self.b.op(&format!("arith.bitcast {x} : i64 to f64"))
                } else {
                    x
                }
            }
            other => unreachable!("an accumulator of type {other}"),
        }
    }

    /// The shared-memory slot of component `c` of warp `warp`'s total in slot set `set` (see
    /// [`Lower::group_combine_warps`]).
    fn warp_slot(&mut self, c: usize, set: usize, warp: &str) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>");
        let p = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        let off = self.b.i64(((2 * c + set) * BLOCK_WARPS) as i64);
        let i = self.b.op(&format!("arith.addi {warp}, {off} : i64"));
        self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// Column groups (lanes `items` threads apart, in several warps): a tree in shared memory,
    /// a barrier per halving step.
    fn group_combine_smem(
        &mut self,
        acc: &dyn Combine,
        vals: &[String],
    ) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        let tys = acc.tys().to_vec();
        let lstride = coop.items;
        self.b.stmt("nvvm.barrier0");
        for (c, (v, t)) in vals.iter().zip(&tys).enumerate() {
            let slot = self.smem_slot(c, "%tid");
            self.b.stmt(&format!("llvm.store {v}, {slot} : {t}, !llvm.ptr"));
        }
        self.b.stmt("nvvm.barrier0");
        let mut s = coop.lanes / 2;
        while s > 0 {
            let sv = self.b.i64(s as i64);
            let cond = self.b.op(&format!("arith.cmpi ult, %lane, {sv} : i64"));
            self.open_if(&cond);
            let off = self.b.i64((s * lstride) as i64);
            let other_tid = self.b.op(&format!("arith.addi %tid, {off} : i64"));
            let mut mine = Vec::new();
            let mut other = Vec::new();
            let mut slots = Vec::new();
            for (c, t) in tys.iter().enumerate() {
                let a = self.smem_slot(c, "%tid");
                let o = self.smem_slot(c, &other_tid);
                mine.push(self.b.op(&format!("llvm.load {a} : !llvm.ptr -> {t}")));
                other.push(self.b.op(&format!("llvm.load {o} : !llvm.ptr -> {t}")));
                slots.push(a);
            }
            let r = acc.combine(&mut self.b, &mine, &other)?;
            for ((v, a), t) in r.iter().zip(&slots).zip(&tys) {
                self.b.stmt(&format!("llvm.store {v}, {a} : {t}, !llvm.ptr"));
            }
            self.close();
            self.b.stmt("nvvm.barrier0");
            s /= 2;
        }
        // Lane 0's slot holds the total.
        let ls = self.b.i64(lstride as i64);
        let back = self.b.op(&format!("arith.muli %lane, {ls} : i64"));
        let first = self.b.op(&format!("arith.subi %tid, {back} : i64"));
        let mut out = Vec::new();
        for (c, t) in tys.iter().enumerate() {
            let a = self.smem_slot(c, &first);
            // Not CSE'd with the loads above: a fresh load after the barrier.
            let n = self.b.fresh();
            self.b.stmt(&format!("{n} = llvm.load {a} : !llvm.ptr -> {t}"));
            out.push(n);
        }
        Ok(out)
    }

    /// Opens a cooperative kernel's loop over the flattened reduced `axes` of `shape`,
    /// `r = lane, lane + lanes, ...`, with accumulators `args` (starting at `init`, of types
    /// `tys`). Returns `r`, the full index (`kept` indices on the other axes) and the loop's
    /// results.
    fn open_lane_loop(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        args: &[String],
        init: &[String],
        tys: &[&str],
    ) -> (String, Vec<String>, Vec<String>) {
        let coop = self.coop.expect("a cooperative kernel");
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let total = self.b.param(numel(&reduced_shape) as i64);
        let lanes = self.b.i64(coop.lanes as i64);
        // A split kernel's block folds one contiguous chunk of the reduced elements.
        let (lo, hi) = if self.split.is_some() {
            let (base, hi) = self.split_range(&total, 1);
            (self.b.op(&format!("arith.addi {base}, %lane : i64")), hi)
        } else {
            ("%lane".to_string(), total)
        };
        let r = self.b.fresh();
        let header = if init.is_empty() {
            format!("scf.for {r} = {lo} to {hi} step {lanes} : i64")
        } else {
            let iter: Vec<String> =
                args.iter().zip(init).map(|(a, i)| format!("{a} = {i}")).collect();
            format!(
                "scf.for {r} = {lo} to {hi} step {lanes} iter_args({}) -> ({}) : i64",
                iter.join(", "),
                tys.join(", ")
            )
        };
        let results = self.open(init.len(), &header);
        let full = self.full_index(shape, axes, kept, &r);
        (r, full, results)
    }

    /// The row cache of a cooperative row kernel (not split), if it has a use and fits in
    /// [`ROW_CACHE_BYTES`]. The passes over a work item's row are the reductions over the
    /// region's space (`level1`, in order) and then the pass writing the `full`-shape outputs;
    /// a region input read by two of them or more at the element the pass is at (through
    /// elementwise ops only, not views: the same position in the buffer) is cached. Softmax
    /// reads its input in its max, its sum and its output pass; layer norm in its mean, its
    /// variance and its output pass.
    fn row_cache_plan(
        &self,
        shape: &[usize],
        axes: &[usize],
        level1: &[NodeId],
        full: &[NodeId],
    ) -> Option<RowCache> {
        use std::collections::BTreeMap;
        let coop = self.coop?;
        if coop.columns || self.split.is_some() {
            return None;
        }
        row_cache_setting()?;
        let body = self.body;
        let mut passes: Vec<Vec<NodeId>> =
            level1.iter().map(|&id| vec![body.node(id).inputs[0]]).collect();
        if !full.is_empty() {
            passes.push(full.to_vec());
        }
        // Values a reduction's prologue computes that a later pass reads again (see
        // `staged_values`): (node, the pass computing it).
        let outputs: Vec<(usize, NodeId)> = full.iter().copied().enumerate().collect();
        let staged: Vec<(NodeId, usize)> = staged_values(body, shape, level1, &outputs)
            .into_iter()
            .filter_map(|(e, _, r)| Some((e, level1.iter().position(|&l| l == r)?)))
            .collect();
        let mut readers: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
        for (p, roots) in passes.iter().enumerate() {
            // A staged value computed by an earlier pass is read back from the cache: a leaf.
            let stop = |n: NodeId| staged.iter().any(|&(e, q)| e == n && q < p);
            for n in self.direct_inputs(roots, &stop) {
                readers.entry(n).or_default().push(p);
            }
        }
        let mut inputs: Vec<CachedRow> = Vec::new();
        let mut values: Vec<CachedRow> = Vec::new();
        for (node, passes) in readers {
            let dt = body.node(node).dtype;
            let Ok(ty) = work_ty(dt) else { continue };
            let written_in = staged.iter().find(|s| s.0 == node).map(|s| s.1);
            if dt.is_complex() || (written_in.is_none() && passes.len() < 2) {
                continue;
            }
            let size = match ty {
                "i1" | "i8" => 1,
                "i16" => 2,
                "i32" | "f32" => 4,
                _ => 8,
            };
            let row = CachedRow { node, dt, ty, size, offset: 0, passes, written_in };
            if written_in.is_some() {
                values.push(row);
            } else {
                inputs.push(row);
            }
        }
        // Largest elements first (stable: by node otherwise).
        inputs.sort_by_key(|c| std::cmp::Reverse(c.size));
        let mut offset = 0;
        for c in &mut inputs {
            c.offset = offset;
            offset += c.size;
        }
        // A staged value takes the slot of an input of its size that no later pass reads, else
        // a slot of its own.
        let mut taken: Vec<usize> = Vec::new();
        for v in &mut values {
            let p = v.written_in.expect("a staged value");
            let free = inputs.iter().find(|c| {
                c.size == v.size && c.passes.iter().all(|&q| q <= p) && !taken.contains(&c.offset)
            });
            match free {
                Some(c) => {
                    v.offset = c.offset;
                    taken.push(c.offset);
                }
                None => {
                    v.offset = offset;
                    offset += v.size;
                }
            }
        }
        inputs.extend(values);
        let row: usize = axes.iter().map(|&a| shape[a]).product();
        let bytes = coop.items * row * offset;
        (bytes > 0 && bytes <= ROW_CACHE_BYTES).then_some(RowCache { inputs, row, bytes })
    }

    /// Copies the work item's row of each cached input (kept indices `kept`) into the row
    /// cache: a loop over blocks of [`ROW_CACHE_UNROLL`] × lanes elements, each thread loading
    /// its elements `j + lane + k·lanes` (k < unroll) before storing them, then the elements
    /// past the last whole block one at a time: the positions `lane, lane + lanes, ...` of
    /// the passes' lane loops.
    fn row_cache_fill(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
    ) -> Result<(), Stop> {
        let Some(cache) = self.row_cache.clone() else { return Ok(()) };
        let coop = self.coop.expect("a cooperative kernel");
        let total = self.b.param(cache.row as i64);
        let lanes = self.b.i64(coop.lanes as i64);
        let unroll = row_cache_setting().unwrap_or(ROW_CACHE_UNROLL);
        let block = self.b.i64((unroll * coop.lanes) as i64);
        let zero = self.b.i64(0);
        let blocks = self.b.op(&format!("arith.divui {total}, {block} : i64"));
        let whole = self.b.op(&format!("arith.muli {blocks}, {block} : i64"));
        // Whole blocks: every thread's elements in bounds.
        let j = self.b.fresh();
        self.open(0, &format!("scf.for {j} = {zero} to {whole} step {block} : i64"));
        let base = self.b.op(&format!("arith.addi {j}, %lane : i64"));
        let mut loaded = Vec::new();
        for k in 0..unroll {
            let off = self.b.i64((k * coop.lanes) as i64);
            let r = self.b.op(&format!("arith.addi {base}, {off} : i64"));
            let ix = Ix { dims: Some(self.full_index(shape, axes, kept, &r)), flat: None };
            for c in cache.inputs.iter().filter(|c| c.written_in.is_none()) {
                let v = self.emit(c.node, &ix)?;
                loaded.push((c.clone(), r.clone(), v));
            }
        }
        for (c, r, v) in loaded {
            let slot = self.row_slot(&cache, &c, &r);
            self.b.stmt(&format!("llvm.store {}, {slot} : {}, !llvm.ptr", v.ssa, c.ty));
        }
        self.close();
        // The rest, one element at a time.
        let start = self.b.op(&format!("arith.addi {whole}, %lane : i64"));
        let r = self.b.fresh();
        self.open(0, &format!("scf.for {r} = {start} to {total} step {lanes} : i64"));
        let ix = Ix { dims: Some(self.full_index(shape, axes, kept, &r)), flat: None };
        for c in cache.inputs.iter().filter(|c| c.written_in.is_none()) {
            let v = self.emit(c.node, &ix)?;
            let slot = self.row_slot(&cache, c, &r);
            self.b.stmt(&format!("llvm.store {}, {slot} : {}, !llvm.ptr", v.ssa, c.ty));
        }
        self.close();
        Ok(())
    }

    /// At the top of a pass's lane loop (element `r` of the row, index `full`): the cached
    /// inputs this pass reads, loaded from the row cache and memoised at `full`, so the pass's
    /// body reads them from there.
    fn row_cache_pass(&mut self, full: &[String], r: &str) -> Result<(), Stop> {
        let Some(cache) = self.row_cache.clone() else { return Ok(()) };
        let ix = Ix { dims: Some(full.to_vec()), flat: None };
        let pass = self.pass;
        for c in cache.inputs.iter().filter(|c| c.passes.contains(&pass)) {
            let slot = self.row_slot(&cache, c, r);
            let n = self.b.fresh();
            self.b.stmt(&format!("{n} = llvm.load {slot} : !llvm.ptr -> {}", c.ty));
            self.memo
                .last_mut()
                .expect("a memo scope")
                .insert((c.node, ix.key()), Val::new(n, c.dt));
        }
        Ok(())
    }

    /// In the lane loop of the reduction pass that computes them (element `r`, index `ix`):
    /// stores the staged values of the row cache for the later passes.
    fn row_cache_stage(&mut self, ix: &Ix, r: &str) -> Result<(), Stop> {
        let Some(cache) = self.row_cache.clone() else { return Ok(()) };
        let pass = self.pass;
        for c in cache.inputs.iter().filter(|c| c.written_in == Some(pass)) {
            let Some(v) = self.lookup(&(c.node, ix.key())) else {
                return Err(Stop::from(Unsupported::new(
                    None,
                    "a staged row value not computed by its pass".to_string(),
                )));
            };
            let slot = self.row_slot(&cache, c, r);
            self.b.stmt(&format!("llvm.store {}, {slot} : {}, !llvm.ptr", v.ssa, c.ty));
        }
        Ok(())
    }

    /// The row-cache slot of cached input `c` for element `r` of this thread's work item:
    /// `items × row × offset` bytes into the cache, then element `item × row + r` of its type.
    fn row_slot(&mut self, cache: &RowCache, c: &CachedRow, r: &str) -> String {
        let coop = self.coop.expect("a cooperative kernel");
        let g = self.b.op("llvm.mlir.addressof @kiln_rows : !llvm.ptr<3>");
        let p = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        let row = self.b.param(cache.row as i64);
        let part = self.b.i64((coop.items * c.offset) as i64);
        let base = self.b.op(&format!("arith.muli {row}, {part} : i64"));
        let p = self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{base}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ));
        let lanes = self.b.i64(coop.lanes as i64);
        let item = self.b.op(&format!("arith.divui %tid, {lanes} : i64"));
        let first = self.b.op(&format!("arith.muli {item}, {row} : i64"));
        let e = self.b.op(&format!("arith.addi {first}, {r} : i64"));
        let ty = c.ty;
        self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{e}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}"
        ))
    }

    /// A reduction over the region's own axes shared by the lanes of a cooperative kernel:
    /// each lane folds the elements `lane, lane + lanes, ...` of the flattened reduced axes,
    /// then the group combines (see [`Lower::group_combine`]).
    fn emit_reduction_coop(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        let node = self.body.node(id);
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let acc = Acc::new(node.op, self.body.node(input).dtype)?;
        let init = acc.init(&mut self.b);
        let tys = acc.tys.clone();
        let (r, full, args, results) = self.open_coop_fold(id, ix, &init, &tys)?;
        let full_ix = Ix { dims: Some(full.clone()), flat: None };
        let v = self.emit(input, &full_ix)?;
        self.row_cache_stage(&full_ix, &r)?;
        let staged: Vec<(NodeId, usize)> =
            self.staged.iter().filter(|s| Some(s.2) == self.hoisting).map(|s| (s.0, s.1)).collect();
        for (e, k) in staged {
            if let Some(val) = self.lookup(&(e, full_ix.key())) {
                let pos = ravel(&mut self.b, &full, &in_shape);
                self.open_if("%active");
                store(&mut self.b, &Self::out_ptr(k), &pos, &val);
                self.close();
            }
        }
        let next = acc.step(&mut self.b, &args, &v, &r)?;
        self.yield_(&next, &tys);
        self.close();
        let total = self.group_combine(&acc, &results)?;
        Ok(acc.finish(&mut self.b, &total, node.dtype)?)
    }

    /// Two reductions shared by the lanes of a cooperative kernel in one pass over the row (see
    /// [`Pair`] and [`Lower::emit_reduction_coop`]). The lane loop takes [`PAIR_UNROLL`]
    /// elements a step (`j + lane + k·lanes`: their loads in flight together, and a softmax's
    /// rescale once per step, not per element, with no branch to diverge on), then the
    /// elements past the last whole step one at a time: the positions of the row cache's fill.
    fn emit_pair_coop(&mut self, p: &Pair, ix: &Ix) -> Result<(Val, Val), Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        let shift = self.pair_prelude(p, ix)?;
        let init = p.init(&mut self.b);
        let tys = p.combiner().tys().to_vec();
        let node = self.body.node(p.first());
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = self.body.node(node.inputs[0]).shape.clone();
        let kept = self.kept_index(p.first(), ix)?;
        let total = self.reduced_count(p.first());
        let step = self.b.i64((PAIR_UNROLL * coop.lanes) as i64);
        let zero = self.b.i64(0);
        let steps = self.b.op(&format!("arith.divui {total}, {step} : i64"));
        let whole = self.b.op(&format!("arith.muli {steps}, {step} : i64"));
        // Whole steps: every thread's elements in bounds.
        let (j, args, results) = self.open_for_step(&zero, &whole, Some(&step), &init, &tys);
        let base = self.b.op(&format!("arith.addi {j}, %lane : i64"));
        let mut ixs = Vec::with_capacity(PAIR_UNROLL);
        for k in 0..PAIR_UNROLL {
            let off = self.b.i64((k * coop.lanes) as i64);
            let r = self.b.op(&format!("arith.addi {base}, {off} : i64"));
            let full = self.full_index(&in_shape, axes, &kept, &r);
            self.row_cache_pass(&full, &r)?;
            ixs.push(Ix { dims: Some(full), flat: None });
        }
        let next = self.pair_chunk(p, &args, &ixs, shift.as_deref())?;
        self.yield_(&next, &tys);
        self.close();
        // The rest, one element at a time.
        let start = self.b.op(&format!("arith.addi {whole}, %lane : i64"));
        let lanes = self.b.i64(coop.lanes as i64);
        let (r, args, results) = self.open_for_step(&start, &total, Some(&lanes), &results, &tys);
        let full = self.full_index(&in_shape, axes, &kept, &r);
        self.row_cache_pass(&full, &r)?;
        let next =
            self.pair_step(p, &args, &Ix { dims: Some(full), flat: None }, shift.as_deref())?;
        self.yield_(&next, &tys);
        self.close();
        let total = self.group_combine(p.combiner(), &results)?;
        self.pair_finish(p, &total, ix, shift.as_deref())
    }

    /// Elements `ixs` of a pair's fold at once: a softmax's max raised by all of them, its sum
    /// rescaled once (no branch: `s · exp(m - m')`, the factor 1 where the max stayed), then
    /// their terms added; a layer norm's sums element after element.
    fn pair_chunk(
        &mut self,
        p: &Pair,
        args: &[String],
        ixs: &[Ix],
        shift: Option<&str>,
    ) -> Result<Vec<String>, Stop> {
        match p {
            Pair::Softmax(on) => {
                let mut m = args[0].clone();
                for ix in ixs {
                    let x = self.emit(on.x, ix)?;
                    m = on.raise(&mut self.b, &m, &x);
                }
                let mut s = on.rescaled(&mut self.b, &args[1], &args[0], &m)?;
                for e in &self.online_terms(on, &m, ixs)? {
                    s = on.add(&mut self.b, &s, e, &m)?;
                }
                Ok(vec![m, s])
            }
            Pair::Moments(mo) => {
                let mut acc = args.to_vec();
                for ix in ixs {
                    let x = self.emit(mo.x, ix)?;
                    acc = mo.step(&mut self.b, &acc, &x, shift.expect("a layer norm's shift"))?;
                }
                Ok(acc)
            }
        }
    }

    /// The full index of element `r` of the flattened reduced `axes` of `shape` (row-major),
    /// the other axes at `kept`.
    fn full_index(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        r: &str,
    ) -> Vec<String> {
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let ivs = unravel(&mut self.b, r, &reduced_shape);
        let (mut ki, mut ri) = (kept.iter(), ivs.iter());
        (0..shape.len())
            .map(|a| {
                if axes.contains(&a) {
                    ri.next().unwrap().clone()
                } else {
                    ki.next().unwrap().clone()
                }
            })
            .collect()
    }

    /// Opens the lane loop of reduction `id` at index `ix` of its result (see
    /// [`Lower::open_lane_loop`]), folding `init` (of types `tys`), with the row cache's
    /// inputs of this pass read at its top. Returns the element `r`, the input's full index,
    /// the loop's accumulators and its results.
    #[allow(clippy::type_complexity)]
    fn open_coop_fold(
        &mut self,
        id: NodeId,
        ix: &Ix,
        init: &[String],
        tys: &[&str],
    ) -> Result<(String, Vec<String>, Vec<String>, Vec<String>), Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = self.body.node(node.inputs[0]).shape.clone();
        let kept = self.kept_index(id, ix)?;
        let args: Vec<String> = init.iter().map(|_| self.b.fresh()).collect();
        let (r, full, results) = self.open_lane_loop(&in_shape, axes, &kept, &args, init, tys);
        self.row_cache_pass(&full, &r)?;
        Ok((r, full, args, results))
    }

    /// Whether this block is its group's last to finish stage one (block-uniform, i1): after a
    /// barrier (every item's lane 0 has written and fenced its partials), thread 0 counts the
    /// block in (atomic add on the group's counter) and shares the answer through shared
    /// memory.
    fn split_last_block(&mut self) -> String {
        let n = self.split.expect("a split kernel");
        let ns = self.b.param(n as i64);
        self.last_block(&ns, "%group")
    }

    /// Whether this block is the last of `ns` blocks to count itself in on
    /// `%counter[counter]` (block-uniform, i1; see [`Lower::split_last_block`]).
    fn last_block(&mut self, ns: &str, counter: &str) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_flag : !llvm.ptr<3>");
        let flag = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        // Every item's partials are written (and fenced) before thread 0 counts the block in.
        self.b.stmt("nvvm.barrier0");
        let zero = self.b.i64(0);
        let first = self.b.op(&format!("arith.cmpi eq, %tid, {zero} : i64"));
        self.open_if(&first);
        self.b.stmt(DEVICE_FENCE);
        let ctr = self.b.op(&format!(
            "llvm.getelementptr inbounds %counter[{counter}] : (!llvm.ptr, i64) -> !llvm.ptr, i32"
        ));
        let one32 = self.b.op("arith.constant 1 : i32");
        let old = self.b.fresh();
        let add = format!(
            "llvm.atomicrmw add {ctr}, {one32} syncscope(\"device\") acq_rel : !llvm.ptr, i32"
        );
        self.b.stmt(&format!("{old} = {add}"));
        let n32 = self.b.op(&format!("arith.trunci {ns} : i64 to i32"));
        let nm1 = self.b.op(&format!("arith.subi {n32}, {one32} : i32"));
        let last = self.b.op(&format!("arith.cmpi eq, {old}, {nm1} : i32"));
        let last32 = self.b.op(&format!("arith.extui {last} : i1 to i32"));
        self.b.stmt(&format!("llvm.store {last32}, {flag} : i32, !llvm.ptr"));
        self.close();
        self.b.stmt("nvvm.barrier0");
        let v = self.b.fresh();
        self.b.stmt(&format!("{v} = llvm.load {flag} : !llvm.ptr -> i32"));
        let zero32 = self.b.op("arith.constant 0 : i32");
        let last = self.b.op(&format!("arith.cmpi ne, {v}, {zero32} : i32"));
        last
    }

    /// The scratch slot of component `c` of work item `w`'s partial from split `s`.
    fn split_slot(&mut self, c: usize, w: &str, s: &str) -> String {
        let (n, items) = (self.split.expect("a split kernel"), self.work_items);
        debug_assert!(items > 0, "work items set by reduction_rows");
        let ns = self.b.param(n as i64);
        let nw = self.b.param(items as i64);
        let cc = self.b.i64(c as i64);
        let a = self.b.op(&format!("arith.muli {cc}, {nw} : i64"));
        let a = self.b.op(&format!("arith.addi {a}, {w} : i64"));
        let a = self.b.op(&format!("arith.muli {a}, {ns} : i64"));
        let i = self.b.op(&format!("arith.addi {a}, {s} : i64"));
        self.b.op(&format!(
            "llvm.getelementptr inbounds %scratch[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// The block's range `[lo, hi)` of the reduced elements (`total` of them) in a split
    /// kernel: the `%split`-th chunk of `ceil(total / splits)` elements, rounded up to a
    /// multiple of `step` (a power of two) when it is not 1. A block whose chunk starts past
    /// the end gets an empty range.
    fn split_range(&mut self, total: &str, step: usize) -> (String, String) {
        let (s, _) = self.split_at.clone().expect("a split kernel");
        let ns = self.b.param(self.split.expect("a split kernel") as i64);
        let one = self.b.i64(1);
        let t1 = self.b.op(&format!("arith.addi {total}, {ns} : i64"));
        let t2 = self.b.op(&format!("arith.subi {t1}, {one} : i64"));
        let mut chunk = self.b.op(&format!("arith.divui {t2}, {ns} : i64"));
        if step > 1 {
            debug_assert!(step.is_power_of_two());
            // Rounded up by a mask, so LLVM sees the multiple (the loads' alignment).
            let up = self.b.i64(step as i64 - 1);
            let mask = self.b.i64(-(step as i64));
            let c = self.b.op(&format!("arith.addi {chunk}, {up} : i64"));
            chunk = self.b.op(&format!("arith.andi {c}, {mask} : i64"));
        }
        let base = self.b.op(&format!("arith.muli {s}, {chunk} : i64"));
        let end = self.b.op(&format!("arith.addi {base}, {chunk} : i64"));
        let hi = self.b.op(&format!("arith.minui {end}, {total} : i64"));
        if step > 1 {
            return (base.clone(), self.b.op(&format!("arith.maxui {hi}, {base} : i64")));
        }
        (base, hi)
    }

    /// The region inputs `roots` read through elementwise ops alone (not views, not constant
    /// subexpressions): they are read at the roots' own index. Nodes for which `stop` holds
    /// are leaves too (kept, their operands not followed).
    fn direct_inputs(
        &self,
        roots: &[NodeId],
        stop: &dyn Fn(NodeId) -> bool,
    ) -> std::collections::BTreeSet<NodeId> {
        let body = self.body;
        let mut seen = std::collections::BTreeSet::new();
        let mut inputs = std::collections::BTreeSet::new();
        let mut stack = roots.to_vec();
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let node = body.node(n);
            if node.op == OpKind::Input || stop(n) {
                inputs.insert(n);
            } else if node.op.is_elementwise() && !self.constant[n.index()] {
                stack.extend(node.inputs.iter().copied());
            }
        }
        inputs
    }

    /// Whether every region input `root` reads is read at `root`'s own flat position (through
    /// elementwise ops and views that keep C order: reshapes, scalar broadcasts), so that a
    /// run of aligned positions of `root` is an aligned run of each input.
    fn reads_in_place(&self, root: NodeId) -> bool {
        let body = self.body;
        let mut stack = vec![root];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let node = body.node(n);
            let keeps_order = if node.op.class() == OpClass::View {
                let input = &body.node(node.inputs[0]).shape;
                matches!(node.op, OpKind::Reshape | OpKind::ExpandDims | OpKind::Squeeze)
                    || (node.op == OpKind::BroadcastTo
                        && (*input == node.shape || input.iter().all(|&d| d == 1)))
            } else {
                matches!(node.op.class(), OpClass::Elementwise | OpClass::Leaf)
            };
            if !keeps_order {
                return false;
            }
            if !self.constant[n.index()] {
                stack.extend(node.inputs.iter().copied());
            }
        }
        true
    }

    /// Stage one's lane loop in a split kernel of row groups: the block's chunk of the reduced
    /// elements (a multiple of `lanes × vec × unroll` but in the last block), each step of a
    /// thread taking `vec × unroll` elements, its direct inputs loaded first (`vec` elements
    /// make 16 bytes), then the rest of the chunk one element per lane. In a whole-array
    /// reduction whose inputs are read in place (sum_all), a thread's elements are `unroll`
    /// runs of `vec` consecutive ones, `lanes × vec` apart: LLVM merges each run's loads into
    /// one 128-bit load (the chunks are aligned); `unroll` are in flight. Otherwise (rows of
    /// any length, views) they are `lanes` apart, every load of a warp coalesced, `vec ×
    /// unroll` in flight. A thread folds its elements in increasing position. Returns the
    /// thread's accumulators.
    fn split_lane_loop(
        &mut self,
        acc: &Acc,
        input: NodeId,
        in_shape: &[usize],
        axes: &[usize],
        kept: &[String],
        init: &[String],
    ) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        let tys = acc.tys.clone();
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| in_shape[a]).collect();
        let total = self.b.param(numel(&reduced_shape) as i64);
        let direct = self.direct_inputs(&[input], &|_| false);
        let widest = direct.iter().map(|&i| self.body.node(i).dtype.itemsize()).max().unwrap_or(4);
        let vec = (SPLIT_VEC_BYTES / widest.max(1)).max(1);
        let unroll = split_unroll();
        let step = coop.lanes * vec * unroll;
        let (lo, hi) = self.split_range(&total, step);
        // With the reduced axes last, element `r` of the work item is at `base + r` in C order.
        let n = in_shape.len();
        let trailing = axes.iter().copied().eq(n - axes.len()..n);
        let base = if trailing && !kept.is_empty() {
            let kept_shape: Vec<usize> =
                (0..n).filter(|a| !axes.contains(a)).map(|a| in_shape[a]).collect();
            let k = ravel(&mut self.b, kept, &kept_shape);
            Some(self.b.op(&format!("arith.muli {k}, {total} overflow<nsw, nuw> : i64")))
        } else {
            None
        };
        let ix_of = |cx: &mut Lower, r: &str| -> Ix {
            let ivs = unravel(&mut cx.b, r, &reduced_shape);
            let (mut ki, mut ri) = (kept.iter(), ivs.iter());
            let full = (0..n)
                .map(|a| {
                    if axes.contains(&a) {
                        ri.next().unwrap().clone()
                    } else {
                        ki.next().unwrap().clone()
                    }
                })
                .collect();
            let flat = match (&base, trailing) {
                (Some(b), _) => {
                    Some(cx.b.op(&format!("arith.addi {b}, {r} overflow<nsw, nuw> : i64")))
                }
                (None, true) => Some(r.to_string()),
                (None, false) => None,
            };
            Ix { dims: Some(full), flat }
        };
        let st = self.b.i64(step as i64);
        let span = self.b.op(&format!("arith.subi {hi}, {lo} : i64"));
        let whole = self.b.op(&format!("arith.divui {span}, {st} : i64"));
        let main = self.b.op(&format!("arith.muli {whole}, {st} overflow<nsw, nuw> : i64"));
        let main_end = self.b.op(&format!("arith.addi {lo}, {main} : i64"));
        // Runs of `vec` consecutive elements per thread, or single elements.
        let runs = kept.is_empty() && self.reads_in_place(input);
        let j0 = if runs {
            let vc = self.b.i64(vec as i64);
            let lv = self.b.op(&format!("arith.muli %lane, {vc} overflow<nsw, nuw> : i64"));
            self.b.op(&format!("arith.addi {lo}, {lv} : i64"))
        } else {
            self.b.op(&format!("arith.addi {lo}, %lane : i64"))
        };
        // Whole steps: every element in bounds.
        let (j, args, results) = self.open_for_step(&j0, &main_end, Some(&st), init, &tys);
        let mut at = Vec::with_capacity(unroll * vec);
        for u in 0..unroll {
            for k in 0..vec {
                let off = if runs { u * coop.lanes * vec + k } else { (u * vec + k) * coop.lanes };
                let r = match off {
                    0 => j.clone(),
                    off => {
                        let off = self.b.i64(off as i64);
                        self.b.op(&format!("arith.addi {j}, {off} overflow<nsw, nuw> : i64"))
                    }
                };
                let ix = ix_of(self, &r);
                at.push((r, ix));
            }
        }
        // The loads first, then the values, then the folds (so the loads are in flight
        // together even where the positions go through views).
        for (_, ix) in &at {
            for &i in &direct {
                self.emit(i, ix)?;
            }
        }
        let mut vals = Vec::with_capacity(at.len());
        for (_, ix) in &at {
            vals.push(self.emit(input, ix)?);
        }
        let mut cur = args;
        for ((r, _), v) in at.iter().zip(&vals) {
            cur = acc.step(&mut self.b, &cur, v, r)?;
        }
        self.yield_(&cur, &tys);
        self.close();
        // The rest of the chunk (the last block's), an element per lane.
        let lanes = self.b.i64(coop.lanes as i64);
        let start = self.b.op(&format!("arith.addi {main_end}, %lane : i64"));
        let (r, args, results) = self.open_for_step(&start, &hi, Some(&lanes), &results, &tys);
        let ix = ix_of(self, &r);
        let v = self.emit(input, &ix)?;
        let next = acc.step(&mut self.b, &args, &v, &r)?;
        self.yield_(&next, &tys);
        self.close_no_unroll();
        Ok(results)
    }

    /// Stage one of a split reduction (see [`GpuSplit`]): the block's partial accumulators of
    /// reduction `id`, written to the scratch buffer by lane 0. Returns the accumulator and
    /// its first slot.
    fn split_partial(&mut self, id: NodeId, ix: &Ix) -> Result<(Acc, usize), Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let acc = Acc::new(node.op, self.body.node(input).dtype)?;
        let Attrs::Reduce { keepdims, .. } = &node.attrs else { unreachable!("verified") };
        let dims = ix.dims()?.to_vec();
        let kept: Vec<String> = if *keepdims {
            dims.iter()
                .enumerate()
                .filter(|(k, _)| !axes.contains(k))
                .map(|(_, d)| d.clone())
                .collect()
        } else {
            dims
        };
        let init = acc.init(&mut self.b);
        let tys = acc.tys.clone();
        let results = if self.coop.is_some_and(|c| !c.columns) {
            self.split_lane_loop(&acc, input, &in_shape, axes, &kept, &init)?
        } else {
            let args: Vec<String> = init.iter().map(|_| self.b.fresh()).collect();
            let (r, full, results) =
                self.open_lane_loop(&in_shape, axes, &kept, &args, &init, &tys);
            let v = self.emit(input, &Ix { dims: Some(full), flat: None })?;
            let next = acc.step(&mut self.b, &args, &v, &r)?;
            self.yield_(&next, &tys);
            self.close();
            results
        };
        let total = self.group_combine(&acc, &results)?;
        let first = self.split_slots;
        self.split_slots += tys.len();
        let (s, w) = self.split_at.clone().expect("a split kernel");
        let guard = self.coop_guard(true);
        self.open_if(&guard);
        for (c, (v, t)) in total.iter().zip(&tys).enumerate() {
            let slot = self.split_slot(first + c, &w, &s);
            self.b.stmt(&format!("llvm.store {v}, {slot} : {t}, !llvm.ptr"));
        }
        self.b.stmt(DEVICE_FENCE);
        self.close();
        Ok((acc, first))
    }

    /// Stage two of a split reduction, in the item's last block: the partials of all splits,
    /// folded lane-strided in split order and combined by the block's tree.
    fn split_combine(&mut self, id: NodeId, acc: &Acc, first: usize) -> Result<Val, Stop> {
        let n = self.split.expect("a split kernel");
        let (_, w) = self.split_at.clone().expect("a split kernel");
        self.b.stmt(DEVICE_FENCE);
        let tys = acc.tys.clone();
        let init = acc.init(&mut self.b);
        let ns = self.b.param(n as i64);
        let lanes = self.b.i64(self.coop.expect("a cooperative kernel").lanes as i64);
        let (q, args, results) = self.open_for_step("%lane", &ns, Some(&lanes), &init, &tys);
        let mut part = Vec::new();
        for (c, t) in tys.iter().enumerate() {
            let slot = self.split_slot(first + c, &w, &q);
            // Volatile: written by other blocks of this launch; never from a stale L1 line.
            let v = self.b.fresh();
            self.b.stmt(&format!("{v} = llvm.load volatile {slot} : !llvm.ptr -> {t}"));
            part.push(v);
        }
        let next = acc.combine(&mut self.b, &args, &part)?;
        self.yield_(&next, &tys);
        self.close();
        let total = self.group_combine(acc, &results)?;
        Ok(acc.finish(&mut self.b, &total, self.body.node(id).dtype)?)
    }

    /// Row mode (see [`Lower::reduction`]).
    fn reduction_rows(&mut self, shape: &[usize], axes: &[usize]) -> Result<(), Stop> {
        let kept_axes: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
        let kept_shape: Vec<usize> = kept_axes.iter().map(|&a| shape[a]).collect();
        let keep_ones: Vec<usize> =
            (0..shape.len()).map(|a| if axes.contains(&a) { 1 } else { shape[a] }).collect();
        enum Kind {
            Kept { keepdims: bool },
            Full,
        }
        let outs: Vec<NodeId> = self.body.outputs().to_vec();
        let mut kinds = Vec::new();
        for &o in &outs {
            let s = self.body.node(o).shape.as_slice();
            kinds.push(if s == shape && !axes.is_empty() {
                Kind::Full
            } else if s == kept_shape.as_slice() {
                Kind::Kept { keepdims: false }
            } else if s == keep_ones.as_slice() {
                Kind::Kept { keepdims: true }
            } else {
                return Err(Unsupported::new(
                    None,
                    format!("an output of shape {s:?} in a reduction over {shape:?} axes {axes:?}"),
                )
                .into());
            });
        }
        self.work_items = numel(&kept_shape);
        let body = self.body;
        let level1: Vec<NodeId> = body
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(&n.attrs, Attrs::Reduce { axes: ra, .. } if ra.as_slice() == axes && body.node(n.inputs[0]).shape.as_slice() == shape))
            .map(|(i, _)| NodeId(i as u32))
            .collect();
        // A split kernel computes only reductions over the region's space and kept outputs.
        let only_level1 =
            body.nodes().iter().filter(|n| n.op.is_reduction()).count() == level1.len();
        if kinds.iter().any(|k| matches!(k, Kind::Full)) || !only_level1 {
            self.split = None;
        }
        let full_nodes: Vec<NodeId> = outs
            .iter()
            .zip(&kinds)
            .filter(|(_, k)| matches!(k, Kind::Full))
            .map(|(&o, _)| o)
            .collect();
        // Softmaxes fold their max and sum in one pass, layer norms their sum and sum of
        // squares; the passes over the row are then the other reductions over the region's
        // space (each pair's at its first).
        let pairs = if self.online && self.split.is_none() && !axes.is_empty() {
            Pair::find(body, shape, &keep_ones, &level1, self.b.math, self.b.target)
        } else {
            Vec::new()
        };
        let level1: Vec<NodeId> =
            level1.into_iter().filter(|&id| !pairs.iter().any(|p| p.second() == id)).collect();
        self.row_cache = self.row_cache_plan(shape, axes, &level1, &full_nodes);
        let (w, _, _) = self.open_for("%start", "%end", &[], &[]);
        if self.split.is_some() {
            // The entry gives the block's split and group (see `gpu_entry`).
            self.split_at = Some(("%split".to_string(), w.clone()));
        }
        self.work = unravel(&mut self.b, &w, &kept_shape);
        let zero = self.b.i64(0);
        let work = self.work.clone();
        // The work item's index in the full shape with the reduced axes at 0 (keepdims form).
        let with_zeros = |work: &[String]| -> Vec<String> {
            let mut it = work.iter();
            (0..shape.len())
                .map(|a| if axes.contains(&a) { zero.clone() } else { it.next().unwrap().clone() })
                .collect()
        };
        // Reductions over the region's own space, once per work item, in body order.
        let full_outputs: Vec<(usize, NodeId)> = outs
            .iter()
            .zip(&kinds)
            .enumerate()
            .filter(|(_, (_, k))| matches!(k, Kind::Full))
            .map(|(k, (&o, _))| (k, o))
            .collect();
        // On the GPU a transcendental is cheaper to compute again than to store and read back
        // (the row is likely still in L2 for the final pass).
        self.staged = if self.b.target == Target::Gpu {
            Vec::new()
        } else {
            staged_values(body, shape, &level1, &full_outputs)
        };
        self.row_cache_fill(shape, axes, &work)?;
        let mut partials = Vec::new();
        for (pass, &id) in level1.iter().enumerate() {
            self.pass = pass;
            let Attrs::Reduce { keepdims, .. } = &body.node(id).attrs else {
                unreachable!("a reduction")
            };
            let dims = if *keepdims { with_zeros(&work) } else { work.clone() };
            self.hoisting = Some(id);
            let ix = Ix { dims: Some(dims), flat: None };
            if let Some(p) = pairs.iter().find(|p| p.first() == id) {
                let (first, second) = if self.coop.is_some() {
                    self.emit_pair_coop(p, &ix)?
                } else {
                    self.emit_pair(p, &ix)?
                };
                self.hoisting = None;
                self.hoisted.insert(p.first(), Hoisted::Val(first));
                self.hoisted.insert(p.second(), Hoisted::Val(second));
                continue;
            }
            if self.split.is_some() {
                partials.push((id, self.split_partial(id, &ix)?));
                self.hoisting = None;
                continue;
            }
            let v = if self.coop.is_some() {
                self.emit_reduction_coop(id, &ix)?
            } else {
                self.emit_reduction(id, &ix)?
            };
            self.hoisting = None;
            self.hoisted.insert(id, Hoisted::Val(v));
        }
        // A split kernel goes on in the item's last block only.
        if self.split.is_some() {
            let last = self.split_last_block();
            self.open_if(&last);
            for (id, (acc, first)) in partials {
                let v = self.split_combine(id, &acc, first)?;
                self.hoisted.insert(id, Hoisted::Val(v));
            }
        }
        // Outputs of the kept shape: one element per work item.
        for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
            if let Kind::Kept { keepdims } = kind {
                let dims = if *keepdims { with_zeros(&work) } else { work.clone() };
                let v = self.emit(o, &Ix { dims: Some(dims), flat: Some(w.clone()) })?;
                if self.coop.is_some() {
                    let guard = self.coop_guard(true);
                    self.open_if(&guard);
                    store(&mut self.b, &Self::out_ptr(k), &w, &v);
                    self.close();
                } else {
                    store(&mut self.b, &Self::out_ptr(k), &w, &v);
                }
            }
        }
        if self.split.is_some() {
            // The group's counter back to zero for the next launch.
            let zero = self.b.i64(0);
            let first = self.b.op(&format!("arith.cmpi eq, %tid, {zero} : i64"));
            self.open_if(&first);
            let ctr = self.b.op(
                "llvm.getelementptr inbounds %counter[%group] : (!llvm.ptr, i64) -> !llvm.ptr, i32",
            );
            let zero32 = self.b.op("arith.constant 0 : i32");
            self.b.stmt(&format!("llvm.store {zero32}, {ctr} : i32, !llvm.ptr"));
            self.close();
            self.close();
        }
        // Outputs of the full shape: one pass over the reduced axes.
        if kinds.iter().any(|k| matches!(k, Kind::Full)) {
            let mut full = Vec::new();
            let mut it = work.iter();
            let mut loops = 0;
            if self.coop.is_some() {
                // The lanes share the pass as they shared the reductions (inactive threads,
                // past the last work item, skip it: tested once, outside the loop).
                self.open_if("%active");
                loops += 1;
                let r;
                (r, full, _) = self.open_lane_loop(shape, axes, &work, &[], &[], &[]);
                loops += 1;
                self.pass = level1.len();
                self.row_cache_pass(&full, &r)?;
            } else {
                for (a, &n) in shape.iter().enumerate() {
                    if axes.contains(&a) {
                        let ub = extent(&mut self.b, n);
                        let (iv, _, _) = self.open_for(&zero, &ub, &[], &[]);
                        full.push(iv);
                        loops += 1;
                    } else {
                        full.push(it.next().unwrap().clone());
                    }
                }
            }
            let pos = ravel(&mut self.b, &full, shape);
            let full_ix = Ix { dims: Some(full.clone()), flat: Some(pos.clone()) };
            // Staged values are read back rather than computed again.
            for (e, k, _) in self.staged.clone() {
                let v = load(&mut self.b, &Self::out_ptr(k), &pos, body.node(e).dtype);
                self.memo.last_mut().expect("a memo scope").insert((e, full_ix.key()), v);
            }
            for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
                if let Kind::Full = kind {
                    let v =
                        self.emit(o, &Ix { dims: Some(full.clone()), flat: Some(pos.clone()) })?;
                    store(&mut self.b, &Self::out_ptr(k), &pos, &v);
                }
            }
            for _ in 0..loops {
                self.close();
            }
        }
        self.close();
        Ok(())
    }

    /// Block mode (see [`Lower::reduction`]): work items `w0 .. w0 + n` along the last (kept)
    /// axis are handled together, each reduction's accumulators in stack arrays indexed by the
    /// work item's place in the block; loops run over the reduced axes outside and the block
    /// inside, so consecutive iterations read consecutive elements.
    fn reduction_blocks(&mut self, shape: &[usize], axes: &[usize]) -> Result<(), Stop> {
        let body = self.body;
        self.min_chunk = BLOCK;
        let r = shape.len();
        let kept_shape: Vec<usize> =
            (0..r).filter(|a| !axes.contains(a)).map(|a| shape[a]).collect();
        let keep_ones: Vec<usize> =
            (0..r).map(|a| if axes.contains(&a) { 1 } else { shape[a] }).collect();
        let outs: Vec<NodeId> = body.outputs().to_vec();
        // Some(keepdims) for kept outputs, None for full ones.
        let mut kinds: Vec<Option<bool>> = Vec::new();
        for &o in &outs {
            let s = body.node(o).shape.as_slice();
            kinds.push(if s == shape {
                None
            } else if s == kept_shape.as_slice() {
                Some(false)
            } else if s == keep_ones.as_slice() {
                Some(true)
            } else {
                return Err(Unsupported::new(
                    None,
                    format!("an output of shape {s:?} in a reduction over {shape:?} axes {axes:?}"),
                )
                .into());
            });
        }
        let level1: Vec<NodeId> = body
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(&n.attrs, Attrs::Reduce { axes: ra, .. } if ra.as_slice() == axes && body.node(n.inputs[0]).shape.as_slice() == shape))
            .map(|(i, _)| NodeId(i as u32))
            .collect();
        let full_outputs: Vec<(usize, NodeId)> = outs
            .iter()
            .zip(&kinds)
            .enumerate()
            .filter(|(_, (_, k))| k.is_none())
            .map(|(k, (&o, _))| (k, o))
            .collect();
        self.staged = staged_values(body, shape, &level1, &full_outputs);
        // Stack arrays: each reduction's accumulator components, then its final value.
        let mut scratch: Vec<(NodeId, Acc, Vec<String>, String)> = Vec::new();
        for &id in &level1 {
            let node = body.node(id);
            let acc = Acc::new(node.op, body.node(node.inputs[0]).dtype)?;
            let ptrs: Vec<String> =
                acc.tys.clone().iter().map(|t| self.b.alloca(BLOCK, t)).collect();
            let fin = self.b.alloca(BLOCK, work_ty(node.dtype)?);
            scratch.push((id, acc, ptrs, fin));
        }
        let zero = self.b.i64(0);
        let block = self.b.i64(BLOCK as i64);
        let last = extent(&mut self.b, shape[r - 1]);
        // Blocks: from w0, to the end of w0's row of the kept space, at most BLOCK items.
        let w0 = self.b.fresh();
        let w = self.b.fresh();
        self.open(1, &format!("scf.while ({w0} = %start) : (i64) -> i64"));
        let more = self.b.op(&format!("arith.cmpi slt, {w0}, %end : i64"));
        self.b.stmt(&format!("scf.condition({more}) {w0} : i64"));
        self.memo.pop();
        self.memo.push(HashMap::new());
        self.b.next_region("do");
        self.b.stmt(&format!("^bb0({w}: i64):"));
        let row = self.b.op(&format!("arith.divui {w}, {last} : i64"));
        let j0 = self.b.op(&format!("arith.remui {w}, {last} : i64"));
        let base = self.b.op(&format!("arith.subi {w}, {j0} : i64"));
        let row_end = self.b.op(&format!("arith.addi {base}, {last} : i64"));
        let seg = self.b.op(&format!("arith.minsi {row_end}, %end : i64"));
        let cap = self.b.op(&format!("arith.addi {w}, {block} : i64"));
        let seg = self.b.op(&format!("arith.minsi {seg}, {cap} : i64"));
        let n = self.b.op(&format!("arith.subi {seg}, {w} : i64"));
        let outer = unravel(&mut self.b, &row, &kept_shape[..kept_shape.len() - 1]);
        // The kept index of block item `jj`, and the full index with reduced indices `ivs`.
        let kept_of = |cx: &mut Lower, jj: &str| -> Vec<String> {
            let j = cx.b.op(&format!("arith.addi {j0}, {jj} : i64"));
            let mut k = outer.clone();
            k.push(j);
            k
        };
        let merge = |kept: &[String], ivs: &[String]| -> Vec<String> {
            let (mut ki, mut ri) = (kept.iter(), ivs.iter());
            (0..r)
                .map(|a| {
                    if axes.contains(&a) {
                        ri.next().unwrap().clone()
                    } else {
                        ki.next().unwrap().clone()
                    }
                })
                .collect()
        };
        let with_zeros =
            |kept: &[String]| -> Vec<String> { merge(kept, &vec![zero.clone(); axes.len()]) };
        // Opens the loops over the reduced axes; returns their induction variables.
        let open_reduced = |cx: &mut Lower| -> Vec<String> {
            axes.iter()
                .map(|&a| {
                    let ub = extent(&mut cx.b, shape[a]);
                    cx.open_for(&zero, &ub, &[], &[]).0
                })
                .collect()
        };
        for (id, acc, ptrs, fin) in &scratch {
            let node = body.node(*id);
            let input = node.inputs[0];
            // Initial values.
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let init = acc.init(&mut self.b);
            for ((p, v), t) in ptrs.iter().zip(&init).zip(&acc.tys) {
                let addr = self.b.op(&format!(
                    "llvm.getelementptr inbounds {p}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"
                ));
                self.b.stmt(&format!("llvm.store {v}, {addr} : {t}, !llvm.ptr"));
            }
            self.close();
            // The reduced axes outside, the block inside.
            let ivs = open_reduced(self);
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let kept = kept_of(self, &jj);
            self.work = kept.clone();
            self.block_jj = Some(jj.clone());
            self.hoisting = Some(*id);
            let full = merge(&kept, &ivs);
            let full_ix = Ix { dims: Some(full.clone()), flat: None };
            let v = self.emit(input, &full_ix)?;
            let staged: Vec<(NodeId, usize)> =
                self.staged.iter().filter(|s| s.2 == *id).map(|s| (s.0, s.1)).collect();
            for (e, k) in staged {
                if let Some(val) = self.lookup(&(e, full_ix.key())) {
                    let pos = ravel(&mut self.b, &full, shape);
                    store(&mut self.b, &Self::out_ptr(k), &pos, &val);
                }
            }
            self.hoisting = None;
            let mut cur = Vec::new();
            let mut addrs = Vec::new();
            for (p, t) in ptrs.iter().zip(&acc.tys) {
                let addr = self.b.op(&format!(
                    "llvm.getelementptr inbounds {p}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"
                ));
                cur.push(self.b.op(&format!("llvm.load {addr} : !llvm.ptr -> {t}")));
                addrs.push(addr);
            }
            let reduced_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
            let pos = if acc.needs_pos() {
                ravel(&mut self.b, &ivs, &reduced_shape)
            } else {
                zero.clone()
            };
            let next = acc.step(&mut self.b, &cur, &v, &pos)?;
            for ((v, addr), t) in next.iter().zip(&addrs).zip(&acc.tys) {
                self.b.stmt(&format!("llvm.store {v}, {addr} : {t}, !llvm.ptr"));
            }
            self.close();
            for _ in 0..ivs.len() {
                self.close();
            }
            // Final values.
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let mut cur = Vec::new();
            for (p, t) in ptrs.iter().zip(&acc.tys) {
                let addr = self.b.op(&format!(
                    "llvm.getelementptr inbounds {p}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"
                ));
                cur.push(self.b.op(&format!("llvm.load {addr} : !llvm.ptr -> {t}")));
            }
            let val = acc.finish(&mut self.b, &cur, node.dtype)?;
            let fty = work_ty(node.dtype)?;
            let addr = self.b.op(&format!(
                "llvm.getelementptr inbounds {fin}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {fty}"
            ));
            self.b.stmt(&format!("llvm.store {}, {addr} : {fty}, !llvm.ptr", val.ssa));
            self.close();
            self.hoisted.insert(*id, Hoisted::Scratch { ptr: fin.clone(), dt: node.dtype });
        }
        // Outputs of the kept shape.
        if kinds.iter().any(|k| k.is_some()) {
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let kept = kept_of(self, &jj);
            self.work = kept.clone();
            self.block_jj = Some(jj.clone());
            let wpos = self.b.op(&format!("arith.addi {w}, {jj} : i64"));
            for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
                if let Some(keepdims) = kind {
                    let dims = if *keepdims { with_zeros(&kept) } else { kept.clone() };
                    let v = self.emit(o, &Ix { dims: Some(dims), flat: Some(wpos.clone()) })?;
                    store(&mut self.b, &Self::out_ptr(k), &wpos, &v);
                }
            }
            self.close();
        }
        // Outputs of the full shape.
        if kinds.iter().any(|k| k.is_none()) {
            let ivs = open_reduced(self);
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let kept = kept_of(self, &jj);
            self.work = kept.clone();
            self.block_jj = Some(jj.clone());
            let full = merge(&kept, &ivs);
            let pos = ravel(&mut self.b, &full, shape);
            let full_ix = Ix { dims: Some(full.clone()), flat: Some(pos.clone()) };
            for (e, k, _) in self.staged.clone() {
                let v = load(&mut self.b, &Self::out_ptr(k), &pos, body.node(e).dtype);
                self.memo.last_mut().expect("a memo scope").insert((e, full_ix.key()), v);
            }
            for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
                if kind.is_none() {
                    let v = self.emit(o, &full_ix)?;
                    store(&mut self.b, &Self::out_ptr(k), &pos, &v);
                }
            }
            self.close();
            for _ in 0..ivs.len() {
                self.close();
            }
        }
        self.block_jj = None;
        self.b.stmt(&format!("scf.yield {seg} : i64"));
        self.close();
        Ok(())
    }

    /// The module text and the parameter values.
    fn finish(self) -> (String, Vec<i64>, Launch) {
        let params = self.b.params().to_vec();
        let scatter = self.scatter_launch;
        let scan = self.grid_launch;
        let gpu_shared = self
            .row_cache
            .as_ref()
            .map_or(0, |c| c.bytes)
            .max(scatter.map_or(0, |s| s.1))
            .max(scan.map_or(0, |s| s.1));
        // Scatter and scan kernels: a block's threads know their block, and use a scratch
        // buffer and a counter buffer after the region's.
        let grid = scatter.is_some() || scan.is_some();
        let coop = self.coop;
        let split = self.split.map(|splits| GpuSplit { splits, slots: self.split_slots });
        // GPU threads take GPU_VEC consecutive work items of an elementwise kernel at a time
        // (one index computation for several elements, several loads in flight; flat kernels
        // load them as vectors).
        let gpu_vec = self.gpu_vec && coop.is_none() && self.min_chunk == 1;
        let min_chunk = if gpu_vec { GPU_VEC } else { self.min_chunk };
        let target = self.b.target;
        let math = self.b.math;
        let (entry, body, decls) = self.b.finish();
        let mut args: Vec<String> = (0..self.n_in)
            .map(|k| format!("{}: !llvm.ptr {{llvm.noalias}}", Self::in_ptr(k)))
            .collect();
        args.extend(
            (0..self.n_out).map(|k| format!("{}: !llvm.ptr {{llvm.noalias}}", Self::out_ptr(k))),
        );
        args.push("%params: !llvm.ptr {llvm.noalias}".into());
        args.push("%start: i64".into());
        args.push("%end: i64".into());
        if coop.is_some() {
            args.extend(["%lane: i64".to_string(), "%tid: i64".into(), "%active: i1".into()]);
        }
        if grid {
            args.extend([
                "%tid: i64".to_string(),
                "%block: i64".into(),
                "%nblocks: i64".into(),
                "%scratch: !llvm.ptr {llvm.noalias}".into(),
                "%counter: !llvm.ptr {llvm.noalias}".into(),
            ]);
        }
        if split.is_some() {
            args.extend([
                "%split: i64".to_string(),
                "%group: i64".into(),
                "%scratch: !llvm.ptr {llvm.noalias}".into(),
                "%counter: !llvm.ptr {llvm.noalias}".into(),
            ]);
        }
        // The approximations are applied to the parsed module (`jit`): the attribute asks for them.
        let mut text = if math == MathLib::Polynomial {
            format!("module attributes {{{MATH_ATTR} = \"{}\"}} {{\n", math.name())
        } else {
            String::from("module {\n")
        };
        if let Some(c) = coop {
            // Column groups: a slot per thread and component; row groups: two sets of a slot
            // per warp and component (see `group_combine_warps`).
            let slots = if c.columns { MAX_ACC * COOP_BLOCK } else { MAX_ACC * 2 * BLOCK_WARPS };
            text += &format!(
                "  llvm.mlir.global internal @kiln_smem() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<{slots} x i64>\n"
            );
        }
        if split.is_some() || grid {
            text += "  llvm.mlir.global internal @kiln_flag() {addr_space = 3 : i32, alignment = 4 : i64} : i32\n";
        }
        if gpu_shared > 0 {
            // The row cache: the block's dynamic shared memory.
            text += "  llvm.mlir.global external @kiln_rows() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>\n";
        }
        for d in decls {
            text += "  ";
            text += &d;
            text += "\n";
        }
        text += &format!("  func.func @{KERNEL}({}) {{\n", args.join(", "));
        text += &entry;
        text += &body;
        text += "    return\n  }\n";
        // The host entry: buffer pointers from an array.
        if target == Target::Host {
            let nbuf = self.n_in + self.n_out;
            text +=
                &format!("  func.func @{HOST_ENTRY}(%bufs: !llvm.ptr, %params: !llvm.ptr, %start: i64, %end: i64) {{\n");
            let mut names = Vec::new();
            for k in 0..nbuf {
                text +=
                    &format!("    %p{k} = llvm.getelementptr inbounds %bufs[{k}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr\n");
                text += &format!("    %b{k} = llvm.load %p{k} : !llvm.ptr -> !llvm.ptr\n");
                names.push(format!("%b{k}"));
            }
            names.push("%params".into());
            names.push("%start".into());
            names.push("%end".into());
            let mut tys = vec!["!llvm.ptr"; nbuf + 1];
            tys.push("i64");
            tys.push("i64");
            text += &format!(
                "    func.call @{KERNEL}({}) : ({}) -> ()\n",
                names.join(", "),
                tys.join(", ")
            );
            text += "    return\n  }\n";
        }
        if target == Target::Gpu && grid {
            text += &scatter::gpu_entry(self.n_in + self.n_out, params.len());
        } else if target == Target::Gpu {
            // The entry divides the block index by the split count: the parameter holding it.
            let split_param = split
                .map(|sp| params.iter().position(|&v| v == sp.splits as i64).expect("a parameter"));
            text += &gpu_entry(self.n_in + self.n_out, params.len(), coop, gpu_vec, split_param);
        }
        text += "}\n";
        let gpu_block = coop.map(|c| (COOP_BLOCK, c.items));
        let (gpu_scatter, gpu_grid) = (scatter.map(|s| s.0), scan.map(|s| s.0));
        (
            text,
            params,
            Launch { min_chunk, gpu_block, gpu_split: split, gpu_shared, gpu_scatter, gpu_grid },
        )
    }
}

/// The GPU entry (made a `.entry` by its calling convention, set on the LLVM function).
///
/// Without `coop`: a grid-stride loop over chunks of work items, each handled by a call to
/// `@kiln_kernel` (inlined). With it: blocks of [`COOP_BLOCK`] threads loop over groups of
/// `items` work items, `lanes` threads to an item; the loop's trip count is the same for every
/// thread of a block (an item past the end is computed on the last item, its stores skipped),
/// so the kernel's barriers are reached by all.
/// The parameters arrive by value and are spilled to a stack array for the kernel's
/// `%params` loads, which LLVM's SROA turns back into the arguments.
fn gpu_entry(
    nbuf: usize,
    nparams: usize,
    coop: Option<Coop>,
    vec: bool,
    split: Option<usize>,
) -> String {
    // Buffers are whole allocations of the memory pool: 512-byte aligned. A split kernel's
    // scratch and counters follow the region's buffers.
    let all = if split.is_some() { nbuf + 2 } else { nbuf };
    let mut args: Vec<String> = (0..all)
        .map(|k| format!("%b{k}: !llvm.ptr {{llvm.noalias, llvm.align = 16 : i64}}"))
        .collect();
    args.extend((0..nparams).map(|k| format!("%p{k}: i64")));
    args.push("%n: i64".into());
    args.push("%chunk: i64".into());
    let mut t = format!("  func.func @{GPU_ENTRY}({}) {{\n", args.join(", "));
    t += "    %one = arith.constant 1 : i64\n";
    if vec {
        t += &format!("    %c{GPU_VEC} = arith.constant {GPU_VEC} : i64\n");
    }
    t += &entry_prologue(nparams);
    let mut names: Vec<String> = (0..nbuf).map(|k| format!("%b{k}")).collect();
    names.extend(["%params".to_string(), "%start".into(), "%end".into()]);
    let mut tys = vec!["!llvm.ptr"; nbuf + 1];
    tys.extend(["i64", "i64"]);
    match coop {
        None => {
            t += "    %base = arith.muli %ctaid, %ntid : i64\n";
            t += "    %gid = arith.addi %base, %tid : i64\n";
            t += "    %stride = arith.muli %ntid, %nctaid : i64\n";
            t += "    %nm1 = arith.addi %n, %chunk : i64\n";
            t += "    %nm2 = arith.subi %nm1, %one : i64\n";
            t += "    %nchunks = arith.divui %nm2, %chunk : i64\n";
            t += "    scf.for %c = %gid to %nchunks step %stride : i64 {\n";
            if vec {
                // The chunk is GPU_VEC: a constant factor tells LLVM the start's alignment.
                t += &format!("      %start = arith.muli %c, %c{GPU_VEC} : i64\n");
            } else {
                t += "      %start = arith.muli %c, %chunk : i64\n";
            }
            t += "      %end0 = arith.addi %start, %chunk : i64\n";
            t += "      %end = arith.minui %end0, %n : i64\n";
            if vec {
                // A whole chunk has a constant trip count: unrolled, its loads vectorised.
                let call = format!(
                    "func.call @{KERNEL}({}) : ({}) -> ()",
                    names.join(", "),
                    tys.join(", ")
                );
                t += &format!("      %vec = arith.constant {GPU_VEC} : i64\n");
                t += "      %full = arith.cmpi ule, %end0, %n : i64\n";
                t += "      scf.if %full {\n";
                t += "        %vend = arith.addi %start, %vec : i64\n";
                t += &format!("        {}\n", call.replace("%end", "%vend"));
                // The last, partial chunk (fewer than GPU_VEC items): one item per call, so
                // the inlined kernel keeps neither its unrolled path nor a loop, only one copy
                // of the element's code (libdevice functions are inlined per copy).
                t += "      } else {\n";
                t += "        scf.for %i = %start to %end step %one : i64 {\n";
                t += "          %i1 = arith.addi %i, %one : i64\n";
                t +=
                    &format!("          {}\n", call.replace("%start", "%i").replace("%end", "%i1"));
                t += &format!("        }} {NO_UNROLL}\n");
                t += "      }\n";
                t += "    }\n    return\n  }\n";
                return t;
            }
        }
        Some(c) if split.is_some() => {
            // One block per (group of items, split); every thread's item as without a split.
            let k = split.expect("checked");
            t += &coop_lane_item(c);
            t += &format!("    %group = arith.divui %ctaid, %p{k} : i64\n");
            t += &format!("    %split = arith.remui %ctaid, %p{k} : i64\n");
            t += "    %g0 = arith.muli %group, %items : i64\n";
            t += "    %w = arith.addi %g0, %item : i64\n";
            t += "    %active = arith.cmpi ult, %w, %n : i64\n";
            t += "    %last = arith.subi %n, %one : i64\n";
            t += "    %start = arith.minui %w, %last : i64\n";
            t += "    %end = arith.addi %start, %one : i64\n";
            names.extend([
                "%lane".to_string(),
                "%tid".into(),
                "%active".into(),
                "%split".into(),
                "%group".into(),
                format!("%b{nbuf}"),
                format!("%b{}", nbuf + 1),
            ]);
            tys.extend(["i64", "i64", "i1", "i64", "i64", "!llvm.ptr", "!llvm.ptr"]);
            t += &format!(
                "    func.call @{KERNEL}({}) : ({}) -> ()\n",
                names.join(", "),
                tys.join(", ")
            );
            t += "    return\n  }\n";
            return t;
        }
        Some(c) => {
            t += &coop_lane_item(c);
            t += "    %base0 = arith.muli %ctaid, %items : i64\n";
            t += "    %stride = arith.muli %nctaid, %items : i64\n";
            t += "    %last = arith.subi %n, %one : i64\n";
            t += "    scf.for %c = %base0 to %n step %stride : i64 {\n";
            t += "      %w = arith.addi %c, %item : i64\n";
            t += "      %active = arith.cmpi ult, %w, %n : i64\n";
            t += "      %start = arith.minui %w, %last : i64\n";
            t += "      %end = arith.addi %start, %one : i64\n";
            names.extend(["%lane".to_string(), "%tid".into(), "%active".into()]);
            tys.extend(["i64", "i64", "i1"]);
        }
    }
    t += &format!("      func.call @{KERNEL}({}) : ({}) -> ()\n", names.join(", "), tys.join(", "));
    t += "    }\n    return\n  }\n";
    t
}

/// The GPU entry's parameters spilled to the stack array `%params` (the kernel's loads of it,
/// which LLVM's SROA turns back into the arguments), and the thread's `%tid`, `%ctaid`, `%ntid`,
/// `%nctaid` as i64.
pub(crate) fn entry_prologue(nparams: usize) -> String {
    let mut t = format!("    %nparams = arith.constant {} : i64\n", nparams.max(1));
    t += "    %params = llvm.alloca %nparams x i64 : (i64) -> !llvm.ptr\n";
    for k in 0..nparams {
        t += &format!("    %pp{k} = llvm.getelementptr inbounds %params[{k}] : (!llvm.ptr) -> !llvm.ptr, i64\n");
        t += &format!("    llvm.store %p{k}, %pp{k} : i64, !llvm.ptr\n");
    }
    for (v, reg) in
        [("tid", "tid.x"), ("ctaid", "ctaid.x"), ("ntid", "ntid.x"), ("nctaid", "nctaid.x")]
    {
        t += &format!("    %{v}32 = nvvm.read.ptx.sreg.{reg} : i32\n");
        t += &format!("    %{v} = arith.extui %{v}32 : i32 to i64\n");
    }
    t
}

/// The entry's `%items`, `%lanes`, and each thread's `%lane` and `%item` in its block, for a
/// cooperative kernel's layout (see [`Coop`]).
fn coop_lane_item(c: Coop) -> String {
    let mut t = format!("    %items = arith.constant {} : i64\n", c.items);
    t += &format!("    %lanes = arith.constant {} : i64\n", c.lanes);
    if c.columns {
        t += "    %lane = arith.divui %tid, %items : i64\n";
        t += "    %item = arith.remui %tid, %items : i64\n";
    } else {
        t += "    %lane = arith.remui %tid, %lanes : i64\n";
        t += "    %item = arith.divui %tid, %lanes : i64\n";
    }
    t
}

/// Nodes a reduction region would otherwise compute twice per element: once in the prologue of
/// a reduction over the region's space, once for a full-shape output (softmax's `exp(x - max)`,
/// read by the sum and by the division). Each is stored into that output's buffer by the
/// reduction's loop and read back by the final pass: for (value, output index, reduction).
///
/// A candidate has the region's shape and its output's dtype (the buffer holds it exactly), is
/// in the output's cone and in the prologue of a reduction of `level1`, and costs a call to a
/// transcendental function at least; of several, the costliest (then the last) is taken.
fn staged_values(
    body: &Graph,
    shape: &[usize],
    level1: &[NodeId],
    outputs: &[(usize, NodeId)],
) -> Vec<(NodeId, usize, NodeId)> {
    use std::collections::BTreeSet;
    // Nodes reachable from `root` through elementwise ops and views, not into reductions.
    let cone = |root: NodeId| -> BTreeSet<NodeId> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let node = body.node(n);
            if node.op.is_reduction() && n != root {
                continue;
            }
            if !node.op.is_reduction() {
                stack.extend(node.inputs.iter().copied());
            }
        }
        seen
    };
    let cost = |n: NodeId| -> usize {
        cone(n)
            .iter()
            .map(|&m| {
                use OpKind::*;
                match body.node(m).op {
                    Exp | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Sin | Cos | Tan | Arcsin
                    | Arccos | Arctan | Sinh | Cosh | Tanh | Arcsinh | Arccosh | Arctanh | Erf
                    | Cbrt | Power | Arctan2 | Hypot | LogAddExp => 16,
                    op if op.is_elementwise() => 1,
                    _ => 0,
                }
            })
            .sum()
    };
    let mut staged = Vec::new();
    for &(k, o) in outputs {
        let out_cone = cone(o);
        let dtype = body.node(o).dtype;
        let mut best: Option<(usize, NodeId, NodeId)> = None;
        for &r in level1 {
            let prologue = cone(body.node(r).inputs[0]);
            for &e in out_cone.intersection(&prologue) {
                let node = body.node(e);
                if node.shape.as_slice() != shape
                    || node.dtype != dtype
                    || !node.op.is_elementwise()
                {
                    continue;
                }
                let c = cost(e);
                if c >= 16 && best.is_none_or(|(bc, be, _)| (c, e) > (bc, be)) {
                    best = Some((c, e, r));
                }
            }
        }
        if let Some((_, e, r)) = best {
            staged.push((e, k, r));
        }
    }
    staged
}

/// How the body reads its inputs at `shape`: for each use of an `input` (directly or through
/// views) by an op over `shape`, the input's size in bytes and its strides (in elements) as seen
/// there (0 along broadcast axes). Uses through a reshape that is no strided view are left out.
fn input_strides(body: &Graph, shape: &[usize]) -> Vec<(usize, Vec<isize>)> {
    use kiln_ir::Layout;
    let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); body.len()];
    for (i, n) in body.nodes().iter().enumerate() {
        for &inp in &n.inputs {
            if !users[inp.index()].contains(&NodeId(i as u32)) {
                users[inp.index()].push(NodeId(i as u32));
            }
        }
    }
    let mut out = Vec::new();
    for (i, node) in body.nodes().iter().enumerate() {
        if node.op != OpKind::Input {
            continue;
        }
        let bytes = numel(&node.shape) * node.dtype.itemsize();
        let mut stack = vec![(NodeId(i as u32), Layout::contiguous(&node.shape))];
        while let Some((cur, layout)) = stack.pop() {
            for &u in &users[cur.index()] {
                let v = body.node(u);
                if !v.op.is_view() {
                    if body.node(cur).shape.as_slice() == shape {
                        out.push((bytes, layout.strides.to_vec()));
                    }
                    continue;
                }
                let next =
                    match (&v.op, &v.attrs) {
                        (OpKind::Permute, Attrs::Perm { perm }) => Some(layout.permute(perm)),
                        (OpKind::BroadcastTo, Attrs::Shape { shape }) => {
                            Some(layout.broadcast_to(shape))
                        }
                        (OpKind::Slice, Attrs::Slice { dims }) => Some(layout.slice(
                            &dims.iter().map(|d| (d.start, d.step, d.len)).collect::<Vec<_>>(),
                        )),
                        (OpKind::Flip, Attrs::Axes { axes }) => Some(layout.flip(axes)),
                        (OpKind::Reshape | OpKind::ExpandDims | OpKind::Squeeze, _) => {
                            layout.reshape(&v.shape)
                        }
                        _ => None,
                    };
                if let Some(next) = next {
                    stack.push((u, next));
                }
            }
        }
    }
    out
}
