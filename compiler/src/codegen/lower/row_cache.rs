//! The row cache of cooperative row kernels ([`RowCache`]): inputs that several passes over a
//! row read, copied to shared memory once.

use super::*;

/// Bytes of dynamic shared memory a row cache may take per block: with the static shared
/// memory of a row kernel (under 1 KiB) within the 48 KiB a launch gets without opting in.
pub(super) const ROW_CACHE_BYTES: usize = 44 * 1024;

/// Elements of a row each thread loads at once when filling the row cache (its loads in flight:
/// a lane loop's load is used before the next is issued). On an H200, rows of 8192 float32:
/// softmax 0.220 ms with 4, 0.221 with 8, 0.218 with 16 (0.356 without the cache); layernorm
/// 0.317, 0.268, 0.270 (0.252 without).
pub(super) const ROW_CACHE_UNROLL: usize = 8;

/// The row cache's tuning, for measuring it (read once per process): `KILN_GPU_ROW_CACHE=off`
/// leaves row kernels multi-pass over global memory; a number sets the fill's loads in flight
/// per thread (default [`ROW_CACHE_UNROLL`]). Both change the kernel's text, so its cache key.
pub(super) fn row_cache_setting() -> Option<usize> {
    let c = kiln_cache::config();
    c.gpu_row_cache.then(|| c.gpu_row_cache_unroll.unwrap_or(ROW_CACHE_UNROLL))
}

/// The row cache of a cooperative row kernel (see [`Lower::row_cache_plan`]): the region
/// inputs that several passes over a work item's row read, copied to shared memory before the
/// first pass ([`Lower::row_cache_fill`]: [`ROW_CACHE_UNROLL`] loads in flight per thread) and
/// read from there by the passes. Each thread reads back only the elements it stored (the fill
/// and the lane loops of all passes visit the same positions), so no barrier guards it.
#[derive(Clone, Debug)]
pub(super) struct RowCache {
    /// The cached inputs, largest elements first (each part stays aligned).
    pub(super) inputs: Vec<CachedRow>,
    /// Elements of a row (the reduced axes' size).
    pub(super) row: usize,
    /// Bytes per block: `items × row ×` the sum of the inputs' element sizes.
    pub(super) bytes: usize,
}

#[derive(Clone, Debug)]
pub(super) struct CachedRow {
    /// The `input` node.
    pub(super) node: NodeId,
    /// Its dtype, its register type and that type's size in bytes.
    pub(super) dt: DType,
    pub(super) ty: &'static str,
    pub(super) size: usize,
    /// Bytes of the inputs before it, per row element and work item.
    pub(super) offset: usize,
    /// The passes reading it (see [`Lower::pass`]), in order.
    pub(super) passes: Vec<usize>,
    /// `None` for a region input, copied in by the fill. `Some(p)` for a value the prologue of
    /// reduction pass `p` computes (softmax's `exp(x - max)`): that pass stores it, the later
    /// passes in `passes` read it back instead of computing it again. It may share the slot of
    /// an input no pass after `p` reads (each thread overwrites only elements it has read).
    pub(super) written_in: Option<usize>,
}

