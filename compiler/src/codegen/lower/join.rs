//! Copies inside a fused region: `concatenate` and `stack` as a choice of operand by the
//! index along the joined axis, `contiguous` as its operand at the same index. An operand is
//! emitted only in the branch that reads it (`scf.if` per boundary), so each element of the
//! joined array loads one operand element, and producers of the operands are computed in
//! their branch: `concatenate([a, a * 2])` is one kernel that reads `a` once per element.

use super::*;

impl<'g> Lower<'g> {
    /// The value of copy node `id` at index `ix` of its result.
    pub(super) fn emit_copy(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        let node: &'g Node = self.body.node(id);
        match (node.op, &node.attrs) {
            (OpKind::Contiguous, _) => self.emit(node.inputs[0], ix),
            (OpKind::Concatenate, Attrs::Axis { axis }) => {
                let dims = ix.dims()?.to_vec();
                let mut ends = Vec::with_capacity(node.inputs.len());
                let mut end = 0;
                for &i in &node.inputs {
                    end += self.body.node(i).shape[*axis];
                    ends.push(end);
                }
                self.emit_segment(node, &dims, *axis, &ends, 0)
            }
            (OpKind::Stack, Attrs::Axis { axis }) => {
                let dims = ix.dims()?.to_vec();
                let ends: Vec<usize> = (1..=node.inputs.len()).collect();
                self.emit_segment(node, &dims, *axis, &ends, 0)
            }
            (OpKind::Concatenate | OpKind::Stack, _) => unreachable!("verified attributes"),
            (kiln_ir::ops_not_of!(Copy), _) => unreachable!("{} is not a copy", node.op.name()),
        }
    }

    /// The joined value at `dims` from operand `k` on: operand `k` where the index along
    /// `axis` is below `ends[k]` (the operands' cumulative extents), else the later operands.
    fn emit_segment(
        &mut self,
        node: &'g Node,
        dims: &[String],
        axis: usize,
        ends: &[usize],
        k: usize,
    ) -> Result<Val, Stop> {
        let operand = |cx: &mut Lower<'g>| -> Result<Val, Stop> {
            let start = if k == 0 { 0 } else { ends[k - 1] };
            let mut inner = dims.to_vec();
            if node.op == OpKind::Stack {
                inner.remove(axis);
            } else if start > 0 {
                let s = extent(&mut cx.b, start);
                inner[axis] =
                    cx.b.op(&format!("arith.subi {}, {s} overflow<nsw, nuw> : i64", dims[axis]));
            }
            cx.emit(node.inputs[k], &Ix { dims: Some(inner), flat: None })
        };
        if k + 1 == ends.len() {
            return operand(self);
        }
        let end = extent(&mut self.b, ends[k]);
        let cond = self.b.op(&format!("arith.cmpi ult, {}, {end} : i64", dims[axis]));
        let tys: Vec<&str> = if node.dtype.is_complex() { vec!["f64", "f64"] } else { vec![] };
        let tys = if tys.is_empty() { vec![work_ty(node.dtype)?] } else { tys };
        let results = self.open(tys.len(), &format!("scf.if {cond} -> ({})", tys.join(", ")));
        let yield_val = |cx: &mut Lower, v: &Val| {
            let names: Vec<&str> = std::iter::once(v.ssa.as_str()).chain(v.im.as_deref()).collect();
            cx.b.stmt(&format!("scf.yield {} : {}", names.join(", "), tys.join(", ")));
        };
        let v = operand(self)?;
        yield_val(self, &v);
        self.open_else();
        let w = self.emit_segment(node, dims, axis, ends, k + 1)?;
        yield_val(self, &w);
        self.close();
        let mut r = results.into_iter();
        let re = r.next().expect("a result");
        Ok(match r.next() {
            Some(im) => Val::complex(re, im, node.dtype),
            None => Val::new(re, node.dtype),
        })
    }
}
