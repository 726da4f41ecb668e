//! The tile loop of a GPU scatter block (module `scatter`, [`Lower::scatter_gpu`]): per tile
//! of positions, the staged inputs' rows copied to shared memory; `lanes` threads per
//! position compute its index (the labels' argmin reading its row there) and mark or store it;
//! then each output's values combined into the block's bins in shared memory, by threads that
//! own bin slots (module `owned`) or by groups of threads a copy each.

use kiln_ir::{DType, NodeId};

use super::OutLayout;
use crate::codegen::index::{extent, unravel};
use crate::codegen::lower::tile::Staged;
use crate::codegen::lower::{Ix, Lower, Stop};
use crate::codegen::types::{load, load_aligned, store, store_aligned, Val};

/// How a tiled GPU scatter block's loop runs (chosen by [`Lower::scatter_gpu`]).
#[derive(Clone, Copy)]
pub(super) struct TileLoop<'a> {
    /// Positions a tile, threads a block.
    pub(super) ntile: usize,
    pub(super) nthreads: usize,
    /// The label phase: threads a position, passes over the tile, each lane's unroll.
    pub(super) lanes: usize,
    pub(super) passes: usize,
    pub(super) unroll: usize,
    /// Bins owned by threads (module `owned`); sums straight to the outputs by global atomics.
    pub(super) owned: bool,
    pub(super) global: bool,
    /// The inputs whose tile of rows is copied to shared memory.
    pub(super) staged: &'a [Staged],
    /// The indices (index, rows) and each output's among them.
    pub(super) keys: &'a [(NodeId, usize)],
    pub(super) slot: &'a [usize],
}

