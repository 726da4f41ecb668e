//! The look-ahead scan of one long line on `sm_90` and later ([`Lower::scan_lookahead`]): a
//! cumsum of 2^26 float32 at 90-93% of the device-to-device copy rate on an H200 (kiln-bench,
//! the host's time included; the kernel alone 0.131-0.140 ms), where the chunk look-back of the
//! parent module reaches 63-65% (`benches/runs/2026-11-29-session34/`, `scan-ws.py`: the
//! prototype this kernel lowers; `benches/runs/2026-11-29-session36/g6/`).
//!
//! Persistent blocks, all resident at once (the executor launches the kernel cooperatively,
//! one block a multiprocessor at most, as few as take the tiles in as many rounds): block `c`
//! of `G` takes tiles `c, c + G, c + 2G, ...`
//! of [`LookAhead::tile`] elements. Its warps have roles:
//! - warp 0, lane 0, the **producer**: streams each tile's staged inputs (the region inputs the
//!   scanned value reads at its own position) into one of [`STAGES`] shared-memory stages by
//!   `cp.async.bulk` (the TMA's 1-D copy), completing on the stage's `full` mbarrier; a stage
//!   is refilled once the consumers have released it (`empty`). A tile past the line's end
//!   (the last, partial one) is not copied: its consumers read global memory.
//! - warp 1, the **look-ahead**: the exclusive prefix `P` of each of the block's tiles, from the
//!   totals other tiles published as tagged words (see the parent module): `P(t_0)` combines
//!   tiles `0 .. c`, and `P(t_k) = P(t_{k-1})` combined with tiles `t_{k-1} .. t_k`, each lane
//!   folding the words `32·i + lane` of the window in order, then a butterfly. No tile ever
//!   publishes a prefix, so there is no chain of round trips between tiles; the order of every
//!   combine is fixed by `G`, so a device gives the same bits on every run.
//! - warps 2 .. 2 + [`CONSUMERS`], the **consumers**: at step `k` they fold tile `k`'s values
//!   (the region's prologue computed from the staged inputs), publish its total, then scan tile
//!   `k - 1` (its prefix was a whole step in coming) and store it; a lane takes runs of
//!   [`PER_LANE`] consecutive elements, scanned across the warp by shuffles. A whole tile's
//!   runs are a loop of their own, without a branch, unrolled by [`UNROLL_RUNS`]: the runs'
//!   shared-memory loads and shuffle chains overlap (one run after another, each run's five
//!   dependent shuffles exposed, the kernel took 0.143-0.167 ms, median 0.155, against
//!   0.134-0.141, median 0.136, under `ncu` at normal clocks).
//!
//! The words tiles publish are tagged with the launch's epoch, not zeroed for each launch
//! (see [`GpuGrid::persistent`]): the executor keeps one buffer of them per stream, so a launch
//! is one cooperative kernel node, no memset node before it (a 32 KiB memset node cost 1.3 µs
//! of launch and synchronisation on an H200, `benches/runs/2026-11-29-session36/graph-cost2.cu`).
//!
//! Why the waits cannot deadlock: every block is resident, and the look-ahead of tile `t`
//! waits only on totals of tiles before `t`, which their consumers publish after the tile's
//! data has landed and their previous step is done, and a step waits only on earlier tiles.
//! Why [`STAGES`] ≥ 3: the look-ahead writes tile `k`'s prefix into slot `k % STAGES` only
//! once the block's own tile `k - 1` is published, which the consumers do after scanning tile
//! `k - 3`, the last reader of that slot.

use kiln_ir::shape::numel;
use kiln_ir::{DType, NodeId, OpClass, OpKind};

use super::super::scan::{compaction, scans};
use super::super::{Ix, Lower, Shfl, Stop, WARP};
use super::{words_of, GpuGrid};
use crate::codegen::cast::cast;
use crate::codegen::index::extent;
use crate::codegen::types::{literal, load, load_aligned, store, Val};

/// Shared-memory stages of the pipeline (at least 3: see the module docs).
const STAGES: usize = 3;
/// Consumer warps of a block.
const CONSUMERS: usize = 8;
/// Consecutive elements a consumer lane takes at a step of a run.
const PER_LANE: usize = 4;
/// Elements of a run of a consumer warp.
const RUN: usize = WARP * PER_LANE;
/// Runs of a whole tile a consumer's loops take at once (LLVM's unrolling: independent loads
/// and shuffles that ptxas overlaps).
const UNROLL_RUNS: usize = 4;
/// Tiles hold at most this many elements, and at least a run per consumer warp.
const MAX_TILE: usize = 16384;
const MIN_TILE: usize = RUN * CONSUMERS;
/// Bytes the stages may take in all (a block a multiprocessor; 227 KiB is the most a block of
/// `sm_90` may have).
const STAGE_BYTES: usize = 192 * 1024;
/// Lines at least this long take the look-ahead scan (shorter ones fill no GPU with tiles of
/// 16384 elements: 2^21 is 128 of them).
pub(crate) const LOOKAHEAD_MIN: usize = 1 << 21;

