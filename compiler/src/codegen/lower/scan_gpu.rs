//! GPU scans by tiles, one pass over the data: each tile scans its elements and publishes its
//! total; its prefix (the combine of the tiles before it along the axis) comes from other
//! tiles' published values in an order fixed by the tile's index, so that every run gives the
//! same bits (a sum of floats is associated differently from NumPy's running value, within
//! rounding; integers, maxima and minima are exact). Along the last axis (the `lookback`
//! module): by default the totals of the tiles before it in its chunk of 480 tiles after the
//! prefix published at the chunk before's end; with `KILN_GPU_SCAN_LOOKBACK=fenwick` a Fenwick
//! tree of published totals, as the column scans (below). Block `b` is tile `b`: a tile waits
//! only on tiles of lower blocks, which the GPU starts no later (the assumption CUB's
//! single-pass scan makes too).
//!
//! The Fenwick tree: tile `t` publishes `T(t)`, the combine of tiles `t+1-2^z ..= t` where `z`
//! is the number of trailing ones of `t`: its own total combined, for `m < z` in increasing
//! order, after `T(t - 2^m)`. Its prefix is the combine, from the left, of `T(e)` for the
//! blocks of `t`'s binary form (`e` the last tile of each). No tile waits on a prefix, so a
//! tile waits on at most `2·log2(tiles)` published values, and the order of every combine is
//! fixed.
//!
//! Published values are tagged words: a zeroed buffer of 64-bit words, each holding 32 bits of
//! a value in its low half and a tag, 1, in its high half (a value of up to 4 bytes takes one
//! word, an 8-byte value two: its low half, then its high half). A word is written by one
//! volatile 64-bit store and polled by volatile 64-bit loads (never from a stale L1 line) until
//! its tag is set, so a reader sees all of its half or nothing, and no fence is needed (a flag
//! set after a fence cost a device-scope fence, an L1 invalidation with it, per publish and
//! per wait).
//!
//! - One line of [`lookahead::LOOKAHEAD_MIN`] elements or more on `sm_90` (bulk copies): the
//!   look-ahead scan (the `lookahead` module): persistent blocks, all resident, each tile's
//!   prefix combined from totals only, so no tile waits on another's prefix.
//! - Scans along the last axis ([`Lower::scan_gpu`]): a tile is up to 2048 consecutive
//!   elements of a row (256 threads), or for longer rows up to 8192 (512 threads, 16 runs of
//!   32 a warp: fewer tiles, so fewer and shallower look-backs), scanned by warp shuffles.
//! - Scans along another axis ([`Lower::scan_gpu_columns`]): a tile is a chunk of the axis
//!   times 256 neighbouring positions after it; a thread scans its position's chunk.
//!
//! - Compactions (`compact`, `compact_count`; `scan.rs`'s [`compaction`]) along the last axis
//!   are row scans of the condition's count of kept elements (32-bit for lines shorter than
//!   2^31): after the look-back each element is stored at its slot, kept at `count - 1`, else
//!   the zero at `n - 1 - rejected` ([`Lower::compact_store`]), and the row's last element
//!   stores the count: one pass, the producers of the condition and the values computed again
//!   for the stores.
//!
//! Across the look-back a thread keeps only its elements' scanned values: their positions and
//! validity are computed again for the stores (registers limit how many blocks an SM holds, and
//! its other blocks hide the waits): the look-back's tile indices are 32-bit, and
//! the warp that publishes loads the warps' totals again for the tile's total rather than keep
//! them beside the values (a float32 row scan of 8192-element tiles takes 32 registers).

use kiln_ir::shape::numel;
use kiln_ir::{DType, Graph, Literal, Node, NodeId, OpKind};

use super::scan::{compaction, rows, scans, select_val, Compaction};
use super::{Ix, Lower, Shfl, Stop, WARP};
use crate::codegen::cast::cast;
use crate::codegen::index::{extent, unravel};
use crate::codegen::types::{literal, mem_ty, store, work_ty, Val};
use lookback::{publications, LookBack};

mod lookahead;
mod lookback;

/// Threads of a GPU scan block (of a column scan; a row scan's tiles of more than
/// `SCAN_THREADS · ROW_GROUPS` elements take [`LONG_ROW_THREADS`]).
const SCAN_THREADS: usize = 256;
/// Threads of a row scan's tiles of more than `SCAN_THREADS · ROW_GROUPS` elements.
const LONG_ROW_THREADS: usize = 512;
/// Threads a multiprocessor holds at once (sm_70 to sm_90).
const MAX_THREADS_PER_SM: usize = 2048;
/// The most runs of 32 a warp of a row scan takes: [`ROW_GROUPS`] with [`SCAN_THREADS`],
/// twice as many with [`LONG_ROW_THREADS`] (tiles of 2048 and 8192 elements).
const ROW_GROUPS: usize = 8;
const LONG_ROW_GROUPS: usize = 16;
/// Rows at least this long are scanned by tiles on the GPU, and rows of any length when there
/// are fewer than [`TILED_FEW_ROWS`] (a thread per row would leave the GPU idle).
const TILED_MIN_ROW: usize = 512;
const TILED_FEW_ROWS: usize = 4096;

