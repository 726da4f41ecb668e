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
//!
//! One entry, [`lower`] (with [`LowerOptions`]); every kernel names its [`KernelShape`]. The
//! files, by kernel shape:
//! - `emit.rs`: nodes at an index, reductions as loop nests, pairs of reductions in one pass;
//! - `elementwise.rs`: flat loops, row segments, tiles; `join.rs`: concatenate, stack and
//!   contiguous inside a region;
//! - `reduction.rs`: host rows and blocks, and the GPU's row and column groups, with
//!   `coop.rs` (threads sharing a work item, their combines), `row_cache.rs` (rows staged in
//!   shared memory) and `split.rs` (reductions split across blocks); `nested.rs`: short inner
//!   reductions unrolled, `screen.rs`: an unrolled argmin/argmax over float32 sums decided
//!   by a float32 pass where its error bound allows;
//! - `scatter.rs` (`scatter/owned.rs`: bins owned by threads), `scan.rs`, `scan_gpu.rs`, `sort_gpu.rs`: scatters, scans, line sorts;
//! - `entry.rs`: the GPU entry around the kernel.

use std::collections::HashMap;

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, DType, Graph, Node, NodeId, OpClass, OpKind};

use super::builder::Builder;
use super::index::{extent, ravel, through_view, unravel, Ix, NeedsDims};
use super::moments::Moments;
use super::online::Online;
use super::reduce::{Acc, Combine};
use super::types::{check_dtype, float_const, literal, load, load_input, store, work_ty, Val};
use super::{scalar, MathLib, Target, Tier, Unsupported};
use crate::error::CompileError;
use crate::fusion::{Region, RegionKind, Space};

mod combiner;
mod coop;
mod elementwise;
mod emit;
mod entry;
mod join;
mod label_block;
mod mbarrier;
mod nested;
mod reduction;
mod row_cache;
pub(crate) mod scan;
pub(crate) mod scan_gpu;
pub mod scatter;
pub mod scatter_epilogue;
mod screen;
mod split;
mod tile;

use coop::*;
use elementwise::*;
use emit::*;
use entry::*;
use reduction::*;
use row_cache::*;
pub use split::GpuSplit;
use split::*;
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

/// How a kernel lays its work out: the name dumps, `kernel_code` and the fusion report's
/// code lines give it (see [`KernelShape::name`]). Each shape has its file in this folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelShape {
    /// Elementwise, one flat loop over the output's elements (no multi-index; LLVM vectorises
    /// it on the host, [`GPU_VEC`] elements a thread on the GPU). `elementwise.rs`.
    ElementwiseFlat,
    /// Elementwise, row segments: the multi-index unravelled once per row, a loop along the last
    /// axis. `elementwise.rs`.
    ElementwiseRows,
    /// Elementwise, tiles of [`TILE`]² for transposed inputs. `elementwise.rs`.
    ElementwiseTiles,
    /// A reduction, one work item (kept element) after another, each its loop nest over the
    /// reduced axes (the host's row mode; on the GPU, a thread per work item). `reduction.rs`.
    ReductionRows,
    /// A host reduction by blocks of work items along a kept contiguous last axis (column sums
    /// read memory in order). `reduction.rs`.
    ReductionBlocks,
    /// A GPU reduction, a group of consecutive threads per work item combining by warp
    /// shuffles (`coop.rs`); `row_cache`: inputs several passes read staged in shared memory
    /// (`row_cache.rs`).
    GpuRowGroups { row_cache: bool },
    /// A GPU reduction, consecutive threads on consecutive work items, an item's lanes
    /// combining through shared memory. `coop.rs`.
    GpuColumnGroups,
    /// A GPU reduction of few work items split across blocks, the last block combining the
    /// partials in a fixed order (`split.rs`); `columns` as [`KernelShape::GpuColumnGroups`].
    GpuSplit { columns: bool },
    /// A scatter over its positions, host loops (`scatter.rs`).
    Scatter,
    /// A GPU scatter by tiles, bins private to a block in shared memory where they fit
    /// (`scatter.rs`).
    GpuScatterTiles,
    /// A scan, one loop along each row (`scan.rs`).
    ScanRows,
    /// A GPU scan by tiles with a look-back tree of tile totals (`scan_gpu.rs`).
    GpuScanTiles,
    /// A GPU sort, one block per line in shared memory (`sort_gpu.rs`).
    GpuSortLines,
}

