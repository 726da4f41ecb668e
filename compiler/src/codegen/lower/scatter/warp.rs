//! A GPU scatter kernel without tiles for outputs that all have rows of one element
//! (`KILN_GPU_SCATTER_WARP`, module `scatter`: `scatter_add` of a 1-D array into 1024 bins,
//! `maximum_at`, `bincount`), float bins as one private copy per warp, integer ones as one copy
//! combined by atomics (exact in any order); no block barrier until the end.
//!
//! Thread `t` of a block takes positions `p + u·nthreads + t` of its range, `p` a step of
//! [`POSITIONS`]` · nthreads`, and computes their rows (the index's producers fused) and values
//! first, so that their loads are in flight together; then it combines them into its warp's
//! copy, one position after the other. Two positions of a warp that fall in the same row are
//! taken in lane order: each round, the lanes still to combine compare their rows
//! (`match.any.sync`); the lowest lane of each row combines (plain shared-memory loads and
//! stores, no atomics: the rows a round touches are distinct) and leaves the next round to the
//! others; a warp-wide vote ends the rounds. A copy thus takes its positions in a fixed order,
//! the copies are combined in warp order at the end: the same bits every run. Against the
//! tiles (module `scatter`: a tile's rows staged, its indices to shared memory, then 8 copies
//! of 1024 bins combined by 8 of the block's 256 threads, three barriers a tile) every thread
//! combines, and nothing waits at a barrier (2^26 float32 into 1024 bins on an H200: 1.17 →
//! 0.77 ms; the MIO pipe, shared-memory bank conflicts and the warp match, is now the limit).

use super::OutLayout;
use crate::codegen::index::unravel;
use crate::codegen::lower::coop::WARP as WARP_THREADS;
use crate::codegen::lower::{Ix, Lower, Stop};
use crate::codegen::types::{load, store, Val};

/// Whether GPU scatter kernels give each warp a copy of one-element bins, by default
/// (`KILN_GPU_SCATTER_WARP=on|off` for another).
const WARP: bool = true;

/// The copies of its bins output layout `l` (of a kernel of `nthreads` threads, bins not owned
/// by threads) takes in a kernel without tiles, if it can: the knob is on and its rows are one
/// element; a copy per warp for floats, one for integers (combined by atomics: exact in any
/// order).
pub(super) fn copies(l: &OutLayout, nthreads: usize) -> Option<usize> {
    let on = kiln_cache::config().gpu_scatter_warp.unwrap_or(WARP);
    (on && l.m == 1 && nthreads.is_multiple_of(WARP_THREADS)).then(|| {
        if l.dt.is_float() {
            nthreads / WARP_THREADS
        } else {
            1
        }
    })
}

/// Positions a thread takes at a time (their loads in flight together).
const POSITIONS: usize = 4;

impl Lower<'_> {
    /// The positions of the block (`%start .. %end`) combined into the bins of every output
    /// (`outs`, layouts `layouts`, each taking [`copies`]; output `k`'s index is `keys[slot[k]]`,
    /// index and row count), see the module docs.
    pub(super) fn warp_direct(
        &mut self,
        outs: &[kiln_ir::NodeId],
        layouts: &[OutLayout],
        (keys, slot): (&[(kiln_ir::NodeId, usize)], &[usize]),
        nthreads: usize,
    ) -> Result<(), Stop> {
        let body = self.body;
        let step = self.b.i64((POSITIONS * nthreads) as i64);
        let zero = self.b.i64(0);
        let one = self.b.i64(1);
        let last = self.b.op(&format!("arith.subi %end, {one} : i64"));
        let (p0, _, _) = self.open_for_step("%start", "%end", Some(&step), &[], &[]);
        let mut todo = Vec::with_capacity(POSITIONS * outs.len());
        for u in 0..POSITIONS {
            let off = self.b.i64((u * nthreads) as i64);
            let i = self.b.op(&format!("arith.addi {p0}, {off} : i64"));
            let i = self.b.op(&format!("arith.addi {i}, %tid : i64"));
            let inside = self.b.op(&format!("arith.cmpi slt, {i}, %end : i64"));
            // Past the range's end, its last position's row and value (never combined).
            let item = self.b.op(&format!("arith.minsi {i}, {last} : i64"));
            let mut rows = Vec::with_capacity(keys.len());
            for &(idx, nrows) in keys {
                let ix = Ix { dims: Some(vec![item.clone()]), flat: Some(item.clone()) };
                let r = self.emit(idx, &ix)?;
                rows.push(self.wrap_row(&r.ssa, nrows));
            }
            for (k, &o) in outs.iter().enumerate() {
                let node = body.node(o);
                let mut dims = vec![item.clone()];
                dims.extend(unravel(&mut self.b, &zero, &node.shape[1..]));
                let v = self.emit(node.inputs[2], &Ix { dims: Some(dims), flat: None })?;
                todo.push((k, inside.clone(), rows[slot[k]].clone(), v));
            }
        }
        for (k, inside, r, v) in todo {
            let l = &layouts[k];
            if l.dt.is_float() {
                self.warp_rounds(l, &inside, &r, v)?;
                continue;
            }
            self.open_if(&inside);
            let bins = self.shared_at(l.smem);
            self.atomic_combine((l.combine, l.dt), &bins, &r, &v);
            self.close();
        }
        self.close();
        Ok(())
    }

    /// Value `v` combined into row `r` (i64) of this warp's copy of layout `l`'s bins where
    /// `inside`, the warp's lanes of one row in lane order (see the module docs).
    fn warp_rounds(&mut self, l: &OutLayout, inside: &str, r: &str, v: Val) -> Result<(), Stop> {
        let c32 = self.b.i64(WARP_THREADS as i64);
        let (warp, lane) = self.b.divrem("%tid", &c32);
        let rows = self.b.i64(l.rows as i64);
        let copy0 = self.b.op(&format!("arith.muli {warp}, {rows} : i64"));
        let bins = self.shared_at(l.smem);
        let full = self.b.constant("-1", "i32");
        let zero32 = self.b.constant("0", "i32");
        let yes = self.b.constant("true", "i1");
        // A lane with nothing (left) to combine matches no other: its key is `-1 - lane`, rows
        // being non-negative.
        let lane32 = self.b.op(&format!("arith.trunci {lane} : i64 to i32"));
        let none = self.b.op(&format!("arith.subi {full}, {lane32} : i32"));
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
        let new = self.combine(l.combine, l.dt, old, v)?;
        store(&mut self.b, &bins, &at, &new);
        self.close();
        // The round's stores are seen by the warp's lanes of the next.
        self.b.stmt(&format!("nvvm.bar.warp.sync {full} : i32"));
        let done = self.b.op(&format!("arith.xori {go}, {yes} : i1"));
        let left = self.b.op(&format!("arith.andi {x}, {done} : i1"));
        self.b.stmt(&format!("scf.yield {left} : i1"));
        self.close();
        Ok(())
    }
}