/// How a GPU kernel of one block per piece of work is launched (a scan's tiles, a sort's
/// lines): block `b` of `blocks` (of `threads` threads) takes piece `b`; after the region's
/// buffers come the entry's scratch pointer, which these kernels do not read (the executor
/// passes the counters' there too: no buffer of its own to allocate and free), and a zeroed
/// buffer of `counter_words` u32s, where a scan's tiles publish their values as tagged 64-bit
/// words (two u32s each; see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuGrid {
    pub blocks: usize,
    pub threads: usize,
    pub counter_words: usize,
    /// Persistent blocks that wait on each other (the look-ahead scan): launched cooperatively,
    /// `blocks` cut to those the device holds at once (the kernel reads the grid's size).
    /// Their words need no zeroing a launch: the last of them, one more, holds the launch's
    /// epoch (its low half) and the blocks that read it (its high half). A launch tags its
    /// words with the epoch after the one it finds (1 after 2^32 - 1, so 0, a zeroed
    /// buffer's, never tags a launch); each block counts itself in once its threads have read
    /// it, and the last stores that epoch with none counted. The executor zeroes the buffer
    /// once and keeps it for the stream's later launches, each after the last
    /// (`counter_words` counts the epoch's word).
    pub persistent: bool,
}

impl GpuGrid {
    /// `blocks` blocks of `threads` threads publishing `words` tagged words in all.
    fn new(blocks: usize, threads: usize, words: usize) -> GpuGrid {
        GpuGrid { blocks, threads, counter_words: 2 * words, persistent: false }
    }
}

/// What a compaction's stores need (see [`Lower::compact_store`]): the row's index, its index
/// per axis but the scanned one, its first element's flat position, the row's length, and the
/// thread's first element's position in the row.
struct CompactStore<'a> {
    c: &'a Compaction<'a>,
    row: &'a str,
    row_ix: &'a [String],
    axis: usize,
    r0: &'a str,
    ne: &'a str,
    rp0: &'a str,
}

/// The tagged words a published value of `dt` takes: one for values of up to 4 bytes, two for
/// 8-byte ones.
fn words_of(dt: DType) -> usize {
    match work_ty(dt) {
        Ok("f64" | "i64") => 2,
        _ => 1,
    }
}

/// The tagged words of one publication of values of `dts` (one value per output).
fn words_per(dts: &[DType]) -> usize {
    dts.iter().map(|&dt| words_of(dt)).sum()
}

/// The tag of a published word (its high half).
const TAG: i64 = 1 << 32;

/// A GPU scan's tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tiles {
    /// Along the last axis: blocks of `threads` threads, `groups` runs of 32 elements per warp
    /// (a tile holds `threads · groups` consecutive elements of a row), `per_row` tiles per row.
    Rows { threads: usize, groups: usize, per_row: usize },
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
    // Compactions by tiles along the last axis only (else a thread per line).
    if inner != 1 && matches!(compaction(body, axis), Ok(Some(_)) | Err(_)) {
        return None;
    }
    if inner == 1 {
        if n < TILED_MIN_ROW && lines >= TILED_FEW_ROWS {
            return None;
        }
        let (threads, most) = if n <= SCAN_THREADS * ROW_GROUPS {
            (SCAN_THREADS, ROW_GROUPS)
        } else {
            (LONG_ROW_THREADS, LONG_ROW_GROUPS)
        };
        let groups =
            [1, 2, 4, 8, 16].into_iter().find(|&g| g <= most && threads * g >= n).unwrap_or(most);
        return Some(Tiles::Rows { threads, groups, per_row: n.div_ceil(threads * groups) });
    }
    if n < COLUMNS_MIN_LINE && lines >= TILED_FEW_ROWS {
        return None;
    }
    let cols = inner.next_multiple_of(WARP).min(SCAN_THREADS);
    Some(Tiles::Columns { chunks: n.div_ceil(CHUNK), cols, col_groups: inner.div_ceil(cols) })
}

