//! The look-back of a GPU scan's tiles along the last axis ([`Lower::scan_gpu`]): a tile's
//! prefix, the combine of the tiles before it in its row, from values other tiles published as
//! tagged words (see the parent module's docs), in an order fixed by the tile's index alone, so
//! that every run gives the same bits.
//!
//! - By chunks (the default, [`Lower::chunk_prefix`]): the row's tiles in chunks of
//!   `C = 32·(warps - 1)` (480 for tiles of 512 threads). Tile `t`, `j`-th of chunk `k`,
//!   publishes its total `A(t)` (but the chunk's last tile), and the chunk's last tile the
//!   inclusive prefix `P(k)` of the row up to the chunk's end. Tile `t`'s prefix is `P(k - 1)`
//!   (warp 0's lane 0) combined with the combine of `A` of the chunk's first `j` tiles (lane
//!   `l` of warp `w ≥ 1` reads the chunk's tile `32·(w - 1) + l`; each warp combines its lanes
//!   by a butterfly, then every warp the 16 warps' values by a butterfly, lane `w` loading warp
//!   `w`'s). A tile waits one round trip after its chunk's earlier tiles have their totals, and
//!   `P` is a chain of one round trip a chunk, far ahead of the tiles that wait on it.
//! - By a Fenwick tree (`KILN_GPU_SCAN_LOOKBACK=fenwick`, [`Lower::fenwick_prefix`]): tile `t`
//!   publishes `T(t)`, the combine of tiles `t+1-2^z ..= t` where `z` is the number of
//!   trailing ones of `t`: its own total combined, for `m < z` in increasing order, after
//!   `T(t - 2^m)`. Its prefix is the combine, from the left, of `T(e)` for the blocks of `t`'s
//!   binary form (`e` the last tile of each). A tile waits on at most `2·log2(tiles)` values,
//!   but `T` of a block of `2^z` tiles is published `z` round trips after its tiles' totals, so
//!   the tiles after a boundary of `2^9` tiles or more wait ~9 round trips. A cumsum of 2^26
//!   float32 on an H200 (a copy 0.131-0.134 ms): kiln 0.223 by the tree, 0.208-0.213 by chunks
//!   (a standalone harness: 0.234 and 0.192; `benches/runs/2026-11-27-session24/scan-r3-*`).

use kiln_ir::{DType, OpKind};

use super::super::{Lower, Shfl, Stop, WARP};
use crate::codegen::types::Val;

/// What a row scan's look-back takes from the tile's kernel.
pub(super) struct LookBack<'a> {
    /// Each output's combine, dtype and identity.
    pub ops: &'a [OpKind],
    pub dts: &'a [DType],
    pub ids: &'a [Val],
    /// The block's shared 8-byte slots; where the warps' totals (output `k`'s of warp `w` at
    /// `warp_slot + k·warps + w`), the Fenwick prefix (`prefix_slot + k`) and the chunk
    /// look-back's warps' values (`part_slot + k·warps + w`) lie.
    pub slots: &'a str,
    pub warp_slot: usize,
    pub prefix_slot: usize,
    pub part_slot: usize,
    pub warps: usize,
    /// The tile's publication (its block, i64), its row (i64), its index in the row (i64),
    /// the thread's warp and lane (i32) and whether it is lane 0 (i1).
    pub tile: &'a str,
    pub row: &'a str,
    pub t: &'a str,
    pub warp: &'a str,
    pub lane: &'a str,
    pub lead: &'a str,
    /// Tiles per row and their bit length, and blocks in all (the chunks' prefixes are
    /// published after the tiles' totals: publication `blocks + row·chunks + k`).
    pub per_row: usize,
    pub levels: usize,
    pub blocks: usize,
}

/// Tiles of a chunk of the chunk look-back for blocks of `warps` warps.
pub(super) fn chunk_tiles(warps: usize) -> usize {
    WARP * (warps - 1)
}

/// Publications of a row scan's look-back: each tile's, and for the chunk look-back each
/// chunk's prefix after them.
pub(super) fn publications(blocks: usize, rows: usize, per_row: usize, warps: usize) -> usize {
    if kiln_cache::config().gpu_scan_fenwick {
        blocks
    } else {
        blocks + rows * per_row.div_ceil(chunk_tiles(warps))
    }
}