impl KernelShape {
    /// The shape's name in dumps and reports (`row groups + row cache`...).
    pub fn name(self) -> &'static str {
        match self {
            KernelShape::ElementwiseFlat => "elementwise flat",
            KernelShape::ElementwiseRows => "elementwise rows",
            KernelShape::ElementwiseTiles => "elementwise tiles",
            KernelShape::ReductionRows => "reduction rows",
            KernelShape::ReductionBlocks => "reduction blocks",
            KernelShape::GpuRowGroups { row_cache: false } => "row groups",
            KernelShape::GpuRowGroups { row_cache: true } => "row groups + row cache",
            KernelShape::GpuColumnGroups => "column groups",
            KernelShape::GpuSplit { columns: false } => "split rows",
            KernelShape::GpuSplit { columns: true } => "split columns",
            KernelShape::Scatter => "scatter",
            KernelShape::GpuScatterTiles => "scatter tiles",
            KernelShape::ScanRows => "scan rows",
            KernelShape::GpuScanTiles => "scan tiles",
            KernelShape::GpuSortLines => "sort lines",
        }
    }
}

impl std::fmt::Display for KernelShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A region lowered to MLIR, with what it takes to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The machine it is for.
    pub target: Target,
    /// How it lays its work out.
    pub shape: KernelShape,
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
    /// Scatter regions: the elementwise op combining values into each of its scatters (`add`,
    /// `maximum`, `minimum`), the ones written as outputs first (the leading outputs), then
    /// those only an absorbed epilogue reads ([`scatter_epilogue::accumulators`]); the kernel
    /// accumulates into buffers its caller initialised (see module `scatter`). Empty for other
    /// regions.
    pub scatter: Vec<OpKind>,
    /// Host scatter kernels with an epilogue: dtype and shape of each extra buffer, after the
    /// outputs, holding a scatter only the epilogue reads (its combined result; the GPU keeps
    /// it in scratch). Empty otherwise.
    pub scatter_extra: Vec<(DType, Vec<usize>)>,
    /// GPU scatter kernels: their launch (see [`scatter::GpuScatter`]); `None` otherwise.
    pub gpu_scatter: Option<scatter::GpuScatter>,
    /// GPU scan kernels by tiles and GPU line sorts: their launch (see [`scan_gpu::GpuGrid`]);
    /// `None` otherwise.
    pub gpu_grid: Option<scan_gpu::GpuGrid>,
}

/// The module attribute naming a kernel's [`MathLib`] when it is not the target's default.
pub(crate) const MATH_ATTR: &str = "kiln.math";

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

/// How a region is lowered (see [`lower`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// The machine the kernel is for: for [`Target::Gpu`] the module also holds the
    /// `@kiln_gpu` entry ([`GPU_ENTRY`]).
    pub target: Target,
    /// Where math functions come from (a library `target` can call: not libm on the GPU, not
    /// libdevice on the host; under [`MathLib::Polynomial`] float64 functions are errors).
    pub math: MathLib,
    /// GPU elementwise kernels' unrolled paths that take [`GPU_VEC`] items at a time; without
    /// them a thread takes one item at a time (one copy of the region's code, not five: the
    /// fast tier of GPU code).
    pub gpu_vec: bool,
    /// Softmaxes fold their max and sum in one pass over the row (module `online`), layer
    /// norms their sum and sum of squares (module `moments`); by default on the GPU only (see
    /// [`online_softmax`]'s figures).
    pub online_softmax: bool,
    /// The GPU has `sm_90`'s bulk copies (the TMA) and transaction mbarriers: long scans take
    /// the look-ahead kernel (`scan_gpu::lookahead`). By default as the default PTX target
    /// (`sm_90`) has them; [`LowerOptions::for_sm`] sets it for a device.
    pub bulk_copies: bool,
}

impl LowerOptions {
    /// The defaults for `target`: its math library on this machine ([`MathLib::for_target`]),
    /// GPU kernels' unrolled paths, [`online_softmax`]'s setting.
    pub fn new(target: Target) -> LowerOptions {
        LowerOptions {
            target,
            math: MathLib::for_target(target),
            gpu_vec: true,
            online_softmax: online_softmax(target),
            bulk_copies: false,
        }
        .for_sm(crate::toolchain::ptx::PtxTarget::default().sm)
    }

