//! GPU reductions split across blocks ([`GpuSplit`]): the partials of each block, and the
//! last block's fixed-order combine.

use super::*;

/// A GPU reduction split across blocks: the deterministic two-stage tree of reductions with
/// too few work items to fill the GPU (whole arrays, few rows, few columns). The cooperative
/// kernel's groups of `items` work items (see [`Coop`]) each get `splits` blocks: block `b`
/// (of `groups × splits`, `groups = ceil(work_items / items)`) folds the `b % splits`-th
/// contiguous chunk of the reduced elements of group `b / splits`'s items and writes their
/// partial accumulators to the scratch buffer; the group's last block to finish (an atomic
/// counter per group, counted by thread 0 after a barrier) combines each item's partials in a
/// fixed order and writes the outputs. The same input gives the same bits every run. Row
/// groups read their chunk in 16-byte runs per thread, several loads in flight
/// ([`Lower::split_lane_loop`]). Launch:
/// the kernel's buffers are followed by the scratch buffer (`slots × work_items × splits`
/// 8-byte slots) and the counters (`work_items` u32s, zero before the launch; the last block
/// sets its group's back to zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSplit {
    /// Blocks per work item.
    pub splits: usize,
    /// Accumulator components per work item and block (8 bytes each).
    pub slots: usize,
}

impl GpuSplit {
    /// Bytes of the scratch buffer for `work_items` work items.
    pub fn scratch_bytes(&self, work_items: usize) -> usize {
        8 * self.slots * self.splits * work_items
    }
}

/// Reductions are split across blocks when they would launch fewer than SPLIT_BLOCKS blocks
/// and reduce at least SPLIT_MIN_REDUCED elements per item; the splits bring the grid to about
/// SPLIT_BLOCKS blocks, each lane folding at least SPLIT_MIN_PER_LANE elements.
pub(super) const SPLIT_BLOCKS: usize = 1024;

pub(super) const SPLIT_MIN_REDUCED: usize = 4096;

pub(super) const SPLIT_MIN_PER_LANE: usize = 64;

/// The fences of split reductions (see [`GpuSplit`]): the blocks that exchange partials are of
/// one launch on one device, so a device-scope fence (`fence.acq_rel.gpu`) orders them; the
/// system scope's (`.sys`) would also wait for the host's view of memory.
pub(super) const DEVICE_FENCE: &str = "llvm.fence syncscope(\"device\") acq_rel";

/// Loads a thread of a split row kernel has in flight in its lane loop (see
/// [`Lower::split_lane_loop`]), each of [`SPLIT_VEC_BYTES`]. The kernel alone, sum of 2^26
/// float32 on an H200 (1024 blocks, its cubin linked as kiln links it, `cuLinkAddData`): 0.072
/// ms with 2, 0.070 with 4 (40 registers) and with 8 (42), against 0.118 for the scalar lane
/// loop before it (whose loads that JIT issued one after another) and a device-to-device copy
/// at 4.1 TB/s.
pub(super) const SPLIT_UNROLL: usize = 4;

/// Bytes of consecutive elements a thread of a split row kernel reads at once: a 128-bit load.
pub(super) const SPLIT_VEC_BYTES: usize = 16;

/// The split lane loop's loads in flight per thread, for measuring it (read once per process):
/// `KILN_GPU_SPLIT_UNROLL` = 1, 2, 4 or 8 (default [`SPLIT_UNROLL`]). It changes the kernel's
/// text, so its cache key.
pub(super) fn split_unroll() -> usize {
    kiln_cache::config().gpu_split_unroll.unwrap_or(SPLIT_UNROLL)
}

impl<'g> Lower<'g> {
    /// Whether this block is its group's last to finish stage one (block-uniform, i1): after a
    /// barrier (every item's lane 0 has written and fenced its partials), thread 0 counts the
    /// block in (atomic add on the group's counter) and shares the answer through shared
    /// memory.
    pub(super) fn split_last_block(&mut self) -> String {
        let n = self.split.expect("a split kernel");
        let ns = self.b.param(n as i64);
        self.last_block(&ns, "%group")
    }

