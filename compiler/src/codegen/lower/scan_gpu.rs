//! GPU scans by tiles, one pass over the data: each tile scans its elements and publishes its
//! total; its prefix (the combine of the tiles before it along the axis) comes from other
//! tiles' published values through a Fenwick tree, so that every run gives the same bits (a
//! sum of floats is associated differently from NumPy's running value, within rounding;
//! integers, maxima and minima are exact).
//!
//! Tile `t` of a line publishes `T(t)`, the combine of tiles `t+1-2^z ..= t` where `z` is the
//! number of trailing ones of `t`: its own total combined, for `m < z` in increasing order,
//! after `T(t - 2^m)`. Its prefix is the combine, from the left, of `T(e)` for the blocks of
//! `t`'s binary form (`e` the last tile of each). No tile waits on a prefix, so a tile waits on
//! at most `2·log2(tiles)` published values, and the order of every combine is fixed. Block `b`
//! is tile `b`: a tile waits only on tiles of lower blocks, which the GPU starts no later (the
//! assumption CUB's single-pass scan makes too).
//!
//! - Scans along the last axis ([`Lower::scan_gpu`]): a tile is up to 2048 consecutive
//!   elements of a row, scanned by warp shuffles.
//! - Scans along another axis ([`Lower::scan_gpu_columns`]): a tile is a chunk of the axis
//!   times 256 neighbouring positions after it; a thread scans its position's chunk.

use kiln_ir::shape::numel;
use kiln_ir::{DType, Graph, Node, OpKind};

use super::scan::{rows, scans};
use super::{Ix, Lower, Shfl, Stop, DEVICE_FENCE, WARP};
use crate::codegen::cast::cast;
use crate::codegen::index::{extent, ravel, unravel};
use crate::codegen::types::{literal, store, work_ty, Val};

/// Threads of a GPU scan block.
const SCAN_THREADS: usize = 256;
const SCAN_WARPS: usize = SCAN_THREADS / WARP;
/// Rows at least this long are scanned by tiles on the GPU, and rows of any length when there
/// are fewer than [`TILED_FEW_ROWS`] (a thread per row would leave the GPU idle).
const TILED_MIN_ROW: usize = 512;
const TILED_FEW_ROWS: usize = 4096;

/// How a GPU scan kernel by tiles is launched: block `b` of `blocks` (of `threads` threads) is
/// tile `b`, after the region's buffers a scratch buffer of `scratch_bytes` (each tile's
/// published values, 8 bytes per output) and a zeroed buffer of `counter_words` u32s (each
/// tile's flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuScan {
    pub blocks: usize,
    pub threads: usize,
    pub scratch_bytes: usize,
    pub counter_words: usize,
}

/// A GPU scan's tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tiles {
    /// Along the last axis: `groups` runs of 32 elements per warp (a tile holds
    /// `SCAN_THREADS · groups` consecutive elements of a row), `per_row` tiles per row.
    Rows { groups: usize, per_row: usize },
    /// Along another axis: chunks of [`CHUNK`] along it (`chunks` per line), times `cols`
    /// neighbouring positions after it (`col_groups` groups of them per line of the axes before).
    Columns { chunks: usize, cols: usize, col_groups: usize },
}

/// Elements of its position's line a thread of a column scan takes (a chunk of the axis).
const CHUNK: usize = 16;
/// Lines at least this long are scanned by column tiles on the GPU, and lines of any length
/// when there are fewer than [`TILED_FEW_ROWS`].
const COLUMNS_MIN_LINE: usize = 64;

/// The tiles of a GPU scan over `axis` of `shape`, or `None` where a thread per line is the
/// kernel: a scan is complex, or the lines are short and many.
pub(crate) fn gpu_tiles(body: &Graph, shape: &[usize], axis: usize) -> Option<Tiles> {
    let n = shape[axis];
    let inner = numel(&shape[axis + 1..]);
    let lines = rows(shape, axis);
    let complex = body.outputs().iter().any(|&o| body.node(o).dtype.is_complex());
    if complex || n == 0 || inner == 0 {
        return None;
    }
    if inner == 1 {
        if n < TILED_MIN_ROW && lines >= TILED_FEW_ROWS {
            return None;
        }
        let groups = [1, 2, 4, 8].into_iter().find(|g| SCAN_THREADS * g >= n).unwrap_or(8);
        return Some(Tiles::Rows { groups, per_row: n.div_ceil(SCAN_THREADS * groups) });
    }
    if n < COLUMNS_MIN_LINE && lines >= TILED_FEW_ROWS {
        return None;
    }
    let cols = inner.next_multiple_of(WARP).min(SCAN_THREADS);
    Some(Tiles::Columns { chunks: n.div_ceil(CHUNK), cols, col_groups: inner.div_ceil(cols) })
}

