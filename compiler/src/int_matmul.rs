//! Integer and bool matrix products as reductions, so kiln's own code generation computes them
//! (no BLAS computes NumPy's wrapping integer products): a `matmul` of `batch + (m, k)` and
//! `batch + (k, n)` operands becomes
//!
//! ```text
//! cast(sum(multiply(broadcast_to(expand_dims(a, -1)), broadcast_to(expand_dims(b, -3))), axis=-2))
//! ```
//!
//! over `batch + (m, k, n)`, which the partitioner fuses into one reduction region (the
//! product is never stored). Integers: products wrap in the dtype, the sum runs in int64/uint64
//! (the op table's `sum`) and the cast back wraps, which is the dtype's wrapping sum as NumPy
//! computes it (wrapping is arithmetic modulo 2^bits, so where the wrap happens does not change
//! the result). Bools: `any` over `a and b`, NumPy's or-of-ands. Float and complex products stay
//! library calls. Runs after simplification, before partitioning.

use kiln_ir::{Attrs, DType, Graph, Node, NodeId, OpKind};

use crate::CompileError;

/// Whether a matmul of `dtype` is lowered here rather than handed to a library.
pub fn lowered(dtype: DType) -> bool {
    dtype == DType::Bool || dtype.is_integer()
}

/// Whether `g` has a matrix product this pass lowers.
pub fn needed(g: &Graph) -> bool {
    g.nodes().iter().any(|n| n.op == OpKind::MatMul && lowered(n.dtype))
}

/// `g` with every integer or bool `matmul` replaced by its reduction (the same graph when it
/// has none).
pub fn lower_int_matmul(g: &Graph) -> Result<Graph, CompileError> {
    if !needed(g) {
        return Ok(g.clone());
    }
    crate::expand::rewrite(g, |out, n, inputs| {
        if n.op != OpKind::MatMul || !lowered(n.dtype) {
            return Ok(None);
        }
        Ok(Some(reduction(out, n, inputs[0], inputs[1])?))
    })
}

/// The reduction computing the matmul `n` of `a` and `b` (nodes of `g`).
fn reduction(g: &mut Graph, n: &Node, a: NodeId, b: NodeId) -> Result<NodeId, CompileError> {
    let rank = n.shape.len();
    let (m, nn) = (n.shape[rank - 2], n.shape[rank - 1]);
    let k = *g.node(a).shape.last().expect("matmul operands have rank >= 2");
    let mut full: Vec<usize> = n.shape[..rank - 2].to_vec();
    full.extend([m, k, nn]);
    let ra = g.node(a).shape.len();
    let rb = g.node(b).shape.len();
    let a3 = g.add(OpKind::ExpandDims, Attrs::Axes { axes: [ra].into_iter().collect() }, &[a])?;
    let b3 =
        g.add(OpKind::ExpandDims, Attrs::Axes { axes: [rb - 2].into_iter().collect() }, &[b])?;
    let shape = Attrs::Shape { shape: full.as_slice().into() };
    let a3 = g.add(OpKind::BroadcastTo, shape.clone(), &[a3])?;
    let b3 = g.add(OpKind::BroadcastTo, shape, &[b3])?;
    let products = g.add(OpKind::Mul, Attrs::None, &[a3, b3])?;
    let axes = Attrs::Reduce { axes: [rank - 1].into_iter().collect(), keepdims: false };
    if n.dtype == DType::Bool {
        return Ok(g.add(OpKind::Any, axes, &[products])?);
    }
    let sum = g.add(OpKind::Sum, axes, &[products])?;
    Ok(g.add(OpKind::Cast, Attrs::DType { dtype: n.dtype }, &[sum])?)
}
