//! A GPU scatter kernel's rows copied by producer warps into a queue of tile buffers
//! (`KILN_GPU_SCATTER_QUEUE`, on by default where the device has `sm_90`'s bulk copies; module
//! `scatter`).
//!
//! The block is [`CONSUMERS`] consumer warps and [`PRODUCERS`] producer warps, one block a
//! multiprocessor ([`BLOCKS`] blocks), each block a contiguous range of positions cut into
//! tiles of 32. Shared memory holds `T` tile buffers (as many as fit, at most [`BUFFERS`], a
//! multiple of the producers), each with a `full` and an `empty` mbarrier (arrival count 1)
//! and a tag word. Tile `k` of the block goes to buffer `k mod T`, round `k / T`:
//!
//! - producer `k mod P` waits for the buffer's `empty` phase of the round before (its consumer
//!   is done), writes `k` into the buffer's tag, and copies the tile's rows into it, one
//!   `cp.async.bulk` a row (a lane a row, rows at the staged stride, so the label phase's loads
//!   meet no bank conflicts), completing on the buffer's `full` mbarrier, whose arrival carries
//!   the tile's bytes (`expect_tx`).
//! - consumer `k mod W` (its warp's tiles as in module `group`: every `W`-th) waits for the tag
//!   to say `k`, then for the `full` phase of round `k / T`, computes the labels and combines the
//!   values into its own copy of the bins reading the rows there, and arrives on `empty`.
//!
//! The tag is what makes the parity wait unambiguous: consumers take buffers in turn, so a
//! consumer may reach buffer `b` for round `r` while round `r - 1` (another consumer's tile) is
//! still being filled, and the parity of phase `r - 2` is round `r`'s. Each buffer has one
//! producer (`P` divides `T`), so its `empty` waits are in round order. No wait is circular:
//! a producer waits only for a tile of a lower index, whose producer came first.
//!
//! The copies run in the bulk-copy engine while the consumers compute, so the consumers issue
//! no staging instructions and no warp waits for the block (prototype in
//! `benches/runs/2026-11-29-session37/km-tma.py`: k-means 2^20×64, k = 10 on an H200 in
//! 0.1105 ms of kernel time against 0.141 for warps staging their own rows). A block's result
//! is its consumers' copies combined in warp order, each the positions of its tiles in order:
//! the same bits every run.

use kiln_ir::{Attrs, DType, OpKind};

use super::super::{Lower, WARP};
use super::STAGE_ROW;

/// Consumer and producer warps of a block.
pub(in crate::codegen::lower) const CONSUMERS: usize = 16;
pub(in crate::codegen::lower) const PRODUCERS: usize = 4;

/// Tile buffers of a block, at most.
pub(in crate::codegen::lower) const BUFFERS: usize = 20;

/// Blocks of a queued scatter kernel: one a multiprocessor of an H100 (SXM) or H200 (132).
/// More multiprocessors leave some idle; fewer run the blocks in two rounds (correct, slower).
pub(in crate::codegen::lower) const BLOCKS: usize = 132;

/// Fewest positions for the queue: below this the blocks take one or two tiles each, and the
/// block way's smaller blocks start sooner.
const MIN_POSITIONS: usize = 1 << 16;

/// Dynamic shared memory a queued block may take: an `sm_90` block's 227 KiB, less 1 KiB.
pub(in crate::codegen::lower) const SHARED: usize = 227 * 1024 - 1024;

/// Whether GPU scatter kernels copy their rows through the queue where it applies, by default
/// (`KILN_GPU_SCATTER_QUEUE=on|off` for another).
const QUEUE: bool = true;

/// A block's queue: its buffers (from byte `buffers` of shared memory, `tile_bytes` each, rows
/// `stride` elements apart), its mbarriers and tags (from byte `bars`: `full` of each buffer,
/// then `empty`, then the tags, 8 bytes each), the staged input (`index`, rows of
/// `row_bytes`), and inside a consumer's tile loop the current tile's buffer (a generic
/// pointer) and its slot (i64), both SSA names.
#[derive(Clone, Debug)]
pub(in crate::codegen::lower) struct Queue {
    pub(super) count: usize,
    pub(super) tile_bytes: usize,
    pub(super) stride_bytes: usize,
    pub(super) buffers: usize,
    pub(super) bars: usize,
    pub(super) index: usize,
    pub(super) dt: DType,
    pub(super) row: usize,
    pub(super) buffer: Option<String>,
    pub(super) slot: Option<String>,
}

impl Queue {
    /// Bytes of the mbarriers and tags of `count` buffers.
    pub(super) fn bars_bytes(count: usize) -> usize {
        3 * 8 * count
    }
}

