//! The GPU's cooperative machinery ([`Coop`]): a group of threads per work item of a reduction,
//! lane loops, and the fixed-order combines of their partials by warp shuffles and shared
//! memory.

use super::*;

/// Threads per block of cooperative GPU reductions.
pub(super) const COOP_BLOCK: usize = 256;

/// Threads of a warp.
pub(super) const WARP: usize = 32;

/// The lane a warp shuffle reads (see [`Lower::shfl`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shfl {
    Bfly,
    Up,
    Idx,
}

/// Warps per block of cooperative GPU reductions.
pub(super) const BLOCK_WARPS: usize = COOP_BLOCK / WARP;

/// Accumulator components a reduction has at most (`Acc::tys`).
pub(super) const MAX_ACC: usize = 2;

/// A cooperative GPU reduction: `lanes` threads of a block share each work item, each folding
/// the elements `lane, lane + lanes, ...` of the reduced axes (flattened); the partial
/// accumulators are combined by a fixed tree, so every lane holds the same result.
/// Row layout: the lanes of an item are consecutive threads, whole warps (coalesced along a
/// contiguous reduced axis); they combine by warp shuffles, then across the item's warps
/// through shared memory with one barrier ([`Lower::group_combine_warps`]), and a region input
/// that several passes over the row read is read from global memory once when the block's
/// rows fit in shared memory ([`RowCache`]). Column layout: consecutive threads take
/// consecutive items, the lanes of an item `items` threads apart (coalesced along a contiguous
/// kept axis); they combine by a tree in shared memory, a barrier per step.
#[derive(Clone, Copy, Debug)]
pub(super) struct Coop {
    pub(super) lanes: usize,
    pub(super) items: usize,
    pub(super) columns: bool,
}

/// The entry's `%items`, `%lanes`, and each thread's `%lane` and `%item` in its block, for a
/// cooperative kernel's layout (see [`Coop`]).
pub(super) fn coop_lane_item(c: Coop) -> String {
    let mut t = format!("    %items = arith.constant {} : i64\n", c.items);
    t += &format!("    %lanes = arith.constant {} : i64\n", c.lanes);
    if c.columns {
        t += "    %lane = arith.divui %tid, %items : i64\n";
        t += "    %item = arith.remui %tid, %items : i64\n";
    } else {
        t += "    %lane = arith.remui %tid, %lanes : i64\n";
        t += "    %item = arith.divui %tid, %lanes : i64\n";
    }
    t
}

impl<'g> Lower<'g> {
    /// `%active`, and for kept outputs also lane 0: the stores a cooperative kernel's thread
    /// makes (see [`Coop`]).
    pub(super) fn coop_guard(&mut self, lane0: bool) -> String {
        if !lane0 {
            return "%active".into();
        }
        let zero = self.b.i64(0);
        let first = self.b.op(&format!("arith.cmpi eq, %lane, {zero} : i64"));
        self.b.op(&format!("arith.andi {first}, %active : i1"))
    }

