//! A scatter region's epilogue (`fusion::scatter_epilogue`): outputs past its scatters'
//! computed from the scatters' combined results, after the combine, in the scatter's kernel.
//!
//! The region's scatters are its *accumulators* ([`accumulators`]): those it writes as outputs
//! (its leading outputs), then those only the epilogue reads. Each accumulates into a buffer:
//! its output, or (only the epilogue reads it) on the host an extra buffer after the outputs
//! (`Kernel::scatter_extra`), on the GPU an area of the scratch buffer. The epilogue then runs
//! over its elements, loading the combined results there ([`Lower::combined`]):
//! - on the host, the kernel's work items past the positions (`n..n + elements`): the executor
//!   calls it once more over them after combining the chunks' copies in chunk order;
//! - on the GPU, the last block, after its fixed-order combine and a barrier (its threads read
//!   elements other threads combined), its threads striding over the elements.

use kiln_ir::shape::numel;
use kiln_ir::{Graph, NodeId, OpClass};

use super::{Ix, Lower, Stop};
use crate::codegen::index::unravel;
use crate::codegen::types::store;
use crate::codegen::Unsupported;

/// A scatter region's scatters: the leading outputs that are scatters, then the scatters of the
/// body no output is (only an epilogue reads them), in body order; and how many of them are
/// outputs.
pub fn accumulators(body: &Graph) -> (Vec<NodeId>, usize) {
    let is_scatter = |id: NodeId| body.node(id).op.class() == OpClass::Scatter;
    let mut accs: Vec<NodeId> =
        body.outputs().iter().copied().take_while(|&o| is_scatter(o)).collect();
    let written = accs.len();
    for (i, n) in body.nodes().iter().enumerate() {
        let id = NodeId(i as u32);
        if n.op.class() == OpClass::Scatter && !accs.contains(&id) {
            accs.push(id);
        }
    }
    (accs, written)
}

/// The epilogue's outputs (past the `written` scatters) and their one shape; an error where a
/// scatter follows an epilogue output, or the epilogue's outputs differ in shape (a region the
/// partitioner does not make).
pub(super) fn epilogue_shape(body: &Graph, written: usize) -> Result<Option<Vec<usize>>, Stop> {
    let outs = &body.outputs()[written..];
    let Some(&first) = outs.first() else { return Ok(None) };
    let shape = body.node(first).shape.to_vec();
    for &o in outs {
        let n = body.node(o);
        if n.op.class() == OpClass::Scatter || n.shape.as_slice() != shape.as_slice() {
            return Err(Unsupported::new(
                Some(n.op.name()),
                "a scatter region's outputs past its scatters of another shape, or a scatter among them".into(),
            )
            .into());
        }
    }
    Ok(Some(shape))
}

impl Lower<'_> {
    /// The pointer to accumulator `k`'s buffer (of [`accumulators`], `written` of them
    /// outputs) in a host kernel: its output, or an extra buffer after the outputs.
    pub(super) fn host_acc_ptr(&self, k: usize, written: usize) -> String {
        if k < written {
            Self::out_ptr(k)
        } else {
            Self::out_ptr(self.body.outputs().len() + k - written)
        }
    }

    /// The epilogue's elements `from..to` by `step` (1 for `None`): each output past the
    /// `written` scatters at element `e` of `shape`, from the combined results
    /// ([`Lower::combined`], set by the caller), stored at `e` of its output.
    pub(super) fn scatter_epilogue(
        &mut self,
        written: usize,
        shape: &[usize],
        (from, to, step): (&str, &str, Option<&str>),
    ) -> Result<(), Stop> {
        let outs = self.body.outputs()[written..].to_vec();
        let (e, _, _) = self.open_for_step(from, to, step, &[], &[]);
        let dims = unravel(&mut self.b, &e, shape);
        for (j, &o) in outs.iter().enumerate() {
            let v = self.emit(o, &Ix { dims: Some(dims.clone()), flat: Some(e.clone()) })?;
            store(&mut self.b, &Self::out_ptr(written + j), &e, &v);
        }
        self.close();
        Ok(())
    }

    /// A host scatter kernel's epilogue: work items `n..n + elements` past the `n` positions
    /// are its elements (the executor calls the kernel over them once the chunks' copies are
    /// combined into the first copy's buffers).
    pub(super) fn scatter_epilogue_host(
        &mut self,
        items: &[usize],
        accs: &[NodeId],
        written: usize,
        shape: &[usize],
    ) -> Result<(), Stop> {
        for (k, &a) in accs.iter().enumerate() {
            let ptr = self.host_acc_ptr(k, written);
            self.combined.insert(a, ptr);
        }
        let n = crate::codegen::index::extent(&mut self.b, numel(items));
        let lo = self.b.op(&format!("arith.maxsi %start, {n} : i64"));
        let hi = self.b.op(&format!("arith.maxsi %end, {n} : i64"));
        let from = self.b.op(&format!("arith.subi {lo}, {n} : i64"));
        let to = self.b.op(&format!("arith.subi {hi}, {n} : i64"));
        self.scatter_epilogue(written, shape, (&from, &to, None))
    }
}