impl Lower<'_> {
    /// The GPU scan kernel by tiles (see [`GpuScan`] and the module docs). Along the last axis:
    /// lane `l` of warp `w` holds elements `w·32·G + 32·j + l` of the tile for `j < G`; each run
    /// of 32 is scanned across the warp by shuffles and carries the run before it, the warps'
    /// totals go through shared memory; warp 0 gathers the tile's published value, warp 1 its
    /// prefix, a lane per bit of the tile's index, each waiting on the flag of the tile it reads.
    pub(super) fn scan_gpu(&mut self, shape: &[usize], axis: usize, tiles: Tiles) -> Result<(), Stop> {
        let (groups, per_row) = match tiles {
            Tiles::Rows { groups, per_row } => (groups, per_row),
            Tiles::Columns { chunks, cols, col_groups } => return self.scan_gpu_columns(shape, axis, chunks, cols, col_groups),
        };
        let scans = scans(self.body, shape, axis)?;
        let nout = scans.len();
        let n = shape[axis];
        let blocks = rows(shape, axis) * per_row;
        // Bit length of the tile index within a row: the levels of the tree.
        let levels = (usize::BITS - per_row.leading_zeros()) as usize;
        let row_shape: Vec<usize> = shape.iter().enumerate().filter(|&(a, _)| a != axis).map(|(_, &e)| e).collect();
        // Shared memory (8-byte slots): each output's prefix, then each output's warp totals.
        let (prefix_slot, warp_slot) = (0, nout);
        let smem = 8 * (nout + nout * SCAN_WARPS);
        self.scan_launch = Some((
            GpuScan { blocks, threads: SCAN_THREADS, scratch_bytes: (8 * nout * blocks).max(16), counter_words: blocks },
            smem,
        ));
        let (dts, ids) = self.dtypes_and_identities(&scans)?;
        let zero = self.b.i64(0);
        let one32 = self.b.constant("1", "i32");
        let slots = self.shared_at(0);
        let tile = "%block".to_string();
        let per_row_c = self.b.i64(per_row as i64);
        let (row, t) = self.b.divrem(&tile, &per_row_c);
        let row_ix = match row_shape.len() {
            0 => Vec::new(),
            1 => vec![row.clone()],
            _ => unravel(&mut self.b, &row, &row_shape),
        };
        let at = |k: &str| -> Vec<String> {
            let mut dims = row_ix.clone();
            dims.insert(axis, k.to_string());
            dims
        };
        let c5 = self.b.i64(5);
        let warp = self.b.op(&format!("arith.shrui %tid, {c5} : i64"));
        let m31 = self.b.i64(31);
        let lane = self.b.op(&format!("arith.andi %tid, {m31} : i64"));
        let tile_len = self.b.i64((SCAN_THREADS * groups) as i64);
        let t0 = self.b.op(&format!("arith.muli {t}, {tile_len} : i64"));
        let wlen = self.b.i64((WARP * groups) as i64);
        let w0 = self.b.op(&format!("arith.muli {warp}, {wlen} : i64"));
        let base = self.b.op(&format!("arith.addi {t0}, {w0} : i64"));
        let base = self.b.op(&format!("arith.addi {base}, {lane} : i64"));
        let ne = extent(&mut self.b, n);
        let one = self.b.i64(1);
        let last = self.b.op(&format!("arith.subi {ne}, {one} : i64"));
        // Each run of 32: the elements (past the row's end: the identity), scanned across the
        // warp, after the runs before it.
        let mut incl: Vec<Vec<Val>> = vec![Vec::with_capacity(groups); nout];
        let mut carry: Vec<Option<Val>> = vec![None; nout];
        let mut positions = Vec::with_capacity(groups);
        for j in 0..groups {
            let off = self.b.i64((WARP * j) as i64);
            let pos = self.b.op(&format!("arith.addi {base}, {off} : i64"));
            let valid = self.b.op(&format!("arith.cmpi ult, {pos}, {ne} : i64"));
            let posc = self.b.op(&format!("arith.minui {pos}, {last} : i64"));
            let dims = at(&posc);
            for (k, (node, _)) in scans.iter().enumerate() {
                let v = self.emit(node.inputs[0], &Ix { dims: Some(dims.clone()), flat: None })?;
                let v = cast(&mut self.b, &v, node.dtype)?;
                let v = self.select(&valid, &v, &ids[k]);
                let mut x = v;
                let mut s = 1;
                while s < WARP {
                    let y = Val::new(self.shfl(Shfl::Up, &x.ssa, x.ty(), s), dts[k]);
                    let c = self.combine(scans[k].1, dts[k], y, x.clone())?;
                    let sv = self.b.i64(s as i64);
                    let ge = self.b.op(&format!("arith.cmpi uge, {lane}, {sv} : i64"));
                    x = self.select(&ge, &c, &x);
                    s *= 2;
                }
                if let Some(c) = carry[k].take() {
                    x = self.combine(scans[k].1, dts[k], c, x)?;
                }
                carry[k] = Some(Val::new(self.shfl(Shfl::Idx, &x.ssa, x.ty(), WARP - 1), dts[k]));
                incl[k].push(x);
            }
            positions.push((valid, dims));
        }
        // The warps' totals, through shared memory.
        let lead = self.b.op(&format!("arith.cmpi eq, {lane}, {zero} : i64"));
        self.open_if(&lead);
        for (k, c) in carry.iter().enumerate() {
            let c = c.clone().expect("a run per tile");
            let off = self.b.i64((warp_slot + k * SCAN_WARPS) as i64);
            let i = self.b.op(&format!("arith.addi {off}, {warp} : i64"));
            let bits = self.bits_of(&c);
            let sp = self.slot(&slots, &i);
            self.b.stmt(&format!("llvm.store {bits}, {sp} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
        }
        self.close();
        self.b.stmt("nvvm.barrier0");
        // Each thread: its warp's prefix in the tile, and the tile's total.
        let mut wprefix = Vec::with_capacity(nout);
        let mut total = Vec::with_capacity(nout);
        for k in 0..nout {
            let (mut p, mut a) = (ids[k].clone(), ids[k].clone());
            for w in 0..SCAN_WARPS {
                let i = self.b.i64((warp_slot + k * SCAN_WARPS + w) as i64);
                let sp = self.slot(&slots, &i);
                let bits = self.b.fresh();
                self.b.stmt(&format!("{bits} = llvm.load volatile {sp} {{alignment = 8 : i64}} : !llvm.ptr -> i64"));
                let v = self.value_of_bits(&bits, dts[k]);
                let wi = self.b.i64(w as i64);
                let before = self.b.op(&format!("arith.cmpi ult, {wi}, {warp} : i64"));
                let pc = self.combine(scans[k].1, dts[k], p.clone(), v.clone())?;
                p = self.select(&before, &pc, &p);
                a = self.combine(scans[k].1, dts[k], a, v)?;
            }
            wprefix.push(p);
            total.push(a);
        }
        // The tile's prefix in the row (tiles after the first of a row).
        let mut prefix = ids.clone();
        if per_row > 1 {
            let row0 = self.b.op(&format!("arith.subi {tile}, {t} : i64"));
            // Warp 0: T(t), published.
            let w_is = |me: &mut Self, w: usize| -> String {
                let wi = me.b.i64(w as i64);
                me.b.op(&format!("arith.cmpi eq, {warp}, {wi} : i64"))
            };
            let in0 = w_is(self, 0);
            self.open_if(&in0);
            let t1 = self.b.op(&format!("arith.addi {t}, {one} : i64"));
            // Lane m reads T(t - 2^m) when 2^(m+1) divides t + 1.
            let two = self.b.i64(2);
            let below = self.b.op(&format!("arith.shli {two}, {lane} : i64"));
            let below = self.b.op(&format!("arith.subi {below}, {one} : i64"));
            let low = self.b.op(&format!("arith.andi {t1}, {below} : i64"));
            let needs = self.b.op(&format!("arith.cmpi eq, {low}, {zero} : i64"));
            let lev = self.b.i64(levels as i64);
            let in_tree = self.b.op(&format!("arith.cmpi ult, {lane}, {lev} : i64"));
            let needs = self.b.op(&format!("arith.andi {needs}, {in_tree} : i1"));
            let pow = self.b.op(&format!("arith.shli {one}, {lane} : i64"));
            let src = self.b.op(&format!("arith.subi {tile}, {pow} : i64"));
            let got = self.gather_published(&needs, &src, nout);
            let mut acc = total.clone();
            for m in 0..levels {
                let mask = self.b.i64(((2u64 << m) - 1) as i64);
                let lowm = self.b.op(&format!("arith.andi {t1}, {mask} : i64"));
                let take = self.b.op(&format!("arith.cmpi eq, {lowm}, {zero} : i64"));
                for k in 0..nout {
                    let o = self.shfl(Shfl::Idx, &got[k], "i64", m);
                    let o = self.value_of_bits(&o, dts[k]);
                    let c = self.combine(scans[k].1, dts[k], o, acc[k].clone())?;
                    acc[k] = self.select(&take, &c, &acc[k]);
                }
            }
            self.open_if(&lead);
            self.store_published(&tile, &acc);
            self.b.stmt(DEVICE_FENCE);
            let f = self.flag_at(&tile);
            self.b.stmt(&format!("llvm.store volatile {one32}, {f} : i32, !llvm.ptr"));
            self.close();
            self.close();
            // Warp 1: the prefix, to shared memory.
            let in1 = w_is(self, 1);
            self.open_if(&in1);
            // Lane i reads T(e) for bit i of t: e = (t with bits 0..=i cleared) + 2^i - 1.
            let bit = self.b.op(&format!("arith.shrui {t}, {lane} : i64"));
            let bit = self.b.op(&format!("arith.andi {bit}, {one} : i64"));
            let has = self.b.op(&format!("arith.cmpi ne, {bit}, {zero} : i64"));
            let lev = self.b.i64(levels as i64);
            let in_tree = self.b.op(&format!("arith.cmpi ult, {lane}, {lev} : i64"));
            let has = self.b.op(&format!("arith.andi {has}, {in_tree} : i1"));
            let two = self.b.i64(2);
            let upto = self.b.op(&format!("arith.shli {two}, {lane} : i64"));
            let upto = self.b.op(&format!("arith.subi {upto}, {one} : i64"));
            let ones = self.b.i64(-1);
            let keep = self.b.op(&format!("arith.xori {upto}, {ones} : i64"));
            let start = self.b.op(&format!("arith.andi {t}, {keep} : i64"));
            let pow = self.b.op(&format!("arith.shli {one}, {lane} : i64"));
            let e = self.b.op(&format!("arith.addi {start}, {pow} : i64"));
            let e = self.b.op(&format!("arith.subi {e}, {one} : i64"));
            let src = self.b.op(&format!("arith.addi {row0}, {e} : i64"));
            let got = self.gather_published(&has, &src, nout);
            let mut acc = ids.clone();
            for i in (0..levels).rev() {
                let bi = self.b.i64(i as i64);
                let b = self.b.op(&format!("arith.shrui {t}, {bi} : i64"));
                let b = self.b.op(&format!("arith.andi {b}, {one} : i64"));
                let take = self.b.op(&format!("arith.cmpi ne, {b}, {zero} : i64"));
                for k in 0..nout {
                    let o = self.shfl(Shfl::Idx, &got[k], "i64", i);
                    let o = self.value_of_bits(&o, dts[k]);
                    let c = self.combine(scans[k].1, dts[k], acc[k].clone(), o)?;
                    acc[k] = self.select(&take, &c, &acc[k]);
                }
            }
            self.open_if(&lead);
            for (k, a) in acc.iter().enumerate() {
                let i = self.b.i64((prefix_slot + k) as i64);
                let bits = self.bits_of(a);
                let sp = self.slot(&slots, &i);
            self.b.stmt(&format!("llvm.store {bits}, {sp} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
            }
            self.close();
            self.close();
            self.b.stmt("nvvm.barrier0");
            for (k, p) in prefix.iter_mut().enumerate() {
                let i = self.b.i64((prefix_slot + k) as i64);
                let sp = self.slot(&slots, &i);
                let bits = self.b.fresh();
                self.b.stmt(&format!("{bits} = llvm.load volatile {sp} {{alignment = 8 : i64}} : !llvm.ptr -> i64"));
                *p = self.value_of_bits(&bits, dts[k]);
            }
        }
        // Each element: the tile's prefix, the warp's prefix in the tile, its value in the warp.
        for k in 0..nout {
            let head = self.combine(scans[k].1, dts[k], prefix[k].clone(), wprefix[k].clone())?;
            for (j, (valid, dims)) in positions.iter().enumerate() {
                let v = self.combine(scans[k].1, dts[k], head.clone(), incl[k][j].clone())?;
                self.open_if(valid);
                let at = ravel(&mut self.b, dims, shape);
                store(&mut self.b, &Self::out_ptr(k), &at, &v);
                self.close();
            }
        }
        Ok(())
    }

    /// `c ? a : b` of two values of one real dtype.
    fn select(&mut self, c: &str, a: &Val, b: &Val) -> Val {
        Val::new(self.b.op(&format!("arith.select {c}, {}, {} : {}", a.ssa, b.ssa, a.ty())), a.dt)
    }

    /// A pointer to 8-byte slot `i` of the block's shared memory at `base`. Slots are loaded and
    /// stored with their alignment written out: without it the fast tier's unoptimised NVPTX
    /// code generation split an i64 access in two `st.b32`s of a 64-bit float register, which
    /// lost the low word of a float64 on an H200.
    fn slot(&mut self, base: &str, i: &str) -> String {
        self.b.op(&format!("llvm.getelementptr inbounds {base}[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"))
    }

    /// A pointer to 8-byte slot `i` of the scratch buffer.
    fn scratch_slot(&mut self, i: &str) -> String {
        self.b.op(&format!("llvm.getelementptr inbounds %scratch[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"))
    }

    /// A pointer to tile `tile`'s flag (u32 `tile` of the counter buffer).
    fn flag_at(&mut self, tile: &str) -> String {
        self.b.op(&format!("llvm.getelementptr inbounds %counter[{tile}] : (!llvm.ptr, i64) -> !llvm.ptr, i32"))
    }

    /// Where `cond` holds, the `nout` values tile `src` published (as i64 bits), once its flag
    /// is set: spun on, then fenced, then loaded volatile (never from a stale L1 line).
    /// Elsewhere zeros.
    fn gather_published(&mut self, cond: &str, src: &str, nout: usize) -> Vec<String> {
        let tys = vec!["i64"; nout];
        let results = self.open(nout, &format!("scf.if {cond} -> ({})", tys.join(", ")));
        self.wait_flag(src);
        let nk = self.b.i64(nout as i64);
        let i0 = self.b.op(&format!("arith.muli {src}, {nk} : i64"));
        let mut vals = Vec::with_capacity(nout);
        for k in 0..nout {
            let kk = self.b.i64(k as i64);
            let i = self.b.op(&format!("arith.addi {i0}, {kk} : i64"));
            let p = self.scratch_slot(&i);
            let v = self.b.fresh();
            self.b.stmt(&format!("{v} = llvm.load volatile {p} {{alignment = 8 : i64}} : !llvm.ptr -> i64"));
            vals.push(v);
        }
        self.b.stmt(&format!("scf.yield {} : {}", vals.join(", "), tys.join(", ")));
        self.b.next_region("else");
        self.memo.pop();
        self.memo.push(Default::default());
        let z = self.b.i64(0);
        self.b.stmt(&format!("scf.yield {} : {}", vec![z; nout].join(", "), tys.join(", ")));
        self.close();
        results
    }

    /// Spins until tile `tile`'s flag is set, then fences: what the tile published before
    /// setting it is visible after.
    fn wait_flag(&mut self, tile: &str) {
        let f = self.flag_at(tile);
        let z32 = self.b.constant("0", "i32");
        let (w, x) = (self.b.fresh(), self.b.fresh());
        self.open(1, &format!("scf.while ({w} = {z32}) : (i32) -> i32"));
        let fl = self.b.fresh();
        self.b.stmt(&format!("{fl} = llvm.load volatile {f} : !llvm.ptr -> i32"));
        let unset = self.b.op(&format!("arith.cmpi eq, {fl}, {z32} : i32"));
        self.b.stmt(&format!("scf.condition({unset}) {fl} : i32"));
        self.memo.pop();
        self.memo.push(Default::default());
        self.b.next_region("do");
        self.b.stmt(&format!("^bb0({x}: i32):"));
        self.b.stmt(&format!("scf.yield {x} : i32"));
        self.close();
        self.b.stmt(DEVICE_FENCE);
    }

    /// The scan of a column tile (see [`Tiles::Columns`]): the tile `(c, og)` (block
    /// `c · OG + og`: chunks of the axis in order, so that the tiles it waits on started long
    /// before) covers elements `c·CHUNK ..` of the axis at positions `g·cols + tid` after
    /// it, of line `o` of the axes before. A thread scans its chunk in registers, then combines
    /// its position's values that other tiles published (the tree of the module docs, per
    /// position), publishes its own (every thread fenced, a barrier, then thread 0 sets the
    /// tile's flag), and stores its chunk after its prefix.
    pub(super) fn scan_gpu_columns(&mut self, shape: &[usize], axis: usize, chunks: usize, cols: usize, col_groups: usize) -> Result<(), Stop> {
        let scans = scans(self.body, shape, axis)?;
        let nout = scans.len();
        let n = shape[axis];
        let outer_shape = &shape[..axis];
        let inner_shape = &shape[axis + 1..];
        let (outer, inner) = (numel(outer_shape), numel(inner_shape));
        let og_count = outer * col_groups;
        let blocks = chunks * og_count;
        let levels = (usize::BITS - chunks.leading_zeros()) as usize;
        self.scan_launch = Some((
            GpuScan { blocks, threads: cols, scratch_bytes: (8 * nout * blocks * cols).max(16), counter_words: blocks },
            0,
        ));
        let (dts, ids) = self.dtypes_and_identities(&scans)?;
        let zero = self.b.i64(0);
        let one = self.b.i64(1);
        let tile = "%block".to_string();
        let ogc = self.b.i64(og_count as i64);
        let (c, og) = self.b.divrem(&tile, &ogc);
        let gc = self.b.i64(col_groups as i64);
        let (o, g) = self.b.divrem(&og, &gc);
        let colsc = self.b.i64(cols as i64);
        let col = self.b.op(&format!("arith.muli {g}, {colsc} : i64"));
        let col = self.b.op(&format!("arith.addi {col}, %tid : i64"));
        let inner_c = extent(&mut self.b, inner);
        let col_ok = self.b.op(&format!("arith.cmpi ult, {col}, {inner_c} : i64"));
        let inner_last = self.b.op(&format!("arith.subi {inner_c}, {one} : i64"));
        let colc = self.b.op(&format!("arith.minui {col}, {inner_last} : i64"));
        let mut dims0 = match outer_shape.len() {
            0 => Vec::new(),
            1 => vec![o.clone()],
            _ => unravel(&mut self.b, &o, outer_shape),
        };
        let after = match inner_shape.len() {
            1 => vec![colc.clone()],
            _ => unravel(&mut self.b, &colc, inner_shape),
        };
        let chunk = self.b.i64(CHUNK as i64);
        let a0 = self.b.op(&format!("arith.muli {c}, {chunk} : i64"));
        let ne = extent(&mut self.b, n);
        let last = self.b.op(&format!("arith.subi {ne}, {one} : i64"));
        // The chunk, scanned in registers (past the axis's end or the line's: the identity).
        let mut incl: Vec<Vec<Val>> = vec![Vec::with_capacity(CHUNK); nout];
        let mut at_j = Vec::with_capacity(CHUNK);
        for j in 0..CHUNK {
            let jj = self.b.i64(j as i64);
            let a = self.b.op(&format!("arith.addi {a0}, {jj} : i64"));
            let in_axis = self.b.op(&format!("arith.cmpi ult, {a}, {ne} : i64"));
            let valid = self.b.op(&format!("arith.andi {in_axis}, {col_ok} : i1"));
            let ac = self.b.op(&format!("arith.minui {a}, {last} : i64"));
            let mut dims = dims0.clone();
            dims.push(ac);
            dims.extend(after.iter().cloned());
            for (k, (node, combine)) in scans.iter().enumerate() {
                let v = self.emit(node.inputs[0], &Ix { dims: Some(dims.clone()), flat: None })?;
                let v = cast(&mut self.b, &v, node.dtype)?;
                let v = self.select(&valid, &v, &ids[k]);
                let x = match incl[k].last() {
                    Some(prev) => self.combine(*combine, dts[k], prev.clone(), v)?,
                    None => v,
                };
                incl[k].push(x);
            }
            at_j.push((valid, dims));
        }
        dims0.clear();
        let mut prefix = ids.clone();
        if chunks > 1 {
            // T(c): the chunk's total after T(c - 2^m) while 2^(m+1) divides c + 1.
            let mut acc: Vec<Val> = incl.iter().map(|v| v.last().expect("a chunk").clone()).collect();
            let c1 = self.b.op(&format!("arith.addi {c}, {one} : i64"));
            for m in 0..levels {
                let mask = self.b.i64(((2u64 << m) - 1) as i64);
                let low = self.b.op(&format!("arith.andi {c1}, {mask} : i64"));
                let take = self.b.op(&format!("arith.cmpi eq, {low}, {zero} : i64"));
                let pm = self.b.i64(1 << m);
                let sc = self.b.op(&format!("arith.subi {c}, {pm} : i64"));
                let s0 = self.b.op(&format!("arith.muli {sc}, {ogc} : i64"));
                let src = self.b.op(&format!("arith.addi {s0}, {og} : i64"));
                acc = self.combine_published_if(&take, &src, &colsc, &acc, &scans, true)?;
            }
            let cl = self.b.op(&format!("arith.muli {tile}, {colsc} : i64"));
            let cl = self.b.op(&format!("arith.addi {cl}, %tid : i64"));
            self.store_published(&cl, &acc);
            self.b.stmt(DEVICE_FENCE);
            self.b.stmt("nvvm.barrier0");
            let first = self.b.op(&format!("arith.cmpi eq, %tid, {zero} : i64"));
            self.open_if(&first);
            let f = self.flag_at(&tile);
            let one32 = self.b.constant("1", "i32");
            self.b.stmt(&format!("llvm.store volatile {one32}, {f} : i32, !llvm.ptr"));
            self.close();
            // The prefix: T(e) for the blocks of c's binary form, from the left.
            for i in (0..levels).rev() {
                let bi = self.b.i64(i as i64);
                let bit = self.b.op(&format!("arith.shrui {c}, {bi} : i64"));
                let bit = self.b.op(&format!("arith.andi {bit}, {one} : i64"));
                let take = self.b.op(&format!("arith.cmpi ne, {bit}, {zero} : i64"));
                let keep = self.b.i64(!((2u64 << i) - 1) as i64);
                let start = self.b.op(&format!("arith.andi {c}, {keep} : i64"));
                let e = self.b.i64(((1u64 << i) - 1) as i64);
                let e = self.b.op(&format!("arith.addi {start}, {e} : i64"));
                let s0 = self.b.op(&format!("arith.muli {e}, {ogc} : i64"));
                let src = self.b.op(&format!("arith.addi {s0}, {og} : i64"));
                prefix = self.combine_published_if(&take, &src, &colsc, &prefix, &scans, false)?;
            }
        }
        for k in 0..nout {
            for (j, (valid, dims)) in at_j.iter().enumerate() {
                let v = self.combine(scans[k].1, dts[k], prefix[k].clone(), incl[k][j].clone())?;
                self.open_if(valid);
                let at = ravel(&mut self.b, dims, shape);
                store(&mut self.b, &Self::out_ptr(k), &at, &v);
                self.close();
            }
        }
        Ok(())
    }

    /// Each scan's dtype and the identity of its combine.
    fn dtypes_and_identities(&mut self, scans: &[(&Node, OpKind)]) -> Result<(Vec<DType>, Vec<Val>), Stop> {
        let dts = scans.iter().map(|(node, _)| node.dtype).collect();
        let ids = scans
            .iter()
            .map(|&(node, c)| literal(&mut self.b, super::scatter::identity(c, node.dtype), node.dtype))
            .collect::<Result<_, _>>()?;
        Ok((dts, ids))
    }

    /// The values `vals` (one per output) to the scratch buffer's slots `at · outputs + k`.
    fn store_published(&mut self, at: &str, vals: &[Val]) {
        let nk = self.b.i64(vals.len() as i64);
        let i0 = self.b.op(&format!("arith.muli {at}, {nk} : i64"));
        for (k, a) in vals.iter().enumerate() {
            let kk = self.b.i64(k as i64);
            let i = self.b.op(&format!("arith.addi {i0}, {kk} : i64"));
            let bits = self.bits_of(a);
            let p = self.scratch_slot(&i);
            self.b.stmt(&format!("llvm.store {bits}, {p} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
        }
    }

    /// Where `take` holds, `acc` combined with the values column tile `src` published at this
    /// thread's position (tiles of `cols` threads; before `acc` when `published_first`), once
    /// its flag is set; else `acc`.
    fn combine_published_if(
        &mut self,
        take: &str,
        src: &str,
        cols: &str,
        acc: &[Val],
        scans: &[(&Node, OpKind)],
        published_first: bool,
    ) -> Result<Vec<Val>, Stop> {
        let nout = acc.len();
        let tys: Vec<&str> = acc.iter().map(|v| v.ty()).collect();
        let res = self.open(nout, &format!("scf.if {take} -> ({})", tys.join(", ")));
        self.wait_flag(src);
        let cl = self.b.op(&format!("arith.muli {src}, {cols} : i64"));
        let cl = self.b.op(&format!("arith.addi {cl}, %tid : i64"));
        let nk = self.b.i64(nout as i64);
        let i0 = self.b.op(&format!("arith.muli {cl}, {nk} : i64"));
        let mut next = Vec::with_capacity(nout);
        for (k, a) in acc.iter().enumerate() {
            let kk = self.b.i64(k as i64);
            let i = self.b.op(&format!("arith.addi {i0}, {kk} : i64"));
            let p = self.scratch_slot(&i);
            let bits = self.b.fresh();
            self.b.stmt(&format!("{bits} = llvm.load volatile {p} {{alignment = 8 : i64}} : !llvm.ptr -> i64"));
            let v = self.value_of_bits(&bits, a.dt);
            let (x, y) = if published_first { (v, a.clone()) } else { (a.clone(), v) };
            next.push(self.combine(scans[k].1, a.dt, x, y)?.ssa);
        }
        self.b.stmt(&format!("scf.yield {} : {}", next.join(", "), tys.join(", ")));
        self.b.next_region("else");
        self.memo.pop();
        self.memo.push(Default::default());
        let same: Vec<String> = acc.iter().map(|v| v.ssa.clone()).collect();
        self.b.stmt(&format!("scf.yield {} : {}", same.join(", "), tys.join(", ")));
        self.close();
        Ok(res.into_iter().zip(acc).map(|(r, a)| Val::new(r, a.dt)).collect())
    }

    /// A real value's register as the low bits of an i64.
    fn bits_of(&mut self, v: &Val) -> String {
        match v.ty() {
            "f32" => {
                let i = self.b.op(&format!("arith.bitcast {} : f32 to i32", v.ssa));
                self.b.op(&format!("arith.extui {i} : i32 to i64"))
            }
            "f64" => self.b.op(&format!("arith.bitcast {} : f64 to i64", v.ssa)),
            "i64" => v.ssa.clone(),
            t => self.b.op(&format!("arith.extui {} : {t} to i64", v.ssa)),
        }
    }

    /// The value of `dt` whose register [`Lower::bits_of`] gave `x`.
    fn value_of_bits(&mut self, x: &str, dt: DType) -> Val {
        let ty = work_ty(dt).expect("a real dtype");
        let ssa = match ty {
            "f32" => {
                let i = self.b.op(&format!("arith.trunci {x} : i64 to i32"));
                self.b.op(&format!("arith.bitcast {i} : i32 to f32"))
            }
            "f64" => self.b.op(&format!("arith.bitcast {x} : i64 to f64")),
            "i64" => x.to_string(),
            t => self.b.op(&format!("arith.trunci {x} : i64 to {t}")),
        };
        Val::new(ssa, dt)
    }
}