impl Lower<'_> {
    /// The GPU scan kernel by tiles (see [`GpuGrid`] and the module docs). Along the last axis:
    /// lane `l` of warp `w` holds elements `w·32·G + 32·j + l` of the tile for `j < G`; each run
    /// of 32 is scanned across the warp by shuffles and carries the run before it, the warps'
    /// totals go through shared memory; warp 0 gathers the tile's published value, warp 1 its
    /// prefix, a lane per bit of the tile's index polling the words of the tile it reads, then
    /// the warp combines the lanes' values that apply in a loop. In-tile offsets are 32-bit (a
    /// tile holds at most 8192 elements).
    pub(super) fn scan_gpu(
        &mut self,
        shape: &[usize],
        axis: usize,
        tiles: Tiles,
    ) -> Result<(), Stop> {
        if let Some(la) = self.lookahead_plan(shape, axis) {
            return self.scan_lookahead(shape, &la);
        }
        let (threads, groups, per_row) = match tiles {
            Tiles::Rows { threads, groups, per_row } => (threads, groups, per_row),
            Tiles::Columns { chunks, cols, col_groups } => {
                return self.scan_gpu_columns(shape, axis, chunks, cols, col_groups)
            }
        };
        let n = shape[axis];
        // What is scanned: each output's input, or a compaction's count of kept elements (32-bit
        // where the lines are shorter than 2^31).
        let compaction = compaction(self.body, axis)?;
        let scans: Vec<(NodeId, DType, OpKind)> = match &compaction {
            Some(c) => {
                let dt = if n < (1 << 31) { DType::Int32 } else { DType::Int64 };
                vec![(c.cond, dt, OpKind::Add)]
            }
            None => scans(self.body, shape, axis)?
                .into_iter()
                .map(|(node, c)| (node.inputs[0], node.dtype, c))
                .collect(),
        };
        let nout = scans.len();
        let blocks = rows(shape, axis) * per_row;
        // Bit length of the tile index within a row: the levels of the tree.
        let levels = (usize::BITS - per_row.leading_zeros()) as usize;
        let row_shape: Vec<usize> =
            shape.iter().enumerate().filter(|&(a, _)| a != axis).map(|(_, &e)| e).collect();
        // Shared memory (8-byte slots): each output's prefix, then each output's warp totals,
        // then each output's values of the look-back's warps.
        let warps = threads / WARP;
        let (prefix_slot, warp_slot, part_slot) = (0, nout, nout + nout * warps);
        let smem = 8 * (nout + 2 * nout * warps);
        let dts: Vec<DType> = scans.iter().map(|s| s.1).collect();
        let ops: Vec<OpKind> = scans.iter().map(|s| s.2).collect();
        let ids: Vec<Val> = scans
            .iter()
            .map(|&(_, dt, c)| literal(&mut self.b, super::scatter::identity(c, dt), dt))
            .collect::<Result<_, _>>()?;
        let publications = publications(blocks, rows(shape, axis), per_row, warps);
        let words = publications * words_per(&dts);
        self.grid_launch = Some((GpuGrid::new(blocks, threads, words), smem));
        // The chunk look-back of a scan of one value of up to 4 bytes: launch bounds of 2048
        // threads a multiprocessor (32 registers; ptxas took 40 without them, 3 blocks of 512).
        if per_row > 1
            && compaction.is_none()
            && words_per(&dts) == 1
            && !kiln_cache::config().gpu_scan_fenwick
        {
            self.grid_bounds = Some((threads, MAX_THREADS_PER_SM / threads));
        }
        let z32 = self.b.constant("0", "i32");
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
        let tid = self.b.op("arith.trunci %tid : i64 to i32");
        let c5 = self.b.constant("5", "i32");
        let warp = self.b.op(&format!("arith.shrui {tid}, {c5} : i32"));
        let m31 = self.b.constant("31", "i32");
        let lane = self.b.op(&format!("arith.andi {tid}, {m31} : i32"));
        let wlen = self.b.constant(&(WARP * groups).to_string(), "i32");
        let w0 = self.b.op(&format!("arith.muli {warp}, {wlen} : i32"));
        // The thread's first element in the tile; its element of run `j` is `32·j` after it.
        let first = self.b.op(&format!("arith.addi {w0}, {lane} : i32"));
        let local = |me: &mut Self, j: usize| -> String {
            let off = me.b.constant(&(WARP * j).to_string(), "i32");
            me.b.op(&format!("arith.addi {first}, {off} : i32"))
        };
        let tile_len = self.b.i64((threads * groups) as i64);
        let t0 = self.b.op(&format!("arith.muli {t}, {tile_len} : i64"));
        let ne = extent(&mut self.b, n);
        // The tile's elements in the row (32-bit, as the offsets in it).
        let left = self.b.op(&format!("arith.subi {ne}, {t0} : i64"));
        let left = self.b.op(&format!("arith.minui {left}, {tile_len} : i64"));
        let left = self.b.op(&format!("arith.trunci {left} : i64 to i32"));
        let c1 = self.b.constant("1", "i32");
        let tile_last = self.b.op(&format!("arith.subi {left}, {c1} : i32"));
        // Each run of 32: the elements (past the row's end: the identity), scanned across the
        // warp, after the runs before it. Positions are clamped within the tile in 32 bits, so
        // that the loads' addresses are 32-bit offsets from the tile's start.
        let mut incl: Vec<Vec<Val>> = vec![Vec::with_capacity(groups); nout];
        let mut carry: Vec<Option<Val>> = vec![None; nout];
        for j in 0..groups {
            let l = local(self, j);
            let valid = self.b.op(&format!("arith.cmpi ult, {l}, {left} : i32"));
            let lc = self.b.op(&format!("arith.minui {l}, {tile_last} : i32"));
            let lc = self.b.op(&format!("arith.extui {lc} : i32 to i64"));
            let posc = self.b.op(&format!("arith.addi {t0}, {lc} overflow<nsw, nuw> : i64"));
            let dims = at(&posc);
            for (k, &(input, dt, _)) in scans.iter().enumerate() {
                let v = self.emit(input, &Ix { dims: Some(dims.clone()), flat: None })?;
                let v = match compaction {
                    // The condition as 0 or 1.
                    Some(_) => {
                        let t = cast(&mut self.b, &v, DType::Bool)?;
                        cast(&mut self.b, &t, dt)?
                    }
                    None => cast(&mut self.b, &v, dt)?,
                };
                let v = self.select(&valid, &v, &ids[k]);
                let mut x = v;
                let mut s = 1;
                while s < WARP {
                    let y = Val::new(self.shfl(Shfl::Up, &x.ssa, x.ty(), s), dts[k]);
                    let c = self.combine(scans[k].2, dts[k], y, x.clone())?;
                    let sv = self.b.constant(&s.to_string(), "i32");
                    let ge = self.b.op(&format!("arith.cmpi uge, {lane}, {sv} : i32"));
                    x = self.select(&ge, &c, &x);
                    s *= 2;
                }
                if let Some(c) = carry[k].take() {
                    x = self.combine(scans[k].2, dts[k], c, x)?;
                }
                carry[k] = Some(Val::new(self.shfl(Shfl::Idx, &x.ssa, x.ty(), WARP - 1), dts[k]));
                incl[k].push(x);
            }
        }
        // The warps' totals, through shared memory.
        let lead = self.b.op(&format!("arith.cmpi eq, {lane}, {z32} : i32"));
        let warp64 = self.b.op(&format!("arith.extui {warp} : i32 to i64"));
        self.open_if(&lead);
        for (k, c) in carry.iter().enumerate() {
            let c = c.clone().expect("a run per tile");
            let off = self.b.i64((warp_slot + k * warps) as i64);
            let i = self.b.op(&format!("arith.addi {off}, {warp64} : i64"));
            let bits = self.bits_of(&c);
            let sp = self.slot(&slots, &i);
            self.b
                .stmt(&format!("llvm.store {bits}, {sp} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
        }
        self.close();
        self.b.stmt("nvvm.barrier0");
        // Each thread: its warp's prefix in the tile.
        let mut wprefix = Vec::with_capacity(nout);
        for k in 0..nout {
            let mut p = ids[k].clone();
            for w in 0..warps {
                let v = self.warp_total(&slots, warp_slot + k * warps + w, dts[k]);
                let wi = self.b.constant(&w.to_string(), "i32");
                let before = self.b.op(&format!("arith.cmpi ult, {wi}, {warp} : i32"));
                let pc = self.combine(scans[k].2, dts[k], p.clone(), v)?;
                p = self.select(&before, &pc, &p);
            }
            wprefix.push(p);
        }
        // The tile's prefix in the row (tiles after the first of a row).
        let mut prefix = ids.clone();
        if per_row > 1 {
            let lb = LookBack {
                ops: &ops,
                dts: &dts,
                ids: &ids,
                slots: &slots,
                warp_slot,
                prefix_slot,
                part_slot,
                warps,
                tile: &tile,
                row: &row,
                t: &t,
                warp: &warp,
                lane: &lane,
                lead: &lead,
                per_row,
                levels,
                blocks,
            };
            prefix = self.look_back(&lb)?;
        }
        // Each element: the tile's prefix, the warp's prefix in the tile, its value in the warp;
        // where it lies and whether it is in the row, again from the thread's first element (the
        // row's element `p` is element `row·n + p` of the output: the axis is the last but for
        // axes of one).
        let f = self.b.op(&format!("arith.extui {first} : i32 to i64"));
        let p0 = self.b.op(&format!("arith.addi {t0}, {f} overflow<nsw, nuw> : i64"));
        let r0 = self.b.op(&format!("arith.muli {row}, {ne} overflow<nsw, nuw> : i64"));
        let p0 = self.b.op(&format!("arith.addi {r0}, {p0} overflow<nsw, nuw> : i64"));
        if let Some(c) = &compaction {
            let head = self.combine(OpKind::Add, dts[0], prefix[0].clone(), wprefix[0].clone())?;
            let rp0 = self.b.op(&format!("arith.addi {t0}, {f} overflow<nsw, nuw> : i64"));
            let ctx =
                CompactStore { c, row: &row, row_ix: &row_ix, axis, r0: &r0, ne: &ne, rp0: &rp0 };
            for (j, x) in incl[0].iter().enumerate() {
                let v = self.combine(OpKind::Add, dts[0], head.clone(), x.clone())?;
                let off = self.b.constant(&(WARP * j).to_string(), "i32");
                let lim = self.b.op(&format!("arith.subi {left}, {off} : i32"));
                let valid = self.b.op(&format!("arith.cmpi slt, {first}, {lim} : i32"));
                self.open_if(&valid);
                self.compact_store(&ctx, j, &v)?;
                self.close();
            }
            return Ok(());
        }
        for (k, xs) in incl.iter().enumerate() {
            let head = self.combine(scans[k].2, dts[k], prefix[k].clone(), wprefix[k].clone())?;
            let base = self.b.op(&format!(
                "llvm.getelementptr inbounds {}[{p0}] : (!llvm.ptr, i64) -> !llvm.ptr, {}",
                Self::out_ptr(k),
                mem_ty(dts[k])
            ));
            for (j, x) in xs.iter().enumerate() {
                let v = self.combine(scans[k].2, dts[k], head.clone(), x.clone())?;
                // `first + 32·j < left`, as `first < left - 32·j` (signed: small values): only
                // `first` and `left` live across the barriers.
                let off = self.b.constant(&(WARP * j).to_string(), "i32");
                let lim = self.b.op(&format!("arith.subi {left}, {off} : i32"));
                let valid = self.b.op(&format!("arith.cmpi slt, {first}, {lim} : i32"));
                let off = self.b.i64((WARP * j) as i64);
                self.open_if(&valid);
                store(&mut self.b, &base, &off, &v);
                self.close();
            }
        }
        Ok(())
    }

    /// A compaction's store of a thread's element of run `j` (in the row), `v` its inclusive
    /// count of kept elements: kept, its value at slot `v - 1` of the row; else the zero at
    /// slot `n - 1 - (rejected up to it)`; the row's last element stores the count.
    fn compact_store(&mut self, s: &CompactStore, j: usize, v: &Val) -> Result<(), Stop> {
        let off = self.b.i64((WARP * j) as i64);
        let at = self.b.op(&format!("arith.addi {}, {off} overflow<nsw, nuw> : i64", s.rp0));
        let mut dims = s.row_ix.to_vec();
        dims.insert(s.axis, at.clone());
        let ix = Ix { dims: Some(dims), flat: None };
        let sel = self.emit(s.c.cond, &ix)?;
        let sel = cast(&mut self.b, &sel, DType::Bool)?.ssa;
        let v = cast(&mut self.b, v, DType::Int64)?.ssa;
        let one = self.b.i64(1);
        let kept = self.b.op(&format!("arith.subi {v}, {one} : i64"));
        let rejected = self.b.op(&format!("arith.subi {at}, {v} : i64"));
        let last = self.b.op(&format!("arith.subi {}, {one} : i64", s.ne));
        let tail = self.b.op(&format!("arith.subi {last}, {rejected} : i64"));
        let slot = self.b.op(&format!("arith.select {sel}, {kept}, {tail} : i64"));
        let pos = self.b.op(&format!("arith.addi {}, {slot} overflow<nsw, nuw> : i64", s.r0));
        for (k, &(node, is_compact)) in s.c.outputs.iter().enumerate() {
            if is_compact {
                let x = self.emit(node.inputs[1], &ix)?;
                let z = literal(&mut self.b, Literal::from_f64(node.dtype, 0.0), node.dtype)?;
                let x = select_val(&mut self.b, &sel, &x, &z);
                store(&mut self.b, &Self::out_ptr(k), &pos, &x);
            }
        }
        if s.c.outputs.iter().any(|o| !o.1) {
            let is_last = self.b.op(&format!("arith.cmpi eq, {at}, {last} : i64"));
            self.open_if(&is_last);
            for (k, &(_, is_compact)) in s.c.outputs.iter().enumerate() {
                if !is_compact {
                    store(
                        &mut self.b,
                        &Self::out_ptr(k),
                        s.row,
                        &Val::new(v.clone(), DType::Int64),
                    );
                }
            }
            self.close();
        }
        Ok(())
    }

    /// The value of `dt` in 8-byte shared slot `slot` (a volatile load).
    fn warp_total(&mut self, slots: &str, slot: usize, dt: DType) -> Val {
        let i = self.b.i64(slot as i64);
        let sp = self.slot(slots, &i);
        let bits = self.b.fresh();
        self.b.stmt(&format!(
            "{bits} = llvm.load volatile {sp} {{alignment = 8 : i64}} : !llvm.ptr -> i64"
        ));
        self.value_of_bits(&bits, dt)
    }

    /// `c ? a : b` of two values of one real dtype.
    fn select(&mut self, c: &str, a: &Val, b: &Val) -> Val {
        Val::new(self.b.op(&format!("arith.select {c}, {}, {} : {}", a.ssa, b.ssa, a.ty())), a.dt)
    }

    /// `v` as lane `lane` of the warp holds it (`lane`, an i32, the same in every lane), through
    /// 32-bit shuffles.
    fn shfl_lane(&mut self, v: &Val, lane: &str) -> Val {
        let mask = self.b.constant("-1", "i32");
        let clamp = self.b.constant("31", "i32");
        let c32 = self.b.i64(32);
        let bits = self.bits_of(v);
        let mut got: Option<String> = None;
        for h in 0..words_of(v.dt) {
            let x = if h == 0 {
                bits.clone()
            } else {
                self.b.op(&format!("arith.shrui {bits}, {c32} : i64"))
            };
            let x = self.b.op(&format!("arith.trunci {x} : i64 to i32"));
            let y = self.b.fresh();
            self.b.stmt(&format!(
                "{y} = nvvm.shfl.sync idx {mask}, {x}, {lane}, {clamp} : i32 -> i32"
            ));
            let y = self.b.op(&format!("arith.extui {y} : i32 to i64"));
            got = Some(match got {
                None => y,
                Some(lo) => {
                    let hi = self.b.op(&format!("arith.shli {y}, {c32} : i64"));
                    self.b.op(&format!("arith.ori {hi}, {lo} : i64"))
                }
            });
        }
        self.value_of_bits(&got.expect("a word"), v.dt)
    }

    /// A pointer to 8-byte slot `i` of the block's shared memory at `base`. Slots are loaded and
    /// stored with their alignment written out: without it the fast tier's unoptimised NVPTX
    /// code generation split an i64 access in two `st.b32`s of a 64-bit float register, which
    /// lost the low word of a float64 on an H200.
    fn slot(&mut self, base: &str, i: &str) -> String {
        self.b.op(&format!(
            "llvm.getelementptr inbounds {base}[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// A pointer to tagged word `i` of the counter buffer (loaded and stored with its alignment
    /// written out, as [`Lower::slot`]'s: a word split in two stores would be seen half
    /// written).
    fn word_at(&mut self, i: &str) -> String {
        self.b.op(&format!(
            "llvm.getelementptr inbounds %counter[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// The values `vals` (one per output) published as publication `at`'s tagged words: words
    /// `at · W ..` for `W` words a publication, each output's in turn, a 64-bit value's low
    /// half first.
    fn publish(&mut self, at: &str, vals: &[Val]) {
        let dts: Vec<DType> = vals.iter().map(|v| v.dt).collect();
        let per = self.b.i64(words_per(&dts) as i64);
        let i0 = self.b.op(&format!("arith.muli {at}, {per} : i64"));
        let tag = self.tag();
        let mut w = 0;
        for v in vals {
            let bits = self.bits_of(v);
            let halves = if words_of(v.dt) == 2 {
                let mask = self.b.i64(0xffff_ffff);
                let c32 = self.b.i64(32);
                let lo = self.b.op(&format!("arith.andi {bits}, {mask} : i64"));
                let hi = self.b.op(&format!("arith.shrui {bits}, {c32} : i64"));
                vec![lo, hi]
            } else {
                vec![bits]
            };
            for half in halves {
                let word = self.b.op(&format!("arith.ori {half}, {tag} : i64"));
                let ww = self.b.i64(w as i64);
                let i = self.b.op(&format!("arith.addi {i0}, {ww} : i64"));
                let p = self.word_at(&i);
                self.b.stmt(&format!(
                    "llvm.store volatile {word}, {p} {{alignment = 8 : i64}} : i64, !llvm.ptr"
                ));
                w += 1;
            }
        }
    }

    /// The values of `dts` of publication `at` (see [`Lower::publish`]), each word polled until
    /// its tag is set.
    fn wait_published(&mut self, at: &str, dts: &[DType]) -> Vec<Val> {
        let per = self.b.i64(words_per(dts) as i64);
        let i0 = self.b.op(&format!("arith.muli {at}, {per} : i64"));
        let mut w = 0;
        let mut vals = Vec::with_capacity(dts.len());
        for &dt in dts {
            let mut words = Vec::with_capacity(2);
            for _ in 0..words_of(dt) {
                let ww = self.b.i64(w as i64);
                let i = self.b.op(&format!("arith.addi {i0}, {ww} : i64"));
                let p = self.word_at(&i);
                words.push(self.poll(&p));
                w += 1;
            }
            // One word: the value's bits are its low half (`value_of_bits` truncates).
            let bits = match &words[..] {
                [lo, hi] => {
                    let mask = self.b.i64(0xffff_ffff);
                    let c32 = self.b.i64(32);
                    let lo = self.b.op(&format!("arith.andi {lo}, {mask} : i64"));
                    let hi = self.b.op(&format!("arith.shli {hi}, {c32} : i64"));
                    self.b.op(&format!("arith.ori {hi}, {lo} : i64"))
                }
                _ => words[0].clone(),
            };
            vals.push(self.value_of_bits(&bits, dt));
        }
        vals
    }

    /// The tag of this kernel's published words: the launch's epoch (see
    /// [`GpuGrid::persistent`]), else the constant 1, in the high half.
    fn tag(&mut self) -> String {
        match &self.scan_tag {
            Some(t) => t.clone(),
            None => self.b.i64(TAG),
        }
    }

    /// Tagged word `p`, loaded volatile until its tag is set (is this launch's epoch).
    fn poll(&mut self, p: &str) -> String {
        let z = self.b.i64(0);
        let tag = self.tag();
        let (w, x) = (self.b.fresh(), self.b.fresh());
        let r = self.open(1, &format!("scf.while ({w} = {z}) : (i64) -> i64"));
        let word = self.b.fresh();
        self.b.stmt(&format!(
            "{word} = llvm.load volatile {p} {{alignment = 8 : i64}} : !llvm.ptr -> i64"
        ));
        // An epoch tag is set when the word's high half is it; the constant tag 1 when the
        // word is at least it (a zeroed buffer's high halves are 0 or 1).
        let unset = if self.scan_tag.is_some() {
            let high = self.b.i64(-1i64 << 32);
            let h = self.b.op(&format!("arith.andi {word}, {high} : i64"));
            self.b.op(&format!("arith.cmpi ne, {h}, {tag} : i64"))
        } else {
            self.b.op(&format!("arith.cmpi ult, {word}, {tag} : i64"))
        };
        self.b.stmt(&format!("scf.condition({unset}) {word} : i64"));
        self.memo.pop();
        self.memo.push(Default::default());
        self.b.next_region("do");
        self.b.stmt(&format!("^bb0({x}: i64):"));
        self.b.stmt(&format!("scf.yield {x} : i64"));
        self.close();
        r.into_iter().next().expect("one result")
    }

    /// Where `cond` holds, the values tile `src` published (one per output, of the dtypes of
    /// `ids`), once published; elsewhere `ids`.
    fn gather_published(&mut self, cond: &str, src: &str, ids: &[Val]) -> Vec<Val> {
        let tys: Vec<&str> = ids.iter().map(|v| v.ty()).collect();
        let dts: Vec<DType> = ids.iter().map(|v| v.dt).collect();
        let results = self.open(ids.len(), &format!("scf.if {cond} -> ({})", tys.join(", ")));
        let vals = self.wait_published(src, &dts);
        let names: Vec<String> = vals.iter().map(|v| v.ssa.clone()).collect();
        self.b.stmt(&format!("scf.yield {} : {}", names.join(", "), tys.join(", ")));
        self.open_else();
        let same: Vec<String> = ids.iter().map(|v| v.ssa.clone()).collect();
        self.b.stmt(&format!("scf.yield {} : {}", same.join(", "), tys.join(", ")));
        self.close();
        results.into_iter().zip(dts).map(|(r, dt)| Val::new(r, dt)).collect()
    }

    /// The scan of a column tile (see [`Tiles::Columns`]): the tile `(c, og)` (block
    /// `c · OG + og`: chunks of the axis in order, so that the tiles it waits on started long
    /// before) covers elements `c·CHUNK ..` of the axis at positions `g·cols + tid` after
    /// it, of line `o` of the axes before. A thread scans its chunk in registers, then combines
    /// its position's values that other tiles published (the tree of the module docs, per
    /// position), publishes its own (publication `tile · cols + tid`), and stores its chunk
    /// after its prefix.
    pub(super) fn scan_gpu_columns(
        &mut self,
        shape: &[usize],
        axis: usize,
        chunks: usize,
        cols: usize,
        col_groups: usize,
    ) -> Result<(), Stop> {
        let scans = scans(self.body, shape, axis)?;
        let n = shape[axis];
        let outer_shape = &shape[..axis];
        let inner_shape = &shape[axis + 1..];
        let (outer, inner) = (numel(outer_shape), numel(inner_shape));
        let og_count = outer * col_groups;
        let blocks = chunks * og_count;
        let levels = (usize::BITS - chunks.leading_zeros()) as usize;
        let (dts, ids) = self.dtypes_and_identities(&scans)?;
        self.grid_launch = Some((GpuGrid::new(blocks, cols, blocks * cols * words_per(&dts)), 0));
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
        let dims0 = match outer_shape.len() {
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
        let mut incl: Vec<Vec<Val>> = vec![Vec::with_capacity(CHUNK); scans.len()];
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
        }
        let mut prefix = ids.clone();
        if chunks > 1 {
            // T(c): the chunk's total after T(c - 2^m) while 2^(m+1) divides c + 1.
            let mut acc: Vec<Val> =
                incl.iter().map(|v| v.last().expect("a chunk").clone()).collect();
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
            self.publish(&cl, &acc);
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
        // Each element after its prefix; where it lies and whether it is in the array, again
        // from the chunk's start (element `j` of the chunk is `j · inner` after its first).
        let left = self.b.op(&format!("arith.subi {ne}, {a0} : i64"));
        let left = self.b.op(&format!("arith.minui {left}, {chunk} : i64"));
        let left = self.b.op(&format!("arith.trunci {left} : i64 to i32"));
        let p0 = self.b.op(&format!("arith.muli {o}, {ne} overflow<nsw, nuw> : i64"));
        let p0 = self.b.op(&format!("arith.addi {p0}, {a0} overflow<nsw, nuw> : i64"));
        let p0 = self.b.op(&format!("arith.muli {p0}, {inner_c} overflow<nsw, nuw> : i64"));
        let p0 = self.b.op(&format!("arith.addi {p0}, {col} overflow<nsw, nuw> : i64"));
        for (k, xs) in incl.iter().enumerate() {
            let base = self.b.op(&format!(
                "llvm.getelementptr inbounds {}[{p0}] : (!llvm.ptr, i64) -> !llvm.ptr, {}",
                Self::out_ptr(k),
                mem_ty(dts[k])
            ));
            for (j, x) in xs.iter().enumerate() {
                let v = self.combine(scans[k].1, dts[k], prefix[k].clone(), x.clone())?;
                let jj = self.b.constant(&j.to_string(), "i32");
                let in_axis = self.b.op(&format!("arith.cmpi ult, {jj}, {left} : i32"));
                let valid = self.b.op(&format!("arith.andi {in_axis}, {col_ok} : i1"));
                let jj = self.b.i64(j as i64);
                let off =
                    self.b.op(&format!("arith.muli {jj}, {inner_c} overflow<nsw, nuw> : i64"));
                self.open_if(&valid);
                store(&mut self.b, &base, &off, &v);
                self.close();
            }
        }
        Ok(())
    }

    /// Each scan's dtype and the identity of its combine.
    fn dtypes_and_identities(
        &mut self,
        scans: &[(&Node, OpKind)],
    ) -> Result<(Vec<DType>, Vec<Val>), Stop> {
        let dts = scans.iter().map(|(node, _)| node.dtype).collect();
        let ids = scans
            .iter()
            .map(|&(node, c)| {
                literal(&mut self.b, super::scatter::identity(c, node.dtype), node.dtype)
            })
            .collect::<Result<_, _>>()?;
        Ok((dts, ids))
    }

    /// Where `take` holds, `acc` combined with the values column tile `src` published at this
    /// thread's position (tiles of `cols` threads; before `acc` when `published_first`), once
    /// published; else `acc`.
    fn combine_published_if(
        &mut self,
        take: &str,
        src: &str,
        cols: &str,
        acc: &[Val],
        scans: &[(&Node, OpKind)],
        published_first: bool,
    ) -> Result<Vec<Val>, Stop> {
        let tys: Vec<&str> = acc.iter().map(|v| v.ty()).collect();
        let dts: Vec<DType> = acc.iter().map(|v| v.dt).collect();
        let res = self.open(acc.len(), &format!("scf.if {take} -> ({})", tys.join(", ")));
        let cl = self.b.op(&format!("arith.muli {src}, {cols} : i64"));
        let cl = self.b.op(&format!("arith.addi {cl}, %tid : i64"));
        let got = self.wait_published(&cl, &dts);
        let mut next = Vec::with_capacity(acc.len());
        for (k, (a, v)) in acc.iter().zip(got).enumerate() {
            let (x, y) = if published_first { (v, a.clone()) } else { (a.clone(), v) };
            next.push(self.combine(scans[k].1, a.dt, x, y)?.ssa);
        }
        self.b.stmt(&format!("scf.yield {} : {}", next.join(", "), tys.join(", ")));
        self.open_else();
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