impl<'g> Lower<'g> {
    /// The row cache of a cooperative row kernel (not split), if it has a use and fits in
    /// [`ROW_CACHE_BYTES`]. The passes over a work item's row are the reductions over the
    /// region's space (`level1`, in order) and then the pass writing the `full`-shape outputs;
    /// a region input read by two of them or more at the element the pass is at (through
    /// elementwise ops only, not views: the same position in the buffer) is cached. Softmax
    /// reads its input in its max, its sum and its output pass; layer norm in its mean, its
    /// variance and its output pass.
    pub(super) fn row_cache_plan(
        &self,
        shape: &[usize],
        axes: &[usize],
        level1: &[NodeId],
        full: &[NodeId],
    ) -> Option<RowCache> {
        use std::collections::BTreeMap;
        let coop = self.coop?;
        if coop.columns || self.split.is_some() {
            return None;
        }
        row_cache_setting()?;
        let body = self.body;
        let mut passes: Vec<Vec<NodeId>> =
            level1.iter().map(|&id| vec![body.node(id).inputs[0]]).collect();
        if !full.is_empty() {
            passes.push(full.to_vec());
        }
        // Values a reduction's prologue computes that a later pass reads again (see
        // `staged_values`): (node, the pass computing it).
        let outputs: Vec<(usize, NodeId)> = full.iter().copied().enumerate().collect();
        let staged: Vec<(NodeId, usize)> = staged_values(body, shape, level1, &outputs)
            .into_iter()
            .filter_map(|(e, _, r)| Some((e, level1.iter().position(|&l| l == r)?)))
            .collect();
        let mut readers: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
        for (p, roots) in passes.iter().enumerate() {
            // A staged value computed by an earlier pass is read back from the cache: a leaf.
            let stop = |n: NodeId| staged.iter().any(|&(e, q)| e == n && q < p);
            for n in self.direct_inputs(roots, &stop) {
                readers.entry(n).or_default().push(p);
            }
        }
        let mut inputs: Vec<CachedRow> = Vec::new();
        let mut values: Vec<CachedRow> = Vec::new();
        for (node, passes) in readers {
            let dt = body.node(node).dtype;
            let Ok(ty) = work_ty(dt) else { continue };
            let written_in = staged.iter().find(|s| s.0 == node).map(|s| s.1);
            if dt.is_complex() || (written_in.is_none() && passes.len() < 2) {
                continue;
            }
            let size = match ty {
                "i1" | "i8" => 1,
                "i16" => 2,
                "i32" | "f32" => 4,
                _ => 8,
            };
            let row = CachedRow { node, dt, ty, size, offset: 0, passes, written_in };
            if written_in.is_some() {
                values.push(row);
            } else {
                inputs.push(row);
            }
        }
        // Largest elements first (stable: by node otherwise).
        inputs.sort_by_key(|c| std::cmp::Reverse(c.size));
        let mut offset = 0;
        for c in &mut inputs {
            c.offset = offset;
            offset += c.size;
        }
        // A staged value takes the slot of an input of its size that no later pass reads, else
        // a slot of its own.
        let mut taken: Vec<usize> = Vec::new();
        for v in &mut values {
            let p = v.written_in.expect("a staged value");
            let free = inputs.iter().find(|c| {
                c.size == v.size && c.passes.iter().all(|&q| q <= p) && !taken.contains(&c.offset)
            });
            match free {
                Some(c) => {
                    v.offset = c.offset;
                    taken.push(c.offset);
                }
                None => {
                    v.offset = offset;
                    offset += v.size;
                }
            }
        }
        inputs.extend(values);
        let row: usize = axes.iter().map(|&a| shape[a]).product();
        let bytes = coop.items * row * offset;
        (bytes > 0 && bytes <= ROW_CACHE_BYTES).then_some(RowCache { inputs, row, bytes })
    }

    /// Copies the work item's row of each cached input (kept indices `kept`) into the row
    /// cache: a loop over blocks of [`ROW_CACHE_UNROLL`] × lanes elements, each thread loading
    /// its elements `j + lane + k·lanes` (k < unroll) before storing them, then the elements
    /// past the last whole block one at a time: the positions `lane, lane + lanes, ...` of
    /// the passes' lane loops.
    pub(super) fn row_cache_fill(
        &mut self,
        shape: &[usize],
        axes: &[usize],
        kept: &[String],
    ) -> Result<(), Stop> {
        let Some(cache) = self.row_cache.clone() else { return Ok(()) };
        let coop = self.coop.expect("a cooperative kernel");
        let total = self.b.param(cache.row as i64);
        let lanes = self.b.i64(coop.lanes as i64);
        let unroll = row_cache_setting().unwrap_or(ROW_CACHE_UNROLL);
        let block = self.b.i64((unroll * coop.lanes) as i64);
        let zero = self.b.i64(0);
        let blocks = self.b.op(&format!("arith.divui {total}, {block} : i64"));
        let whole = self.b.op(&format!("arith.muli {blocks}, {block} : i64"));
        // Whole blocks: every thread's elements in bounds.
        let j = self.b.fresh();
        self.open(0, &format!("scf.for {j} = {zero} to {whole} step {block} : i64"));
        let base = self.b.op(&format!("arith.addi {j}, %lane : i64"));
        let mut loaded = Vec::new();
        for k in 0..unroll {
            let off = self.b.i64((k * coop.lanes) as i64);
            let r = self.b.op(&format!("arith.addi {base}, {off} : i64"));
            let ix = Ix { dims: Some(self.full_index(shape, axes, kept, &r)), flat: None };
            for c in cache.inputs.iter().filter(|c| c.written_in.is_none()) {
                let v = self.emit(c.node, &ix)?;
                loaded.push((c.clone(), r.clone(), v));
            }
        }
        for (c, r, v) in loaded {
            let slot = self.row_slot(&cache, &c, &r);
            self.b.stmt(&format!("llvm.store {}, {slot} : {}, !llvm.ptr", v.ssa, c.ty));
        }
        self.close();
        // The rest, one element at a time.
        let start = self.b.op(&format!("arith.addi {whole}, %lane : i64"));
        let r = self.b.fresh();
        self.open(0, &format!("scf.for {r} = {start} to {total} step {lanes} : i64"));
        let ix = Ix { dims: Some(self.full_index(shape, axes, kept, &r)), flat: None };
        for c in cache.inputs.iter().filter(|c| c.written_in.is_none()) {
            let v = self.emit(c.node, &ix)?;
            let slot = self.row_slot(&cache, c, &r);
            self.b.stmt(&format!("llvm.store {}, {slot} : {}, !llvm.ptr", v.ssa, c.ty));
        }
        self.close();
        Ok(())
    }