    /// Whether this block is the last of `ns` blocks to count itself in on
    /// `%counter[counter]` (block-uniform, i1; see [`Lower::split_last_block`]). The last sets
    /// the counter back to zero (no other block of the launch touches it again): a launch
    /// leaves its counters as it found them, so the executor zeroes a stream's counters once
    /// and keeps them for its later launches.
    pub(super) fn last_block(&mut self, ns: &str, counter: &str) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_flag : !llvm.ptr<3>");
        let flag = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        // Every item's partials are written (and fenced) before thread 0 counts the block in.
        self.b.stmt("nvvm.barrier0");
        let zero = self.b.i64(0);
        let first = self.b.op(&format!("arith.cmpi eq, %tid, {zero} : i64"));
        self.open_if(&first);
        self.b.stmt(DEVICE_FENCE);
        let ctr = self.b.op(&format!(
            "llvm.getelementptr inbounds %counter[{counter}] : (!llvm.ptr, i64) -> !llvm.ptr, i32"
        ));
        let one32 = self.b.op("arith.constant 1 : i32");
        let old = self.b.fresh();
        let add = format!(
            "llvm.atomicrmw add {ctr}, {one32} syncscope(\"device\") acq_rel : !llvm.ptr, i32"
        );
        self.b.stmt(&format!("{old} = {add}"));
        let n32 = self.b.op(&format!("arith.trunci {ns} : i64 to i32"));
        let nm1 = self.b.op(&format!("arith.subi {n32}, {one32} : i32"));
        let last = self.b.op(&format!("arith.cmpi eq, {old}, {nm1} : i32"));
        let last32 = self.b.op(&format!("arith.extui {last} : i1 to i32"));
        self.b.stmt(&format!("llvm.store {last32}, {flag} : i32, !llvm.ptr"));
        self.open_if(&last);
        let zero32 = self.b.op("arith.constant 0 : i32");
        self.b.stmt(&format!("llvm.store {zero32}, {ctr} : i32, !llvm.ptr"));
        self.close();
        self.close();
        self.b.stmt("nvvm.barrier0");
        let v = self.b.fresh();
        self.b.stmt(&format!("{v} = llvm.load {flag} : !llvm.ptr -> i32"));
        let zero32 = self.b.op("arith.constant 0 : i32");
        let last = self.b.op(&format!("arith.cmpi ne, {v}, {zero32} : i32"));
        last
    }

    /// The scratch slot of component `c` of work item `w`'s partial from split `s`.
    pub(super) fn split_slot(&mut self, c: usize, w: &str, s: &str) -> String {
        let (n, items) = (self.split.expect("a split kernel"), self.work_items);
        debug_assert!(items > 0, "work items set by reduction_rows");
        let ns = self.b.param(n as i64);
        let nw = self.b.param(items as i64);
        let cc = self.b.i64(c as i64);
        let a = self.b.op(&format!("arith.muli {cc}, {nw} : i64"));
        let a = self.b.op(&format!("arith.addi {a}, {w} : i64"));
        let a = self.b.op(&format!("arith.muli {a}, {ns} : i64"));
        let i = self.b.op(&format!("arith.addi {a}, {s} : i64"));
        self.b.op(&format!(
            "llvm.getelementptr inbounds %scratch[{i}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ))
    }

    /// The block's range `[lo, hi)` of the reduced elements (`total` of them) in a split
    /// kernel: the `%split`-th chunk of `ceil(total / splits)` elements, rounded up to a
    /// multiple of `step` (a power of two) when it is not 1. A block whose chunk starts past
    /// the end gets an empty range.
    pub(super) fn split_range(&mut self, total: &str, step: usize) -> (String, String) {
        let (s, _) = self.split_at.clone().expect("a split kernel");
        let ns = self.b.param(self.split.expect("a split kernel") as i64);
        let one = self.b.i64(1);
        let t1 = self.b.op(&format!("arith.addi {total}, {ns} : i64"));
        let t2 = self.b.op(&format!("arith.subi {t1}, {one} : i64"));
        let mut chunk = self.b.op(&format!("arith.divui {t2}, {ns} : i64"));
        if step > 1 {
            debug_assert!(step.is_power_of_two());
            // Rounded up by a mask, so LLVM sees the multiple (the loads' alignment).
            let up = self.b.i64(step as i64 - 1);
            let mask = self.b.i64(-(step as i64));
            let c = self.b.op(&format!("arith.addi {chunk}, {up} : i64"));
            chunk = self.b.op(&format!("arith.andi {c}, {mask} : i64"));
        }
        let base = self.b.op(&format!("arith.muli {s}, {chunk} : i64"));
        let end = self.b.op(&format!("arith.addi {base}, {chunk} : i64"));
        let hi = self.b.op(&format!("arith.minui {end}, {total} : i64"));
        if step > 1 {
            return (base.clone(), self.b.op(&format!("arith.maxui {hi}, {base} : i64")));
        }
        (base, hi)
    }

    /// The region inputs `roots` read through elementwise ops alone (not views, not constant
    /// subexpressions): they are read at the roots' own index. Nodes for which `stop` holds
    /// are leaves too (kept, their operands not followed).
    pub(super) fn direct_inputs(
        &self,
        roots: &[NodeId],
        stop: &dyn Fn(NodeId) -> bool,
    ) -> std::collections::BTreeSet<NodeId> {
        let body = self.body;
        let mut seen = std::collections::BTreeSet::new();
        let mut inputs = std::collections::BTreeSet::new();
        let mut stack = roots.to_vec();
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let node = body.node(n);
            if node.op == OpKind::Input || stop(n) {
                inputs.insert(n);
            } else if node.op.is_elementwise() && !self.constant[n.index()] {
                stack.extend(node.inputs.iter().copied());
            }
        }
        inputs
    }

    /// Whether every region input `root` reads is read at `root`'s own flat position (through
    /// elementwise ops and views that keep C order: reshapes, scalar broadcasts), so that a
    /// run of aligned positions of `root` is an aligned run of each input.
    pub(super) fn reads_in_place(&self, root: NodeId) -> bool {
        let body = self.body;
        let mut stack = vec![root];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let node = body.node(n);
            let keeps_order = if node.op.class() == OpClass::View {
                let input = &body.node(node.inputs[0]).shape;
                matches!(node.op, OpKind::Reshape | OpKind::ExpandDims | OpKind::Squeeze)
                    || (node.op == OpKind::BroadcastTo
                        && (*input == node.shape || input.iter().all(|&d| d == 1)))
            } else {
                matches!(node.op.class(), OpClass::Elementwise | OpClass::Leaf)
            };
            if !keeps_order {
                return false;
            }
            if !self.constant[n.index()] {
                stack.extend(node.inputs.iter().copied());
            }
        }
        true
    }

    /// Stage one's lane loop in a split kernel of row groups: the block's chunk of the reduced
    /// elements (a multiple of `lanes × vec × unroll` but in the last block), each step of a
    /// thread taking `vec × unroll` elements, its direct inputs loaded first (`vec` elements
    /// make 16 bytes), then the rest of the chunk one element per lane. In a whole-array
    /// reduction whose inputs are read in place (sum_all), a thread's elements are `unroll`
    /// runs of `vec` consecutive ones, `lanes × vec` apart: LLVM merges each run's loads into
    /// one 128-bit load (the chunks are aligned); `unroll` are in flight. Otherwise (rows of
    /// any length, views) they are `lanes` apart, every load of a warp coalesced, `vec ×
    /// unroll` in flight. A thread folds its elements in increasing position. Returns the
    /// thread's accumulators.
    pub(super) fn split_lane_loop(
        &mut self,
        acc: &Acc,
        input: NodeId,
        in_shape: &[usize],
        axes: &[usize],
        kept: &[String],
        init: &[String],
    ) -> Result<Vec<String>, Stop> {
        let coop = self.coop.expect("a cooperative kernel");
        let tys = acc.tys.clone();
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| in_shape[a]).collect();
        let total = self.b.param(numel(&reduced_shape) as i64);
        let direct = self.direct_inputs(&[input], &|_| false);
        let widest = direct.iter().map(|&i| self.body.node(i).dtype.itemsize()).max().unwrap_or(4);
        let vec = (SPLIT_VEC_BYTES / widest.max(1)).max(1);
        let unroll = split_unroll();
        let step = coop.lanes * vec * unroll;
        let (lo, hi) = self.split_range(&total, step);
        // With the reduced axes last, element `r` of the work item is at `base + r` in C order.
        let n = in_shape.len();
        let trailing = axes.iter().copied().eq(n - axes.len()..n);
        let base = if trailing && !kept.is_empty() {
            let kept_shape: Vec<usize> =
                (0..n).filter(|a| !axes.contains(a)).map(|a| in_shape[a]).collect();
            let k = ravel(&mut self.b, kept, &kept_shape);
            Some(self.b.op(&format!("arith.muli {k}, {total} overflow<nsw, nuw> : i64")))
        } else {
            None
        };
        let ix_of = |cx: &mut Lower, r: &str| -> Ix {
            let ivs = unravel(&mut cx.b, r, &reduced_shape);
            let (mut ki, mut ri) = (kept.iter(), ivs.iter());
            let full = (0..n)
                .map(|a| {
                    if axes.contains(&a) {
                        ri.next().unwrap().clone()
                    } else {
                        ki.next().unwrap().clone()
                    }
                })
                .collect();
            let flat = match (&base, trailing) {
                (Some(b), _) => {
                    Some(cx.b.op(&format!("arith.addi {b}, {r} overflow<nsw, nuw> : i64")))
                }
                (None, true) => Some(r.to_string()),
                (None, false) => None,
            };
            Ix { dims: Some(full), flat }
        };
        let st = self.b.i64(step as i64);
        let span = self.b.op(&format!("arith.subi {hi}, {lo} : i64"));
        let whole = self.b.op(&format!("arith.divui {span}, {st} : i64"));
        let main = self.b.op(&format!("arith.muli {whole}, {st} overflow<nsw, nuw> : i64"));
        let main_end = self.b.op(&format!("arith.addi {lo}, {main} : i64"));
        // Runs of `vec` consecutive elements per thread, or single elements.
        let runs = kept.is_empty() && self.reads_in_place(input);
        let j0 = if runs {
            let vc = self.b.i64(vec as i64);
            let lv = self.b.op(&format!("arith.muli %lane, {vc} overflow<nsw, nuw> : i64"));
            self.b.op(&format!("arith.addi {lo}, {lv} : i64"))
        } else {
            self.b.op(&format!("arith.addi {lo}, %lane : i64"))
        };
        // Whole steps: every element in bounds.
        let (j, args, results) = self.open_for_step(&j0, &main_end, Some(&st), init, &tys);
        let mut at = Vec::with_capacity(unroll * vec);
        for u in 0..unroll {
            for k in 0..vec {
                let off = if runs { u * coop.lanes * vec + k } else { (u * vec + k) * coop.lanes };
                let r = match off {
                    0 => j.clone(),
                    off => {
                        let off = self.b.i64(off as i64);
                        self.b.op(&format!("arith.addi {j}, {off} overflow<nsw, nuw> : i64"))
                    }
                };
                let ix = ix_of(self, &r);
                at.push((r, ix));
            }
        }
        // The loads first, then the values, then the folds (so the loads are in flight
        // together even where the positions go through views).
        for (_, ix) in &at {
            for &i in &direct {
                self.emit(i, ix)?;
            }
        }
        let mut vals = Vec::with_capacity(at.len());
        for (_, ix) in &at {
            vals.push(self.emit(input, ix)?);
        }
        let mut cur = args;
        for ((r, _), v) in at.iter().zip(&vals) {
            cur = acc.step(&mut self.b, &cur, v, r)?;
        }
        self.yield_(&cur, &tys);
        self.close();
        // The rest of the chunk (the last block's), an element per lane.
        let lanes = self.b.i64(coop.lanes as i64);
        let start = self.b.op(&format!("arith.addi {main_end}, %lane : i64"));
        let (r, args, results) = self.open_for_step(&start, &hi, Some(&lanes), &results, &tys);
        let ix = ix_of(self, &r);
        let v = self.emit(input, &ix)?;
        let next = acc.step(&mut self.b, &args, &v, &r)?;
        self.yield_(&next, &tys);
        self.close_no_unroll();
        Ok(results)
    }

    /// Stage one of a split reduction (see [`GpuSplit`]): the block's partial accumulators of
    /// reduction `id`, written to the scratch buffer by lane 0. Returns the accumulator and
    /// its first slot.
    pub(super) fn split_partial(&mut self, id: NodeId, ix: &Ix) -> Result<(Acc, usize), Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let acc = Acc::new(node.op, self.body.node(input).dtype)?;
        let Attrs::Reduce { keepdims, .. } = &node.attrs else { unreachable!("verified") };
        let dims = ix.dims()?.to_vec();
        let kept: Vec<String> = if *keepdims {
            dims.iter()
                .enumerate()
                .filter(|(k, _)| !axes.contains(k))
                .map(|(_, d)| d.clone())
                .collect()
        } else {
            dims
        };
        let init = acc.init(&mut self.b);
        let tys = acc.tys.clone();
        let results = if self.coop.is_some_and(|c| !c.columns) {
            self.split_lane_loop(&acc, input, &in_shape, axes, &kept, &init)?
        } else {
            let args: Vec<String> = init.iter().map(|_| self.b.fresh()).collect();
            let (r, full, results) =
                self.open_lane_loop(&in_shape, axes, &kept, &args, &init, &tys);
            let v = self.emit(input, &Ix { dims: Some(full), flat: None })?;
            let next = acc.step(&mut self.b, &args, &v, &r)?;
            self.yield_(&next, &tys);
            self.close();
            results
        };
        let total = self.group_combine(&acc, &results)?;
        let first = self.split_slots;
        self.split_slots += tys.len();
        let (s, w) = self.split_at.clone().expect("a split kernel");
        let guard = self.coop_guard(true);
        self.open_if(&guard);
        for (c, (v, t)) in total.iter().zip(&tys).enumerate() {
            let slot = self.split_slot(first + c, &w, &s);
            self.b.stmt(&format!("llvm.store {v}, {slot} : {t}, !llvm.ptr"));
        }
        self.b.stmt(DEVICE_FENCE);
        self.close();
        Ok((acc, first))
    }

    /// Stage two of a split reduction, in the item's last block: the partials of all splits,
    /// folded lane-strided in split order and combined by the block's tree.
    pub(super) fn split_combine(
        &mut self,
        id: NodeId,
        acc: &Acc,
        first: usize,
    ) -> Result<Val, Stop> {
        let n = self.split.expect("a split kernel");
        let (_, w) = self.split_at.clone().expect("a split kernel");
        self.b.stmt(DEVICE_FENCE);
        let tys = acc.tys.clone();
        let init = acc.init(&mut self.b);
        let ns = self.b.param(n as i64);
        let lanes = self.b.i64(self.coop.expect("a cooperative kernel").lanes as i64);
        let (q, args, results) = self.open_for_step("%lane", &ns, Some(&lanes), &init, &tys);
        let mut part = Vec::new();
        for (c, t) in tys.iter().enumerate() {
            let slot = self.split_slot(first + c, &w, &q);
            // Volatile: written by other blocks of this launch; never from a stale L1 line.
            let v = self.b.fresh();
            self.b.stmt(&format!("{v} = llvm.load volatile {slot} : !llvm.ptr -> {t}"));
            part.push(v);
        }
        let next = acc.combine(&mut self.b, &args, &part)?;
        self.yield_(&next, &tys);
        self.close();
        let total = self.group_combine(acc, &results)?;
        Ok(acc.finish(&mut self.b, &total, self.body.node(id).dtype)?)
    }
}
