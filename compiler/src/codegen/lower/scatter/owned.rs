//! A GPU scatter block's bins owned by threads (`KILN_GPU_SCATTER_OWNED`, module `scatter`):
//! the label phase marks each position of a tile in a bit mask of its row (a shared-memory
//! `or`: the same bits in any order), then every bin slot, `vec` consecutive elements of a
//! row, has one thread, which adds the tile's positions of its row in position order in
//! registers (the positions found from the masks' set bits, lowest first) and stores the slot
//! once a tile. One copy of the bins, no combine of copies, no atomics; a block's result is
//! its positions' values combined in position order, the same bits every run. Against private
//! copies of the bins, a group of threads a copy and a position at a time (the copies combined
//! at the end), every warp of the block takes part (k-means' 10 × 64 sums: 160 threads, its
//! counts 10 more) and no thread waits on its own stores.

use kiln_ir::DType;

use super::OutLayout;
use crate::codegen::index::{extent, unravel};
use crate::codegen::lower::{Ix, Lower, Stop};
use crate::codegen::types::{load, load_aligned, store, store_aligned, Val};

/// Whether GPU scatter kernels give each bin slot a thread, by default
/// (`KILN_GPU_SCATTER_OWNED=on|off` for another).
const OWNED: bool = true;

/// Most rows of an output whose bins threads own (a mask of a tile's positions per row).
const OWNED_ROWS: usize = 64;

/// 32-bit words of a row's mask of a tile of `ntile` positions.
pub(super) fn mask_words(ntile: usize) -> usize {
    ntile.div_ceil(32)
}

/// Whether a GPU scatter kernel's bins are owned by threads: the knob is on and each index's
/// rows (`keys`: index and row count) have at most [`OWNED_ROWS`] rows, their masks fitting
/// the index's slot of `8 · ntile` bytes at the start of shared memory (the label phase's
/// indices otherwise).
pub(super) fn owned(keys: &[(kiln_ir::NodeId, usize)], ntile: usize) -> bool {
    kiln_cache::config().gpu_scatter_owned.unwrap_or(OWNED)
        && keys
            .iter()
            .all(|&(_, rows)| rows <= OWNED_ROWS && rows * mask_words(ntile) * 4 <= 8 * ntile)
}

