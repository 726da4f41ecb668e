//! Kernel shapes of reduction regions: host rows and blocks, GPU row groups and column groups
//! ([`Lower::reduction`] picks one).

use super::*;

/// A reduction computed ahead of its uses, per work item.
#[derive(Clone, Debug)]
pub(super) enum Hoisted {
    /// Row mode: the value.
    Val(Val),
    /// Block mode: one value per work item of the block, in a stack array.
    Scratch { ptr: String, dt: DType },
}

/// Work items a block-mode kernel handles together (the size of its stack arrays).
pub(super) const BLOCK: usize = 256;

impl<'g> Lower<'g> {
    /// The kernel of a reduction region over `shape`, reducing `axes`: in block mode when the
    /// last axis is kept and the region's main input is contiguous along it (column sums: a
    /// block of columns is reduced row after row, reading memory in order), else one work item
    /// after another (row mode).
    pub(super) fn reduction(&mut self, shape: &[usize], axes: &[usize]) -> Result<(), Stop> {
        let last = shape.len().wrapping_sub(1);
        let blocked = !axes.is_empty() && !shape.is_empty() && !axes.contains(&last) && {
            let strides = input_strides(self.body, shape);
            match strides.iter().max_by_key(|(bytes, _)| *bytes) {
                Some((_, st)) if st[last].abs() > 1 => !axes.iter().any(|&a| st[a].abs() == 1),
                _ => true,
            }
        };
        if self.b.target == Target::Gpu {
            let reduced: usize = axes.iter().map(|&a| shape[a]).product();
            if !axes.is_empty() && reduced > 1 {
                self.coop = Some(if blocked {
                    Coop { lanes: 8, items: COOP_BLOCK / 8, columns: true }
                } else {
                    let lanes = if reduced >= 2048 {
                        COOP_BLOCK
                    } else if reduced >= 256 {
                        64
                    } else {
                        32
                    };
                    Coop { lanes, items: COOP_BLOCK / lanes, columns: false }
                });
                let coop = self.coop.expect("set above");
                let groups = (numel(shape) / reduced.max(1)).div_ceil(coop.items);
                if groups < SPLIT_BLOCKS / 2 && reduced >= SPLIT_MIN_REDUCED {
                    let by_work = reduced / (coop.lanes * SPLIT_MIN_PER_LANE);
                    let splits = (SPLIT_BLOCKS / groups.max(1)).min(by_work).min(1024);
                    if splits >= 2 {
                        self.split = Some(splits);
                    }
                }
            }
            return self.reduction_rows(shape, axes);
        }
        if blocked {
            self.reduction_blocks(shape, axes)
        } else {
            self.reduction_rows(shape, axes)
        }
    }

