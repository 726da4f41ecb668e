//! Scatter regions (`Space::Scatter`): a work item is a position of the index array (shape
//! `items`). For each, the kernel computes the index (its producers fused: k-means' labels are
//! an argmin of distances, computed here), wraps it into `[0, rows)` (Python's modulo), and
//! combines its row of values (`values[item, j...]`, their producers fused) into row `index` of
//! each output: `out[index, j] = combine(out[index, j], v)`, the combine being the evaluator's
//! `add`, `maximum` or `minimum` of the output's dtype.
//!
//! On the host the kernel accumulates into its output buffers as it finds them: the caller
//! initialises them and keeps concurrent chunks apart ([`super::host::run_region`]: each of a
//! fixed number of chunks of positions, a function of the sizes only, accumulates into a
//! private copy; the copies are combined in chunk order). On the GPU ([`Lower::scatter_gpu`])
//! blocks accumulate tiles of positions into bins in shared memory, and the last block combines
//! the blocks' partials in block order. Either way a result is the same bits on every run.
//!
//! Not generated (the evaluator runs them): `scatter` (replace), which needs the last writer of
//! each row; `scatter_max`/`scatter_min` of complex values. On the GPU also: dtypes other than
//! float32/float64/int32/int64/uint32/uint64, positions of rank > 1, and bins that do not fit a
//! block's shared memory even as one copy (a `scatter_add` into 2^20 bins): the host runs those
//! between copies.

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, Node, OpKind};
use smallvec::SmallVec;

use kiln_ir::DType;

use super::combiner::atomic_op;
pub(super) use super::combiner::identity;
use super::tile::{staged_stride, Held, Staged, Tile};
use super::{Ix, Lower, Stop, WARP};
use crate::codegen::index::{extent, unravel};
use crate::codegen::types::{literal, load, store, Val};
use crate::codegen::{scalar, Target, Unsupported};

mod entry;
pub(super) mod group;
mod owned;
pub(super) mod queue;
mod tiles;
mod warp;

pub(super) use entry::gpu_entry;
pub use entry::gpu_strategy;
use tiles::TileLoop;

/// The dtypes a GPU scatter kernel combines, and holds in shared memory (4- and 8-byte
/// numbers, loaded and stored as they are).
pub(super) const GPU_DTYPES: [DType; 6] =
    [DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::UInt32, DType::UInt64];

/// Checks that code generation supports the scatter region's scatters; returns the combine of
/// each ([`super::scatter_epilogue::accumulators`]'s order).
pub(crate) fn combines(body: &kiln_ir::Graph, target: Target) -> Result<Vec<OpKind>, Unsupported> {
    let (accs, _) = super::scatter_epilogue::accumulators(body);
    if target == Target::Gpu {
        if let Some(&o) = accs.iter().find(|&&o| !GPU_DTYPES.contains(&body.node(o).dtype)) {
            let n = body.node(o);
            return Err(Unsupported::new(
                Some(n.op.name()),
                format!("a {} scatter on the GPU (the host runs it)", n.dtype),
            ));
        }
    }
    accs.iter()
        .map(|&o| {
            let n = body.node(o);
            let c = n.op.combine().ok_or_else(|| {
                Unsupported::new(
                    Some(n.op.name()),
                    "a scatter that replaces rows (the evaluator finds the last writer)".into(),
                )
            })?;
            if c != OpKind::Add && n.dtype.is_complex() {
                return Err(Unsupported::new(Some(n.op.name()), format!("{} values", n.dtype)));
            }
            Ok(c)
        })
        .collect()
}