/// A consumer warp's runs of one tile: its stage step `s`, first element `t0`, the warp's
/// index among the consumers `cw` (i64), and whether the tile is whole (staged) or the partial
/// last one (read from global memory).
struct Runs<'a> {
    s: &'a str,
    t0: &'a str,
    cw: &'a str,
    whole: bool,
}

/// A look-ahead scan's tiles and staged inputs (see [`Lower::lookahead_plan`]).
#[derive(Clone, Debug)]
pub(crate) struct LookAhead {
    /// Elements of a tile.
    pub tile: usize,
    /// The staged region inputs: node, input index, element size, and byte offset of its part
    /// of a stage per element (`tile × offset` bytes into the stage).
    pub staged: Vec<(NodeId, usize, usize, usize)>,
}

impl LookAhead {
    /// Bytes of one element of every staged input.
    fn element_bytes(&self) -> usize {
        self.staged.iter().map(|s| s.2).sum()
    }
}

/// Slots after the stages (8 bytes each): the mbarriers `full`, `empty` and `pfull` of each
/// stage, the prefixes handed to the consumers, and the warps' totals (`CONSUMERS` a stage).
const FULL: usize = 0;
const EMPTY: usize = STAGES;
const PFULL: usize = 2 * STAGES;
const PREF: usize = 3 * STAGES;
const WSUM: usize = 4 * STAGES;

/// What the parts of a look-ahead scan kernel share: the scan, the layout, and SSA values of
/// the kernel's start (i32 `tid`, `warp`, `lane`; i1 `lead`: lane 0; i64 the rest).
struct Pipe {
    op: OpKind,
    dt: DType,
    input: NodeId,
    id: Val,
    tile: usize,
    stage: usize,
    bars: usize,
    tid: String,
    warp: String,
    lane: String,
    lead: String,
    ne: String,
    te: String,
    zero: String,
    one: String,
    sc: String,
    g: String,
    c: String,
    mine: String,
}