impl Lower<'_> {
    /// The tile loop over the block's positions `%start .. %end` (see the module docs).
    pub(super) fn scatter_tiles(
        &mut self,
        outs: &[NodeId],
        layouts: &[OutLayout],
        plan: &TileLoop,
    ) -> Result<(), Stop> {
        let body = self.body;
        let TileLoop { ntile, nthreads, lanes, passes, unroll, owned, global, staged, keys, slot } =
            *plan;
        let zero = self.b.i64(0);
        let tile = self.b.i64(ntile as i64);
        // Where warps take tiles on their own: warp `w` takes tiles `w`, `w + warps`...
        let (from, step) = match self.group.clone() {
            Some(g) => {
                let w0 = self.b.op(&format!("arith.muli {}, {tile} : i64", g.warp));
                let from = self.b.op(&format!("arith.addi %start, {w0} : i64"));
                (from, self.b.i64((g.warps * ntile) as i64))
            }
            None => ("%start".to_string(), tile.clone()),
        };
        let (t0, _, _) = self.open_for_step(&from, "%end", Some(&step), &[], &[]);
        let left = self.b.op(&format!("arith.subi %end, {t0} : i64"));
        let tlen = self.b.op(&format!("arith.minsi {left}, {tile} : i64"));
        // The tile's rows: taken from the queue where producer warps copy them (module
        // `queue`), else copied here.
        if self.group.as_ref().is_some_and(|g| g.queue.is_some()) {
            let span = self.b.op(&format!("arith.subi {t0}, %start : i64"));
            let k = self.b.op(&format!("arith.divui {span}, {tile} : i64"));
            self.queue_take(&k);
        } else {
            self.stage_tile(staged, (&t0, &tlen), nthreads, ntile);
        }
        if owned {
            self.clear_masks(keys.len(), ntile, nthreads);
        }
        self.group_barrier();
        self.tile.as_mut().expect("set above").at = Some((t0.clone(), tlen.clone()));
        // `lanes` threads per position: each output's index, wrapped, to shared memory. Every
        // thread computes one (past the tile's end, its last position again), so that a warp's
        // lanes stay together where a screened argmin's sums are shared between them (see
        // `label_lanes`); lane 0 stores it.
        let lanes_c = self.b.i64(lanes as i64);
        let tid = self.group_tid();
        let (p, lane) = self.b.divrem(&tid, &lanes_c);
        let one = self.b.i64(1);
        let last_p = self.b.op(&format!("arith.subi {tlen}, {one} : i64"));
        // This thread's positions: `p`, then `p + q·nthreads/lanes` (pass `q`).
        let mut ps = vec![p.clone()];
        for q in 1..passes {
            let off = self.b.i64((q * nthreads / lanes) as i64);
            ps.push(self.b.op(&format!("arith.addi {p}, {off} : i64")));
        }
        let item_of = |s: &mut Self, pq: &str| {
            let pc = s.b.op(&format!("arith.minsi {pq}, {last_p} : i64"));
            s.b.op(&format!("arith.addi {t0}, {pc} : i64"))
        };
        let its: Vec<String> = ps.iter().map(|pq| item_of(self, pq)).collect();
        self.tile.as_mut().expect("set above").items = its.clone();
        self.label_lanes = (lanes > 1).then(|| (lane.clone(), lanes, unroll));
        self.co_items = (passes > 1).then(|| (its[0].clone(), its[1..].to_vec()));
        let mut rows = Vec::with_capacity(keys.len() * passes);
        for item in &its {
            for &(idx, nrows) in keys {
                let ix = Ix { dims: Some(vec![item.clone()]), flat: Some(item.clone()) };
                let i = self.emit(idx, &ix)?;
                rows.push(self.wrap_row(&i.ssa, nrows));
            }
        }
        (self.label_lanes, self.co_items, self.expanded) = (None, None, None);
        let mut first = None;
        for (pq, rows) in ps.iter().zip(rows.chunks(keys.len())) {
            let inside = self.b.op(&format!("arith.cmpi slt, {pq}, {tlen} : i64"));
            let first = first
                .get_or_insert_with(|| self.b.op(&format!("arith.cmpi eq, {lane}, {zero} : i64")));
            let mine = self.b.op(&format!("arith.andi {inside}, {first} : i1"));
            self.open_if(&mine);
            for (k, r) in rows.iter().enumerate() {
                if owned {
                    self.mark_position(k, ntile, r, pq);
                    continue;
                }
                let at = self.shared_at(8 * ntile * k);
                store_aligned(&mut self.b, &at, pq, &Val::new(r.clone(), DType::Int64), 8);
            }
            self.close();
        }
        self.group_barrier();
        // Each output's values into its bins.
        if owned {
            self.owned_bins(outs, layouts, slot, (&t0, ntile, nthreads))?;
        }
        for (k, (&o, l)) in outs.iter().zip(layouts).enumerate().filter(|_| !owned) {
            let node = body.node(o);
            let lanes = self.b.i64(l.lanes as i64);
            let groups = self.b.i64(l.groups as i64);
            let (g, lane) = self.b.divrem("%tid", &lanes);
            let vec = self.b.i64(l.vec as i64);
            let j0 = self.b.op(&format!("arith.muli {lane}, {vec} : i64"));
            let by = self.b.i64((l.lanes * l.vec) as i64);
            let active = self.b.op(&format!("arith.cmpi slt, {g}, {groups} : i64"));
            self.open_if(&active);
            let (ii, _, _) = self.open_for_step(&g, &tlen, Some(&groups), &[], &[]);
            let at = self.shared_at(8 * ntile * slot[k]);
            let r = load_aligned(&mut self.b, &at, &ii, DType::Int64, 8).ssa;
            let item = self.b.op(&format!("arith.addi {t0}, {ii} : i64"));
            self.tile.as_mut().expect("set above").items = vec![item.clone()];
            let me = extent(&mut self.b, l.m);
            let copy = if l.copies > 1 { g.clone() } else { zero.clone() };
            let rm = self.b.i64((l.rows * l.m) as i64);
            let c0 = self.b.op(&format!("arith.muli {copy}, {rm} : i64"));
            let r0 = self.b.op(&format!("arith.muli {r}, {me} : i64"));
            let slot0 = self.b.op(&format!("arith.addi {c0}, {r0} : i64"));
            let (j, _, _) = self.open_for_step(&j0, &me, Some(&by), &[], &[]);
            if l.vec > 1 {
                self.multiples.insert(j.clone(), l.vec);
                // The values first, then the bins, then the stores: each four loads or stores
                // side by side (LLVM makes them 16-byte ones; the bins are not the values).
                let mut vals = Vec::with_capacity(l.vec);
                for q in 0..l.vec {
                    // (The first is `j` itself: its alignment is known, see `multiples`.)
                    let jq = if q == 0 {
                        j.clone()
                    } else {
                        let off = self.b.i64(q as i64);
                        self.b.op(&format!("arith.addi {j}, {off} : i64"))
                    };
                    let mut dims = vec![item.clone()];
                    dims.extend(unravel(&mut self.b, &jq, &node.shape[1..]));
                    vals.push(self.emit(node.inputs[2], &Ix { dims: Some(dims), flat: None })?);
                }
                let bins = self.shared_at(l.smem);
                let slot = self.b.op(&format!("arith.addi {slot0}, {j} : i64"));
                let slots: Vec<String> = (0..l.vec)
                    .map(|q| {
                        let off = self.b.i64(q as i64);
                        self.b.op(&format!("arith.addi {slot}, {off} : i64"))
                    })
                    .collect();
                // The first slot is a multiple of `vec` elements (so are rows and `j`).
                let align = l.vec * l.dt.itemsize();
                let olds: Vec<Val> = slots
                    .iter()
                    .enumerate()
                    .map(|(q, sq)| match q {
                        0 => load_aligned(&mut self.b, &bins, sq, l.dt, align),
                        _ => load(&mut self.b, &bins, sq, l.dt),
                    })
                    .collect();
                let mut news = Vec::with_capacity(l.vec);
                for (old, v) in olds.into_iter().zip(vals) {
                    news.push(self.combine(l.combine, l.dt, old, v)?);
                }
                for (q, (sq, new)) in slots.iter().zip(&news).enumerate() {
                    match q {
                        0 => store_aligned(&mut self.b, &bins, sq, new, align),
                        _ => store(&mut self.b, &bins, sq, new),
                    }
                }
                self.close();
                self.close();
                self.close();
                continue;
            }
            let mut dims = vec![item.clone()];
            dims.extend(unravel(&mut self.b, &j, &node.shape[1..]));
            let v = self.emit(node.inputs[2], &Ix { dims: Some(dims), flat: None })?;
            let slot = self.b.op(&format!("arith.addi {slot0}, {j} : i64"));
            if global {
                self.atomic_add_out(k, &slot, &v);
                self.close();
                self.close();
                self.close();
                continue;
            }
            let bins = self.shared_at(l.smem);
            if l.copies > 1 || l.dt.is_float() {
                let old = load(&mut self.b, &bins, &slot, l.dt);
                let new = self.combine(l.combine, l.dt, old, v)?;
                store(&mut self.b, &bins, &slot, &new);
            } else {
                self.atomic_combine((l.combine, l.dt), &bins, &slot, &v);
            }
            self.close();
            self.close();
            self.close();
        }
        self.group_barrier();
        if self.group.as_ref().is_some_and(|g| g.queue.is_some()) {
            self.queue_release();
        }
        let tile = self.tile.as_mut().expect("set above");
        (tile.at, tile.items) = (None, Vec::new());
        self.close();
        Ok(())
    }
}
