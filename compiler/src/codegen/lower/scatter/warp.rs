//! A GPU scatter block's bins as one private copy per warp (`KILN_GPU_SCATTER_WARP`, module
//! `scatter`), for outputs of one element a row (`scatter_add` of a 1-D array into 1024 bins,
//! `bincount` with weights): every thread of the block combines a position of the tile at a
//! time into its warp's copy, and two positions of a warp that fall in the same bin are taken
//! in lane order. Each round, the lanes still to combine compare their rows (`match.any.sync`);
//! the lowest lane of each row combines (plain shared-memory loads and stores, no atomics: the
//! rows a round touches are distinct) and leaves the next round to the others; a warp-wide vote
//! ends the rounds. A copy thus takes its positions in position order, the copies are combined
//! in warp order at the end: the same bits every run. Against private copies a group of threads
//! each (module `scatter`'s default for such rows: 8 copies of 1024 bins in 48 KiB, so 8 of
//! the block's 256 threads combining a position at a time), every thread takes part; rounds past
//! the first are only for rows repeated within a warp's 32 positions.

use kiln_ir::DType;

use super::OutLayout;
use crate::codegen::index::unravel;
use crate::codegen::lower::{Ix, Lower, Stop};
use crate::codegen::types::{load, load_aligned, store};

/// Whether GPU scatter kernels give each warp a copy of one-element bins, by default
/// (`KILN_GPU_SCATTER_WARP=on|off` for another).
const WARP: bool = true;

/// Threads of a warp.
const WARP_THREADS: usize = 32;

/// Whether output layout `l` (of a kernel of `nthreads` threads, bins not owned by threads)
/// takes a copy of its bins per warp: the knob is on, its rows are one element, and it is a
/// float output (integers are combined by atomics into one copy, exact in any order).
pub(super) fn per_warp(l: &OutLayout, nthreads: usize) -> bool {
    kiln_cache::config().gpu_scatter_warp.unwrap_or(WARP)
        && l.m == 1
        && l.dt.is_float()
        && nthreads.is_multiple_of(WARP_THREADS)
}

/// Copies of the bins a block of `nthreads` threads keeps per-warp.
pub(super) fn warps(nthreads: usize) -> usize {
    nthreads / WARP_THREADS
}

impl Lower<'_> {
    /// The bins phase of a tile at `t0` of `tlen` positions for output `o` (layout `l`, its
    /// index's rows in the tile's slot `slot`), one copy of the bins per warp (see the module
    /// docs): thread `t` takes positions `t`, `t + nthreads`, ... of the tile.
    pub(super) fn warp_bins(
        &mut self,
        o: kiln_ir::NodeId,
        l: &OutLayout,
        slot: usize,
        (t0, tlen, ntile, nthreads): (&str, &str, usize, usize),
    ) -> Result<(), Stop> {
        let node = self.body.node(o);
        let c32 = self.b.i64(WARP_THREADS as i64);
        let (warp, lane) = self.b.divrem("%tid", &c32);
        let rows = self.b.i64(l.rows as i64);
        let copy0 = self.b.op(&format!("arith.muli {warp}, {rows} : i64"));
        let bins = self.shared_at(l.smem);
        let labels = self.shared_at(8 * ntile * slot);
        let one = self.b.i64(1);
        let zero = self.b.i64(0);
        let last = self.b.op(&format!("arith.subi {tlen}, {one} : i64"));
        let full = self.b.constant("-1", "i32");
        let zero32 = self.b.constant("0", "i32");
        let yes = self.b.constant("true", "i1");
        // A lane with nothing (left) to combine matches no other: its key is `-1 - lane`, rows
        // being non-negative.
        let lane32 = self.b.op(&format!("arith.trunci {lane} : i64 to i32"));
        let none = self.b.op(&format!("arith.subi {full}, {lane32} : i32"));
        for q in 0..ntile.div_ceil(nthreads) {
            let off = self.b.i64((q * nthreads) as i64);
            let ii = self.b.op(&format!("arith.addi %tid, {off} : i64"));
            let inside = self.b.op(&format!("arith.cmpi slt, {ii}, {tlen} : i64"));
            // Past the tile's end, the last position's row and value (never combined).
            let pc = self.b.op(&format!("arith.minsi {ii}, {last} : i64"));
            let r = load_aligned(&mut self.b, &labels, &pc, DType::Int64, 8).ssa;
            let item = self.b.op(&format!("arith.addi {t0}, {pc} : i64"));
            self.tile.as_mut().expect("a scatter tile is open").items = vec![item.clone()];
            let mut dims = vec![item];
            dims.extend(unravel(&mut self.b, &zero, &node.shape[1..]));
            let v = self.emit(node.inputs[2], &Ix { dims: Some(dims), flat: None })?;
            let r32 = self.b.op(&format!("arith.trunci {r} : i64 to i32"));
            let at = self.b.op(&format!("arith.addi {copy0}, {r} : i64"));
            // Rounds while a lane of the warp has its position left (a uniform vote).
            let (p, x) = (self.b.fresh(), self.b.fresh());
            self.open(1, &format!("scf.while ({p} = {inside}) : (i1) -> i1"));
            let any = self.b.fresh();
            self.b.stmt(&format!("{any} = nvvm.vote.sync any {full}, {p} -> i1"));
            self.b.stmt(&format!("scf.condition({any}) {p} : i1"));
            self.memo.pop();
            self.memo.push(Default::default());
            self.b.next_region("do");
            self.b.stmt(&format!("^bb0({x}: i1):"));
            let key = self.b.op(&format!("arith.select {x}, {r32}, {none} : i32"));
            let same = self.b.fresh();
            self.b.stmt(&format!("{same} = nvvm.match.sync any {full}, {key} : i32 -> i32"));
            let below = self.b.op("nvvm.read.ptx.sreg.lanemask.lt : i32");
            let lower = self.b.op(&format!("arith.andi {same}, {below} : i32"));
            let first = self.b.op(&format!("arith.cmpi eq, {lower}, {zero32} : i32"));
            let go = self.b.op(&format!("arith.andi {x}, {first} : i1"));
            self.open_if(&go);
            let old = load(&mut self.b, &bins, &at, l.dt);
            let new = self.combine(l.combine, l.dt, old, v.clone())?;
            store(&mut self.b, &bins, &at, &new);
            self.close();
            // The round's stores are seen by the warp's lanes of the next.
            self.b.stmt(&format!("nvvm.bar.warp.sync {full} : i32"));
            let done = self.b.op(&format!("arith.xori {go}, {yes} : i1"));
            let left = self.b.op(&format!("arith.andi {x}, {done} : i1"));
            self.b.stmt(&format!("scf.yield {left} : i1"));
            self.close();
        }
        Ok(())
    }
}