    /// At the top of a pass's lane loop (element `r` of the row, index `full`): the cached
    /// inputs this pass reads, loaded from the row cache and memoised at `full`, so the pass's
    /// body reads them from there.
    pub(super) fn row_cache_pass(&mut self, full: &[String], r: &str) -> Result<(), Stop> {
        let Some(cache) = self.row_cache.clone() else { return Ok(()) };
        let ix = Ix { dims: Some(full.to_vec()), flat: None };
        let pass = self.pass;
        for c in cache.inputs.iter().filter(|c| c.passes.contains(&pass)) {
            let slot = self.row_slot(&cache, c, r);
            let n = self.b.fresh();
            self.b.stmt(&format!("{n} = llvm.load {slot} : !llvm.ptr -> {}", c.ty));
            self.memo
                .last_mut()
                .expect("a memo scope")
                .insert((c.node, ix.key()), Val::new(n, c.dt));
        }
        Ok(())
    }

    /// In the lane loop of the reduction pass that computes them (element `r`, index `ix`):
    /// stores the staged values of the row cache for the later passes.
    pub(super) fn row_cache_stage(&mut self, ix: &Ix, r: &str) -> Result<(), Stop> {
        let Some(cache) = self.row_cache.clone() else { return Ok(()) };
        let pass = self.pass;
        for c in cache.inputs.iter().filter(|c| c.written_in == Some(pass)) {
            let Some(v) = self.lookup(&(c.node, ix.key())) else {
                return Err(Stop::from(Unsupported::new(
                    None,
                    "a staged row value not computed by its pass".to_string(),
                )));
            };
            let slot = self.row_slot(&cache, c, r);
            self.b.stmt(&format!("llvm.store {}, {slot} : {}, !llvm.ptr", v.ssa, c.ty));
        }
        Ok(())
    }

    /// The row-cache slot of cached input `c` for element `r` of this thread's work item:
    /// `items × row × offset` bytes into the cache, then element `item × row + r` of its type.
    pub(super) fn row_slot(&mut self, cache: &RowCache, c: &CachedRow, r: &str) -> String {
        let coop = self.coop.expect("a cooperative kernel");
        let g = self.b.op("llvm.mlir.addressof @kiln_rows : !llvm.ptr<3>");
        let p = self.b.op(&format!("llvm.addrspacecast {g} : !llvm.ptr<3> to !llvm.ptr"));
        let row = self.b.param(cache.row as i64);
        let part = self.b.i64((coop.items * c.offset) as i64);
        let base = self.b.op(&format!("arith.muli {row}, {part} : i64"));
        let p = self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{base}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
        ));
        let lanes = self.b.i64(coop.lanes as i64);
        let item = self.b.op(&format!("arith.divui %tid, {lanes} : i64"));
        let first = self.b.op(&format!("arith.muli {item}, {row} : i64"));
        let e = self.b.op(&format!("arith.addi {first}, {r} : i64"));
        let ty = c.ty;
        self.b.op(&format!(
            "llvm.getelementptr inbounds {p}[{e}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}"
        ))
    }
}