/// Whether a scatter region over `n` positions takes its rows from a queue (see the module
/// docs): the device has bulk copies, the knob is on, at least [`MIN_POSITIONS`] positions, and
/// exactly one input read by position, whose rows are a multiple of 16 bytes of at most
/// [`STAGE_ROW`] elements of a 4- or 8-byte real dtype.
pub(in crate::codegen::lower) fn applies(body: &kiln_ir::Graph, n: usize, bulk: bool) -> bool {
    if !bulk || !kiln_cache::config().gpu_scatter_queue.unwrap_or(QUEUE) || n < MIN_POSITIONS {
        return false;
    }
    let by_position: Vec<_> = body
        .nodes()
        .iter()
        .filter(|node| {
            matches!((node.op, &node.attrs), (OpKind::Input, Attrs::Input { .. }))
                && node.shape.first() == Some(&n)
        })
        .collect();
    let [node] = by_position[..] else { return false };
    let row = kiln_ir::shape::numel(node.shape.get(1..).unwrap_or(&[]));
    let size = node.dtype.itemsize();
    matches!(size, 4 | 8)
        && !node.dtype.is_complex()
        && node.dtype != DType::Bool
        && row <= STAGE_ROW
        && (row * size).is_multiple_of(16)
}

impl Lower<'_> {
    /// The queue's mbarriers initialised and its tags set to -1 by thread 0 (before the barrier
    /// that opens the block's work).
    pub(in crate::codegen::lower) fn queue_init(&mut self, q: &Queue) {
        let zero = self.b.i64(0);
        let first = self.b.op(&format!("arith.cmpi eq, %tid, {zero} : i64"));
        self.open_if(&first);
        let one = self.b.constant("1", "i32");
        let none = self.b.constant("-1", "i32");
        for s in 0..q.count {
            let si = self.b.i64(s as i64);
            for first in [0, q.count] {
                let bar = self.bar_at(q.bars, first, &si);
                self.asm_init(&bar, &one);
            }
            let tag = self.bar_at(q.bars, 2 * q.count, &si);
            self.asm("st.volatile.shared.u32 [$0], $1;", "r,r", &[(&tag, "i32"), (&none, "i32")]);
        }
        self.asm_init_fence();
        self.close();
    }

    /// A consumer's wait for tile `k` (i64, the block's tile index) in its buffer (see the module
    /// docs); sets the queue's current buffer and slot for the tile's loads and its release.
    pub(in crate::codegen::lower) fn queue_take(&mut self, k: &str) {
        let q = self.group.as_ref().and_then(|g| g.queue.clone()).expect("a queued scatter");
        let count = self.b.i64(q.count as i64);
        let (r, s) = self.b.divrem(k, &count);
        let tag = self.bar_at(q.bars, 2 * q.count, &s);
        let k32 = self.b.op(&format!("arith.trunci {k} : i64 to i32"));
        self.asm(
            "{ .reg .pred p; .reg .b32 t; LAB_TAG: ld.volatile.shared.u32 t, [$0]; setp.ne.u32 p, t, $1; @p bra LAB_TAG; }",
            "r,r",
            &[(&tag, "i32"), (&k32, "i32")],
        );
        let full = self.bar_at(q.bars, 0, &s);
        let r32 = self.b.op(&format!("arith.trunci {r} : i64 to i32"));
        let one = self.b.constant("1", "i32");
        let par = self.b.op(&format!("arith.andi {r32}, {one} : i32"));
        self.asm_wait(&full, &par);
        let base = self.shared_at(q.buffers);
        let tb = self.b.i64(q.tile_bytes as i64);
        let off = self.b.op(&format!("arith.muli {s}, {tb} : i64"));
        let buffer = self.b.op(&format!(
            "llvm.getelementptr inbounds {base}[{off}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ));
        let g = self.group.as_mut().and_then(|g| g.queue.as_mut()).expect("a queued scatter");
        (g.buffer, g.slot) = (Some(buffer), Some(s));
    }

    /// A consumer's release of its tile's buffer, after the warp's barrier that ends the tile:
    /// lane 0 arrives on the buffer's `empty` mbarrier.
    pub(in crate::codegen::lower) fn queue_release(&mut self) {
        let g = self.group.clone().expect("a queued scatter");
        let q = g.queue.expect("a queued scatter");
        let s = q.slot.clone().expect("inside a tile");
        let empty = self.bar_at(q.bars, q.count, &s);
        let zero = self.b.i64(0);
        let lead = self.b.op(&format!("arith.cmpi eq, {}, {zero} : i64", g.lane));
        self.open_if(&lead);
        self.asm_arrive(&empty);
        self.close();
        let g = self.group.as_mut().and_then(|g| g.queue.as_mut()).expect("a queued scatter");
        (g.buffer, g.slot) = (None, None);
    }

    /// The producer warps' loop (warps `CONSUMERS ..` of the block): producer `p` fills the
    /// buffers of tiles `p`, `p + P`... of the block's positions `%start .. %end` (see the
    /// module docs).
    pub(in crate::codegen::lower) fn queue_produce(&mut self) {
        let g = self.group.clone().expect("a queued scatter");
        let q = g.queue.clone().expect("a queued scatter");
        let lane = g.lane.clone();
        let consumers = self.b.i64(g.warps as i64);
        let p = self.b.op(&format!("arith.subi {}, {consumers} : i64", g.warp));
        let tile = self.b.i64(WARP as i64);
        let one = self.b.i64(1);
        let zero = self.b.i64(0);
        let span = self.b.op("arith.subi %end, %start : i64");
        let span = self.b.op(&format!("arith.addi {span}, {tile} : i64"));
        let span = self.b.op(&format!("arith.subi {span}, {one} : i64"));
        let tiles = self.b.op(&format!("arith.divui {span}, {tile} : i64"));
        let step = self.b.i64(PRODUCERS as i64);
        let row_bytes = q.row * q.dt.itemsize();
        // (The region's buffers are 16-byte aligned, as the entry declares them, and so are
        // rows of a multiple of 16 bytes.)
        let input = Self::in_ptr(q.index);
        let (k, _, _) = self.open_for_step(&p, &tiles, Some(&step), &[], &[]);
        let count = self.b.i64(q.count as i64);
        let (r, s) = self.b.divrem(&k, &count);
        let again = self.b.op(&format!("arith.cmpi sgt, {r}, {zero} : i64"));
        self.open_if(&again);
        let empty = self.bar_at(q.bars, q.count, &s);
        let back = self.b.op(&format!("arith.subi {r}, {one} : i64"));
        let back = self.b.op(&format!("arith.trunci {back} : i64 to i32"));
        let one32 = self.b.constant("1", "i32");
        let par = self.b.op(&format!("arith.andi {back}, {one32} : i32"));
        self.asm_wait(&empty, &par);
        self.close();
        self.group_barrier();
        let k0 = self.b.op(&format!("arith.muli {k}, {tile} : i64"));
        let t = self.b.op(&format!("arith.addi %start, {k0} : i64"));
        let left = self.b.op(&format!("arith.subi %end, {t} : i64"));
        let len = self.b.op(&format!("arith.minsi {left}, {tile} : i64"));
        let lead = self.b.op(&format!("arith.cmpi eq, {lane}, {zero} : i64"));
        let full_bar = self.bar_at(q.bars, 0, &s);
        let tag = self.bar_at(q.bars, 2 * q.count, &s);
        let k32 = self.b.op(&format!("arith.trunci {k} : i64 to i32"));
        let base = self.smem_base32();
        let at = self.b.constant(&q.buffers.to_string(), "i32");
        let base = self.b.op(&format!("arith.addi {base}, {at} : i32"));
        let s32 = self.b.op(&format!("arith.trunci {s} : i64 to i32"));
        let tb = self.b.constant(&q.tile_bytes.to_string(), "i32");
        let off = self.b.op(&format!("arith.muli {s32}, {tb} : i32"));
        let buffer = self.b.op(&format!("arith.addi {base}, {off} : i32"));
        let rb = self.b.i64(row_bytes as i64);
        self.open_if(&lead);
        self.asm("st.volatile.shared.u32 [$0], $1;", "r,r", &[(&tag, "i32"), (&k32, "i32")]);
        // Lane 0's arrival carries the tile's bytes; each lane's row completes on it.
        let bytes = self.b.op(&format!("arith.muli {len}, {rb} : i64"));
        let bytes = self.b.op(&format!("arith.trunci {bytes} : i64 to i32"));
        self.asm_expect_tx(&full_bar, &bytes);
        self.close();
        let mine = self.b.op(&format!("arith.cmpi slt, {lane}, {len} : i64"));
        self.open_if(&mine);
        let l32 = self.b.op(&format!("arith.trunci {lane} : i64 to i32"));
        let sb = self.b.constant(&q.stride_bytes.to_string(), "i32");
        let doff = self.b.op(&format!("arith.muli {l32}, {sb} : i32"));
        let dst = self.b.op(&format!("arith.addi {buffer}, {doff} : i32"));
        let item = self.b.op(&format!("arith.addi {t}, {lane} : i64"));
        let from = self.b.op(&format!("arith.muli {item}, {rb} : i64"));
        let src = self.b.op(&format!(
            "llvm.getelementptr inbounds {input}[{from}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ));
        let src = self.b.op(&format!("llvm.ptrtoint {src} : !llvm.ptr to i64"));
        let nb = self.b.constant(&row_bytes.to_string(), "i32");
        self.asm_bulk_copy(&dst, &src, &nb, &full_bar);
        self.close();
        self.close();
    }
}