    /// The shared-memory slot of component `c` for thread index `tid` (a generic pointer).
    pub(super) fn smem_slot(&mut self, c: usize, tid: &str) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>");
        let p = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        let off = self.b.i64((c * COOP_BLOCK) as i64);
        let i = self.b.op(&format!("arith.addi {tid}, {off} : i64"));
        self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// The group's accumulators combined (see [`Coop`]): every lane gets the total, the same
    /// bits in every lane and on every run (a fixed tree).
    pub(super) fn group_combine(
        &mut self,
        acc: &dyn Combine,
        vals: &[String],
    ) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        if coop.columns {
            self.group_combine_smem(acc, vals)
        } else {
            self.group_combine_warps(acc, vals)
        }
    }

    /// Row groups (a multiple of 32 consecutive threads, whole warps): a butterfly of warp
    /// shuffles (xor 16, 8, 4, 2, 1) gives every lane of a warp its warp's total; with more
    /// than one warp to the group, lane 0 of each warp writes it to its shared-memory slot and
    /// after one barrier every thread folds its group's warp totals (a tree in registers). At
    /// each step the lower lane's value is the left operand, so all lanes compute the same
    /// tree as the shared-memory one (pairs `i`, `i + s`, halving `s`); with one warp to a
    /// group the bits are the same as that tree's.
    ///
    /// Shared memory holds two sets of warp slots, used alternately by successive combines:
    /// a combine's slots are rewritten two combines later, after the next one's barrier (all
    /// reads done); the kernel's first combine waits for a barrier first (the previous work
    /// item's last combine may have used the same set).
    pub(super) fn group_combine_warps(
        &mut self,
        acc: &dyn Combine,
        vals: &[String],
    ) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        debug_assert!(coop.lanes.is_multiple_of(WARP), "row groups are whole warps");
        let tys = acc.tys().to_vec();
        let set = self.combines % 2;
        let first_combine = self.combines == 0;
        self.combines += 1;
        // Within the warp.
        let m31 = self.b.i64((WARP - 1) as i64);
        let wlane = self.b.op(&format!("arith.andi %lane, {m31} : i64"));
        let zero = self.b.i64(0);
        let mut cur: Vec<String> = vals.to_vec();
        let mut s = WARP / 2;
        while s > 0 {
            let other: Vec<String> =
                cur.iter().zip(&tys).map(|(v, t)| self.shfl_xor(v, t, s)).collect();
            let sv = self.b.i64(s as i64);
            let bit = self.b.op(&format!("arith.andi {wlane}, {sv} : i64"));
            let upper = self.b.op(&format!("arith.cmpi ne, {bit}, {zero} : i64"));
            let mut lo = Vec::new();
            let mut hi = Vec::new();
            for ((m, o), t) in cur.iter().zip(&other).zip(&tys) {
                lo.push(self.b.op(&format!("arith.select {upper}, {o}, {m} : {t}")));
                hi.push(self.b.op(&format!("arith.select {upper}, {m}, {o} : {t}")));
            }
            cur = acc.combine(&mut self.b, &lo, &hi)?;
            s /= 2;
        }
        let warps = coop.lanes / WARP;
        if warps == 1 {
            return Ok(cur);
        }
        // Across the group's warps, through shared memory.
        if first_combine {
            self.b.stmt("nvvm.barrier0");
        }
        let c5 = self.b.i64(WARP.trailing_zeros() as i64);
        let warp = self.b.op(&format!("arith.shrui %tid, {c5} : i64"));
        let lead = self.b.op(&format!("arith.cmpi eq, {wlane}, {zero} : i64"));
        self.open_if(&lead);
        for (c, (v, t)) in cur.iter().zip(&tys).enumerate() {
            let slot = self.warp_slot(c, set, &warp);
            self.b.stmt(&format!("llvm.store {v}, {slot} : {t}, !llvm.ptr"));
        }
        self.close();
        self.b.stmt("nvvm.barrier0");
        // The group's first warp: the thread's warp less its warp within the group.
        let lw = self.b.op(&format!("arith.shrui %lane, {c5} : i64"));
        let base = self.b.op(&format!("arith.subi {warp}, {lw} : i64"));
        let mut totals: Vec<Vec<String>> = Vec::with_capacity(warps);
        for w in 0..warps {
            let wi = self.b.i64(w as i64);
            let idx = self.b.op(&format!("arith.addi {base}, {wi} : i64"));
            let mut comps = Vec::new();
            for (c, t) in tys.iter().enumerate() {
                let slot = self.warp_slot(c, set, &idx);
                // Not CSE'd: a fresh load after the barrier.
                let n = self.b.fresh();
                self.b.stmt(&format!("{n} = llvm.load {slot} : !llvm.ptr -> {t}"));
                comps.push(n);
            }
            totals.push(comps);
        }
        let mut s = warps / 2;
        while s > 0 {
            for i in 0..s {
                totals[i] = acc.combine(&mut self.b, &totals[i], &totals[i + s])?;
            }
            s /= 2;
        }
        Ok(totals.swap_remove(0))
    }

    /// `nvvm.shfl.sync bfly` of one value by `offset` lanes (xor), through 32-bit pieces: a
    /// 64-bit value in two, a narrower integer widened.
    pub(super) fn shfl_xor(&mut self, v: &str, ty: &str, offset: usize) -> String {
        self.shfl(Shfl::Bfly, v, ty, offset)
    }

    /// `nvvm.shfl.sync` of one value (every lane of the warp takes part): `Bfly` from lane
    /// `lane ^ arg`, `Up` from lane `lane - arg` (a lane below `arg` keeps its own), `Idx` from
    /// lane `arg`. Through 32-bit pieces: a 64-bit value in two, a narrower integer widened.
    pub(super) fn shfl(&mut self, mode: Shfl, v: &str, ty: &str, arg: usize) -> String {
        let mask = self.b.constant("-1", "i32");
        // PTX's `c` operand: the segment's last lane, or for `up` its first.
        let clamp = self.b.constant(if mode == Shfl::Up { "0" } else { "31" }, "i32");
        let off = self.b.constant(&arg.to_string(), "i32");
        let kind = match mode {
            Shfl::Bfly => "bfly",
            Shfl::Up => "up",
            Shfl::Idx => "idx",
        };
        let shfl = |b: &mut Builder, x: &str, t: &str| -> String {
            let n = b.fresh();
            b.stmt(&format!(
                "{n} = nvvm.shfl.sync {kind} {mask}, {x}, {off}, {clamp} : {t} -> {t}"
            ));
            n
        };
        match ty {
            "i32" | "f32" => shfl(&mut self.b, v, ty),
            "i1" | "i8" | "i16" => {
                let w = self.b.op(&format!("arith.extui {v} : {ty} to i32"));
                let r = shfl(&mut self.b, &w, "i32");
                self.b.op(&format!("arith.trunci {r} : i32 to {ty}"))
            }
            "i64" | "f64" => {
                let x = if ty == "f64" {
                    self.b.op(&format!("arith.bitcast {v} : f64 to i64"))
                } else {
                    v.to_string()
                };
                let lo = self.b.op(&format!("arith.trunci {x} : i64 to i32"));
                let c32 = self.b.i64(32);
                let hs = self.b.op(&format!("arith.shrui {x}, {c32} : i64"));
                let hi = self.b.op(&format!("arith.trunci {hs} : i64 to i32"));
                let lo = shfl(&mut self.b, &lo, "i32");
                let hi = shfl(&mut self.b, &hi, "i32");
                let lo = self.b.op(&format!("arith.extui {lo} : i32 to i64"));
                let hi = self.b.op(&format!("arith.extui {hi} : i32 to i64"));
                let hi = self.b.op(&format!("arith.shli {hi}, {c32} : i64"));
                let x = self.b.op(&format!("arith.ori {hi}, {lo} : i64"));
                if ty == "f64" {
                    self.b.op(&format!("arith.bitcast {x} : i64 to f64"))
                } else {
                    x
                }
            }
            other => unreachable!("an accumulator of type {other}"),
        }
    }

    /// The shared-memory slot of component `c` of warp `warp`'s total in slot set `set` (see
    /// [`Lower::group_combine_warps`]).
    pub(super) fn warp_slot(&mut self, c: usize, set: usize, warp: &str) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_smem : !llvm.ptr<3>");
        let p = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        let off = self.b.i64(((2 * c + set) * BLOCK_WARPS) as i64);
        let i = self.b.op(&format!("arith.addi {warp}, {off} : i64"));
        self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// Column groups (lanes `items` threads apart, in several warps): a tree in shared memory,
    /// a barrier per halving step.
    pub(super) fn group_combine_smem(
        &mut self,
        acc: &dyn Combine,
        vals: &[String],
    ) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        let tys = acc.tys().to_vec();
        let lstride = coop.items;
        self.b.stmt("nvvm.barrier0");
        for (c, (v, t)) in vals.iter().zip(&tys).enumerate() {
            let slot = self.smem_slot(c, "%tid");
            self.b.stmt(&format!("llvm.store {v}, {slot} : {t}, !llvm.ptr"));
        }
        self.b.stmt("nvvm.barrier0");
        let mut s = coop.lanes / 2;
        while s > 0 {
            let sv = self.b.i64(s as i64);
            let cond = self.b.op(&format!("arith.cmpi ult, %lane, {sv} : i64"));
            self.open_if(&cond);
            let off = self.b.i64((s * lstride) as i64);
            let other_tid = self.b.op(&format!("arith.addi %tid, {off} : i64"));
            let mut mine = Vec::new();
            let mut other = Vec::new();
            let mut slots = Vec::new();
            for (c, t) in tys.iter().enumerate() {
                let a = self.smem_slot(c, "%tid");
                let o = self.smem_slot(c, &other_tid);
                mine.push(self.b.op(&format!("llvm.load {a} : !llvm.ptr -> {t}")));
                other.push(self.b.op(&format!("llvm.load {o} : !llvm.ptr -> {t}")));
                slots.push(a);
            }
            let r = acc.combine(&mut self.b, &mine, &other)?;
            for ((v, a), t) in r.iter().zip(&slots).zip(&tys) {
                self.b.stmt(&format!("llvm.store {v}, {a} : {t}, !llvm.ptr"));
            }
            self.close();
            self.b.stmt("nvvm.barrier0");
            s /= 2;
        }
        // Lane 0's slot holds the total.
        let ls = self.b.i64(lstride as i64);
        let back = self.b.op(&format!("arith.muli %lane, {ls} : i64"));
        let first = self.b.op(&format!("arith.subi %tid, {back} : i64"));
        let mut out = Vec::new();
        for (c, t) in tys.iter().enumerate() {
            let a = self.smem_slot(c, &first);
            // Not CSE'd with the loads above: a fresh load after the barrier.
            let n = self.b.fresh();
            self.b.stmt(&format!("{n} = llvm.load {a} : !llvm.ptr -> {t}"));
            out.push(n);
        }
        Ok(out)
    }

    /// Opens a cooperative kernel's loop over the flattened reduced `axes` of `shape`,
    /// `r = lane, lane + lanes, ...`, with accumulators `args` (starting at `init`, of types
    /// `tys`). Returns `r`, the full index (`kept` indices on the other axes) and the loop's
    /// results.
    pub(super) fn open_lane_loop(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        args: &[String],
        init: &[String],
        tys: &[&str],
    ) -> (String, Vec<String>, Vec<String>) {
        let coop = self.coop.expect("a cooperative kernel");
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let total = self.b.param(numel(&reduced_shape) as i64);
        let lanes = self.b.i64(coop.lanes as i64);
        // A split kernel's block folds one contiguous chunk of the reduced elements.
        let (lo, hi) = if self.split.is_some() {
            let (base, hi) = self.split_range(&total, 1);
            (self.b.op(&format!("arith.addi {base}, %lane : i64")), hi)
        } else {
            ("%lane".to_string(), total)
        };
        let r = self.b.fresh();
        let header = if init.is_empty() {
            format!("scf.for {r} = {lo} to {hi} step {lanes} : i64")
        } else {
            let iter: Vec<String> =
                args.iter().zip(init).map(|(a, i)| format!("{a} = {i}")).collect();
            format!(
                "scf.for {r} = {lo} to {hi} step {lanes} iter_args({}) -> ({}) : i64",
                iter.join(", "),
                tys.join(", ")
            )
        };
        let results = self.open(init.len(), &header);
        let full = self.full_index(shape, axes, kept, &r);
        (r, full, results)
    }

    /// A reduction over the region's own axes shared by the lanes of a cooperative kernel:
    /// each lane folds the elements `lane, lane + lanes, ...` of the flattened reduced axes,
    /// then the group combines (see [`Lower::group_combine`]).
    pub(super) fn emit_reduction_coop(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        let node = self.body.node(id);
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let acc = Acc::new(node.op, self.body.node(input).dtype)?;
        let init = acc.init(&mut self.b);
        let tys = acc.tys.clone();
        let (r, full, args, results) = self.open_coop_fold(id, ix, &init, &tys)?;
        let full_ix = Ix { dims: Some(full.clone()), flat: None };
        let v = self.emit(input, &full_ix)?;
        self.row_cache_stage(&full_ix, &r)?;
        let staged: Vec<(NodeId, usize)> =
            self.staged.iter().filter(|s| Some(s.2) == self.hoisting).map(|s| (s.0, s.1)).collect();
        for (e, k) in staged {
            if let Some(val) = self.lookup(&(e, full_ix.key())) {
                let pos = ravel(&mut self.b, &full, &in_shape);
                self.open_if("%active");
                store(&mut self.b, &Self::out_ptr(k), &pos, &val);
                self.close();
            }
        }
        let next = acc.step(&mut self.b, &args, &v, &r)?;
        self.yield_(&next, &tys);
        self.close();
        let total = self.group_combine(&acc, &results)?;
        Ok(acc.finish(&mut self.b, &total, node.dtype)?)
    }

    /// Two reductions shared by the lanes of a cooperative kernel in one pass over the row (see
    /// [`Pair`] and [`Lower::emit_reduction_coop`]). The lane loop takes [`PAIR_UNROLL`]
    /// elements a step (`j + lane + k·lanes`: their loads in flight together, and a softmax's
    /// rescale once per step, not per element, with no branch to diverge on), then the
    /// elements past the last whole step one at a time: the positions of the row cache's fill.
    pub(super) fn emit_pair_coop(&mut self, p: &Pair, ix: &Ix) -> Result<(Val, Val), Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        let shift = self.pair_prelude(p, ix)?;
        let init = p.init(&mut self.b);
        let tys = p.combiner().tys().to_vec();
        let node = self.body.node(p.first());
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = self.body.node(node.inputs[0]).shape.clone();
        let kept = self.kept_index(p.first(), ix)?;
        let total = self.reduced_count(p.first());
        let step = self.b.i64((PAIR_UNROLL * coop.lanes) as i64);
        let zero = self.b.i64(0);
        let steps = self.b.op(&format!("arith.divui {total}, {step} : i64"));
        let whole = self.b.op(&format!("arith.muli {steps}, {step} : i64"));
        // Whole steps: every thread's elements in bounds.
        let (j, args, results) = self.open_for_step(&zero, &whole, Some(&step), &init, &tys);
        let base = self.b.op(&format!("arith.addi {j}, %lane : i64"));
        let mut ixs = Vec::with_capacity(PAIR_UNROLL);
        for k in 0..PAIR_UNROLL {
            let off = self.b.i64((k * coop.lanes) as i64);
            let r = self.b.op(&format!("arith.addi {base}, {off} : i64"));
            let full = self.full_index(&in_shape, axes, &kept, &r);
            self.row_cache_pass(&full, &r)?;
            ixs.push(Ix { dims: Some(full), flat: None });
        }
        let next = self.pair_chunk(p, &args, &ixs, shift.as_deref())?;
        self.yield_(&next, &tys);
        self.close();
        // The rest, one element at a time.
        let start = self.b.op(&format!("arith.addi {whole}, %lane : i64"));
        let lanes = self.b.i64(coop.lanes as i64);
        let (r, args, results) = self.open_for_step(&start, &total, Some(&lanes), &results, &tys);
        let full = self.full_index(&in_shape, axes, &kept, &r);
        self.row_cache_pass(&full, &r)?;
        let next =
            self.pair_step(p, &args, &Ix { dims: Some(full), flat: None }, shift.as_deref())?;
        self.yield_(&next, &tys);
        self.close();
        let total = self.group_combine(p.combiner(), &results)?;
        self.pair_finish(p, &total, ix, shift.as_deref())
    }

    /// Elements `ixs` of a pair's fold at once: a softmax's max raised by all of them, its sum
    /// rescaled once (no branch: `s · exp(m - m')`, the factor 1 where the max stayed), then
    /// their terms added; a layer norm's sums element after element.
    pub(super) fn pair_chunk(
        &mut self,
        p: &Pair,
        args: &[String],
        ixs: &[Ix],
        shift: Option<&str>,
    ) -> Result<Vec<String>, Stop> {
        match p {
            Pair::Softmax(on) => {
                let mut m = args[0].clone();
                for ix in ixs {
                    let x = self.emit(on.x, ix)?;
                    m = on.raise(&mut self.b, &m, &x);
                }
                let mut s = on.rescaled(&mut self.b, &args[1], &args[0], &m)?;
                for e in &self.online_terms(on, &m, ixs)? {
                    s = on.add(&mut self.b, &s, e, &m)?;
                }
                Ok(vec![m, s])
            }
            Pair::Moments(mo) => {
                self.row_moments = true;
                let mut acc = args.to_vec();
                for ix in ixs {
                    let x = self.emit(mo.x, ix)?;
                    acc = mo.step(&mut self.b, &acc, &x, shift.expect("a layer norm's shift"))?;
                }
                Ok(acc)
            }
        }
    }

    /// The full index of element `r` of the flattened reduced `axes` of `shape` (row-major),
    /// the other axes at `kept`.
    pub(super) fn full_index(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        r: &str,
    ) -> Vec<String> {
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let ivs = unravel(&mut self.b, r, &reduced_shape);
        let (mut ki, mut ri) = (kept.iter(), ivs.iter());
        (0..shape.len())
            .map(|a| {
                if axes.contains(&a) {
                    ri.next().unwrap().clone()
                } else {
                    ki.next().unwrap().clone()
                }
            })
            .collect()
    }

    /// Opens the lane loop of reduction `id` at index `ix` of its result (see
    /// [`Lower::open_lane_loop`]), folding `init` (of types `tys`), with the row cache's
    /// inputs of this pass read at its top. Returns the element `r`, the input's full index,
    /// the loop's accumulators and its results.
    #[allow(clippy::type_complexity)]
    pub(super) fn open_coop_fold(
        &mut self,
        id: NodeId,
        ix: &Ix,
        init: &[String],
        tys: &[&str],
    ) -> Result<(String, Vec<String>, Vec<String>, Vec<String>), Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = self.body.node(node.inputs[0]).shape.clone();
        let kept = self.kept_index(id, ix)?;
        let args: Vec<String> = init.iter().map(|_| self.b.fresh()).collect();
        let (r, full, results) = self.open_lane_loop(&in_shape, axes, &kept, &args, init, tys);
        self.row_cache_pass(&full, &r)?;
        Ok((r, full, args, results))
    }

    /// The output pass of a cooperative row kernel: the outputs of the full shape (`outs`:
    /// output index and node) at every element of the work item's row (`kept`), each lane
    /// taking the elements `lane, lane + lanes, ...`. The lane loop takes [`write_unroll`]
    /// elements a step, all their values computed (their loads of other operands, a layer
    /// norm's γ and β, in flight together) before any is stored; then the elements past the
    /// last whole step one at a time.
    pub(super) fn coop_output_pass(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        outs: &[(usize, NodeId)],
    ) -> Result<(), Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        let reduced: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let total = self.b.param(numel(&reduced) as i64);
        let unroll = write_unroll();
        let step = self.b.i64((unroll * coop.lanes) as i64);
        let zero = self.b.i64(0);
        let steps = self.b.op(&format!("arith.divui {total}, {step} : i64"));
        let whole = self.b.op(&format!("arith.muli {steps}, {step} : i64"));
        // Whole steps: every thread's elements in bounds.
        let (j, _, _) = self.open_for_step(&zero, &whole, Some(&step), &[], &[]);
        let base = self.b.op(&format!("arith.addi {j}, %lane : i64"));
        let rs: Vec<String> = (0..unroll)
            .map(|k| {
                let off = self.b.i64((k * coop.lanes) as i64);
                self.b.op(&format!("arith.addi {base}, {off} : i64"))
            })
            .collect();
        self.output_elements(shape, axes, kept, outs, &rs)?;
        self.close();
        // The rest, one element at a time.
        let start = self.b.op(&format!("arith.addi {whole}, %lane : i64"));
        let lanes = self.b.i64(coop.lanes as i64);
        let (r, _, _) = self.open_for_step(&start, &total, Some(&lanes), &[], &[]);
        self.output_elements(shape, axes, kept, outs, &[r])?;
        self.close();
        Ok(())
    }

    /// At position `pos` (index `ix`) of an output pass: the staged values (outputs a
    /// reduction pass wrote) read back from their outputs and memoised, rather than computed
    /// again.
    pub(super) fn read_back_staged(&mut self, pos: &str, ix: &Ix) {
        for (e, k, _) in self.staged.clone() {
            let v = load(&mut self.b, &Self::out_ptr(k), pos, self.body.node(e).dtype);
            self.memo.last_mut().expect("a memo scope").insert((e, ix.key()), v);
        }
    }

    /// Elements `rs` of the row's output pass: every value computed, then stored. On the GPU
    /// (`KILN_GPU_ROW_DIV=on`) the range checks of the step's float divisions are gathered
    /// (see [`crate::codegen::division::divide`]): the values their fast forms give, or where
    /// any check fails, all of them again with IEEE divisions, in one branch.
    fn output_elements(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        outs: &[(usize, NodeId)],
        rs: &[String],
    ) -> Result<(), Stop> {
        // The step's values in a memo scope of their own, which the slow path sets aside.
        self.memo.push(HashMap::new());
        let stores = self.step_values(shape, axes, kept, outs, rs);
        self.memo.pop();
        for (k, pos, v) in stores? {
            store(&mut self.b, &Self::out_ptr(k), &pos, &v);
        }
        Ok(())
    }

    /// The values of one step of the output pass (elements `rs`), computed in the memo scope
    /// [`Self::output_elements`] opened: on the GPU with the row division's fast path, the
    /// step's divisions range-checked by one branch whose other side divides exactly.
    fn step_values(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        outs: &[(usize, NodeId)],
        rs: &[String],
    ) -> Result<Vec<(usize, String, Val)>, Stop> {
        let gather = self.b.target == Target::Gpu && kiln_cache::config().gpu_row_div >= 2;
        let outer = self.b.gather_div_checks(gather);
        let fast = self.output_values(shape, axes, kept, outs, rs);
        let checks = self.b.restore_div_checks(outer);
        let mut stores = fast?;
        if let Some((first, rest)) = checks.split_first() {
            self.row_div = true;
            let mut ok = first.clone();
            for c in rest {
                ok = self.b.op(&format!("arith.andi {ok}, {c} : i1"));
            }
            let parts = |stores: &[(usize, String, Val)]| -> (Vec<String>, Vec<&'static str>) {
                let mut names = Vec::new();
                let mut tys = Vec::new();
                for (_, _, v) in stores {
                    names.push(v.ssa.clone());
                    tys.push(v.ty());
                    if let Some(im) = &v.im {
                        names.push(im.clone());
                        tys.push(v.ty());
                    }
                }
                (names, tys)
            };
            let (names, tys) = parts(&stores);
            let results = self.b.open(names.len(), &format!("scf.if {ok} -> ({})", tys.join(", ")));
            self.b.stmt(&format!("scf.yield {} : {}", names.join(", "), tys.join(", ")));
            self.b.next_region("else");
            let step = std::mem::take(self.memo.last_mut().expect("the step's scope"));
            self.b.div_exact = true;
            let slow = self.output_values(shape, axes, kept, outs, rs);
            self.b.div_exact = false;
            *self.memo.last_mut().expect("the step's scope") = step;
            let slow = slow?;
            let (names, tys) = parts(&slow);
            self.b.stmt(&format!("scf.yield {} : {}", names.join(", "), tys.join(", ")));
            self.b.close();
            let mut at = results.into_iter();
            for (_, _, v) in stores.iter_mut() {
                v.ssa = at.next().expect("a result per part");
                if v.im.is_some() {
                    v.im = at.next();
                }
            }
        }
        Ok(stores)
    }

    /// The values of elements `rs` of the row's output pass: (output, position, value) each.
    fn output_values(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
        outs: &[(usize, NodeId)],
        rs: &[String],
    ) -> Result<Vec<(usize, String, Val)>, Stop> {
        let mut values = Vec::with_capacity(rs.len() * outs.len());
        for r in rs {
            let full = self.full_index(shape, axes, kept, r);
            self.row_cache_pass(&full, r)?;
            let pos = ravel(&mut self.b, &full, shape);
            let ix = Ix { dims: Some(full), flat: Some(pos.clone()) };
            self.read_back_staged(&pos, &ix);
            for &(k, o) in outs {
                let v = self.emit(o, &ix)?;
                values.push((k, pos.clone(), v));
            }
        }
        Ok(values)
    }
}

/// Blocks a multiprocessor holds at once (launch bounds) of a row kernel whose output pass
/// divides by a row's value: 5 (registers capped at 48 for blocks of 256 threads), 4 (64)
/// where its row pass folds float64 moments (layer norm). Measured on an H200 (session 24):
/// layer norm with γ and β 0.160 ms at 4 blocks, 0.181 without bounds (80 registers, three
/// blocks), 0.187 at 5 and 0.216 at 6 (spills); softmax 0.170 at 5, 0.178-0.181 at 4.
pub(super) fn row_div_min_blocks(moments: bool) -> usize {
    if moments {
        4
    } else {
        5
    }
}

/// Elements per thread and step of a cooperative row kernel's output pass.
pub(super) const WRITE_UNROLL: usize = 4;

/// `KILN_GPU_WRITE_UNROLL` = 1, 2, 4 or 8 (default [`WRITE_UNROLL`]). It changes the kernel's
/// text, so its cache key.
pub(super) fn write_unroll() -> usize {
    kiln_cache::config().gpu_write_unroll.unwrap_or(WRITE_UNROLL)
}
