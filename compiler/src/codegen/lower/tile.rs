//! A GPU scatter kernel's staged inputs (module `scatter`): the rows of a tile of positions of
//! the inputs read by position, copied to shared memory (coalesced) before the label phase
//! reads them, and the loads that read them there.

use kiln_ir::{Attrs, DType, OpKind};

use super::Lower;
use crate::codegen::index::ravel;
use crate::codegen::types::{load, load_aligned, store, store_aligned, Val};

/// Loads a thread issues before their stores when it copies a tile's rows to shared memory, by
/// default (`KILN_GPU_SCATTER_STAGE=N` for another). On an H200 (k-means 2^20×64, k = 10,
/// session 23) 8 took 0.2327 ms against 0.2376-0.2417 at 1 in one call, 0.2487 against 0.2356
/// in the next (61 registers against 56, 4 blocks a multiprocessor either way): no gain beyond
/// the noise, so one at a time.
const SCATTER_STAGE: usize = 1;

/// A region input copied to shared memory tile by tile: its rows (axis 0 is the position).
#[derive(Clone, Debug)]
pub(super) struct Staged {
    pub(super) index: usize,
    pub(super) dt: DType,
    /// Elements of a row, and the row stride in shared memory (see [`staged_stride`]: no bank
    /// conflicts between the label phase's threads reading their rows).
    pub(super) row: usize,
    pub(super) stride: usize,
    /// Byte offset in the block's shared memory.
    pub(super) offset: usize,
}

/// The state the emission of a staged input's load needs (see [`Lower::staged_load`]).
#[derive(Clone, Debug)]
pub(super) struct Tile {
    pub staged: Vec<Staged>,
    /// Inside the tile loop: the tile's first position and its length (SSA names).
    pub at: Option<(String, String)>,
    /// The positions being computed, whose rows are in the tile for sure (SSA names).
    pub items: Vec<String>,
    /// The inputs held whole in shared memory (see [`held_inputs`]), copied there before the
    /// first tile.
    pub held: Vec<Held>,
}

/// A small region input not indexed by position (k-means' centres: 10 × 64 float32), copied
/// whole into shared memory once a block and read there, so that the label phase's loads of
/// the centres are shared-memory loads rather than L1 loads of global memory.
#[derive(Clone, Debug)]
pub(super) struct Held {
    pub(super) index: usize,
    pub(super) dt: DType,
    /// Elements, and the byte offset in the block's shared memory.
    pub(super) len: usize,
    pub(super) offset: usize,
}

/// Most bytes of a GPU scatter kernel's held inputs (see [`Held`]).
const HELD_BYTES: usize = 4096;

/// Whether GPU scatter kernels hold their small inputs in shared memory, by default
/// (`KILN_GPU_SCATTER_HELD=on|off` for another).
const HOLD: bool = true;

/// The inputs of a scatter region over `n` positions that a GPU scatter block holds whole in
/// shared memory: not indexed by position (axis 0 not of `n` elements), of at least one
/// element, a dtype of 4 or 8 bytes loaded as is, in input order while their bytes fit
/// [`HELD_BYTES`]: (input, dtype, elements); none where the knob says off.
pub(super) fn held_inputs(body: &kiln_ir::Graph, n: usize) -> Vec<(usize, DType, usize)> {
    if !kiln_cache::config().gpu_scatter_held.unwrap_or(HOLD) {
        return Vec::new();
    }
    let (mut total, mut held) = (0, Vec::new());
    for node in body.nodes() {
        let (OpKind::Input, Attrs::Input { index }) = (node.op, &node.attrs) else { continue };
        let len = kiln_ir::shape::numel(&node.shape);
        let bytes = len * node.dtype.itemsize();
        if node.shape.is_empty()
            || node.shape.first() == Some(&n)
            || len == 0
            || !super::scatter::GPU_DTYPES.contains(&node.dtype)
            || total + bytes > HELD_BYTES
            || held.iter().any(|&(i, _, _)| i == *index as usize)
        {
            continue;
        }
        total += bytes.next_multiple_of(16);
        held.push((*index as usize, node.dtype, len));
    }
    held
}