    /// These options for a GPU of compute capability `sm` (`major · 10 + minor`): bulk copies
    /// on the data-centre parts whose blocks may have 227 KiB of shared memory (`sm_90`,
    /// `sm_100`, `sm_103`; the look-ahead scan's stages take 192 KiB), not on `sm_120`'s 99 KiB.
    pub fn for_sm(self, sm: u32) -> LowerOptions {
        let big_smem = matches!(sm, 90 | 100 | 103);
        LowerOptions { bulk_copies: self.target == Target::Gpu && big_smem, ..self }
    }

    /// The defaults for the host.
    pub fn host() -> LowerOptions {
        LowerOptions::new(Target::Host)
    }

    /// The defaults for the GPU.
    pub fn gpu() -> LowerOptions {
        LowerOptions::new(Target::Gpu)
    }

    /// The defaults for the GPU code of `tier` (the fast tier without unrolled paths).
    pub fn gpu_tier(tier: Tier) -> LowerOptions {
        LowerOptions { gpu_vec: tier == Tier::Optimized, ..LowerOptions::gpu() }
    }

    /// These options with math functions computed by `math`.
    pub fn with_math(self, math: MathLib) -> LowerOptions {
        LowerOptions { math, ..self }
    }
}

/// Lowers a region to a kernel as `options` say: one of code generation's two entry points
/// (the other is [`crate::codegen::compile`]).
///
/// Errors: [`CompileError::Unsupported`] (region 0) for an op, dtype or region kind not
/// supported yet, or a math library `options.target` cannot call.
pub fn lower(region: &Region, options: &LowerOptions) -> Result<Kernel, CompileError> {
    lower_region(region, options).map_err(|u| u.into_error(0))
}

fn lower_region(region: &Region, options: &LowerOptions) -> Result<Kernel, Unsupported> {
    let LowerOptions { target, math, gpu_vec, online_softmax, bulk_copies } = *options;
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
    // Host scatters only an epilogue reads accumulate into extra buffers after the outputs.
    let scatter_extra: Vec<(DType, Vec<usize>)> = match &region.space {
        Space::Scatter { .. } if target == Target::Host => {
            let (accs, written) = scatter_epilogue::accumulators(body);
            accs[written..]
                .iter()
                .map(|&a| (body.node(a).dtype, body.node(a).shape.to_vec()))
                .collect()
        }
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
            return Err(Unsupported::new(Some(op), format!("a {} region", region.kind.name())));
        }
    };
    // 32-bit index divisions on the GPU when every index fits (arrays of 2^31 elements or more
    // get 64-bit ones).
    let index32 =
        target == Target::Gpu && body.nodes().iter().all(|n| numel(&n.shape) < (1usize << 31));
    let attempt = |flat: bool| -> Result<(String, Vec<i64>, Launch), Stop> {
        let mut cx = Lower::new(body, inputs.len(), outputs.len() + scatter_extra.len(), target);
        cx.gpu_vec = gpu_vec && target == Target::Gpu;
        cx.online = online_softmax;
        cx.bulk_copies = bulk_copies && target == Target::Gpu;
        cx.b.math = math;
        cx.b.index32 = index32;
        match &region.space {
            Space::Elementwise { shape } => cx.elementwise(shape, flat)?,
            Space::Reduce { shape, axes } => {
                cx.shape = KernelShape::ReductionRows;
                cx.reduction(shape, axes)?
            }
            Space::Scatter { items } if target == Target::Gpu => {
                cx.b.const_extents = scatter::CONST_EXTENTS;
                cx.shape = KernelShape::GpuScatterTiles;
                cx.scatter_gpu(items)?
            }
            Space::Scatter { items } => {
                cx.b.const_extents = scatter::CONST_EXTENTS;
                cx.shape = KernelShape::Scatter;
                cx.scatter(items)?
            }
            Space::Scan { shape, axis }
                if target == Target::Gpu
                    && let Some(tiles) = scan_gpu::gpu_tiles(body, shape, *axis) =>
            {
                cx.shape = KernelShape::GpuScanTiles;
                cx.scan_gpu(shape, *axis, tiles)?
            }
            Space::Scan { shape, axis } => {
                cx.shape = KernelShape::ScanRows;
                cx.scan(shape, *axis)?
            }
            Space::Opaque => {
                cx.shape = KernelShape::GpuSortLines;
                cx.sort_lines_gpu(&sort_gpu::plan(region)?)?
            }
        }
        Ok(cx.finish())
    };
    let (
        mlir,
        params,
        Launch { shape, min_chunk, gpu_block, gpu_split, gpu_shared, gpu_scatter, gpu_grid },
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
        target,
        shape,
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
        scatter_extra,
        gpu_scatter,
        gpu_grid,
    })
}