impl Lower<'_> {
    /// The loop over positions `start..end` of a scatter region over `items` (see the module
    /// docs).
    pub(super) fn scatter(&mut self, items: &[usize]) -> Result<(), Stop> {
        let body = self.body;
        let (outs, written) = super::scatter_epilogue::accumulators(body);
        let epilogue = super::scatter_epilogue::epilogue_shape(body, written)?;
        // With an epilogue, work items past the positions are its elements: the positions'
        // loop stops at `n`.
        let (lo, hi) = match &epilogue {
            None => ("%start".to_string(), "%end".to_string()),
            Some(_) => {
                let n = extent(&mut self.b, numel(items));
                let lo = self.b.op(&format!("arith.minsi %start, {n} : i64"));
                (lo, self.b.op(&format!("arith.minsi %end, {n} : i64")))
            }
        };
        // The labels of whole blocks of positions together where they apply
        // (`label_block.rs`), the positions after them one at a time.
        let idxs: Vec<_> = outs.iter().map(|&o| body.node(o).inputs[1]).collect();
        let plan = match idxs.first() {
            Some(&i) if idxs.iter().all(|&j| j == i) => self.label_block_plan(i, items, &outs),
            _ => None,
        };
        let lo = match &plan {
            Some(plan) => self.label_blocks(plan, &lo, &hi, &mut |me, iv| {
                me.scatter_position(items, &outs, written, iv, true)
            })?,
            None => lo,
        };
        let (iv, _, _) = self.open_for(&lo, &hi, &[], &[]);
        self.scatter_position(items, &outs, written, &iv, plan.is_some())?;
        self.close();
        if let Some(shape) = epilogue {
            self.scatter_epilogue_host(items, &outs, written, &shape)?;
        }
        Ok(())
    }

    /// The scatters' code at position `iv` of a scatter region over `items`: each of `outs`
    /// (`written`: see [`super::scatter_epilogue::accumulators`]) combines its row of values
    /// into the row its index names. `in_range`: the index is a label of
    /// [`Lower::label_blocks`], an argmin/argmax over as many elements as the outputs have rows,
    /// so already in `[0, rows)`: not wrapped.
    fn scatter_position(
        &mut self,
        items: &[usize],
        outs: &[kiln_ir::NodeId],
        written: usize,
        iv: &str,
        in_range: bool,
    ) -> Result<(), Stop> {
        let body = self.body;
        let item =
            if items.len() == 1 { vec![iv.to_string()] } else { unravel(&mut self.b, iv, items) };
        for (k, &o) in outs.iter().enumerate() {
            let node = body.node(o);
            let combine = node.op.combine().expect("checked by `combines`");
            let (idx, values) = (node.inputs[1], node.inputs[2]);
            if body.node(idx).shape.as_slice() != items {
                return Err(Unsupported::new(
                    Some(node.op.name()),
                    "positions of another shape in one region".into(),
                )
                .into());
            }
            let i = self.emit(idx, &Ix { dims: Some(item.clone()), flat: Some(iv.to_string()) })?;
            let r = if in_range { i.ssa } else { self.wrap_row(&i.ssa, node.shape[0]) };
            let zero = self.b.i64(0);
            let row_shape = &node.shape[1..];
            let m = numel(row_shape);
            let me = extent(&mut self.b, m);
            let row_start = self.b.op(&format!("arith.muli {r}, {me} overflow<nsw, nuw> : i64"));
            let (j, _, _) = self.open_for(&zero, &me, &[], &[]);
            let mut dims = item.clone();
            dims.extend(unravel(&mut self.b, &j, row_shape));
            let v = self.emit(values, &Ix { dims: Some(dims), flat: None })?;
            let pos = self.b.op(&format!("arith.addi {row_start}, {j} overflow<nsw, nuw> : i64"));
            let out = self.host_acc_ptr(k, written);
            let old = load(&mut self.b, &out, &pos, node.dtype);
            let op = Node {
                op: combine,
                attrs: Attrs::None,
                inputs: SmallVec::new(),
                dtype: node.dtype,
                shape: SmallVec::new(),
            };
            let new = scalar::elementwise(&mut self.b, &op, &[old, v])?;
            store(&mut self.b, &out, &pos, &new);
            self.close();
        }
        Ok(())
    }
}

/// Elements a position of a scatter region reads, roughly: the largest node of its body per
/// position (k-means: the distances' `k × d` terms).
pub(crate) fn cost_per_item(body: &kiln_ir::Graph, items: &[usize]) -> usize {
    let n = numel(items).max(1);
    body.nodes().iter().map(|x| numel(&x.shape) / n).max().unwrap_or(1).max(1)
}

/// Extents of a scatter kernel that are constants, up to this size (see
/// `Builder::const_extents`): a scatter's rows and bins are short (k-means: 10 centres of 64),
/// and their strides as constants are address offsets. On an H200 the k-means update's
/// distances took two uniform-register adds and two moves per term with the strides as
/// parameters.
pub(super) const CONST_EXTENTS: usize = 4096;

/// Threads of a block of a GPU scatter kernel, by default.
const SCATTER_THREADS: usize = 256;
/// Positions a GPU scatter block takes at a time (a tile), by default: their rows of the staged
/// inputs are copied to shared memory first, then a thread per position computes its index.
const SCATTER_TILE: usize = 128;

/// A GPU scatter block's threads and tile, for measuring them (read once per process):
/// `KILN_GPU_SCATTER=THREADS,TILE` (threads 64 to 1024 by powers of two, a tile of 32 to
/// `THREADS` positions); default [`SCATTER_THREADS`], [`SCATTER_TILE`]. It changes the kernel's
/// text, so its cache key.
fn scatter_shape() -> (usize, usize) {
    kiln_cache::config().gpu_scatter.unwrap_or((SCATTER_THREADS, SCATTER_TILE))
}
/// Blocks a multiprocessor should hold at once (launch bounds; 0: none), by default
/// (`KILN_GPU_SCATTER_BOUNDS=N` for another).
const SCATTER_MIN_BLOCKS: usize = 0;

/// Most blocks of a GPU scatter kernel: the last block combines every block's partial result
/// ([`PARTIALS_IN_FLIGHT`] loads at a time per thread). `KILN_GPU_SCATTER_BLOCKS=N` for
/// another. On an H200 (k-means 2^20×64, k = 10, session 29, one call each): with the expanded
/// screen (44 registers, 5 blocks a multiprocessor) 660 took 0.169-0.178 ms, 1320 0.185, 512
/// 0.168-0.179; with the plain screen (63 registers, 4) 528 0.173, 660 0.214 (1.25 waves);
/// blocks of 128 threads, tiles of 64, 1320 (expanded) or 1056 (plain) blocks 0.173-0.182.
const SCATTER_BLOCKS: usize = 512;
/// Most blocks of a GPU scatter kernel whose sums go to the outputs by global atomics (no
/// partials to combine: more blocks in flight).
const SCATTER_BLOCKS_GLOBAL: usize = 8192;
/// Blocks' partials a thread of the last block loads before it combines them (in block order).
/// The combine is the kernel's tail, every other multiprocessor idle: with 512 blocks, 8 at a
/// time made it 64 rounds of loads per element. At 32 the k-means kernel took 72 registers (3
/// blocks of 256 threads a multiprocessor, not 4: 512 blocks in two waves, 20% slower on an
/// H200).
const PARTIALS_IN_FLIGHT: usize = 16;
/// Blocks whose partials the last of them combines, in a scatter kernel of more blocks: each
/// group's last block combines its group's partials in block order, then the last group's
/// combines the groups' partials in group order (the same bits every run). With 512 blocks the
/// last block's combine of every partial alone was the kernel's tail (k-means 2^20 on an H200:
/// 16% of the elapsed time with every other multiprocessor idle).
const COMBINE_GROUP: usize = 16;
/// Bytes of dynamic shared memory a scatter block may take (within the 48 KiB a launch gets
/// without opting in, with room for the flag).
const SCATTER_SHARED: usize = 48 * 1024 - 256;
/// Elements of a staged input's row, at most.
const STAGE_ROW: usize = 128;