/// The row stride (elements) of a staged input in shared memory: the least from `row` up, a
/// multiple of the label phase's vector loads, at which its reads, elements
/// `vec·lane .. vec·(lane + 1)` of each `vec·lanes` of its position's row by each lane of a
/// warp's `32 / lanes` positions, meet the fewest distinct words in one bank (4-byte banks; a
/// load of 8 or 16 bytes a thread served in 2 or 4 phases of 16 or 8 threads): `row + 1` for an
/// even row of 4-byte elements, one lane and `vec` 1; `row + 8` for 64, two lanes and `vec` 4.
/// The stride is a multiple of `align` elements too (rows copied by bulk copies land 16-byte
/// aligned).
pub(super) fn staged_stride(
    row: usize,
    lanes: usize,
    vec: usize,
    itemsize: usize,
    align: usize,
) -> usize {
    let bytes = (vec * itemsize).min(16);
    let per_phase = (128 / bytes).clamp(1, 32);
    let align = vec.min((16 / itemsize).max(1)).max(align);
    let most_in_a_bank = |s: usize| {
        let mut worst = 0;
        for phase in (0..32).step_by(per_phase) {
            let mut words: Vec<usize> = (phase..phase + per_phase)
                .flat_map(|t| {
                    let at = (t / lanes * s + t % lanes * vec) * itemsize;
                    at / 4..(at + bytes).div_ceil(4)
                })
                .collect();
            words.sort_unstable();
            words.dedup();
            let mut banks = [0usize; 32];
            for w in words {
                banks[w % 32] += 1;
            }
            worst = worst.max(banks.into_iter().max().unwrap_or(0));
        }
        worst
    };
    (row..row + 64)
        .filter(|s| s.is_multiple_of(align))
        .min_by_key(|&s| (most_in_a_bank(s), s))
        .unwrap_or(row)
}

