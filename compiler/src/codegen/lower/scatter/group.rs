//! A GPU scatter kernel's warps taking tiles on their own (`KILN_GPU_SCATTER_WARP_TILE`, module
//! `scatter`): each warp of a block takes every `warps`-th tile of the block's positions, with
//! its own region of shared memory (its tile's masks, then its staged rows) and its own copy
//! of the bins, owned by its threads (module `owned`); the tile loop's barriers are the warp's
//! (`bar.warp.sync`), and the block waits once, after the loop, before it combines the warps'
//! copies in warp order. A block's result is then its warps' positions combined in a fixed
//! order: the same bits every run.
//!
//! Against the block taking tiles together (three block barriers a tile, every thread waiting
//! for the slowest owner of the largest cluster's row, session 32's ncu: barrier stalls the
//! largest), no warp waits for another: one warp copies its rows while others compute labels
//! or combine.

use super::super::Lower;

/// Positions of a warp's tile where the warps of a GPU scatter block take tiles on their own,
/// by default (0: the block takes tiles together; `KILN_GPU_SCATTER_WARP_TILE` for another).
const WARP_TILE: usize = 0;

/// Threads of a GPU scatter block whose warps take tiles on their own, by default (`KILN_GPU_SCATTER`'s
/// threads for another): four copies of the bins beside four warps' staged rows fit the 48 KiB
/// a launch gets without opting in.
pub(super) const WARP_TILE_THREADS: usize = 128;

/// Positions of a warp's tile, or `None` where the block takes tiles together.
pub(super) fn warp_tile() -> Option<usize> {
    Some(kiln_cache::config().gpu_scatter_warp_tile.unwrap_or(WARP_TILE)).filter(|&t| t > 0)
}

/// A GPU scatter block's warps taking tiles on their own: this thread's warp and lane (SSA
/// names, i64), the warps' regions of shared memory (`bytes` each from byte `base`), and the
/// warps a block.
#[derive(Clone, Debug)]
pub(in crate::codegen::lower) struct Group {
    pub(super) warp: String,
    pub(super) lane: String,
    pub(super) base: usize,
    pub(super) bytes: usize,
    pub(super) warps: usize,
    /// The queue the warps take their tiles' rows from, where producer warps copy them
    /// (module `queue`).
    pub(super) queue: Option<super::queue::Queue>,
}

impl Lower<'_> {
    /// This thread's index in the group that takes a tile: its lane where warps take tiles on
    /// their own, else its index in the block.
    pub(in crate::codegen::lower) fn group_tid(&self) -> String {
        self.group.as_ref().map_or_else(|| "%tid".into(), |g| g.lane.clone())
    }

    /// A generic pointer to byte `offset` of this thread's warp's region of shared memory
    /// where warps take tiles on their own, else to byte `offset` of the block's.
    pub(in crate::codegen::lower) fn group_at(&mut self, offset: usize) -> String {
        let Some(g) = self.group.clone() else {
            return self.shared_at(offset);
        };
        let base = self.shared_at(g.base + offset);
        let bytes = self.b.i64(g.bytes as i64);
        let off = self.b.op(&format!("arith.muli {}, {bytes} : i64", g.warp));
        self.b.op(&format!(
            "llvm.getelementptr inbounds {base}[{off}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ))
    }

    /// A generic pointer to the staged rows at byte `offset` of this thread's group's region
    /// (see [`Lower::group_at`]), or to the current tile's buffer where they come from the
    /// queue.
    pub(in crate::codegen::lower) fn staged_base(&mut self, offset: usize) -> String {
        match self.group.as_ref().and_then(|g| g.queue.as_ref()).and_then(|q| q.buffer.clone()) {
            Some(buffer) => buffer,
            None => self.group_at(offset),
        }
    }

    /// The barrier of the threads that take a tile: the warp's, else the block's.
    pub(in crate::codegen::lower) fn group_barrier(&mut self) {
        if self.group.is_some() {
            let full = self.b.constant("-1", "i32");
            self.b.stmt(&format!("nvvm.bar.warp.sync {full} : i32"));
        } else {
            self.b.stmt("nvvm.barrier0");
        }
    }
}