impl Lower<'_> {
    /// The tile's prefix in its row (after the barrier that made the warps' totals visible;
    /// ends with a barrier), by the look-back `KILN_GPU_SCAN_LOOKBACK` chooses.
    pub(super) fn look_back(&mut self, lb: &LookBack) -> Result<Vec<Val>, Stop> {
        if kiln_cache::config().gpu_scan_fenwick {
            self.fenwick_prefix(lb)
        } else {
            self.chunk_prefix(lb)
        }
    }

    /// The tile's total: the warps' totals combined in warp order.
    fn tile_total(&mut self, lb: &LookBack) -> Result<Vec<Val>, Stop> {
        let mut total = Vec::with_capacity(lb.ids.len());
        for k in 0..lb.ids.len() {
            let mut a = lb.ids[k].clone();
            for w in 0..lb.warps {
                let v = self.warp_total(lb.slots, lb.warp_slot + k * lb.warps + w, lb.dts[k]);
                a = self.combine(lb.ops[k], lb.dts[k], a, v)?;
            }
            total.push(a);
        }
        Ok(total)
    }

    /// The combine of shared slots `off .. off + warps` (values of output `o`), lane `w` loading
    /// slot `off + w`, by a butterfly across the warp: the same bits in every lane (each step
    /// combines the same two values in both lanes, and the combines commute), and few
    /// registers beside the tile's values.
    fn lanes_combined(&mut self, lb: &LookBack, off: usize, o: usize) -> Result<Val, Stop> {
        let nw = self.b.constant(&lb.warps.to_string(), "i32");
        let has = self.b.op(&format!("arith.cmpi ult, {}, {nw} : i32", lb.lane));
        let top = self.b.constant(&(lb.warps - 1).to_string(), "i32");
        let w = self.b.op(&format!("arith.minui {}, {top} : i32", lb.lane));
        let w = self.b.op(&format!("arith.extui {w} : i32 to i64"));
        let off = self.b.i64(off as i64);
        let i = self.b.op(&format!("arith.addi {off}, {w} : i64"));
        let sp = self.slot(lb.slots, &i);
        let bits = self.b.fresh();
        self.b.stmt(&format!(
            "{bits} = llvm.load volatile {sp} {{alignment = 8 : i64}} : !llvm.ptr -> i64"
        ));
        let v = self.value_of_bits(&bits, lb.dts[o]);
        let mut s = self.select(&has, &v, &lb.ids[o]);
        let mut d = 1;
        while d < WARP {
            let y = Val::new(self.shfl(Shfl::Bfly, &s.ssa, s.ty(), d), lb.dts[o]);
            s = self.combine(lb.ops[o], lb.dts[o], s, y)?;
            d *= 2;
        }
        Ok(s)
    }

    /// The chunk look-back (module docs).
    fn chunk_prefix(&mut self, lb: &LookBack) -> Result<Vec<Val>, Stop> {
        let nout = lb.ids.len();
        let (warp, lane, lead) = (lb.warp, lb.lane, lb.lead);
        let chunk = chunk_tiles(lb.warps);
        let t = self.b.op(&format!("arith.trunci {} : i64 to i32", lb.t));
        let cc = self.b.constant(&chunk.to_string(), "i32");
        let k = self.b.op(&format!("arith.divui {t}, {cc} : i32"));
        let j = self.b.op(&format!("arith.remui {t}, {cc} : i32"));
        let zero = self.b.constant("0", "i32");
        let last = self.b.constant(&(chunk - 1).to_string(), "i32");
        let is_last = self.b.op(&format!("arith.cmpi eq, {j}, {last} : i32"));
        // The row's chunk prefixes: publications `blocks + row·chunks ..`.
        let chunks = self.b.i64(lb.per_row.div_ceil(chunk) as i64);
        let p0 = self.b.op(&format!("arith.muli {}, {chunks} : i64", lb.row));
        let blocks = self.b.i64(lb.blocks as i64);
        let p0 = self.b.op(&format!("arith.addi {p0}, {blocks} : i64"));
        let k64 = self.b.op(&format!("arith.extui {k} : i32 to i64"));
        let pk = self.b.op(&format!("arith.addi {p0}, {k64} : i64"));
        let part = |me: &mut Self, o: usize, w: &str| -> String {
            let off = me.b.i64((lb.part_slot + o * lb.warps) as i64);
            let w64 = me.b.op(&format!("arith.extui {w} : i32 to i64"));
            let i = me.b.op(&format!("arith.addi {off}, {w64} : i64"));
            me.slot(lb.slots, &i)
        };
        let store_part = |me: &mut Self, vals: &[Val]| {
            me.open_if(lead);
            for (o, v) in vals.iter().enumerate() {
                let bits = me.bits_of(v);
                let sp = part(me, o, warp);
                me.b.stmt(&format!(
                    "llvm.store {bits}, {sp} {{alignment = 8 : i64}} : i64, !llvm.ptr"
                ));
            }
            me.close();
        };
        // Warp 0: the tile's total, published (but by the chunk's last tile); lane 0: the chunk
        // before's prefix (the identity in the first chunk).
        let in0 = self.b.op(&format!("arith.cmpi eq, {warp}, {zero} : i32"));
        self.open_if(&in0);
        let mut total = Vec::with_capacity(nout);
        for o in 0..nout {
            let off = lb.warp_slot + o * lb.warps;
            total.push(self.lanes_combined(lb, off, o)?);
        }
        let not_last = self.b.op(&format!("arith.cmpi ne, {j}, {last} : i32"));
        let publishes = self.b.op(&format!("arith.andi {lead}, {not_last} : i1"));
        self.open_if(&publishes);
        self.publish(lb.tile, &total);
        self.close();
        let later = self.b.op(&format!("arith.cmpi ne, {k}, {zero} : i32"));
        let reads = self.b.op(&format!("arith.andi {lead}, {later} : i1"));
        let one = self.b.i64(1);
        let before = self.b.op(&format!("arith.subi {pk}, {one} : i64"));
        let got = self.gather_published(&reads, &before, lb.ids);
        store_part(self, &got);
        // The total, for the chunk's last tile's publication after the barrier.
        self.open_if(lead);
        for (o, v) in total.iter().enumerate() {
            let bits = self.bits_of(v);
            let i = self.b.i64((lb.prefix_slot + o) as i64);
            let sp = self.slot(lb.slots, &i);
            self.b
                .stmt(&format!("llvm.store {bits}, {sp} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
        }
        self.close();
        self.close();
        // Warps 1..: lane l of warp w the total of the chunk's tile 32·(w - 1) + l where it is
        // before this one, combined across the warp.
        let others = self.b.op(&format!("arith.cmpi ne, {warp}, {zero} : i32"));
        self.open_if(&others);
        let c1 = self.b.constant("1", "i32");
        let c5 = self.b.constant("5", "i32");
        let w1 = self.b.op(&format!("arith.subi {warp}, {c1} : i32"));
        let i = self.b.op(&format!("arith.shli {w1}, {c5} : i32"));
        let i = self.b.op(&format!("arith.addi {i}, {lane} : i32"));
        let needs = self.b.op(&format!("arith.cmpi ult, {i}, {j} : i32"));
        // Its publication: the tile's, less j, plus i.
        let back = self.b.op(&format!("arith.subi {j}, {i} : i32"));
        let back = self.b.op(&format!("arith.extsi {back} : i32 to i64"));
        let src = self.b.op(&format!("arith.subi {}, {back} : i64", lb.tile));
        let got = self.gather_published(&needs, &src, lb.ids);
        let mut sums = Vec::with_capacity(nout);
        for (o, g) in got.into_iter().enumerate() {
            let mut s = g;
            let mut d = WARP / 2;
            while d > 0 {
                let y = Val::new(self.shfl(Shfl::Bfly, &s.ssa, s.ty(), d), lb.dts[o]);
                s = self.combine(lb.ops[o], lb.dts[o], s, y)?;
                d /= 2;
            }
            sums.push(s);
        }
        store_part(self, &sums);
        self.close();
        self.b.stmt("nvvm.barrier0");
        // Every thread: the chunk before's prefix and the warps' values, combined.
        let mut prefix = Vec::with_capacity(nout);
        for o in 0..nout {
            prefix.push(self.lanes_combined(lb, lb.part_slot + o * lb.warps, o)?);
        }
        // The chunk's last tile (its thread 0): the chunk's prefix, published.
        let tid0 = self.b.op(&format!("arith.cmpi eq, {warp}, {zero} : i32"));
        let tid0 = self.b.op(&format!("arith.andi {tid0}, {lead} : i1"));
        let closes = self.b.op(&format!("arith.andi {tid0}, {is_last} : i1"));
        self.open_if(&closes);
        let mut inclusive = Vec::with_capacity(nout);
        for o in 0..nout {
            let total = self.warp_total(lb.slots, lb.prefix_slot + o, lb.dts[o]);
            inclusive.push(self.combine(lb.ops[o], lb.dts[o], prefix[o].clone(), total)?);
        }
        self.publish(&pk, &inclusive);
        self.close();
        Ok(prefix)
    }

    /// The Fenwick look-back (module docs): warp 0 gathers the tile's published value, warp 1
    /// its prefix, a lane per bit of the tile's index polling the words of the tile it reads,
    /// then the warp combines the lanes' values that apply in a loop.
    fn fenwick_prefix(&mut self, lb: &LookBack) -> Result<Vec<Val>, Stop> {
        let (warp, lane, lead, tile, levels) = (lb.warp, lb.lane, lb.lead, lb.tile, lb.levels);
        let (ids, dts, nout) = (lb.ids, lb.dts, lb.ids.len());
        let mut prefix = ids.to_vec();
        // The look-back's tile indices within the row are 32-bit (a row has fewer tiles
        // than the grid has blocks), so that few registers live beside the tile's values.
        let t = self.b.op(&format!("arith.trunci {} : i64 to i32", lb.t));
        let one = self.b.constant("1", "i32");
        let zero = self.b.constant("0", "i32");
        // Warp 0: T(t), published.
        let w_is = |me: &mut Self, w: usize| -> String {
            let wi = me.b.constant(&w.to_string(), "i32");
            me.b.op(&format!("arith.cmpi eq, {warp}, {wi} : i32"))
        };
        let in0 = w_is(self, 0);
        self.open_if(&in0);
        // The tile's total, from the warps' totals loaded again (volatile loads: were they
        // the prefix's, all of them would live beside the tile's values).
        let total = self.tile_total(lb)?;
        let t1 = self.b.op(&format!("arith.addi {t}, {one} : i32"));
        // Lane m reads T(t - 2^m) when 2^(m+1) divides t + 1.
        let two = self.b.constant("2", "i32");
        let below = self.b.op(&format!("arith.shli {two}, {lane} : i32"));
        let below = self.b.op(&format!("arith.subi {below}, {one} : i32"));
        let low = self.b.op(&format!("arith.andi {t1}, {below} : i32"));
        let needs = self.b.op(&format!("arith.cmpi eq, {low}, {zero} : i32"));
        let lev = self.b.constant(&levels.to_string(), "i32");
        let in_tree = self.b.op(&format!("arith.cmpi ult, {lane}, {lev} : i32"));
        let needs = self.b.op(&format!("arith.andi {needs}, {in_tree} : i1"));
        let pow = self.b.op(&format!("arith.shli {one}, {lane} : i32"));
        let pow = self.b.op(&format!("arith.extui {pow} : i32 to i64"));
        let src = self.b.op(&format!("arith.subi {tile}, {pow} : i64"));
        let got = self.gather_published(&needs, &src, &ids);
        // For m below the trailing ones of t (the same in every lane: a loop, kept rolled
        // so that the values read stay in their lanes), T(t - 2^m) before the total.
        let z = self
            .b
            .op(&format!("\"llvm.intr.cttz\"({t1}) <{{is_zero_poison = true}}> : (i32) -> i32"));
        let z = self.b.op(&format!("arith.extui {z} : i32 to i64"));
        let tys: Vec<&str> = ids.iter().map(|v| v.ty()).collect();
        let init: Vec<String> = total.iter().map(|v| v.ssa.clone()).collect();
        let z64 = self.b.i64(0);
        let (m, args, res) = self.open_for(&z64, &z, &init, &tys);
        let m = self.b.op(&format!("arith.trunci {m} : i64 to i32"));
        let mut next = Vec::with_capacity(nout);
        for k in 0..nout {
            let o = self.shfl_lane(&got[k], &m);
            next.push(self.combine(lb.ops[k], dts[k], o, Val::new(args[k].clone(), dts[k]))?.ssa);
        }
        self.yield_(&next, &tys);
        self.close_no_unroll();
        let acc: Vec<Val> = res.into_iter().zip(dts).map(|(r, &dt)| Val::new(r, dt)).collect();
        self.open_if(&lead);
        self.publish(&tile, &acc);
        self.close();
        self.close();
        // Warp 1: the prefix, to shared memory.
        let in1 = w_is(self, 1);
        self.open_if(&in1);
        // Lane i reads T(e) for bit i of t: e = (t with bits 0..=i cleared) + 2^i - 1.
        let bit = self.b.op(&format!("arith.shrui {t}, {lane} : i32"));
        let bit = self.b.op(&format!("arith.andi {bit}, {one} : i32"));
        let has = self.b.op(&format!("arith.cmpi ne, {bit}, {zero} : i32"));
        let lev = self.b.constant(&levels.to_string(), "i32");
        let in_tree = self.b.op(&format!("arith.cmpi ult, {lane}, {lev} : i32"));
        let has = self.b.op(&format!("arith.andi {has}, {in_tree} : i1"));
        let two = self.b.constant("2", "i32");
        let upto = self.b.op(&format!("arith.shli {two}, {lane} : i32"));
        let upto = self.b.op(&format!("arith.subi {upto}, {one} : i32"));
        let ones = self.b.constant("-1", "i32");
        let keep = self.b.op(&format!("arith.xori {upto}, {ones} : i32"));
        let start = self.b.op(&format!("arith.andi {t}, {keep} : i32"));
        let pow = self.b.op(&format!("arith.shli {one}, {lane} : i32"));
        let e = self.b.op(&format!("arith.addi {start}, {pow} : i32"));
        let e = self.b.op(&format!("arith.subi {e}, {one} : i32"));
        let e = self.b.op(&format!("arith.extui {e} : i32 to i64"));
        let t64 = self.b.op(&format!("arith.extui {t} : i32 to i64"));
        let row0 = self.b.op(&format!("arith.subi {tile}, {t64} : i64"));
        let src = self.b.op(&format!("arith.addi {row0}, {e} : i64"));
        let got = self.gather_published(&has, &src, &ids);
        // The set bits of t from the highest (a loop over the bits left), each T(e) after
        // the combine so far.
        let mut tys = vec!["i32"];
        tys.extend(ids.iter().map(|v| v.ty()));
        let before: Vec<String> = tys.iter().map(|_| self.b.fresh()).collect();
        let after: Vec<String> = tys.iter().map(|_| self.b.fresh()).collect();
        let init = std::iter::once(t.clone()).chain(ids.iter().map(|v| v.ssa.clone()));
        let inits: Vec<String> =
            before.iter().zip(init).map(|(b, i)| format!("{b} = {i}")).collect();
        let res = self.open(
            tys.len(),
            &format!(
                "scf.while ({}) : ({}) -> ({})",
                inits.join(", "),
                tys.join(", "),
                tys.join(", ")
            ),
        );
        let more = self.b.op(&format!("arith.cmpi ne, {}, {zero} : i32", before[0]));
        self.b.stmt(&format!("scf.condition({more}) {} : {}", before.join(", "), tys.join(", ")));
        self.memo.pop();
        self.memo.push(Default::default());
        self.b.next_region("do");
        let params: Vec<String> =
            after.iter().zip(&tys).map(|(a, t)| format!("{a}: {t}")).collect();
        self.b.stmt(&format!("^bb0({}):", params.join(", ")));
        let lz = self.b.op(&format!(
            "\"llvm.intr.ctlz\"({}) <{{is_zero_poison = true}}> : (i32) -> i32",
            after[0]
        ));
        let c31 = self.b.constant("31", "i32");
        let i = self.b.op(&format!("arith.subi {c31}, {lz} : i32"));
        let bit = self.b.op(&format!("arith.shli {one}, {i} : i32"));
        let mut next = vec![self.b.op(&format!("arith.xori {}, {bit} : i32", after[0]))];
        for k in 0..nout {
            let o = self.shfl_lane(&got[k], &i);
            next.push(
                self.combine(lb.ops[k], dts[k], Val::new(after[k + 1].clone(), dts[k]), o)?.ssa,
            );
        }
        self.b.stmt(&format!("scf.yield {} : {}", next.join(", "), tys.join(", ")));
        self.close();
        let acc: Vec<Val> =
            res.into_iter().skip(1).zip(dts).map(|(r, &dt)| Val::new(r, dt)).collect();
        self.open_if(&lead);
        for (k, a) in acc.iter().enumerate() {
            let i = self.b.i64((lb.prefix_slot + k) as i64);
            let bits = self.bits_of(a);
            let sp = self.slot(lb.slots, &i);
            self.b
                .stmt(&format!("llvm.store {bits}, {sp} {{alignment = 8 : i64}} : i64, !llvm.ptr"));
        }
        self.close();
        self.close();
        self.b.stmt("nvvm.barrier0");
        for (k, p) in prefix.iter_mut().enumerate() {
            let i = self.b.i64((lb.prefix_slot + k) as i64);
            let sp = self.slot(lb.slots, &i);
            let bits = self.b.fresh();
            self.b.stmt(&format!(
                "{bits} = llvm.load volatile {sp} {{alignment = 8 : i64}} : !llvm.ptr -> i64"
            ));
            *p = self.value_of_bits(&bits, dts[k]);
        }
        Ok(prefix)
    }
}