impl Lower<'_> {
    /// Zeroes the masks of every index (the whole first `8 · ntile · keys` bytes of shared
    /// memory) for the next tile: before the barrier that opens its label phase.
    pub(super) fn clear_masks(&mut self, keys: usize, ntile: usize, nthreads: usize) {
        let words = self.b.i64((2 * ntile * keys) as i64);
        let threads = self.b.i64(nthreads as i64);
        let base = self.group_at(0);
        let zero = Val::new(self.b.constant("0", "i32"), DType::UInt32);
        let tid = self.group_tid();
        let (s, _, _) = self.open_for_step(&tid, &words, Some(&threads), &[], &[]);
        store(&mut self.b, &base, &s, &zero);
        self.close();
    }

    /// Marks tile position `p` (i64) in the mask of row `r` (i64) of index `key`.
    pub(super) fn mark_position(&mut self, key: usize, ntile: usize, r: &str, p: &str) {
        let words = self.b.i64(mask_words(ntile) as i64);
        let five = self.b.i64(5);
        let w = self.b.op(&format!("arith.shrui {p}, {five} : i64"));
        let rw = self.b.op(&format!("arith.muli {r}, {words} : i64"));
        let at = self.b.op(&format!("arith.addi {rw}, {w} : i64"));
        let p32 = self.b.op(&format!("arith.trunci {p} : i64 to i32"));
        let low = self.b.constant("31", "i32");
        let bit = self.b.op(&format!("arith.andi {p32}, {low} : i32"));
        let one = self.b.constant("1", "i32");
        let m = self.b.op(&format!("arith.shli {one}, {bit} : i32"));
        let base = self.group_at(8 * ntile * key);
        let ptr = self.b.op(&format!(
            "llvm.getelementptr inbounds {base}[{at}] : (!llvm.ptr, i64) -> !llvm.ptr, i32"
        ));
        let old = self.b.fresh();
        self.b.stmt(&format!("{old} = llvm.atomicrmw _or {ptr}, {m} monotonic : !llvm.ptr, i32"));
    }

    /// The bins phase of a tile at `t0` (see the module docs): for each output `k` (layout
    /// `layouts[k]`, index slot `slot[k]`), thread `(s - base) mod nthreads` takes slot `s`,
    /// row `s / lanes`, elements `vec · (s mod lanes) ..` of it, `base` the slots of the
    /// outputs before (so the outputs' slots spread over the block's threads).
    pub(super) fn owned_bins(
        &mut self,
        outs: &[kiln_ir::NodeId],
        layouts: &[OutLayout],
        slot: &[usize],
        (t0, ntile, nthreads): (&str, usize, usize),
    ) -> Result<(), Stop> {
        let body = self.body;
        let threads = self.b.i64(nthreads as i64);
        let words = mask_words(ntile);
        let mut base = 0;
        for (k, (&o, l)) in outs.iter().zip(layouts).enumerate() {
            let node = body.node(o);
            let total = l.rows * l.lanes;
            let shift = self.b.i64(((nthreads - base % nthreads) % nthreads) as i64);
            base += total;
            let tid = self.group_tid();
            let s0 = self.b.op(&format!("arith.addi {tid}, {shift} : i64"));
            let s0 = self.b.op(&format!("arith.remui {s0}, {threads} : i64"));
            let total = self.b.i64(total as i64);
            let (s, _, _) = self.open_for_step(&s0, &total, Some(&threads), &[], &[]);
            let lanes = self.b.i64(l.lanes as i64);
            let (r, c) = self.b.divrem(&s, &lanes);
            let vec = self.b.i64(l.vec as i64);
            let j0 = self.b.op(&format!("arith.muli {c}, {vec} : i64"));
            if l.vec > 1 {
                self.multiples.insert(j0.clone(), l.vec);
            }
            let me = extent(&mut self.b, l.m);
            let r0 = self.b.op(&format!("arith.muli {r}, {me} : i64"));
            let mut slot0 = self.b.op(&format!("arith.addi {r0}, {j0} : i64"));
            if let Some(g) = &self.group {
                // The warp's own copy of the bins.
                let warp = g.warp.clone();
                let rm = self.b.i64((l.rows * l.m) as i64);
                let c0 = self.b.op(&format!("arith.muli {warp}, {rm} : i64"));
                slot0 = self.b.op(&format!("arith.addi {slot0}, {c0} : i64"));
            }
            let bins = self.shared_at(l.smem);
            let slots: Vec<String> = (0..l.vec)
                .map(|q| {
                    let off = self.b.i64(q as i64);
                    self.b.op(&format!("arith.addi {slot0}, {off} : i64"))
                })
                .collect();
            // The slot's first element is a multiple of `vec` (so are rows and `j0`).
            let align = l.vec * l.dt.itemsize();
            let mut acc: Vec<Val> = slots
                .iter()
                .enumerate()
                .map(|(q, sq)| match q {
                    0 if l.vec > 1 => load_aligned(&mut self.b, &bins, sq, l.dt, align),
                    _ => load(&mut self.b, &bins, sq, l.dt),
                })
                .collect();
            let jqs: Vec<String> = (0..l.vec)
                .map(|q| match q {
                    0 => j0.clone(),
                    _ => {
                        let off = self.b.i64(q as i64);
                        self.b.op(&format!("arith.addi {j0}, {off} : i64"))
                    }
                })
                .collect();
            let masks = self.group_at(8 * ntile * slot[k]);
            let wc = self.b.i64(words as i64);
            let rw = self.b.op(&format!("arith.muli {r}, {wc} : i64"));
            for w in 0..words {
                let off = self.b.i64(w as i64);
                let at = self.b.op(&format!("arith.addi {rw}, {off} : i64"));
                let mask = load(&mut self.b, &masks, &at, DType::UInt32).ssa;
                let count = self.b.op(&format!("\"llvm.intr.ctpop\"({mask}) : (i32) -> i32"));
                let count = self.b.op(&format!("arith.extui {count} : i32 to i64"));
                let zero = self.b.i64(0);
                let mut init = vec![mask];
                init.extend(acc.iter().map(|v| v.ssa.clone()));
                let mut tys = vec!["i32"];
                tys.extend(acc.iter().map(|v| v.ty()));
                let (_, args, results) = self.open_for(&zero, &count, &init, &tys);
                // The lowest set bit: the next position of the row, in position order.
                let m = &args[0];
                let bit = self.b.op(&format!(
                    "\"llvm.intr.cttz\"({m}) <{{is_zero_poison = true}}> : (i32) -> i32"
                ));
                let one = self.b.constant("1", "i32");
                let below = self.b.op(&format!("arith.subi {m}, {one} : i32"));
                let rest = self.b.op(&format!("arith.andi {m}, {below} : i32"));
                let bit = self.b.op(&format!("arith.extui {bit} : i32 to i64"));
                let first = self.b.i64((32 * w) as i64);
                let p = self.b.op(&format!("arith.addi {first}, {bit} : i64"));
                let item = self.b.op(&format!("arith.addi {t0}, {p} : i64"));
                self.tile.as_mut().expect("set by scatter_gpu").items = vec![item.clone()];
                let mut next = vec![rest];
                for (q, jq) in jqs.iter().enumerate() {
                    let mut dims = vec![item.clone()];
                    dims.extend(unravel(&mut self.b, jq, &node.shape[1..]));
                    let v = self.emit(node.inputs[2], &Ix { dims: Some(dims), flat: None })?;
                    let old = Val::new(args[1 + q].clone(), l.dt);
                    next.push(self.combine(l.combine, l.dt, old, v)?.ssa);
                }
                self.yield_(&next, &tys);
                self.close();
                acc = results[1..].iter().map(|x| Val::new(x.clone(), l.dt)).collect();
            }
            for (q, (sq, v)) in slots.iter().zip(&acc).enumerate() {
                match q {
                    0 if l.vec > 1 => store_aligned(&mut self.b, &bins, sq, v, align),
                    _ => store(&mut self.b, &bins, sq, v),
                }
            }
            self.close();
        }
        Ok(())
    }
}