impl Lower<'_> {
    /// The load of element `pos` of staged input `st` (`dims` its index): from shared memory
    /// when its row is in the current tile, else from global memory (a view may read another
    /// position's row).
    pub(super) fn staged_load(&mut self, st: &Staged, dims: &[String], pos: &str) -> Option<Val> {
        let (t0, tlen) = self.tile.as_ref()?.at.clone()?;
        let current = self.tile.as_ref()?.items.contains(&dims[0]);
        let ii = self.b.op(&format!("arith.subi {}, {t0} : i64", dims[0]));
        let inside = self.b.op(&format!("arith.cmpi ult, {ii}, {tlen} : i64"));
        let shape = self.body_input_shape(st.index);
        let in_row = if dims.len() == 1 {
            self.b.i64(0)
        } else {
            ravel(&mut self.b, &dims[1..], &shape[1..])
        };
        let stride = self.b.i64(st.stride as i64);
        let s = self.b.op(&format!("arith.muli {ii}, {stride} : i64"));
        let s = self.b.op(&format!("arith.addi {s}, {in_row} : i64"));
        let base = self.staged_base(st.offset);
        let ty = crate::codegen::types::mem_ty(st.dt);
        let sp = self.b.op(&format!(
            "llvm.getelementptr inbounds {base}[{s}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}"
        ));
        let gp = self.b.op(&format!(
            "llvm.getelementptr inbounds {}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}",
            Self::in_ptr(st.index)
        ));
        // The current position's row is in the tile: a shared-memory load (LLVM infers the
        // address space); another row may not be.
        let p = if current {
            sp
        } else {
            self.b.op(&format!("arith.select {inside}, {sp}, {gp} : !llvm.ptr"))
        };
        let zero = self.b.i64(0);
        // A row's element at a known multiple of k: the address is a multiple of k elements
        // where the stride is too (the tile starts 16-byte aligned).
        // (Only there: a view of another input may start at any element.)
        let k =
            if dims.len() == 2 && current { self.multiples.get(&dims[1]).copied() } else { None };
        let k = k.map_or(1, |k| 1 << k.trailing_zeros().min(st.stride.trailing_zeros()));
        let align = (k * st.dt.itemsize()).min(16);
        Some(if align > st.dt.itemsize() {
            load_aligned(&mut self.b, &p, &zero, st.dt, align)
        } else {
            load(&mut self.b, &p, &zero, st.dt)
        })
    }

    /// Elements `g .. g + w` of staged input `st` (global memory), side by side (LLVM makes
    /// them one load where they are 16 bytes).
    fn stage_loads(&mut self, st: &Staged, g: &str, w: usize) -> Vec<Val> {
        (0..w)
            .map(|q| {
                let off = self.b.i64(q as i64);
                let gq = self.b.op(&format!("arith.addi {g}, {off} : i64"));
                load(&mut self.b, &Self::in_ptr(st.index), &gq, st.dt)
            })
            .collect()
    }

    /// `vals`, elements `e .. e + w` of the tile's rows of staged input `st` (`row` elements
    /// each), to their places in shared memory.
    fn stage_stores(&mut self, st: &Staged, e: &str, row: &str, w: usize, vals: &[Val]) {
        let (ii, j) = self.b.divrem(e, row);
        let stride = self.b.i64(st.stride as i64);
        let s = self.b.op(&format!("arith.muli {ii}, {stride} : i64"));
        let s = self.b.op(&format!("arith.addi {s}, {j} : i64"));
        let base = self.group_at(st.offset);
        // The first of each `w` at a multiple of `w` elements where the stride is one.
        let k = 1 << w.trailing_zeros().min(st.stride.trailing_zeros());
        let align = (k * st.dt.itemsize()).min(16);
        for (q, v) in vals.iter().enumerate() {
            let off = self.b.i64(q as i64);
            let sq = self.b.op(&format!("arith.addi {s}, {off} : i64"));
            if q == 0 && align > st.dt.itemsize() {
                store_aligned(&mut self.b, &base, &sq, v, align);
            } else {
                store(&mut self.b, &base, &sq, v);
            }
        }
    }

    fn body_input_shape(&self, index: usize) -> Vec<usize> {
        self.body
            .nodes()
            .iter()
            .find(|n| matches!((n.op, &n.attrs), (OpKind::Input, Attrs::Input { index: i }) if *i as usize == index))
            .map(|n| n.shape.to_vec())
            .unwrap_or_default()
    }

    /// The rows of the tile `t0 .. t0 + tlen` (SSA names) of each staged input, copied to
    /// shared memory by the block's `nthreads` threads (a tile holds up to `ntile` positions).
    pub(super) fn stage_tile(
        &mut self,
        staged: &[Staged],
        (t0, tlen): (&str, &str),
        nthreads: usize,
        ntile: usize,
    ) {
        // The staged rows of the tile, copied coalesced, `w` elements of a row a thread at a
        // time (16 bytes where the row is a multiple of them: LLVM makes them one load).
        for st in staged {
            let mut w = (16 / st.dt.itemsize()).max(1);
            while !st.row.is_multiple_of(w) {
                w /= 2;
            }
            let batch = kiln_cache::config()
                .gpu_scatter_stage
                .unwrap_or(SCATTER_STAGE)
                .min((ntile * st.row).div_ceil(nthreads * w));
            let row = self.b.i64(st.row as i64);
            let count = self.b.op(&format!("arith.muli {tlen}, {row} : i64"));
            let first = self.b.op(&format!("arith.muli {t0}, {row} : i64"));
            let wc = self.b.i64(w as i64);
            let tid = self.group_tid();
            let from = self.b.op(&format!("arith.muli {tid}, {wc} : i64"));
            let by = self.b.i64((nthreads * w) as i64);
            if batch > 1 {
                // `batch` elements' loads first (each past the tile's end reads its last
                // element instead), then their stores (those past the end skipped).
                let last = self.b.op(&format!("arith.subi {count}, {wc} : i64"));
                let step = self.b.i64((nthreads * w * batch) as i64);
                let (e, _, _) = self.open_for_step(&from, &count, Some(&step), &[], &[]);
                let mut loaded = Vec::with_capacity(batch);
                for q in 0..batch {
                    let (eq, inside, ec) = if q == 0 {
                        (e.clone(), None, e.clone())
                    } else {
                        let off = self.b.i64((q * nthreads * w) as i64);
                        let eq = self.b.op(&format!("arith.addi {e}, {off} : i64"));
                        let inside = self.b.op(&format!("arith.cmpi slt, {eq}, {count} : i64"));
                        let ec = self.b.op(&format!("arith.minsi {eq}, {last} : i64"));
                        (eq, Some(inside), ec)
                    };
                    let g = self.b.op(&format!("arith.addi {first}, {ec} : i64"));
                    loaded.push((eq, inside, self.stage_loads(st, &g, w)));
                }
                for (eq, inside, vals) in loaded {
                    if let Some(inside) = &inside {
                        self.open_if(inside);
                    }
                    self.stage_stores(st, &eq, &row, w, &vals);
                    if inside.is_some() {
                        self.close();
                    }
                }
                self.close();
                continue;
            }
            let (e, _, _) = self.open_for_step(&from, &count, Some(&by), &[], &[]);
            let g = self.b.op(&format!("arith.addi {first}, {e} : i64"));
            let vals = self.stage_loads(st, &g, w);
            self.stage_stores(st, &e, &row, w, &vals);
            self.close();
        }
    }
}