/// How a GPU scatter kernel is launched: `blocks` blocks of `threads` threads, its
/// dynamic shared memory (`Kernel::gpu_shared`), and after the region's buffers a scratch
/// buffer of `scratch_bytes` (each block's partial outputs, then each group's) and `counters`
/// zeroed u32 counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuScatter {
    pub blocks: usize,
    /// Threads per block.
    pub threads: usize,
    pub scratch_bytes: usize,
    /// Zeroed u32 counters after the scratch buffer: the last block's, then one per group of
    /// a two-level combine.
    pub counters: usize,
    /// The outputs are zeroed before the launch: bins too large for shared memory are combined
    /// by atomics in the outputs themselves (sums only; floats then in an order that varies).
    pub zero_outputs: bool,
    /// Launch bounds: blocks of `threads` a multiprocessor holds at once (0: none); the launch
    /// then asks for the largest shared-memory carve-out.
    pub min_blocks: usize,
    /// The block takes its positions in tiles (staged rows, indices in shared memory); without
    /// them, every thread combines its own positions (module `warp`).
    pub tiles: bool,
    /// The rows copied into a queue of tile buffers by producer warps (module `queue`):
    /// consumer warps, producer warps and buffers.
    pub queue: Option<(usize, usize, usize)>,
}

/// One output's layout in a GPU scatter block.
struct OutLayout {
    combine: OpKind,
    dt: DType,
    /// Rows of the output and elements of a row.
    rows: usize,
    m: usize,
    /// Consecutive elements of a row a thread combines at a time, threads per position (lanes
    /// over the row's elements) and positions at a time.
    vec: usize,
    lanes: usize,
    groups: usize,
    /// Private copies of the bins in shared memory: one per group for floats (each slot written
    /// by one thread: a fixed order), one for integers (combined by atomics: exact in any order);
    /// without tiles, one per warp for floats (module `warp`).
    copies: usize,
    /// Byte offsets: the bins in shared memory, the blocks' partials and the groups' partials
    /// (a two-level combine) in the scratch buffer.
    smem: usize,
    scratch: usize,
    groups_at: usize,
}

fn aligned(x: usize) -> usize {
    x.next_multiple_of(16)
}

