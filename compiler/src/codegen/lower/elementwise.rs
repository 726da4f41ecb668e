//! Kernel shapes of elementwise regions: one flat loop, row segments along the last axis, and
//! tiles for transposed inputs; on the GPU, [`GPU_VEC`] items per thread.

use super::*;

/// Work items a GPU thread takes at a time in elementwise kernels.
pub(super) const GPU_VEC: usize = 4;

/// Side of the tiles of elementwise kernels reading a transposed input.
pub(super) const TILE: usize = 32;

impl<'g> Lower<'g> {
    /// The kernel of an elementwise region over `shape`.
    pub(super) fn elementwise(&mut self, shape: &[usize], flat: bool) -> Result<(), Stop> {
        let outs: Vec<NodeId> = self.body.outputs().to_vec();
        for &o in &outs {
            if self.body.node(o).shape.as_slice() != shape {
                return Err(Unsupported::new(
                    None,
                    format!(
                        "an output of shape {:?} in a region over {shape:?}",
                        self.body.node(o).shape
                    ),
                )
                .into());
            }
        }
        let store_all = |cx: &mut Lower, ix: &Ix, pos: &str| -> Result<(), Stop> {
            for (k, &o) in outs.iter().enumerate() {
                let v = cx.emit(o, ix)?;
                store(&mut cx.b, &Self::out_ptr(k), pos, &v);
            }
            Ok(())
        };
        if flat || shape.is_empty() {
            self.flat = true;
            self.shape = KernelShape::ElementwiseFlat;
            if self.gpu_vec && !shape.is_empty() {
                // A full chunk of GPU_VEC elements (its start a multiple of GPU_VEC, see
                // `gpu_entry`): every input's elements are loaded first, in one basic block, so
                // LLVM merges them into vector loads (`ld.global.nc.v4.f32`); then computed;
                // then stored (merged likewise).
                let len = self.b.op("arith.subi %end, %start : i64");
                let vec = self.b.i64(GPU_VEC as i64);
                let full = self.b.op(&format!("arith.cmpi eq, {len}, {vec} : i64"));
                self.open(0, &format!("scf.if {full}"));
                // The start with its low bits cleared (it is a multiple of GPU_VEC): LLVM then
                // knows that `pos / GPU_VEC` is the same for the chunk's elements, and merges
                // what they compute from it (the Philox call four random draws share).
                let mask = self.b.i64(-(GPU_VEC as i64));
                let start = self.b.op(&format!("arith.andi %start, {mask} : i64"));
                let ixs: Vec<Ix> = (0..GPU_VEC)
                    .map(|k| {
                        let off = self.b.i64(k as i64);
                        let pos = self
                            .b
                            .op(&format!("arith.addi {start}, {off} overflow<nsw, nuw> : i64"));
                        Ix { dims: None, flat: Some(pos) }
                    })
                    .collect();
                self.preload_and_store(shape, &outs, &ixs)?;
                self.open_else();
                let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
                store_all(self, &Ix { dims: None, flat: Some(iv.clone()) }, &iv)?;
                self.close_no_unroll();
                self.close();
                return Ok(());
            }
            let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
            let dims = if shape.is_empty() { Some(Vec::new()) } else { None };
            store_all(self, &Ix { dims, flat: Some(iv.clone()) }, &iv)?;
            self.close();
            return Ok(());
        }
        let r = shape.len();
        // A transposed input (contiguous along the second-to-last axis, strided along the last)
        // is read tile by tile, so its cache lines are used while they are loaded.
        let transposed = r >= 2
            && shape[r - 1] > 1
            && shape[r - 2] > 1
            && input_strides(self.body, shape)
                .iter()
                .any(|(_, st)| st[r - 1].abs() > 1 && st[r - 2].abs() == 1);
        if transposed {
            return self.elementwise_tiles(shape, &outs);
        }
        // Row segments: f runs from start to end; each iteration covers the rest of f's row.
        let e = extent(&mut self.b, shape[r - 1]);
        let gpu_full = self.gpu_vec && self.min_chunk == 1;
        if gpu_full {
            // A full chunk of GPU_VEC elements within one row: unrolled, inputs of the region's
            // shape loaded first at flat positions `start + k` (aligned: see `gpu_entry`), so
            // LLVM merges them into vector loads; then computed and stored.
            let len = self.b.op("arith.subi %end, %start : i64");
            let vec = self.b.i64(GPU_VEC as i64);
            let full = self.b.op(&format!("arith.cmpi eq, {len}, {vec} : i64"));
            let (row, j0) = self.b.divrem("%start", &e);
            let j_end = self.b.op(&format!("arith.addi {j0}, {vec} : i64"));
            let in_row = self.b.op(&format!("arith.cmpi ule, {j_end}, {e} : i64"));
            let fast = self.b.op(&format!("arith.andi {full}, {in_row} : i1"));
            self.open(0, &format!("scf.if {fast}"));
            let outer = unravel(&mut self.b, &row, &shape[..r - 1]);
            let ixs: Vec<Ix> = (0..GPU_VEC)
                .map(|k| {
                    let off = self.b.i64(k as i64);
                    let pos =
                        self.b.op(&format!("arith.addi %start, {off} overflow<nsw, nuw> : i64"));
                    let j = self.b.op(&format!("arith.addi {j0}, {off} overflow<nsw, nuw> : i64"));
                    let mut dims = outer.clone();
                    dims.push(j);
                    Ix { dims: Some(dims), flat: Some(pos) }
                })
                .collect();
            self.preload_and_store(shape, &outs, &ixs)?;
            self.open_else();
        }
        let f = self.b.fresh();
        let g = self.b.fresh();
        self.open(1, &format!("scf.while ({f} = %start) : (i64) -> i64"));
        let more = self.b.op(&format!("arith.cmpi slt, {f}, %end : i64"));
        self.b.stmt(&format!("scf.condition({more}) {f} : i64"));
        self.memo.pop();
        self.memo.push(HashMap::new());
        self.b.next_region("do");
        self.b.stmt(&format!("^bb0({g}: i64):"));
        let (row, j0) = self.b.divrem(&g, &e);
        let base = self.b.op(&format!("arith.subi {g}, {j0} : i64"));
        let row_end = self.b.op(&format!("arith.addi {base}, {e} : i64"));
        let seg_end = self.b.op(&format!("arith.minsi {row_end}, %end : i64"));
        let j1 = self.b.op(&format!("arith.subi {seg_end}, {base} : i64"));
        let outer = unravel(&mut self.b, &row, &shape[..r - 1]);
        let (j, _, _) = self.open_for(&j0, &j1, &[], &[]);
        let pos = self.b.op(&format!("arith.addi {base}, {j} overflow<nsw, nuw> : i64"));
        let mut dims = outer;
        dims.push(j.clone());
        store_all(self, &Ix { dims: Some(dims), flat: Some(pos.clone()) }, &pos)?;
        if gpu_full {
            self.close_no_unroll();
        } else {
            self.close();
        }
        self.b.stmt(&format!("scf.yield {seg_end} : i64"));
        self.close();
        if gpu_full {
            self.close();
        }
        Ok(())
    }