impl Lower<'_> {
    /// The held inputs copied whole into shared memory by the block's `nthreads` threads
    /// (before the barrier that opens the first tile).
    pub(super) fn hold_inputs(&mut self, held: &[Held], nthreads: usize) {
        let threads = self.b.i64(nthreads as i64);
        for h in held {
            let len = self.b.i64(h.len as i64);
            let (s, _, _) = self.open_for_step("%tid", &len, Some(&threads), &[], &[]);
            let v =
                crate::codegen::types::load_input(&mut self.b, &Self::in_ptr(h.index), &s, h.dt);
            let base = self.shared_at(h.offset);
            store(&mut self.b, &base, &s, &v);
            self.close();
        }
    }

    /// Whether input `index` is held in shared memory (see [`Held`]).
    pub(super) fn is_held(&self, index: usize) -> bool {
        self.tile.as_ref().is_some_and(|t| t.held.iter().any(|h| h.index == index))
    }

    /// Element `pos` of held input `index` (`dims` its index where known), from shared memory,
    /// if it is held.
    pub(super) fn held_load(
        &mut self,
        index: usize,
        dims: Option<&[String]>,
        pos: &str,
    ) -> Option<Val> {
        let h = self.tile.as_ref()?.held.iter().find(|h| h.index == index)?.clone();
        let base = self.shared_at(h.offset);
        // A row's element at a known multiple of k (the label phase's lanes take `unroll`
        // consecutive elements): the address is a multiple of k elements where the row is too
        // (the held input starts 16-byte aligned), so LLVM makes the k loads one.
        let k = match dims {
            Some([_, j]) => self.multiples.get(j).copied(),
            _ => None,
        };
        let row = self.body_input_shape(index).get(1).copied().unwrap_or(1);
        let k = k.map_or(1, |k| 1 << k.trailing_zeros().min(row.trailing_zeros()));
        let align = (k * h.dt.itemsize()).min(16);
        Some(if align > h.dt.itemsize() {
            load_aligned(&mut self.b, &base, pos, h.dt, align)
        } else {
            load(&mut self.b, &base, pos, h.dt)
        })
    }
}

impl Staged {
    /// The region input it holds.
    pub(super) fn index(&self) -> usize {
        self.index
    }
}