impl Lower<'_> {
    /// Index `i` (i64) wrapped into `[0, rows)`, Python's modulo: `remsi` takes the dividend's
    /// sign, so a negative remainder gets `rows` added.
    fn wrap_row(&mut self, i: &str, rows: usize) -> String {
        let rows = extent(&mut self.b, rows);
        let zero = self.b.i64(0);
        let rem = self.b.op(&format!("arith.remsi {i}, {rows} : i64"));
        let neg = self.b.op(&format!("arith.cmpi slt, {rem}, {zero} : i64"));
        let up = self.b.op(&format!("arith.addi {rem}, {rows} : i64"));
        self.b.op(&format!("arith.select {neg}, {up}, {rem} : i64"))
    }

    /// `v` combined into element `slot` (i64) of the shared-memory bins of `dt` at `bins` by
    /// an atomic `combine` (integers: exact in any order).
    fn atomic_combine(&mut self, (combine, dt): (OpKind, DType), bins: &str, slot: &str, v: &Val) {
        let ty = crate::codegen::types::mem_ty(dt);
        let p = self.b.op(&format!(
            "llvm.getelementptr inbounds {bins}[{slot}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}"
        ));
        let old = self.b.fresh();
        self.b.stmt(&format!(
            "{old} = llvm.atomicrmw {} {p}, {} monotonic : !llvm.ptr, {ty}",
            atomic_op(combine, dt),
            v.ssa
        ));
    }

    /// `v` added to element `pos` of output `k` by a device-scope atomic (GPU kernels whose
    /// bins do not fit shared memory).
    fn atomic_add_out(&mut self, k: usize, pos: &str, v: &Val) {
        let ty = crate::codegen::types::mem_ty(v.dt);
        let p = self.b.op(&format!(
            "llvm.getelementptr inbounds {}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}",
            Self::out_ptr(k)
        ));
        let (old, op) = (self.b.fresh(), if v.dt.is_float() { "fadd" } else { "add" });
        self.b.stmt(&format!(
            "{old} = llvm.atomicrmw {op} {p}, {} monotonic : !llvm.ptr, {ty}",
            v.ssa
        ));
    }

    /// A generic pointer to byte `offset` of the block's dynamic shared memory.
    pub(super) fn shared_at(&mut self, offset: usize) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_rows : !llvm.ptr<3>");
        let p = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        let off = self.b.i64(offset as i64);
        self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{off}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ))
    }

    /// A generic pointer to byte `offset` of the scratch buffer.
    pub(super) fn scratch_at(&mut self, offset: usize) -> String {
        let off = self.b.i64(offset as i64);
        self.b.op(&format!(
            "llvm.getelementptr inbounds %scratch[{off}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ))
    }
}

impl Lower<'_> {
    /// The GPU scatter kernel (see [`GpuScatter`]): each block takes a contiguous range of the
    /// positions, tile by tile. Per tile: the rows of the staged inputs are copied to shared
    /// memory (coalesced); `lanes` threads per position compute its index (the labels' argmin
    /// reads its row there; a screened argmin's float32 sums split between the lanes, see
    /// [`Lower::reductions_together`]); then each output's threads, `lanes` to a position and `groups` positions
    /// at a time, combine the values into the block's bins in shared memory, thread `(g, j)`
    /// owning element `j` of every row of copy `g` (floats: the order is fixed) or by atomics
    /// (integers: exact in any order); or, with rows of at most 64, each bin slot owned by one
    /// thread adding the tile's positions of its row in order (module `owned`). At the end
    /// each block combines its copies in order into
    /// its partial in the scratch buffer; the last block to finish (a counter) combines the
    /// partials in block order with the initial array into the output (past COMBINE_GROUP
    /// blocks in two levels, each in a fixed order). The same bits every run.
    pub(super) fn scatter_gpu(&mut self, items: &[usize]) -> Result<(), Stop> {
        let queued = items.len() == 1 && queue::applies(self.body, items[0], self.bulk_copies);
        if queued && self.scatter_gpu_in(items, Some(WARP), true)? {
            return Ok(());
        }
        if let Some(wt) = group::warp_tile() {
            if self.scatter_gpu_in(items, Some(wt), false)? {
                return Ok(());
            }
        }
        self.scatter_gpu_in(items, None, false).map(|_| ())
    }

    /// [`Lower::scatter_gpu`] with the block taking tiles together (`warp` `None`), or its
    /// warps taking tiles of `warp` positions on their own (module `group`); `false` (nothing
    /// emitted) where the warps' way does not apply: bins not owned by threads, one-element
    /// rows only (no tiles), or the warps' staged rows and copies of the bins not fitting
    /// shared memory. `queued`: the warps take tiles of 32 whose rows producer warps copy
    /// (module `queue`; `warp` is then 32).
    fn scatter_gpu_in(
        &mut self,
        items: &[usize],
        warp: Option<usize>,
        queued: bool,
    ) -> Result<bool, Stop> {
        let body = self.body;
        let unsupported =
            |why: String| -> Stop { Unsupported::new(Some("scatter_add"), why).into() };
        if items.len() != 1 {
            return Err(unsupported(format!("positions of rank {} on the GPU", items.len())));
        }
        let n = items[0];
        let (outs, written) = super::scatter_epilogue::accumulators(body);
        let epilogue = super::scatter_epilogue::epilogue_shape(body, written)?;
        let (nthreads, ntile) = match warp {
            Some(_) if queued => ((queue::CONSUMERS + queue::PRODUCERS) * WARP, WARP),
            Some(wt) => {
                let threads = kiln_cache::config().gpu_scatter.map(|(t, _)| t);
                (threads.unwrap_or(group::WARP_TILE_THREADS), wt)
            }
            None => scatter_shape(),
        };
        // The threads that take a tile together: a warp, or the block.
        let gthreads = if warp.is_some() { WARP } else { nthreads };
        // (The warps that take tiles: with a queue, the consumers.)
        let warps = if queued { queue::CONSUMERS } else { nthreads / WARP };
        let limit = if queued { queue::SHARED } else { SCATTER_SHARED };
        // Shared memory: each index's row per tile position (one slot for outputs sharing the
        // index and their row count: k-means' sums and counts), the bins, then the staged rows
        // of the inputs read by position (as many as fit: staging only saves loads).
        let mut keys: Vec<(kiln_ir::NodeId, usize)> = Vec::new();
        let slot: Vec<usize> = outs
            .iter()
            .map(|&o| {
                let key = (body.node(o).inputs[1], body.node(o).shape[0]);
                keys.iter().position(|&k| k == key).unwrap_or_else(|| {
                    keys.push(key);
                    keys.len() - 1
                })
            })
            .collect();
        // (Where warps take tiles on their own, the masks are in each warp's region.)
        let masks_bytes = aligned(8 * ntile * keys.len());
        let mut offset = if warp.is_some() { 0 } else { masks_bytes };
        let most = match queued {
            true => queue::BLOCKS,
            false => kiln_cache::config().gpu_scatter_blocks.unwrap_or(SCATTER_BLOCKS),
        };
        let mut blocks = n.div_ceil(ntile).clamp(1, most);
        // Positions a thread of the label phase takes at once, and threads per position (a
        // power of two up to a warp): `nthreads / lanes` positions a pass, `passes` passes
        // cover the tile.
        let positions = super::screen::label_positions(n.div_ceil(blocks).div_ceil(ntile));
        let lanes = 1usize << (gthreads * positions / ntile).clamp(1, 32).ilog2();
        let passes = ntile.div_ceil(gthreads / lanes);
        let mut layouts: Vec<OutLayout> = outs
            .iter()
            .map(|&o| {
                let node = body.node(o);
                let combine = node.op.combine().expect("checked by `combines`");
                let (rows, m) = (node.shape[0], numel(&node.shape[1..]));
                // Floats: a thread combines 16 bytes of a row at a time where the row is a
                // multiple of them (one load of the values, one of the bins, one store).
                let vec = (16 / node.dtype.itemsize()).max(1);
                let vec = if node.dtype.is_float() && m.is_multiple_of(vec) { vec } else { 1 };
                let lanes = (m / vec).clamp(1, nthreads);
                let groups = nthreads / lanes;
                let copies = if node.dtype.is_float() { groups } else { 1 };
                OutLayout {
                    combine,
                    dt: node.dtype,
                    rows,
                    m,
                    vec,
                    lanes,
                    groups,
                    copies,
                    smem: 0,
                    scratch: 0,
                    groups_at: 0,
                }
            })
            .collect();
        // Bins owned by threads (module `owned`): one copy of them.
        let mut owned = owned::owned(&keys, ntile);
        if warp.is_some() && !owned {
            return Ok(false);
        }
        for l in layouts.iter_mut().filter(|_| owned) {
            // (A copy a warp where warps take tiles on their own.)
            (l.copies, l.groups) = (if warp.is_some() { warps } else { 1 }, 1);
        }
        let bins_bytes = |l: &OutLayout| aligned(l.copies * l.rows * l.m * l.dt.itemsize());
        // The small inputs not indexed by position, held whole in shared memory (k-means'
        // centres: the label phase reads each element once per position).
        let held_candidates = super::tile::held_inputs(body, n);
        let held_bytes: usize =
            held_candidates.iter().map(|&(_, dt, len)| aligned(len * dt.itemsize())).sum();
        // Every output of one-element rows: no tiles, a copy of float bins per warp (module
        // `warp`), where the copies fit beside the held inputs.
        let warp_copies: Option<Vec<usize>> = match owned {
            true => None,
            false => layouts.iter().map(|l| warp::copies(l, nthreads)).collect(),
        };
        let mut direct = warp_copies.as_ref().is_some_and(|copies| {
            let bins: usize = layouts
                .iter()
                .zip(copies)
                .map(|(l, &c)| aligned(c * l.rows * l.m * l.dt.itemsize()))
                .sum();
            offset + bins + held_bytes <= SCATTER_SHARED
        });
        for (l, &copies) in layouts.iter_mut().zip(warp_copies.iter().flatten()).filter(|_| direct)
        {
            (l.copies, l.groups) = (copies, nthreads);
        }
        // The region inputs read by position whose tile of rows can be staged: (input, dtype,
        // row, stride).
        let unroll = super::screen::lane_unroll(n.div_ceil(blocks).div_ceil(ntile));
        let mut stage_candidates = Vec::new();
        for node in body.nodes() {
            if let (OpKind::Input, Attrs::Input { index }) = (node.op, &node.attrs) {
                let row = numel(node.shape.get(1..).unwrap_or(&[]));
                // The label phase's lanes take `vec` consecutive elements at a time (see
                // `reductions_together`) where the row is a multiple of them all.
                let vec = unroll.max(1);
                let vec = if lanes > 1 && row.is_multiple_of(vec * lanes) { vec } else { 1 };
                let size = node.dtype.itemsize();
                // (Rows copied by bulk copies land 16-byte aligned.)
                let stride =
                    staged_stride(row, lanes, vec, size, if queued { 16 / size } else { 1 });
                if node.shape.first() == Some(&n)
                    && row <= STAGE_ROW
                    && !node.dtype.is_complex()
                    && node.dtype != DType::Bool
                {
                    stage_candidates.push((*index as usize, node.dtype, row, stride));
                }
            }
        }
        if warp_copies.is_some() {
            // (Nothing is staged where every output's rows are one element, tiles or not: each
            // position's index and value are read once, without tiles by the thread that
            // combines them.)
            stage_candidates.clear();
        }
        let stage_bytes: usize = stage_candidates
            .iter()
            .map(|&(_, dt, _, stride)| aligned(ntile * stride * dt.itemsize()))
            .sum();
        // (Where warps take tiles on their own, each warp's region: its masks, its rows.)
        // (With a queue: the warps' masks and at least a buffer a producer.)
        let stage_bytes = match warp {
            Some(_) if queued => warps * masks_bytes + queue::PRODUCERS * stage_bytes,
            Some(_) => warps * (masks_bytes + stage_bytes),
            None => stage_bytes,
        };
        // Too many private copies for shared memory beside the staged rows (and the held
        // inputs): the largest float output's halved (each copy keeps its own group of threads,
        // so fewer positions are combined at a time).
        while offset + layouts.iter().map(bins_bytes).sum::<usize>() + stage_bytes + held_bytes
            > limit
        {
            let Some(l) = layouts
                .iter_mut()
                .filter(|l| l.copies > 1 && !direct && warp.is_none())
                .max_by_key(|l| l.copies * l.rows * l.m * l.dt.itemsize())
            else {
                break;
            };
            l.copies /= 2;
            l.groups = l.copies;
        }
        // More blocks than a group: the partials are combined in two levels (see
        // COMBINE_GROUP), the groups' partials after the blocks'.
        let two_level = blocks > COMBINE_GROUP;
        let ngroups = if two_level { blocks.div_ceil(COMBINE_GROUP) } else { 0 };
        let mut scratch = 0;
        for l in &mut layouts {
            (l.smem, l.scratch) = (offset, scratch);
            offset += bins_bytes(l);
            scratch = aligned(scratch + blocks * l.rows * l.m * l.dt.itemsize());
            l.groups_at = scratch;
            scratch = aligned(scratch + ngroups * l.rows * l.m * l.dt.itemsize());
        }
        // Scatters only the epilogue reads: their combined results in the scratch buffer.
        let mut homes = Vec::new();
        for l in &layouts[written..] {
            homes.push(scratch);
            scratch = aligned(scratch + l.rows * l.m * l.dt.itemsize());
        }
        // Bins too large for shared memory even as one copy: sums go straight to the outputs by
        // global atomics (float sums then differ from run to run in their last bits).
        let global = offset > limit;
        if warp.is_some() && (global || stage_candidates.is_empty()) {
            return Ok(false);
        }
        let (two_level, ngroups) = if global { (false, 0) } else { (two_level, ngroups) };
        if global && epilogue.is_some() {
            return Err(unsupported(
                "an epilogue after bins that do not fit shared memory (no block runs last)".into(),
            ));
        }
        if global {
            if let Some(l) = layouts.iter().find(|l| l.combine != OpKind::Add) {
                return Err(unsupported(format!(
                    "{} bins of {} elements on the GPU: they do not fit shared memory, and only sums go by global atomics",
                    l.combine.name(),
                    l.rows * l.m
                )));
            }
            offset = aligned(8 * ntile * keys.len());
            scratch = 0;
            (owned, direct) = (false, false);
            blocks = n.div_ceil(ntile).clamp(1, SCATTER_BLOCKS_GLOBAL);
            for l in &mut layouts {
                (l.vec, l.lanes) = (1, l.m.clamp(1, nthreads));
                (l.copies, l.groups) = (1, nthreads / l.lanes);
            }
        }
        // The held inputs where they fit beside the staged rows (staging comes first).
        let mut held = Vec::new();
        if offset + held_bytes + stage_bytes <= limit {
            for (index, dt, len) in held_candidates {
                held.push(Held { index, dt, len, offset });
                offset = aligned(offset + len * dt.itemsize());
            }
        }
        // The labels' screen by expanded distances: the centres' norms beside the held inputs
        // where staging keeps its room (`screen/expanded.rs`; not without tiles, whose loop
        // has no barrier after the norms).
        let mut expanded = keys
            .first()
            .filter(|_| !direct)
            .and_then(|&(idx, _)| self.expanded_plan(idx, n, queued));
        if let Some(ex) = expanded.as_mut() {
            ex.norms = offset;
            offset = aligned(offset + ex.bytes());
        }
        if expanded.is_some() && offset + stage_bytes > limit {
            offset = expanded.take().map_or(offset, |ex| ex.norms);
        }
        let mut staged = Vec::new();
        // Where warps take tiles on their own: their regions after the block's, each its
        // masks, then its rows of every staged input (all of them, or the block's way).
        let mut region = None;
        let mut queue = None;
        if warp.is_some() {
            let base = aligned(offset);
            let mut at = masks_bytes;
            for (index, dt, row, stride) in stage_candidates.iter().copied().filter(|_| !queued) {
                staged.push(Staged { index, dt, row, stride, offset: at });
                at = aligned(at + ntile * stride * dt.itemsize());
            }
            if base + warps * at > limit {
                return Ok(false);
            }
            region = Some((base, at));
            offset = base + warps * at;
        }
        if queued {
            // The queue's buffers, as many as fit (a multiple of the producers), then their
            // mbarriers and tags.
            let [(index, dt, row, stride)] = stage_candidates[..] else { return Ok(false) };
            let tile_bytes = aligned(ntile * stride * dt.itemsize());
            let at = aligned(offset);
            let room = limit.saturating_sub(at);
            let fit = (1..=queue::BUFFERS)
                .rev()
                .filter(|c| c.is_multiple_of(queue::PRODUCERS))
                .find(|&c| c * tile_bytes + queue::Queue::bars_bytes(c) <= room);
            let Some(count) = fit else { return Ok(false) };
            staged.push(Staged { index, dt, row, stride, offset: at });
            let bars = at + count * tile_bytes;
            offset = bars + queue::Queue::bars_bytes(count);
            queue = Some(queue::Queue {
                count,
                tile_bytes,
                stride_bytes: stride * dt.itemsize(),
                buffers: at,
                bars,
                index,
                dt,
                row,
                buffer: None,
                slot: None,
            });
        }
        for (index, dt, row, stride) in stage_candidates.iter().copied().filter(|_| warp.is_none())
        {
            let bytes = ntile * stride * dt.itemsize();
            if aligned(offset + bytes) <= limit {
                staged.push(Staged { index, dt, row, stride, offset });
                offset = aligned(offset + bytes);
            }
        }
        self.scatter_launch = Some((
            GpuScatter {
                blocks,
                threads: nthreads,
                scratch_bytes: scratch.max(16),
                counters: 1 + ngroups,
                zero_outputs: global,
                min_blocks: match queued {
                    // (Launch bounds keep the block's registers within a multiprocessor's.)
                    true => 1,
                    false => kiln_cache::config().gpu_scatter_bounds.unwrap_or(SCATTER_MIN_BLOCKS),
                },
                tiles: !direct,
                queue: queue.as_ref().map(|q| (queue::CONSUMERS, queue::PRODUCERS, q.count)),
            },
            offset,
        ));
        self.tile =
            Some(Tile { staged: staged.clone(), at: None, items: Vec::new(), held: held.clone() });
        let zero = self.b.i64(0);
        let threads = self.b.i64(nthreads as i64);
        if let Some((base, bytes)) = region {
            let c32 = self.b.i64(WARP as i64);
            let (warp, lane) = self.b.divrem("%tid", &c32);
            self.group =
                Some(group::Group { warp, lane, base, bytes, warps, queue: queue.clone() });
        }
        // The bins start at the combine's identity.
        for l in layouts.iter().filter(|_| !global) {
            let total = self.b.i64((l.copies * l.rows * l.m) as i64);
            let base = self.shared_at(l.smem);
            let id = literal(&mut self.b, identity(l.combine, l.dt), l.dt)?;
            let (s, _, _) = self.open_for_step("%tid", &total, Some(&threads), &[], &[]);
            store(&mut self.b, &base, &s, &id);
            self.close();
        }
        self.hold_inputs(&held, nthreads);
        if let Some(q) = &queue {
            self.queue_init(q);
        }
        self.b.stmt("nvvm.barrier0");
        if let Some(ex) = &expanded {
            self.expanded_norms(ex)?;
        }
        self.expanded = expanded;
        if direct {
            self.warp_direct(&outs, &layouts, (&keys, &slot), nthreads)?;
            // Every warp's copy is complete before the block combines them.
            self.b.stmt("nvvm.barrier0");
        } else {
            let plan = TileLoop {
                ntile,
                nthreads: gthreads,
                lanes,
                passes,
                unroll,
                owned,
                global,
                staged: &staged,
                keys: &keys,
                slot: &slot,
            };
            // With a queue, the consumer warps take the tiles and the producer warps fill
            // their buffers.
            let consumer = self.group.as_ref().filter(|_| queued).map(|g| g.warp.clone());
            if let Some(w) = &consumer {
                let c = self.b.i64(queue::CONSUMERS as i64);
                let is = self.b.op(&format!("arith.cmpi slt, {w}, {c} : i64"));
                self.open_if(&is);
            }
            self.scatter_tiles(&outs, &layouts, &plan)?;
            if consumer.is_some() {
                self.open_else();
                self.queue_produce();
                self.close();
            }
            if self.group.take().is_some() {
                // Every warp's copy is complete before the block combines them.
                self.b.stmt("nvvm.barrier0");
            }
        }
        // The block's copies, in order, to its partial.
        for l in layouts.iter().filter(|_| !global) {
            let rm = self.b.i64((l.rows * l.m) as i64);
            let bins = self.shared_at(l.smem);
            let part = self.scratch_at(l.scratch);
            let (s, _, _) = self.open_for_step("%tid", &rm, Some(&threads), &[], &[]);
            let mut acc = load(&mut self.b, &bins, &s, l.dt);
            for c in 1..l.copies {
                let off = self.b.i64((c * l.rows * l.m) as i64);
                let at = self.b.op(&format!("arith.addi {s}, {off} : i64"));
                let v = load(&mut self.b, &bins, &at, l.dt);
                acc = self.combine(l.combine, l.dt, acc, v)?;
            }
            let b0 = self.b.op(&format!("arith.muli %block, {rm} : i64"));
            let at = self.b.op(&format!("arith.addi {b0}, {s} : i64"));
            store(&mut self.b, &part, &at, &acc);
            self.close();
        }
        if global {
            // The initial arrays: each block adds its share of their elements by atomics too
            // (sums commute), nothing at all for zeros. No block waits for another.
            for (k, (&o, l)) in outs.iter().zip(&layouts).enumerate() {
                let node = body.node(o);
                if is_zero(body, node.inputs[0]) {
                    continue;
                }
                let total = self.b.i64((l.rows * l.m) as i64);
                let share = self.b.op(&format!("arith.addi {total}, %nblocks : i64"));
                let one = self.b.i64(1);
                let share = self.b.op(&format!("arith.subi {share}, {one} : i64"));
                let share = self.b.op(&format!("arith.divui {share}, %nblocks : i64"));
                let from = self.b.op(&format!("arith.muli %block, {share} : i64"));
                let from_t = self.b.op(&format!("arith.addi {from}, %tid : i64"));
                let to = self.b.op(&format!("arith.addi {from}, {share} : i64"));
                let to = self.b.op(&format!("arith.minui {to}, {total} : i64"));
                let (s, _, _) = self.open_for_step(&from_t, &to, Some(&threads), &[], &[]);
                let dims = unravel(&mut self.b, &s, &node.shape);
                let v =
                    self.emit(node.inputs[0], &Ix { dims: Some(dims), flat: Some(s.clone()) })?;
                self.atomic_add_out(k, &s, &v);
                self.close();
            }
            return Ok(true);
        }
        // Each thread's partials are visible device-wide before its block counts itself in.
        self.b.stmt(super::DEVICE_FENCE);
        let all = "%nblocks".to_string();
        let mut finals = zero.clone();
        if two_level {
            // The last block of each group of COMBINE_GROUP blocks: its group's partials in
            // block order (from the identity) into the group's partial. Counter 1 + g.
            let gsize = self.b.i64(COMBINE_GROUP as i64);
            let group = self.b.op(&format!("arith.divui %block, {gsize} : i64"));
            let first = self.b.op(&format!("arith.muli {group}, {gsize} : i64"));
            let left = self.b.op(&format!("arith.subi %nblocks, {first} : i64"));
            let members = self.b.op(&format!("arith.minui {left}, {gsize} : i64"));
            let one = self.b.i64(1);
            let counter = self.b.op(&format!("arith.addi {group}, {one} : i64"));
            let upto = self.b.op(&format!("arith.addi {first}, {members} : i64"));
            let last = self.last_block(&members, &counter);
            self.open_if(&last);
            for l in &layouts {
                let rm = self.b.i64((l.rows * l.m) as i64);
                let (part, gpart) = (self.scratch_at(l.scratch), self.scratch_at(l.groups_at));
                let (s, _, _) = self.open_for_step("%tid", &rm, Some(&threads), &[], &[]);
                let id = literal(&mut self.b, identity(l.combine, l.dt), l.dt)?;
                let acc = self.fold_partials(l, &part, (&first, &upto), &s, id)?;
                let g0 = self.b.op(&format!("arith.muli {group}, {rm} : i64"));
                let at = self.b.op(&format!("arith.addi {g0}, {s} : i64"));
                store(&mut self.b, &gpart, &at, &acc);
                self.close();
            }
            self.b.stmt(super::DEVICE_FENCE);
            let sum = self.b.op(&format!("arith.addi %nblocks, {gsize} : i64"));
            let sum = self.b.op(&format!("arith.subi {sum}, {one} : i64"));
            finals = self.b.op(&format!("arith.divui {sum}, {gsize} : i64"));
        }
        // The last block (of the last group): the initial array, then every block's (group's)
        // partial in order.
        let count = if two_level { finals.clone() } else { all };
        let last = self.last_block(&count, &zero);
        self.open_if(&last);
        for (k, (&o, l)) in outs.iter().zip(&layouts).enumerate() {
            let node = body.node(o);
            let rm = self.b.i64((l.rows * l.m) as i64);
            let part = self.scratch_at(if two_level { l.groups_at } else { l.scratch });
            let (s, _, _) = self.open_for_step("%tid", &rm, Some(&threads), &[], &[]);
            let dims = unravel(&mut self.b, &s, &node.shape);
            let init =
                self.emit(node.inputs[0], &Ix { dims: Some(dims), flat: Some(s.clone()) })?;
            let acc = self.fold_partials(l, &part, (&zero, &count), &s, init)?;
            let home = match k.checked_sub(written) {
                None => Self::out_ptr(k),
                Some(e) => self.scratch_at(homes[e]),
            };
            store(&mut self.b, &home, &s, &acc);
            self.close();
        }
        if let Some(shape) = &epilogue {
            // Every combined element is written before the block's threads read them.
            self.b.stmt("nvvm.barrier0");
            for (k, &a) in outs.iter().enumerate() {
                let home = match k.checked_sub(written) {
                    None => Self::out_ptr(k),
                    Some(e) => self.scratch_at(homes[e]),
                };
                self.combined.insert(a, home);
            }
            let total = extent(&mut self.b, numel(shape));
            self.scatter_epilogue(written, shape, ("%tid", &total, Some(&threads)))?;
        }
        if two_level {
            self.close();
        }
        self.close();
        Ok(true)
    }

    /// `acc` combined with element `s` of the partials `from..to` at `part` (each `rows · m`
    /// elements of output `l`), in order: PARTIALS_IN_FLIGHT at a time (their loads issued
    /// first), then the rest one by one.
    fn fold_partials(
        &mut self,
        l: &OutLayout,
        part: &str,
        (from, to): (&str, &str),
        s: &str,
        mut acc: Val,
    ) -> Result<Val, Stop> {
        let rm = self.b.i64((l.rows * l.m) as i64);
        let step = self.b.i64(PARTIALS_IN_FLIGHT as i64);
        let span = self.b.op(&format!("arith.subi {to}, {from} : i64"));
        let whole = self.b.op(&format!("arith.divui {span}, {step} : i64"));
        let whole = self.b.op(&format!("arith.muli {whole}, {step} : i64"));
        let whole = self.b.op(&format!("arith.addi {from}, {whole} : i64"));
        for (from, to, by) in
            [(from.to_string(), whole.clone(), PARTIALS_IN_FLIGHT), (whole, to.to_string(), 1)]
        {
            let by_ssa = self.b.i64(by as i64);
            let (b, args, results) =
                self.open_for_step(&from, &to, Some(&by_ssa), &[acc.ssa.clone()], &[acc.ty()]);
            let mut vals = Vec::with_capacity(by);
            for u in 0..by {
                let off = self.b.i64(u as i64);
                let bu = self.b.op(&format!("arith.addi {b}, {off} : i64"));
                let b0 = self.b.op(&format!("arith.muli {bu}, {rm} : i64"));
                let at = self.b.op(&format!("arith.addi {b0}, {s} : i64"));
                vals.push(load(&mut self.b, part, &at, l.dt));
            }
            let mut sum = Val::new(args[0].clone(), l.dt);
            for v in vals {
                sum = self.combine(l.combine, l.dt, sum, v)?;
            }
            self.yield_(&[sum.ssa.clone()], &[sum.ty()]);
            self.close();
            acc = Val::new(results[0].clone(), l.dt);
        }
        Ok(acc)
    }

    /// `combine(old, v)` in `dt`, the evaluator's `add`, `maximum` or `minimum`.
    pub(super) fn combine(
        &mut self,
        combine: OpKind,
        dt: DType,
        old: Val,
        v: Val,
    ) -> Result<Val, Stop> {
        let op = Node {
            op: combine,
            attrs: Attrs::None,
            inputs: SmallVec::new(),
            dtype: dt,
            shape: SmallVec::new(),
        };
        Ok(scalar::elementwise(&mut self.b, &op, &[old, v])?)
    }
}

/// Whether node `id` of `body` is a zero of its dtype (a `const` 0 through views): an initial
/// array global atomics need not add.
fn is_zero(body: &kiln_ir::Graph, id: kiln_ir::NodeId) -> bool {
    let n = body.node(id);
    if matches!(n.op, OpKind::BroadcastTo | OpKind::Reshape | OpKind::ExpandDims | OpKind::Squeeze)
    {
        return is_zero(body, n.inputs[0]);
    }
    match &n.attrs {
        Attrs::Const { value } if n.op == OpKind::Const => {
            matches!(
                kiln_ir::eval::Value::from_literal(*value, n.dtype),
                kiln_ir::eval::Value::Int(0) | kiln_ir::eval::Value::UInt(0)
            ) || matches!(kiln_ir::eval::Value::from_literal(*value, n.dtype), kiln_ir::eval::Value::Float(x) if x == 0.0 && x.is_sign_positive())
        }
        _ => false,
    }
}