    /// Row mode (see [`Lower::reduction`]).
    pub(super) fn reduction_rows(&mut self, shape: &[usize], axes: &[usize]) -> Result<(), Stop> {
        let kept_axes: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
        let kept_shape: Vec<usize> = kept_axes.iter().map(|&a| shape[a]).collect();
        let keep_ones: Vec<usize> =
            (0..shape.len()).map(|a| if axes.contains(&a) { 1 } else { shape[a] }).collect();
        enum Kind {
            Kept { keepdims: bool },
            Full,
        }
        let outs: Vec<NodeId> = self.body.outputs().to_vec();
        let mut kinds = Vec::new();
        for &o in &outs {
            let s = self.body.node(o).shape.as_slice();
            kinds.push(if s == shape && !axes.is_empty() {
                Kind::Full
            } else if s == kept_shape.as_slice() {
                Kind::Kept { keepdims: false }
            } else if s == keep_ones.as_slice() {
                Kind::Kept { keepdims: true }
            } else {
                return Err(Unsupported::new(
                    None,
                    format!("an output of shape {s:?} in a reduction over {shape:?} axes {axes:?}"),
                )
                .into());
            });
        }
        self.work_items = numel(&kept_shape);
        let body = self.body;
        let level1: Vec<NodeId> = body
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(&n.attrs, Attrs::Reduce { axes: ra, .. } if ra.as_slice() == axes && body.node(n.inputs[0]).shape.as_slice() == shape))
            .map(|(i, _)| NodeId(i as u32))
            .collect();
        // A split kernel computes only reductions over the region's space and kept outputs.
        let only_level1 =
            body.nodes().iter().filter(|n| n.op.is_reduction()).count() == level1.len();
        if kinds.iter().any(|k| matches!(k, Kind::Full)) || !only_level1 {
            self.split = None;
        }
        let full_nodes: Vec<NodeId> = outs
            .iter()
            .zip(&kinds)
            .filter(|(_, k)| matches!(k, Kind::Full))
            .map(|(&o, _)| o)
            .collect();
        // Softmaxes fold their max and sum in one pass, layer norms their sum and sum of
        // squares; the passes over the row are then the other reductions over the region's
        // space (each pair's at its first).
        let pairs = if self.online && self.split.is_none() && !axes.is_empty() {
            Pair::find(body, shape, &keep_ones, &level1, self.b.math, self.b.target)
        } else {
            Vec::new()
        };
        let level1: Vec<NodeId> =
            level1.into_iter().filter(|&id| !pairs.iter().any(|p| p.second() == id)).collect();
        self.row_cache = self.row_cache_plan(shape, axes, &level1, &full_nodes);
        let (w, _, _) = self.open_for("%start", "%end", &[], &[]);
        if self.split.is_some() {
            // The entry gives the block's split and group (see `gpu_entry`).
            self.split_at = Some(("%split".to_string(), w.clone()));
        }
        self.work = unravel(&mut self.b, &w, &kept_shape);
        let zero = self.b.i64(0);
        let work = self.work.clone();
        // The work item's index in the full shape with the reduced axes at 0 (keepdims form).
        let with_zeros = |work: &[String]| -> Vec<String> {
            let mut it = work.iter();
            (0..shape.len())
                .map(|a| if axes.contains(&a) { zero.clone() } else { it.next().unwrap().clone() })
                .collect()
        };
        // Reductions over the region's own space, once per work item, in body order.
        let full_outputs: Vec<(usize, NodeId)> = outs
            .iter()
            .zip(&kinds)
            .enumerate()
            .filter(|(_, (_, k))| matches!(k, Kind::Full))
            .map(|(k, (&o, _))| (k, o))
            .collect();
        // On the GPU a transcendental is cheaper to compute again than to store and read back
        // (the row is likely still in L2 for the final pass).
        self.staged = if self.b.target == Target::Gpu {
            Vec::new()
        } else {
            staged_values(body, shape, &level1, &full_outputs)
        };
        self.row_cache_fill(shape, axes, &work)?;
        let mut partials = Vec::new();
        for (pass, &id) in level1.iter().enumerate() {
            self.pass = pass;
            let Attrs::Reduce { keepdims, .. } = &body.node(id).attrs else {
                unreachable!("a reduction")
            };
            let dims = if *keepdims { with_zeros(&work) } else { work.clone() };
            self.hoisting = Some(id);
            let ix = Ix { dims: Some(dims), flat: None };
            if let Some(p) = pairs.iter().find(|p| p.first() == id) {
                let (first, second) = if self.coop.is_some() {
                    self.emit_pair_coop(p, &ix)?
                } else {
                    self.emit_pair(p, &ix)?
                };
                self.hoisting = None;
                self.hoisted.insert(p.first(), Hoisted::Val(first));
                self.hoisted.insert(p.second(), Hoisted::Val(second));
                continue;
            }
            if self.split.is_some() {
                partials.push((id, self.split_partial(id, &ix)?));
                self.hoisting = None;
                continue;
            }
            let v = if self.coop.is_some() {
                self.emit_reduction_coop(id, &ix)?
            } else {
                self.emit_reduction(id, &ix)?
            };
            self.hoisting = None;
            self.hoisted.insert(id, Hoisted::Val(v));
        }
        // A split kernel goes on in the item's last block only.
        if self.split.is_some() {
            let last = self.split_last_block();
            self.open_if(&last);
            for (id, (acc, first)) in partials {
                let v = self.split_combine(id, &acc, first)?;
                self.hoisted.insert(id, Hoisted::Val(v));
            }
        }
        // Outputs of the kept shape: one element per work item.
        for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
            if let Kind::Kept { keepdims } = kind {
                let dims = if *keepdims { with_zeros(&work) } else { work.clone() };
                let v = self.emit(o, &Ix { dims: Some(dims), flat: Some(w.clone()) })?;
                if self.coop.is_some() {
                    let guard = self.coop_guard(true);
                    self.open_if(&guard);
                    store(&mut self.b, &Self::out_ptr(k), &w, &v);
                    self.close();
                } else {
                    store(&mut self.b, &Self::out_ptr(k), &w, &v);
                }
            }
        }
        if self.split.is_some() {
            self.close();
        }
        // Outputs of the full shape: one pass over the reduced axes.
        if kinds.iter().any(|k| matches!(k, Kind::Full))
            && self.coop.is_some()
            && self.split.is_none()
        {
            // The lanes share the pass as they shared the reductions (inactive threads, past
            // the last work item, skip it: tested once, outside the loop).
            self.open_if("%active");
            self.pass = level1.len();
            let full_outs: Vec<(usize, NodeId)> = outs
                .iter()
                .zip(&kinds)
                .enumerate()
                .filter(|(_, (_, kind))| matches!(kind, Kind::Full))
                .map(|(k, (&o, _))| (k, o))
                .collect();
            self.coop_output_pass(shape, axes, &work, &full_outs)?;
            self.close();
        } else if kinds.iter().any(|k| matches!(k, Kind::Full)) {
            let mut full = Vec::new();
            let mut it = work.iter();
            let mut loops = 0;
            if self.coop.is_some() {
                // The lanes share the pass as they shared the reductions (inactive threads,
                // past the last work item, skip it: tested once, outside the loop).
                self.open_if("%active");
                loops += 1;
                let r;
                (r, full, _) = self.open_lane_loop(shape, axes, &work, &[], &[], &[]);
                loops += 1;
                self.pass = level1.len();
                self.row_cache_pass(&full, &r)?;
            } else {
                for (a, &n) in shape.iter().enumerate() {
                    if axes.contains(&a) {
                        let ub = extent(&mut self.b, n);
                        let (iv, _, _) = self.open_for(&zero, &ub, &[], &[]);
                        full.push(iv);
                        loops += 1;
                    } else {
                        full.push(it.next().unwrap().clone());
                    }
                }
            }
            let pos = ravel(&mut self.b, &full, shape);
            let full_ix = Ix { dims: Some(full.clone()), flat: Some(pos.clone()) };
            self.read_back_staged(&pos, &full_ix);
            for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
                if let Kind::Full = kind {
                    let v =
                        self.emit(o, &Ix { dims: Some(full.clone()), flat: Some(pos.clone()) })?;
                    store(&mut self.b, &Self::out_ptr(k), &pos, &v);
                }
            }
            for _ in 0..loops {
                self.close();
            }
        }
        self.close();
        Ok(())
    }

    /// Block mode (see [`Lower::reduction`]): work items `w0 .. w0 + n` along the last (kept)
    /// axis are handled together, each reduction's accumulators in stack arrays indexed by the
    /// work item's place in the block; loops run over the reduced axes outside and the block
    /// inside, so consecutive iterations read consecutive elements.
    pub(super) fn reduction_blocks(&mut self, shape: &[usize], axes: &[usize]) -> Result<(), Stop> {
        let body = self.body;
        self.shape = KernelShape::ReductionBlocks;
        self.min_chunk = BLOCK;
        let r = shape.len();
        let kept_shape: Vec<usize> =
            (0..r).filter(|a| !axes.contains(a)).map(|a| shape[a]).collect();
        let keep_ones: Vec<usize> =
            (0..r).map(|a| if axes.contains(&a) { 1 } else { shape[a] }).collect();
        let outs: Vec<NodeId> = body.outputs().to_vec();
        // Some(keepdims) for kept outputs, None for full ones.
        let mut kinds: Vec<Option<bool>> = Vec::new();
        for &o in &outs {
            let s = body.node(o).shape.as_slice();
            kinds.push(if s == shape {
                None
            } else if s == kept_shape.as_slice() {
                Some(false)
            } else if s == keep_ones.as_slice() {
                Some(true)
            } else {
                return Err(Unsupported::new(
                    None,
                    format!("an output of shape {s:?} in a reduction over {shape:?} axes {axes:?}"),
                )
                .into());
            });
        }
        let level1: Vec<NodeId> = body
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(&n.attrs, Attrs::Reduce { axes: ra, .. } if ra.as_slice() == axes && body.node(n.inputs[0]).shape.as_slice() == shape))
            .map(|(i, _)| NodeId(i as u32))
            .collect();
        let full_outputs: Vec<(usize, NodeId)> = outs
            .iter()
            .zip(&kinds)
            .enumerate()
            .filter(|(_, (_, k))| k.is_none())
            .map(|(k, (&o, _))| (k, o))
            .collect();
        self.staged = staged_values(body, shape, &level1, &full_outputs);
        // Stack arrays: each reduction's accumulator components, then its final value.
        let mut scratch: Vec<(NodeId, Acc, Vec<String>, String)> = Vec::new();
        for &id in &level1 {
            let node = body.node(id);
            let acc = Acc::new(node.op, body.node(node.inputs[0]).dtype)?;
            let ptrs: Vec<String> =
                acc.tys.clone().iter().map(|t| self.b.alloca(BLOCK, t)).collect();
            let fin = self.b.alloca(BLOCK, work_ty(node.dtype)?);
            scratch.push((id, acc, ptrs, fin));
        }
        let zero = self.b.i64(0);
        let block = self.b.i64(BLOCK as i64);
        let last = extent(&mut self.b, shape[r - 1]);
        // Blocks: from w0, to the end of w0's row of the kept space, at most BLOCK items.
        let w0 = self.b.fresh();
        let w = self.b.fresh();
        self.open(1, &format!("scf.while ({w0} = %start) : (i64) -> i64"));
        let more = self.b.op(&format!("arith.cmpi slt, {w0}, %end : i64"));
        self.b.stmt(&format!("scf.condition({more}) {w0} : i64"));
        self.memo.pop();
        self.memo.push(HashMap::new());
        self.b.next_region("do");
        self.b.stmt(&format!("^bb0({w}: i64):"));
        let row = self.b.op(&format!("arith.divui {w}, {last} : i64"));
        let j0 = self.b.op(&format!("arith.remui {w}, {last} : i64"));
        let base = self.b.op(&format!("arith.subi {w}, {j0} : i64"));
        let row_end = self.b.op(&format!("arith.addi {base}, {last} : i64"));
        let seg = self.b.op(&format!("arith.minsi {row_end}, %end : i64"));
        let cap = self.b.op(&format!("arith.addi {w}, {block} : i64"));
        let seg = self.b.op(&format!("arith.minsi {seg}, {cap} : i64"));
        let n = self.b.op(&format!("arith.subi {seg}, {w} : i64"));
        let outer = unravel(&mut self.b, &row, &kept_shape[..kept_shape.len() - 1]);
        // The kept index of block item `jj`, and the full index with reduced indices `ivs`.
        let kept_of = |cx: &mut Lower, jj: &str| -> Vec<String> {
            let j = cx.b.op(&format!("arith.addi {j0}, {jj} : i64"));
            let mut k = outer.clone();
            k.push(j);
            k
        };
        let merge = |kept: &[String], ivs: &[String]| -> Vec<String> {
            let (mut ki, mut ri) = (kept.iter(), ivs.iter());
            (0..r)
                .map(|a| {
                    if axes.contains(&a) {
                        ri.next().unwrap().clone()
                    } else {
                        ki.next().unwrap().clone()
                    }
                })
                .collect()
        };
        let with_zeros =
            |kept: &[String]| -> Vec<String> { merge(kept, &vec![zero.clone(); axes.len()]) };
        // Opens the loops over the reduced axes; returns their induction variables.
        let open_reduced = |cx: &mut Lower| -> Vec<String> {
            axes.iter()
                .map(|&a| {
                    let ub = extent(&mut cx.b, shape[a]);
                    cx.open_for(&zero, &ub, &[], &[]).0
                })
                .collect()
        };
        for (id, acc, ptrs, fin) in &scratch {
            let node = body.node(*id);
            let input = node.inputs[0];
            // Initial values.
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let init = acc.init(&mut self.b);
            for ((p, v), t) in ptrs.iter().zip(&init).zip(&acc.tys) {
                let addr = self.b.op(&format!(
                    "llvm.getelementptr inbounds {p}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"
                ));
                self.b.stmt(&format!("llvm.store {v}, {addr} : {t}, !llvm.ptr"));
            }
            self.close();
            // The reduced axes outside, the block inside.
            let ivs = open_reduced(self);
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let kept = kept_of(self, &jj);
            self.work = kept.clone();
            self.block_jj = Some(jj.clone());
            self.hoisting = Some(*id);
            let full = merge(&kept, &ivs);
            let full_ix = Ix { dims: Some(full.clone()), flat: None };
            let v = self.emit(input, &full_ix)?;
            let staged: Vec<(NodeId, usize)> =
                self.staged.iter().filter(|s| s.2 == *id).map(|s| (s.0, s.1)).collect();
            for (e, k) in staged {
                if let Some(val) = self.lookup(&(e, full_ix.key())) {
                    let pos = ravel(&mut self.b, &full, shape);
                    store(&mut self.b, &Self::out_ptr(k), &pos, &val);
                }
            }
            self.hoisting = None;
            let mut cur = Vec::new();
            let mut addrs = Vec::new();
            for (p, t) in ptrs.iter().zip(&acc.tys) {
                let addr = self.b.op(&format!(
                    "llvm.getelementptr inbounds {p}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"
                ));
                cur.push(self.b.op(&format!("llvm.load {addr} : !llvm.ptr -> {t}")));
                addrs.push(addr);
            }
            let reduced_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
            let pos = if acc.needs_pos() {
                ravel(&mut self.b, &ivs, &reduced_shape)
            } else {
                zero.clone()
            };
            let next = acc.step(&mut self.b, &cur, &v, &pos)?;
            for ((v, addr), t) in next.iter().zip(&addrs).zip(&acc.tys) {
                self.b.stmt(&format!("llvm.store {v}, {addr} : {t}, !llvm.ptr"));
            }
            self.close();
            for _ in 0..ivs.len() {
                self.close();
            }
            // Final values.
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let mut cur = Vec::new();
            for (p, t) in ptrs.iter().zip(&acc.tys) {
                let addr = self.b.op(&format!(
                    "llvm.getelementptr inbounds {p}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"
                ));
                cur.push(self.b.op(&format!("llvm.load {addr} : !llvm.ptr -> {t}")));
            }
            let val = acc.finish(&mut self.b, &cur, node.dtype)?;
            let fty = work_ty(node.dtype)?;
            let addr = self.b.op(&format!(
                "llvm.getelementptr inbounds {fin}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {fty}"
            ));
            self.b.stmt(&format!("llvm.store {}, {addr} : {fty}, !llvm.ptr", val.ssa));
            self.close();
            self.hoisted.insert(*id, Hoisted::Scratch { ptr: fin.clone(), dt: node.dtype });
        }
        // Outputs of the kept shape.
        if kinds.iter().any(|k| k.is_some()) {
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let kept = kept_of(self, &jj);
            self.work = kept.clone();
            self.block_jj = Some(jj.clone());
            let wpos = self.b.op(&format!("arith.addi {w}, {jj} : i64"));
            for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
                if let Some(keepdims) = kind {
                    let dims = if *keepdims { with_zeros(&kept) } else { kept.clone() };
                    let v = self.emit(o, &Ix { dims: Some(dims), flat: Some(wpos.clone()) })?;
                    store(&mut self.b, &Self::out_ptr(k), &wpos, &v);
                }
            }
            self.close();
        }
        // Outputs of the full shape.
        if kinds.iter().any(|k| k.is_none()) {
            let ivs = open_reduced(self);
            let (jj, _, _) = self.open_for(&zero, &n, &[], &[]);
            let kept = kept_of(self, &jj);
            self.work = kept.clone();
            self.block_jj = Some(jj.clone());
            let full = merge(&kept, &ivs);
            let pos = ravel(&mut self.b, &full, shape);
            let full_ix = Ix { dims: Some(full.clone()), flat: Some(pos.clone()) };
            self.read_back_staged(&pos, &full_ix);
            for (k, (&o, kind)) in outs.iter().zip(&kinds).enumerate() {
                if kind.is_none() {
                    let v = self.emit(o, &full_ix)?;
                    store(&mut self.b, &Self::out_ptr(k), &pos, &v);
                }
            }
            self.close();
            for _ in 0..ivs.len() {
                self.close();
            }
        }
        self.block_jj = None;
        self.b.stmt(&format!("scf.yield {seg} : i64"));
        self.close();
        Ok(())
    }
}