/// How a kernel is launched: see the fields of the same names in [`Kernel`].
struct Launch {
    shape: KernelShape,
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
    /// A row kernel's output pass divides by a row's value with gathered range checks, and
    /// its row pass folds a layer norm's moments (see `coop.rs`): they set its launch bounds
    /// ([`row_div_min_blocks`]).
    row_div: bool,
    row_moments: bool,
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
    tile: Option<tile::Tile>,
    /// A GPU scatter kernel's label phase: (this thread's lane, lanes per position, terms a
    /// lane takes a step) for the first screened argmin, whose float32 sums the lanes share
    /// (see [`Lower::reductions_together`]).
    label_lanes: Option<(String, usize, usize)>,
    /// A GPU scatter kernel's label phase where a thread takes several positions: (its first
    /// position, the others), SSA names. The first screened argmin at the first computes its
    /// sums at all of them in one loop (each centre's load used for every position) and
    /// memoises the others' results (see [`Lower::unrolled_reduction`]).
    co_items: Option<(String, Vec<String>)>,
    /// A GPU scatter kernel's label argmin screened by expanded distances (`screen/expanded.rs`).
    expanded: Option<screen::Expanded>,
    /// Index values (SSA names) known to be multiples of a number (a loop's induction variable
    /// stepping by an unroll): the alignment of the shared-memory loads they index.
    multiples: HashMap<String, usize>,
    /// A GPU scatter kernel's launch and its bytes of shared memory.
    scatter_launch: Option<(scatter::GpuScatter, usize)>,
    /// A GPU scatter kernel whose warps take tiles on their own (module `scatter::group`).
    group: Option<scatter::group::Group>,
    /// A scatter kernel's epilogue: where each scatter's combined result is (a pointer to its
    /// elements in C order), read by the epilogue's loads of it (see [`Lower::emit`]).
    combined: HashMap<NodeId, String>,
    /// A GPU scan or line-sort kernel's launch and its bytes of shared memory.
    grid_launch: Option<(scan_gpu::GpuGrid, usize)>,
    /// Launch bounds of a grid kernel that is not a scatter's: (threads, blocks a
    /// multiprocessor should hold at once), `.maxntid` and `.minnctapersm` in the PTX.
    grid_bounds: Option<(usize, usize)>,
    /// `sm_90` bulk copies (the TMA) and mbarriers may be used: the look-ahead scan.
    bulk_copies: bool,
    /// The tag of a scan's published words (i64 SSA, the high half set) where it is the
    /// launch's epoch (the look-ahead scan's), else the constant tag 1.
    scan_tag: Option<String>,
    /// The kernel's shape (see [`KernelShape`]): set by the function that lays the work out;
    /// GPU reductions' refined in `finish` from `coop`, `split` and `row_cache`.
    shape: KernelShape,
}

/// Whether softmaxes and layer norms fold their two reductions in one pass (see [`Pair`]) on
/// `target`, read once per process: `KILN_ONLINE_SOFTMAX=on|off` for both targets; by default
/// on the GPU only.
/// It changes the kernel's text, so its cache key. On the host the one pass does not vectorise
/// (a branch per element, a scalar `expf` call): softmax over the rows of 4096×4096 float32
/// took 105–108 ms with it against 22–24 ms in three passes (`cargo bench --bench cpu_peers
/// -- softmax`, the 2-core development machine), whose row is in cache after its first pass.
pub fn online_softmax(target: Target) -> bool {
    kiln_cache::config().online_softmax.unwrap_or(target == Target::Gpu)
}

