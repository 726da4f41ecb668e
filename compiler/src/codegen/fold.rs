//! Constant subexpressions, computed while lowering by the reference evaluator.
//!
//! An elementwise op whose operands are all constants (directly or through views) has one value
//! for every element, which the kernel gets as a constant. Left in the kernel, LLVM would fold
//! it by its own rules, which differ from the hardware's (and so from the evaluator's and
//! NumPy's) on the sign of a NaN an operation creates: LLVM folds 0/0 to +NaN where x86 computes
//! -NaN, and `copysign(1, 0/0)` shows the difference. The evaluator's value is the reference
//! by definition; a transcendental function of constants gets the evaluator's value too.

use std::collections::HashMap;

use kiln_ir::host::Data;
use kiln_ir::{Graph, Node, NodeId, OpClass, OpKind};

use super::builder::Builder;
use super::types::{complex_const, float_const, int_const, work_ty, Val};
use super::Unsupported;

/// Which nodes of `body` are constant: `const` leaves, and views and elementwise ops of constant
/// nodes only.
pub(crate) fn constant_nodes(body: &Graph) -> Vec<bool> {
    let mut constant: Vec<bool> = Vec::with_capacity(body.len());
    for n in body.nodes() {
        let c = match n.op.class() {
            OpClass::Leaf => n.op == OpKind::Const,
            OpClass::Elementwise | OpClass::View => n.inputs.iter().all(|i| constant[i.index()]),
            OpClass::Reduce
            | OpClass::Gather
            | OpClass::Scatter
            | OpClass::Scan
            | OpClass::Sort
            | OpClass::Copy
            | OpClass::Vendor
            | OpClass::Custom => false,
        };
        constant.push(c);
    }
    constant
}

/// The value of the constant elementwise node `id` of `body` (see [`constant_nodes`]), as a
/// constant of its working type: its cone evaluated at rank 0 (views of a constant are the
/// constant), by the reference evaluator.
pub(crate) fn constant_value(
    b: &mut Builder,
    body: &Graph,
    id: NodeId,
) -> Result<Val, Unsupported> {
    let node = body.node(id);
    // The cone, in body (topological) order.
    let mut cone = vec![false; id.index() + 1];
    let mut stack = vec![id];
    while let Some(n) = stack.pop() {
        if !std::mem::replace(&mut cone[n.index()], true) {
            stack.extend(body.node(n).inputs.iter().copied());
        }
    }
    let mut g = Graph::new();
    let mut map: HashMap<NodeId, NodeId> = HashMap::new();
    for (i, n) in body.nodes().iter().enumerate().take(id.index() + 1) {
        if !cone[i] {
            continue;
        }
        let mapped = if n.op.is_view() {
            map[&n.inputs[0]]
        } else {
            g.insert(Node {
                op: n.op,
                attrs: n.attrs.clone(),
                inputs: n.inputs.iter().map(|x| map[x]).collect(),
                dtype: n.dtype,
                shape: Default::default(),
            })
        };
        map.insert(NodeId(i as u32), mapped);
    }
    g.push_output(map[&id]);
    let fail =
        |why: String| Unsupported::new(Some(node.op.name()), format!("folding a constant: {why}"));
    let value = kiln_ir::eval::evaluate(&g, &[]).map_err(|e| fail(e.to_string()))?;
    match value[0].data() {
        Data::Complex64(v) => {
            return Ok(complex_const(b, v[0].re as f64, v[0].im as f64, node.dtype))
        }
        Data::Complex128(v) => return Ok(complex_const(b, v[0].re, v[0].im, node.dtype)),
        _ => {}
    }
    let ty = work_ty(node.dtype)?;
    let ssa = match value[0].data() {
        Data::Bool(v) => int_const(b, v[0] as i128, ty),
        Data::Int8(v) => int_const(b, v[0] as i128, ty),
        Data::Int16(v) => int_const(b, v[0] as i128, ty),
        Data::Int32(v) => int_const(b, v[0] as i128, ty),
        Data::Int64(v) => int_const(b, v[0] as i128, ty),
        Data::UInt8(v) => int_const(b, v[0] as i128, ty),
        Data::UInt16(v) => int_const(b, v[0] as i128, ty),
        Data::UInt32(v) => int_const(b, v[0] as i128, ty),
        Data::UInt64(v) => int_const(b, v[0] as i128, ty),
        // The narrow floats live in f32 registers; every value (NaN signs too) converts exactly.
        Data::Float16(v) => float_const(b, v[0].to_f64(), ty),
        Data::BFloat16(v) => float_const(b, v[0].to_f64(), ty),
        Data::Float32(v) => float_const(b, v[0] as f64, ty),
        Data::Float64(v) => float_const(b, v[0], ty),
        Data::Complex64(_) | Data::Complex128(_) => unreachable!("complex values return above"),
    };
    Ok(Val::new(ssa, node.dtype))
}