    /// The elements at `ixs` (consecutive flat positions) of a GPU elementwise kernel: the
    /// inputs of the region's size loaded first, in one basic block (LLVM's load-store
    /// vectoriser merges them), then the outputs computed, then stored.
    pub(super) fn preload_and_store(
        &mut self,
        shape: &[usize],
        outs: &[NodeId],
        ixs: &[Ix],
    ) -> Result<(), Stop> {
        let n = numel(shape);
        let body = self.body;
        let direct: Vec<NodeId> = (0..body.len())
            .map(|i| NodeId(i as u32))
            .filter(|&i| body.node(i).op == OpKind::Input && numel(&body.node(i).shape) == n)
            .collect();
        for &i in &direct {
            for ix in ixs {
                self.emit(i, ix)?;
            }
        }
        let mut vals = Vec::new();
        for ix in ixs {
            for &o in outs {
                vals.push(self.emit(o, ix)?);
            }
        }
        let mut it = vals.iter();
        for ix in ixs {
            let pos = ix.flat.clone().expect("a flat index");
            for k in 0..outs.len() {
                store(&mut self.b, &Self::out_ptr(k), &pos, it.next().expect("a value per output"));
            }
        }
        Ok(())
    }

    /// Tiles of TILE x TILE elements over the last two axes (rows being every axis but the
    /// last, flattened). Work ranges hold whole rows: [`Kernel::min_chunk`] is TILE rows.
    pub(super) fn elementwise_tiles(
        &mut self,
        shape: &[usize],
        outs: &[NodeId],
    ) -> Result<(), Stop> {
        self.shape = KernelShape::ElementwiseTiles;
        let r = shape.len();
        self.min_chunk = TILE * shape[r - 1];
        let len = extent(&mut self.b, shape[r - 1]);
        let tile = self.b.i64(TILE as i64);
        let zero = self.b.i64(0);
        let row0 = self.b.op(&format!("arith.divui %start, {len} : i64"));
        let row1 = self.b.op(&format!("arith.divui %end, {len} : i64"));
        let step = |cx: &mut Lower, lb: &str, ub: &str| -> String {
            let iv = cx.b.fresh();
            cx.open(0, &format!("scf.for {iv} = {lb} to {ub} step {tile} : i64"));
            iv
        };
        let rb = step(self, &row0, &row1);
        let rb_end = self.b.op(&format!("arith.addi {rb}, {tile} : i64"));
        let rb_end = self.b.op(&format!("arith.minsi {rb_end}, {row1} : i64"));
        let cb = step(self, &zero, &len);
        let cb_end = self.b.op(&format!("arith.addi {cb}, {tile} : i64"));
        let cb_end = self.b.op(&format!("arith.minsi {cb_end}, {len} : i64"));
        let (row, _, _) = self.open_for(&rb, &rb_end, &[], &[]);
        let mut dims = unravel(&mut self.b, &row, &shape[..r - 1]);
        let base = self.b.op(&format!("arith.muli {row}, {len} overflow<nsw, nuw> : i64"));
        let (c, _, _) = self.open_for(&cb, &cb_end, &[], &[]);
        let pos = self.b.op(&format!("arith.addi {base}, {c} overflow<nsw, nuw> : i64"));
        dims.push(c);
        let ix = Ix { dims: Some(dims), flat: Some(pos.clone()) };
        for (k, &o) in outs.iter().enumerate() {
            let v = self.emit(o, &ix)?;
            store(&mut self.b, &Self::out_ptr(k), &pos, &v);
        }
        for _ in 0..4 {
            self.close();
        }
        Ok(())
    }
}
