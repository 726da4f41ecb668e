//! Scatter regions (`Space::Scatter`): a work item is a position of the index array (shape
//! `items`). For each, the kernel computes the index (its producers fused: k-means' labels are
//! an argmin of distances, computed here), wraps it into `[0, rows)` (Python's modulo), and
//! combines its row of values (`values[item, j...]`, their producers fused) into row `index` of
//! each output: `out[index, j] = combine(out[index, j], v)`, the combine being the evaluator's
//! `add`, `maximum` or `minimum` of the output's dtype.
//!
//! The kernel accumulates into its output buffers as it finds them: the caller initialises them
//! and keeps concurrent chunks apart. On the host ([`super::host::run_region`]) each of a fixed
//! number of chunks of positions (a function of the sizes only) accumulates into a private
//! copy; the copies are combined in chunk order, so a result is the same bits on every run.
//!
//! Not generated (the evaluator runs them): `scatter` (replace), which needs the last writer of
//! each row; `scatter_max`/`scatter_min` of complex values; GPU kernels (the GPU runs a scatter
//! region on the host between copies).

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, Node, OpKind};
use smallvec::SmallVec;

use super::{Ix, Lower, Stop};
use crate::codegen::index::{extent, unravel};
use crate::codegen::types::{load, store};
use crate::codegen::{scalar, Target, Unsupported};

/// The elementwise op that combines a value into an output element, for a scatter op.
pub(crate) fn combine_op(op: OpKind) -> Option<OpKind> {
    match op {
        OpKind::ScatterAdd => Some(OpKind::Add),
        OpKind::ScatterMax => Some(OpKind::Maximum),
        OpKind::ScatterMin => Some(OpKind::Minimum),
        _ => None,
    }
}

/// Checks that code generation supports the scatter region's outputs; returns the combine of
/// each.
pub(crate) fn combines(body: &kiln_ir::Graph, target: Target) -> Result<Vec<OpKind>, Unsupported> {
    if target == Target::Gpu {
        return Err(Unsupported::new(Some("scatter_add"), "a scatter region on the GPU (the host runs it)".into()));
    }
    body.outputs()
        .iter()
        .map(|&o| {
            let n = body.node(o);
            let c = combine_op(n.op).ok_or_else(|| {
                Unsupported::new(Some(n.op.name()), "a scatter that replaces rows (the evaluator finds the last writer)".into())
            })?;
            if c != OpKind::Add && n.dtype.is_complex() {
                return Err(Unsupported::new(Some(n.op.name()), format!("{} values", n.dtype)));
            }
            Ok(c)
        })
        .collect()
}

impl Lower<'_> {
    /// The loop over positions `start..end` of a scatter region over `items` (see the module
    /// docs).
    pub(super) fn scatter(&mut self, items: &[usize]) -> Result<(), Stop> {
        let body = self.body;
        let outs = body.outputs().to_vec();
        let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
        let item = if items.len() == 1 { vec![iv.clone()] } else { unravel(&mut self.b, &iv, items) };
        for (k, &o) in outs.iter().enumerate() {
            let node = body.node(o);
            let combine = combine_op(node.op).expect("checked by `combines`");
            let (idx, values) = (node.inputs[1], node.inputs[2]);
            if body.node(idx).shape.as_slice() != items {
                return Err(Unsupported::new(Some(node.op.name()), "positions of another shape in one region".into()).into());
            }
            let i = self.emit(idx, &Ix { dims: Some(item.clone()), flat: Some(iv.clone()) })?;
            // r = i mod rows, in [0, rows): remsi takes the dividend's sign.
            let rows = extent(&mut self.b, node.shape[0]);
            let rem = self.b.op(&format!("arith.remsi {}, {rows} : i64", i.ssa));
            let zero = self.b.i64(0);
            let neg = self.b.op(&format!("arith.cmpi slt, {rem}, {zero} : i64"));
            let up = self.b.op(&format!("arith.addi {rem}, {rows} : i64"));
            let r = self.b.op(&format!("arith.select {neg}, {up}, {rem} : i64"));
            let row_shape = &node.shape[1..];
            let m = numel(row_shape);
            let me = extent(&mut self.b, m);
            let row_start = self.b.op(&format!("arith.muli {r}, {me} overflow<nsw, nuw> : i64"));
            let (j, _, _) = self.open_for(&zero, &me, &[], &[]);
            let mut dims = item.clone();
            dims.extend(unravel(&mut self.b, &j, row_shape));
            let v = self.emit(values, &Ix { dims: Some(dims), flat: None })?;
            let pos = self.b.op(&format!("arith.addi {row_start}, {j} overflow<nsw, nuw> : i64"));
            let out = Self::out_ptr(k);
            let old = load(&mut self.b, &out, &pos, node.dtype);
            let op = Node { op: combine, attrs: Attrs::None, inputs: SmallVec::new(), dtype: node.dtype, shape: SmallVec::new() };
            let new = scalar::elementwise(&mut self.b, &op, &[old, v])?;
            store(&mut self.b, &out, &pos, &new);
            self.close();
        }
        self.close();
        Ok(())
    }
}

/// Elements a position of a scatter region reads, roughly: the largest node of its body per
/// position (k-means: the distances' `k × d` terms).
pub(crate) fn cost_per_item(body: &kiln_ir::Graph, items: &[usize]) -> usize {
    let n = numel(items).max(1);
    body.nodes().iter().map(|x| numel(&x.shape) / n).max().unwrap_or(1).max(1)
}