impl<'g> Lower<'g> {
    fn new(body: &'g Graph, n_in: usize, n_out: usize, target: Target) -> Lower<'g> {
        Lower {
            body,
            b: Builder::new("%params", target),
            n_in,
            n_out,
            memo: vec![HashMap::new()],
            row_div: false,
            row_moments: false,
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
            label_lanes: None,
            co_items: None,
            expanded: None,
            multiples: HashMap::new(),
            scatter_launch: None,
            group: None,
            combined: HashMap::new(),
            grid_launch: None,
            grid_bounds: None,
            bulk_copies: false,
            scan_tag: None,
            shape: KernelShape::ElementwiseRows,
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

    /// Opens `scf.if cond` (close it with [`Lower::close`]).
    fn open_if(&mut self, cond: &str) {
        self.open(0, &format!("scf.if {cond}"));
    }

    /// Moves from an `scf.if`'s then region to its else region, in a memo scope of its own
    /// (nothing the then region computed is visible there).
    fn open_else(&mut self) {
        self.b.next_region("else");
        self.memo.pop();
        self.memo.push(HashMap::new());
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
        let shape = match (self.shape, coop) {
            (KernelShape::ReductionRows, Some(c)) if self.split.is_some() => {
                KernelShape::GpuSplit { columns: c.columns }
            }
            (KernelShape::ReductionRows, Some(c)) if c.columns => KernelShape::GpuColumnGroups,
            (KernelShape::ReductionRows, Some(_)) => {
                KernelShape::GpuRowGroups { row_cache: self.row_cache.is_some() }
            }
            (s, _) => s,
        };
        let split = self.split.map(|splits| GpuSplit { splits, slots: self.split_slots });
        // GPU threads take GPU_VEC consecutive work items of an elementwise kernel at a time
        // (one index computation for several elements, several loads in flight; flat kernels
        // load them as vectors).
        let gpu_vec = self.gpu_vec && coop.is_none() && self.min_chunk == 1;
        let min_chunk = if gpu_vec { GPU_VEC } else { self.min_chunk };
        let target = self.b.target;
        let math = self.b.math;
        let deref: Vec<u64> =
            (0..self.n_in).map(|k| self.b.dereferenceable(&Self::in_ptr(k)).unwrap_or(0)).collect();
        let (entry, body, decls) = self.b.finish();
        let mut args: Vec<String> = (0..self.n_in)
            .map(|k| {
                format!("{}: !llvm.ptr {{llvm.noalias{}}}", Self::in_ptr(k), deref_attr(deref[k]))
            })
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
            let bounds = scatter
                .map(|s| s.0)
                .filter(|s| s.min_blocks > 0)
                .map(|s| (s.threads, s.min_blocks))
                .or(self.grid_bounds);
            text += &scatter::gpu_entry(self.n_in + self.n_out, params.len(), bounds);
        } else if target == Target::Gpu {
            // The entry divides the block index by the split count: the parameter holding it.
            let split_param = split
                .map(|sp| params.iter().position(|&v| v == sp.splits as i64).expect("a parameter"));
            // Row kernels dividing by a row's value: launch bounds that keep the occupancy
            // (`KILN_GPU_ROW_BOUNDS` sets them for every row kernel, or none).
            let row_bounds = kiln_cache::config().gpu_row_bounds.unwrap_or(if self.row_div {
                row_div_min_blocks(self.row_moments)
            } else {
                0
            });
            text += &gpu_entry(
                self.n_in + self.n_out,
                params.len(),
                coop,
                gpu_vec,
                split_param,
                &deref,
                row_bounds,
            );
        }
        text += "}\n";
        let gpu_block = coop.map(|c| (COOP_BLOCK, c.items));
        let (gpu_scatter, gpu_grid) = (scatter.map(|s| s.0), scan.map(|s| s.0));
        (
            text,
            params,
            Launch {
                shape,
                min_chunk,
                gpu_block,
                gpu_split: split,
                gpu_shared,
                gpu_scatter,
                gpu_grid,
            },
        )
    }
}

/// `, llvm.dereferenceable = N` for a pointer argument of which `bytes` (if not 0) are known
/// readable.
fn deref_attr(bytes: u64) -> String {
    if bytes == 0 {
        String::new()
    } else {
        format!(", llvm.dereferenceable = {bytes} : i64")
    }
}