impl Lower<'_> {
    /// The look-ahead plan of a GPU scan over `axis` of `shape`, if it applies: `sm_90` bulk
    /// copies ([`Lower::bulk_copies`]), one line of at least [`LOOKAHEAD_MIN`] elements, one
    /// scanned output of up to 4 bytes (one tagged word), no compaction, and a scanned value
    /// computed elementwise from region inputs read at its own position (staged) and scalars.
    /// `KILN_GPU_SCAN_LOOKBACK=fenwick` turns it off (the tree of the parent module, for
    /// measuring).
    pub(super) fn lookahead_plan(&self, shape: &[usize], axis: usize) -> Option<LookAhead> {
        let n = *shape.get(axis)?;
        if !self.bulk_copies || shape.len() != 1 || n < LOOKAHEAD_MIN {
            return None;
        }
        if kiln_cache::config().gpu_scan_fenwick || !matches!(compaction(self.body, axis), Ok(None))
        {
            return None;
        }
        let found = scans(self.body, shape, axis).ok()?;
        let [(node, _)] = found.as_slice() else { return None };
        if node.dtype.is_complex() || words_of(node.dtype) != 1 {
            return None;
        }
        let mut staged: Vec<(NodeId, usize, usize, usize)> = Vec::new();
        let mut stack = vec![node.inputs[0]];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) || self.constant[id.index()] {
                continue;
            }
            let nd = self.body.node(id);
            let leaf = nd.op.class() == OpClass::Leaf;
            let scalar_broadcast = nd.op == OpKind::BroadcastTo
                && self.body.node(nd.inputs[0]).shape.iter().all(|&d| d == 1);
            let full_input = match nd.attrs {
                kiln_ir::Attrs::Input { index } if nd.shape.as_slice() == shape => Some(index),
                _ => None,
            };
            if let Some(index) = full_input {
                // A region input read at the element's own position: staged.
                if nd.dtype.is_complex() {
                    return None;
                }
                staged.push((id, index as usize, nd.dtype.itemsize(), 0));
            } else if leaf && (nd.op != OpKind::Input || numel(&nd.shape) <= 1) {
                // Constants, ramps and scalar inputs: computed or loaded as elsewhere.
            } else if nd.op.is_elementwise() || scalar_broadcast {
                stack.extend(nd.inputs.iter().copied());
            } else {
                return None;
            }
        }
        if staged.is_empty() {
            return None;
        }
        // Widest first: every part of a stage stays aligned to its element.
        staged.sort_by_key(|s| (std::cmp::Reverse(s.2), s.0));
        let mut offset = 0;
        for s in &mut staged {
            s.3 = offset;
            offset += s.2;
        }
        let mut tile = MAX_TILE;
        while tile > MIN_TILE && STAGES * tile * offset > STAGE_BYTES {
            tile /= 2;
        }
        (STAGES * tile * offset <= STAGE_BYTES).then_some(LookAhead { tile, staged })
    }

    /// The look-ahead scan kernel (see the module docs) of the one line of `shape` (1-D).
    pub(super) fn scan_lookahead(&mut self, shape: &[usize], la: &LookAhead) -> Result<(), Stop> {
        let n = shape[0];
        let (node, op) = scans(self.body, shape, 0)?.into_iter().next().expect("one scan");
        let (input, dt) = (node.inputs[0], node.dtype);
        let id = literal(&mut self.b, super::super::scatter::identity(op, dt), dt)?;
        let tile = la.tile;
        let n_tiles = n.div_ceil(tile);
        let stage = tile * la.element_bytes();
        // Shared memory: the stages, then the 8-byte slots (`FULL` ..).
        let bars = STAGES * stage;
        let smem = bars + 8 * (4 * STAGES + STAGES * CONSUMERS);
        let threads = (2 + CONSUMERS) * WARP;
        // The tiles' words, then the epoch's (see `GpuGrid::persistent`).
        let mut grid = GpuGrid::new(n_tiles, threads, n_tiles + 1);
        grid.persistent = true;
        self.grid_launch = Some((grid, smem));
        self.grid_bounds = Some((threads, 1));

        let tid = self.b.op("arith.trunci %tid : i64 to i32");
        let c5 = self.b.constant("5", "i32");
        let warp = self.b.op(&format!("arith.shrui {tid}, {c5} : i32"));
        let m31 = self.b.constant("31", "i32");
        let lane = self.b.op(&format!("arith.andi {tid}, {m31} : i32"));
        let z32 = self.b.constant("0", "i32");
        let ne = extent(&mut self.b, n);
        let te = self.b.i64(tile as i64);
        let nt = self.b.i64(n_tiles as i64);
        let one = self.b.i64(1);
        let zero = self.b.i64(0);
        // The block's tiles: ceil((n_tiles - c) / G) for c < n_tiles.
        let g = "%nblocks".to_string();
        let c = "%block".to_string();
        let left = self.b.op(&format!("arith.subi {nt}, {c} : i64"));
        let left = self.b.op(&format!("arith.subi {left}, {one} : i64"));
        let per = self.b.op(&format!("arith.divsi {left}, {g} : i64"));
        let per = self.b.op(&format!("arith.addi {per}, {one} : i64"));
        let some = self.b.op(&format!("arith.cmpi slt, {c}, {nt} : i64"));
        let mine = self.b.op(&format!("arith.select {some}, {per}, {zero} : i64"));
        let epoch_word = self.la_epoch(&nt);

        // Thread 0 initialises the mbarriers; every thread waits for it.
        let first = self.b.op(&format!("arith.cmpi eq, {tid}, {z32} : i32"));
        self.open_if(&first);
        for s in 0..STAGES {
            for (slot, count) in [(FULL + s, 1), (EMPTY + s, CONSUMERS), (PFULL + s, 1)] {
                let a = self.slot32(bars, slot);
                let k = self.b.constant(&count.to_string(), "i32");
                self.asm_init(&a, &k);
            }
        }
        self.asm_init_fence();
        self.close();
        self.b.stmt("nvvm.barrier0");
        self.la_counted(&epoch_word, &g, &tid);

        let w0 = self.b.op(&format!("arith.cmpi eq, {warp}, {z32} : i32"));
        let one32 = self.b.constant("1", "i32");
        let w1 = self.b.op(&format!("arith.cmpi eq, {warp}, {one32} : i32"));
        let lead = self.b.op(&format!("arith.cmpi eq, {lane}, {z32} : i32"));
        let sc = self.b.i64(STAGES as i64);
        let pl = &Pipe {
            op,
            dt,
            input,
            id,
            tile,
            stage,
            bars,
            tid,
            warp,
            lane,
            lead,
            ne,
            te,
            zero,
            one,
            sc,
            g,
            c,
            mine,
        };
        // Warp 0: the producer; warp 1: the look-ahead; the others: the consumers.
        self.open(0, &format!("scf.if {w0}"));
        self.la_producer(pl, la);
        self.open_else();
        self.open(0, &format!("scf.if {w1}"));
        self.la_lookahead(pl)?;
        self.open_else();
        self.la_consumers(pl, la)?;
        self.close();
        self.close();
        Ok(())
    }

    /// The launch's epoch (see [`GpuGrid::persistent`]): the one after the epoch word's low
    /// half (word `nt`, after the tiles'), skipping 0; its tag (`epoch << 32`) tags the words
    /// this launch publishes and polls for (`scan_tag`). Returns the epoch word's pointer.
    fn la_epoch(&mut self, nt: &str) -> String {
        let p = self.word_at(nt);
        let word = self.b.fresh();
        self.b.stmt(&format!(
            "{word} = llvm.load volatile {p} {{alignment = 8 : i64}} : !llvm.ptr -> i64"
        ));
        let low = self.b.i64(0xffff_ffff);
        let last = self.b.op(&format!("arith.andi {word}, {low} : i64"));
        let wraps = self.b.op(&format!("arith.cmpi eq, {last}, {low} : i64"));
        let one = self.b.i64(1);
        let next = self.b.op(&format!("arith.addi {last}, {one} : i64"));
        let epoch = self.b.op(&format!("arith.select {wraps}, {one}, {next} : i64"));
        let c32 = self.b.i64(32);
        self.scan_tag = Some(self.b.op(&format!("arith.shli {epoch}, {c32} : i64")));
        p
    }

    /// The block has its epoch: every thread read it before the barrier at its start, so
    /// thread 32 (the look-ahead's lane 0, whose first wait is for tiles still loading) counts
    /// the block in the epoch word's high half; the last of the `g` blocks stores the epoch
    /// (`scan_tag`'s high half) with none counted, for the stream's next launch (no block of
    /// this one reads it again).
    fn la_counted(&mut self, p: &str, g: &str, tid: &str) {
        let t32 = self.b.constant("32", "i32");
        let counts = self.b.op(&format!("arith.cmpi eq, {tid}, {t32} : i32"));
        self.open_if(&counts);
        self.b.stmt(super::super::split::DEVICE_FENCE);
        // One block counted: 1 in the high half.
        let count = self.b.i64(1 << 32);
        let old = self.b.fresh();
        self.b.stmt(&format!(
            "{old} = llvm.atomicrmw add {p}, {count} syncscope(\"device\") acq_rel : !llvm.ptr, i64"
        ));
        let c32 = self.b.i64(32);
        let done = self.b.op(&format!("arith.shrui {old}, {c32} : i64"));
        let one = self.b.i64(1);
        let gm1 = self.b.op(&format!("arith.subi {g}, {one} : i64"));
        let last = self.b.op(&format!("arith.cmpi eq, {done}, {gm1} : i64"));
        self.open_if(&last);
        let tag = self.scan_tag.clone().expect("la_epoch set the tag");
        let epoch = self.b.op(&format!("arith.shrui {tag}, {c32} : i64"));
        self.b.stmt(&format!(
            "llvm.store volatile {epoch}, {p} {{alignment = 8 : i64}} : i64, !llvm.ptr"
        ));
        self.close();
        self.close();
    }

    /// Warp 0's lane 0, the producer: each of the block's tiles into stage `k % STAGES` once the
    /// consumers released it, by one bulk copy per staged input (a tile past the line's end:
    /// an arrival only).
    fn la_producer(&mut self, pl: &Pipe, la: &LookAhead) {
        let (zero, mine, sc, tile, stage) = (&pl.zero, &pl.mine, &pl.sc, pl.tile, pl.stage);
        self.open_if(&pl.lead);
        let (k, _, _) = self.open_for(zero, mine, &[], &[]);
        let (s, par) = self.la_phase(pl, &k, true);
        let again = self.b.op(&format!("arith.cmpi sge, {k}, {sc} : i64"));
        self.open_if(&again);
        let e = self.bar_at(pl.bars, EMPTY, &s);
        self.asm_wait(&e, &par);
        self.close();
        let t = self.la_tile(pl, &k);
        let (t0, is_whole) = self.la_whole(pl, &t);
        let f = self.bar_at(pl.bars, FULL, &s);
        self.open(0, &format!("scf.if {is_whole}"));
        let bytes = self.b.constant(&stage.to_string(), "i32");
        self.asm_expect_tx(&f, &bytes);
        let si = self.b.op(&format!("arith.trunci {s} : i64 to i32"));
        let sb = self.b.constant(&stage.to_string(), "i32");
        let soff = self.b.op(&format!("arith.muli {si}, {sb} : i32"));
        let base = self.smem_base32();
        let sbase = self.b.op(&format!("arith.addi {base}, {soff} : i32"));
        for &(_, index, size, offset) in &la.staged {
            let part = self.b.constant(&(tile * offset).to_string(), "i32");
            let dst = self.b.op(&format!("arith.addi {sbase}, {part} : i32"));
            let sz = self.b.i64(size as i64);
            let from = self.b.op(&format!("arith.muli {t0}, {sz} : i64"));
            let src = self.b.op(&format!(
                "llvm.getelementptr inbounds {}[{from}] : (!llvm.ptr, i64) -> !llvm.ptr, i8",
                Self::in_ptr(index)
            ));
            let src = self.b.op(&format!("llvm.ptrtoint {src} : !llvm.ptr to i64"));
            let nb = self.b.constant(&(tile * size).to_string(), "i32");
            self.asm_bulk_copy(&dst, &src, &nb, &f);
        }
        self.open_else();
        self.asm_arrive(&f);
        self.close();
        self.close();
        self.close();
    }

    /// Warp 1, the look-ahead: the exclusive prefix of each of the block's tiles, the previous
    /// one's combined with the published totals of the tiles in between, each lane folding the
    /// words `32·i + lane` of the window in order, then a butterfly; lane 0 hands it to the
    /// consumers through slot `PREF + k % STAGES`.
    fn la_lookahead(&mut self, pl: &Pipe) -> Result<(), Stop> {
        let (op, dt, id) = (pl.op, pl.dt, &pl.id);
        let (zero, mine, lane, lead) = (&pl.zero, &pl.mine, &pl.lane, &pl.lead);
        let ty = id.ty();
        let (k, acc, _) = self.open_for(zero, mine, &[id.ssa.clone(), zero.clone()], &[ty, "i64"]);
        let (prev, lo) = (Val::new(acc[0].clone(), dt), acc[1].clone());
        let t = self.la_tile(pl, &k);
        let len = self.b.op(&format!("arith.subi {t}, {lo} : i64"));
        let c31 = self.b.i64(31);
        let len = self.b.op(&format!("arith.addi {len}, {c31} : i64"));
        let c5 = self.b.i64(5);
        let chunks = self.b.op(&format!("arith.shrui {len}, {c5} : i64"));
        let (i, a, done) = self.open_for(zero, &chunks, &[id.ssa.clone()], &[ty]);
        let c32 = self.b.i64(WARP as i64);
        let j = self.b.op(&format!("arith.muli {i}, {c32} : i64"));
        let j = self.b.op(&format!("arith.addi {lo}, {j} : i64"));
        let l64 = self.b.op(&format!("arith.extui {lane} : i32 to i64"));
        let j = self.b.op(&format!("arith.addi {j}, {l64} : i64"));
        let before = self.b.op(&format!("arith.cmpi slt, {j}, {t} : i64"));
        let v = self.gather_published(&before, &j, std::slice::from_ref(id)).remove(0);
        let a = self.combine(op, dt, Val::new(a[0].clone(), dt), v)?;
        self.yield_(&[a.ssa.clone()], &[ty]);
        self.close();
        let window = self.butterfly(op, Val::new(done[0].clone(), dt))?;
        let p = self.combine(op, dt, prev, window)?;
        let (s, _) = self.la_phase(pl, &k, false);
        self.open_if(lead);
        let pb = self.bits_of(&p);
        let slot = self.slot_ptr(pl, PREF, &s);
        self.b.stmt(&format!("llvm.store {pb}, {slot} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
        let pf = self.bar_at(pl.bars, PFULL, &s);
        self.asm_arrive(&pf);
        self.close();
        self.yield_(&[p.ssa.clone(), t.clone()], &[ty, "i64"]);
        self.close();
        Ok(())
    }

    /// Warps 2 .. 2 + CONSUMERS: at step `k` fold tile `k` (each lane its runs' elements in
    /// order, then the warp by a butterfly), publish its total, then scan tile `k - 1` from its
    /// prefix and store it, and release its stage.
    fn la_consumers(&mut self, pl: &Pipe, la: &LookAhead) -> Result<(), Stop> {
        let (op, dt, id) = (pl.op, pl.dt, &pl.id);
        let (zero, one, mine) = (&pl.zero, &pl.one, &pl.mine);
        let (tid, warp, lead) = (&pl.tid, &pl.warp, &pl.lead);
        let ty = id.ty();
        let two = self.b.constant("2", "i32");
        let cw = self.b.op(&format!("arith.subi {warp}, {two} : i32"));
        let cw64 = self.b.op(&format!("arith.extui {cw} : i32 to i64"));
        let steps = self.b.op(&format!("arith.addi {mine}, {one} : i64"));
        let (k, _, _) = self.open_for(zero, &steps, &[], &[]);
        let has = self.b.op(&format!("arith.cmpi slt, {k}, {mine} : i64"));
        // Fold tile k: each lane its runs' elements in order, then the warp by a butterfly.
        self.open_if(&has);
        let (s, par) = self.la_phase(pl, &k, false);
        let f = self.bar_at(pl.bars, FULL, &s);
        self.asm_wait(&f, &par);
        let t = self.la_tile(pl, &k);
        let (t0, is_whole) = self.la_whole(pl, &t);
        // A whole tile's runs and the partial tile's in loops of their own: the whole one's
        // body has no branch, so LLVM unrolls it and ptxas overlaps its runs' loads.
        let done = self.open(1, &format!("scf.if {is_whole} -> ({ty})"));
        for whole in [true, false] {
            if !whole {
                self.open_else();
            }
            let runs = Runs { s: &s, t0: &t0, cw: &cw64, whole };
            let folded = self.la_fold_runs(pl, la, &runs)?;
            self.yield_(&[folded], &[ty]);
        }
        self.close();
        let wt = self.butterfly(op, Val::new(done[0].clone(), dt))?;
        self.open_if(lead);
        let sw = self.b.i64(CONSUMERS as i64);
        let i = self.b.op(&format!("arith.muli {s}, {sw} : i64"));
        let i = self.b.op(&format!("arith.addi {i}, {cw64} : i64"));
        let slot = self.slot_ptr(pl, WSUM, &i);
        let bits = self.bits_of(&wt);
        self.b.stmt(&format!("llvm.store {bits}, {slot} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
        self.close();
        self.close();
        self.asm(&format!("bar.sync 1, {};", CONSUMERS * WARP), "", &[]);
        // The first consumer thread publishes tile k's total: the warps' in order.
        let c64 = self.b.constant(&(2 * WARP).to_string(), "i32");
        let pub_thread = self.b.op(&format!("arith.cmpi eq, {tid}, {c64} : i32"));
        let publishes = self.b.op(&format!("arith.andi {has}, {pub_thread} : i1"));
        self.open_if(&publishes);
        let (s, _) = self.la_phase(pl, &k, false);
        let mut tot = id.clone();
        for w in 0..CONSUMERS {
            let v = self.wsum_value(pl, &s, w);
            tot = self.combine(op, dt, tot, v)?;
        }
        let t = self.la_tile(pl, &k);
        self.publish(&t, std::slice::from_ref(&tot));
        self.close();
        // Scan tile k - 1 and store it.
        let later = self.b.op(&format!("arith.cmpi sge, {k}, {one} : i64"));
        self.open_if(&later);
        let kk = self.b.op(&format!("arith.subi {k}, {one} : i64"));
        let (s, par) = self.la_phase(pl, &kk, false);
        let pf = self.bar_at(pl.bars, PFULL, &s);
        self.asm_wait(&pf, &par);
        let slot = self.slot_ptr(pl, PREF, &s);
        let pbits = self.b.fresh();
        self.b.stmt(&format!(
            "{pbits} = llvm.load volatile {slot} {{alignment = 8 : i64}} : !llvm.ptr -> i64"
        ));
        let mut carry = self.value_of_bits(&pbits, dt);
        for w in 0..CONSUMERS {
            let v = self.wsum_value(pl, &s, w);
            let wi = self.b.constant(&w.to_string(), "i32");
            let earlier = self.b.op(&format!("arith.cmpi ult, {wi}, {cw} : i32"));
            let cv = self.combine(op, dt, carry.clone(), v)?;
            carry = self.select(&earlier, &cv, &carry);
        }
        let t = self.la_tile(pl, &kk);
        let (t0, is_whole) = self.la_whole(pl, &t);
        self.open_if(&is_whole);
        for whole in [true, false] {
            if !whole {
                self.open_else();
            }
            self.la_scan_runs(pl, la, &Runs { s: &s, t0: &t0, cw: &cw64, whole }, &carry)?;
        }
        self.close();
        // The warp's reads of the stage are done: release it.
        self.asm("bar.warp.sync -1;", "", &[]);
        self.open_if(lead);
        let e = self.bar_at(pl.bars, EMPTY, &s);
        self.asm_arrive(&e);
        self.close();
        self.close();
        self.close();
        Ok(())
    }

    /// Folds a consumer warp's runs of a tile (its lanes' values in order, each lane its own
    /// fold): a whole tile's from the stage, unrolled; the partial tile's from global memory.
    /// Returns the lane's fold.
    fn la_fold_runs(&mut self, pl: &Pipe, la: &LookAhead, r: &Runs) -> Result<String, Stop> {
        let (op, dt, id) = (pl.op, pl.dt, &pl.id);
        let ty = id.ty();
        let runs = self.b.i64((pl.tile / CONSUMERS / RUN) as i64);
        let (j, a, done) = self.open_for(&pl.zero, &runs, &[id.ssa.clone()], &[ty]);
        let vals = self.lookahead_values(pl, la, r, &j)?;
        let mut acc = Val::new(a[0].clone(), dt);
        for v in vals {
            acc = self.combine(op, dt, acc, v)?;
        }
        self.yield_(&[acc.ssa.clone()], &[ty]);
        self.la_close_runs(r.whole);
        Ok(done[0].clone())
    }

    /// Scans a consumer warp's runs of a tile after `carry` (the tile's prefix and the earlier
    /// warps' totals) and stores them: a whole tile's from the stage with unguarded stores,
    /// unrolled; the partial tile's from global memory, stores within the line.
    fn la_scan_runs(
        &mut self,
        pl: &Pipe,
        la: &LookAhead,
        r: &Runs,
        carry: &Val,
    ) -> Result<(), Stop> {
        let (op, dt, id) = (pl.op, pl.dt, &pl.id);
        let (lane, lead, ne) = (&pl.lane, &pl.lead, &pl.ne);
        let ty = id.ty();
        let runs = self.b.i64((pl.tile / CONSUMERS / RUN) as i64);
        let (j, a, _) = self.open_for(&pl.zero, &runs, &[carry.ssa.clone()], &[ty]);
        let carry = Val::new(a[0].clone(), dt);
        let vals = self.lookahead_values(pl, la, r, &j)?;
        // The lane's inclusive values, then the warp's scan of the lanes' totals.
        let mut incl: Vec<Val> = Vec::with_capacity(PER_LANE);
        for v in vals {
            let x = match incl.last() {
                Some(p) => self.combine(op, dt, p.clone(), v)?,
                None => v,
            };
            incl.push(x);
        }
        let mut x = incl.last().expect("a run").clone();
        let mut d = 1;
        while d < WARP {
            let y = Val::new(self.shfl(Shfl::Up, &x.ssa, x.ty(), d), dt);
            let cy = self.combine(op, dt, y, x.clone())?;
            let dv = self.b.constant(&d.to_string(), "i32");
            let ge = self.b.op(&format!("arith.cmpi uge, {lane}, {dv} : i32"));
            x = self.select(&ge, &cy, &x);
            d *= 2;
        }
        let up = Val::new(self.shfl(Shfl::Up, &x.ssa, x.ty(), 1), dt);
        let excl = self.select(lead, id, &up);
        let head = self.combine(op, dt, carry.clone(), excl)?;
        let at = self.run_position(pl, r.t0, r.cw, &j);
        for (e, v) in incl.into_iter().enumerate() {
            let out = self.combine(op, dt, head.clone(), v)?;
            let ev = self.b.i64(e as i64);
            let p = self.b.op(&format!("arith.addi {at}, {ev} : i64"));
            // A whole tile's stores unguarded (LLVM makes them one vector store), the last
            // tile's within the line.
            if r.whole {
                store(&mut self.b, &Self::out_ptr(0), &p, &out);
            } else {
                let inside = self.b.op(&format!("arith.cmpi ult, {p}, {ne} : i64"));
                self.open_if(&inside);
                store(&mut self.b, &Self::out_ptr(0), &p, &out);
                self.close();
            }
        }
        let total = Val::new(self.shfl(Shfl::Idx, &x.ssa, x.ty(), WARP - 1), dt);
        let next = self.combine(op, dt, carry, total)?;
        self.yield_(&[next.ssa.clone()], &[ty]);
        self.la_close_runs(r.whole);
        Ok(())
    }

    /// Closes a loop over runs: a whole tile's unrolled ([`UNROLL_RUNS`]), the partial tile's
    /// (once a line) not.
    fn la_close_runs(&mut self, whole: bool) {
        if whole {
            self.memo.pop();
            self.b.close_with(&format!(
                "{{loop_annotation = #llvm.loop_annotation<unroll = <count = {UNROLL_RUNS} : i32>>}}"
            ));
        } else {
            self.close_no_unroll();
        }
    }

    /// Step `k`'s stage slot and the parity of its phase: `(k % S, (k / S) & 1)`, or with
    /// `back` the parity of the phase before (`(k / S - 1) & 1`).
    fn la_phase(&mut self, pl: &Pipe, k: &str, back: bool) -> (String, String) {
        let (q, s) = self.b.divrem(k, &pl.sc);
        let q = if back {
            let one = self.b.i64(1);
            self.b.op(&format!("arith.subi {q}, {one} : i64"))
        } else {
            q
        };
        let q = self.b.op(&format!("arith.trunci {q} : i64 to i32"));
        let one = self.b.constant("1", "i32");
        (s, self.b.op(&format!("arith.andi {q}, {one} : i32")))
    }

    /// The block's `k`-th tile: `c + k·G`.
    fn la_tile(&mut self, pl: &Pipe, k: &str) -> String {
        let kg = self.b.op(&format!("arith.muli {k}, {} : i64", pl.g));
        self.b.op(&format!("arith.addi {}, {kg} : i64", pl.c))
    }

    /// Tile `t`'s first element and whether the tile is whole (within the line).
    fn la_whole(&mut self, pl: &Pipe, t: &str) -> (String, String) {
        let t0 = self.b.op(&format!("arith.muli {t}, {} : i64", pl.te));
        let end = self.b.op(&format!("arith.addi {t0}, {} : i64", pl.te));
        (t0.clone(), self.b.op(&format!("arith.cmpi ule, {end}, {} : i64", pl.ne)))
    }

    /// The [`PER_LANE`] values a consumer lane takes at run `j` of the tile `r` (the elements
    /// `t0 + cw·SEG + j·RUN + PER_LANE·lane + e`): in a whole tile the scanned node
    /// computed from the staged inputs in shared memory, else (the tile past the line's end)
    /// from global memory (the identity past the end).
    fn lookahead_values(
        &mut self,
        pl: &Pipe,
        la: &LookAhead,
        r: &Runs,
        j: &str,
    ) -> Result<Vec<Val>, Stop> {
        let (input, dt, tile) = (pl.input, pl.dt, pl.tile);
        let (s, t0) = (r.s, r.t0);
        let at = self.run_position(pl, t0, r.cw, j);
        let q0 = self.b.op(&format!("arith.subi {at}, {t0} : i64"));
        if !r.whole {
            return self.lookahead_values_past(pl, &at);
        }
        let stage = self.b.i64(pl.stage as i64);
        let soff = self.b.op(&format!("arith.muli {s}, {stage} : i64"));
        let base = self.shared_at(0);
        let sbase = self.b.op(&format!(
            "llvm.getelementptr inbounds {base}[{soff}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ));
        let mut names = Vec::with_capacity(PER_LANE);
        for e in 0..PER_LANE {
            let ev = self.b.i64(e as i64);
            let q = self.b.op(&format!("arith.addi {q0}, {ev} : i64"));
            let p = self.b.op(&format!("arith.addi {at}, {ev} : i64"));
            let ix = Ix { dims: Some(vec![p]), flat: None };
            for &(node, _, size, offset) in &la.staged {
                let part = self.b.i64((tile * offset) as i64);
                let ptr = self.b.op(&format!(
                    "llvm.getelementptr inbounds {sbase}[{part}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
                ));
                let ndt = self.body.node(node).dtype;
                let v = if e == 0 {
                    load_aligned(&mut self.b, &ptr, &q, ndt, PER_LANE * size)
                } else {
                    load(&mut self.b, &ptr, &q, ndt)
                };
                self.memo.last_mut().expect("a memo scope").insert((node, ix.key()), v);
            }
            let v = self.emit(input, &ix)?;
            names.push(cast(&mut self.b, &v, dt)?.ssa);
        }
        Ok(names.into_iter().map(|r| Val::new(r, dt)).collect())
    }

    /// [`Lower::lookahead_values`] of the partial tile, from global memory (the identity past
    /// the line's end), for the lane's run at line position `at`.
    fn lookahead_values_past(&mut self, pl: &Pipe, at: &str) -> Result<Vec<Val>, Stop> {
        let (input, dt, id) = (pl.input, pl.dt, &pl.id);
        let mut names = Vec::with_capacity(PER_LANE);
        let ne = &pl.ne;
        let one = self.b.i64(1);
        let last = self.b.op(&format!("arith.subi {ne}, {one} : i64"));
        for e in 0..PER_LANE {
            let ev = self.b.i64(e as i64);
            let p = self.b.op(&format!("arith.addi {at}, {ev} : i64"));
            let inside = self.b.op(&format!("arith.cmpi ult, {p}, {ne} : i64"));
            let pc = self.b.op(&format!("arith.minui {p}, {last} : i64"));
            let v = self.emit(input, &Ix { dims: Some(vec![pc]), flat: None })?;
            let v = cast(&mut self.b, &v, dt)?;
            names.push(self.select(&inside, &v, id));
        }
        Ok(names)
    }

    /// The line position of a consumer lane's first element of run `j`:
    /// `t0 + cw·(tile/CONSUMERS) + j·RUN + PER_LANE·lane`.
    fn run_position(&mut self, pl: &Pipe, t0: &str, cw: &str, j: &str) -> String {
        let lane = &pl.lane;
        let seg = self.b.i64((pl.tile / CONSUMERS) as i64);
        let a = self.b.op(&format!("arith.muli {cw}, {seg} : i64"));
        let run = self.b.i64(RUN as i64);
        let b = self.b.op(&format!("arith.muli {j}, {run} : i64"));
        let l64 = self.b.op(&format!("arith.extui {lane} : i32 to i64"));
        let pl = self.b.i64(PER_LANE as i64);
        let l = self.b.op(&format!("arith.muli {l64}, {pl} : i64"));
        let x = self.b.op(&format!("arith.addi {t0}, {a} : i64"));
        let x = self.b.op(&format!("arith.addi {x}, {b} : i64"));
        self.b.op(&format!("arith.addi {x}, {l} : i64"))
    }

    /// The value of warp `w`'s total in slot `WSUM + s·CONSUMERS + w`.
    fn wsum_value(&mut self, pl: &Pipe, s: &str, w: usize) -> Val {
        let sw = self.b.i64(CONSUMERS as i64);
        let i = self.b.op(&format!("arith.muli {s}, {sw} : i64"));
        let wv = self.b.i64(w as i64);
        let i = self.b.op(&format!("arith.addi {i}, {wv} : i64"));
        let slot = self.slot_ptr(pl, WSUM, &i);
        let bits = self.b.fresh();
        self.b.stmt(&format!(
            "{bits} = llvm.load volatile {slot} {{alignment = 8 : i64}} : !llvm.ptr -> i64"
        ));
        self.value_of_bits(&bits, pl.dt)
    }

    /// A generic pointer to 8-byte slot `first + i` after the stages.
    fn slot_ptr(&mut self, pl: &Pipe, first: usize, i: &str) -> String {
        let base = self.shared_at(pl.bars);
        let f = self.b.i64(first as i64);
        let i = self.b.op(&format!("arith.addi {f}, {i} : i64"));
        self.slot(&base, &i)
    }

    /// The combine of `v` across the warp by a butterfly: the same bits in every lane.
    fn butterfly(&mut self, op: OpKind, v: Val) -> Result<Val, Stop> {
        let dt = v.dt;
        let mut s = v;
        let mut d = 1;
        while d < WARP {
            let y = Val::new(self.shfl(Shfl::Bfly, &s.ssa, s.ty(), d), dt);
            s = self.combine(op, dt, s, y)?;
            d *= 2;
        }
        Ok(s)
    }
}
