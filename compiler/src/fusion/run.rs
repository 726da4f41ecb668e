//! Runs regions with the reference evaluator, region by region: fused and unfused results can be
//! compared with no code generation at all.

use std::collections::HashMap;
use std::sync::Arc;

use kiln_ir::{Attrs, Graph, HostArray, IrError, NodeId, OpKind};

use super::Region;

/// Computes the outputs of `g` by evaluating each region's body in order, passing buffers between
/// regions as the partition says. `inputs[k]` is the graph's `input {index=k}`.
pub fn run_regions(
    g: &Graph,
    regions: &[Region],
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, IrError> {
    let mut values: HashMap<NodeId, Arc<HostArray>> = HashMap::new();
    for (i, node) in g.nodes().iter().enumerate() {
        if let (OpKind::Input, Attrs::Input { index }) = (node.op, &node.attrs) {
            let a = inputs.get(*index as usize).ok_or_else(|| IrError::Eval {
                node: i,
                op: "input".into(),
                message: format!("no input {index} given"),
            })?;
            values.insert(NodeId(i as u32), Arc::new((*a).clone()));
        }
    }
    for r in regions {
        let args: Vec<Arc<HostArray>> = r
            .inputs
            .iter()
            .map(|id| {
                values.get(id).cloned().ok_or_else(|| IrError::Eval {
                    node: id.index(),
                    op: g.node(*id).op.name().into(),
                    message: "read by a region before any region wrote it".into(),
                })
            })
            .collect::<Result<_, _>>()?;
        let refs: Vec<&HostArray> = args.iter().map(|a| a.as_ref()).collect();
        let outs = kiln_ir::eval::evaluate(&r.body, &refs)?;
        for (id, v) in r.outputs.iter().zip(outs) {
            values.insert(*id, Arc::new(v));
        }
    }
    g.outputs()
        .iter()
        .map(|o| {
            values.get(o).map(|v| (**v).clone()).ok_or_else(|| IrError::Eval {
                node: o.index(),
                op: g.node(*o).op.name().into(),
                message: "an output no region wrote".into(),
            })
        })
        .collect()
}
