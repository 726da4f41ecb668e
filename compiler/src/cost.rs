//! The cost model: what a node costs to run on the GPU, in **bytes of device-memory traffic**.
//!
//! kiln's kernels are memory-bound: fused elementwise chains read their inputs once and write
//! their outputs once, and the ops between fusion boundaries are almost free. So a node costs
//!
//! * `input` (an array already in device memory): its bytes, read once;
//! * `const`: nothing (a scalar in a register); `iota`: a view's per-element weight (index math);
//! * elementwise ops and views: no traffic (they fuse into the kernel that reads or writes them),
//!   plus a small per-element compute weight, so that of two expressions moving the same bytes
//!   the one computing less wins: [`VIEW_WEIGHT`] < [`ARITH_WEIGHT`] < [`SLOW_WEIGHT`] <
//!   [`TRANSCENDENTAL_WEIGHT`] per element, plus [`OPERAND_WEIGHT`] per operand read (so that
//!   `square(x)` beats `x*x`);
//! * reductions, copies (`concatenate`, `stack`, `contiguous`), vendor ops (`matmul`, the FFTs) and
//!   custom kernels (fusion boundaries: each is a kernel of its own, or ends one): the bytes of
//!   their inputs read and of their output written, plus [`LAUNCH_COST`]; reductions add
//!   [`ARITH_WEIGHT`] per input element, vendor ops their arithmetic at [`FLOPS_PER_BYTE`].
//!
//! The weights derive from an H100-class GPU: ~3 TB/s of memory bandwidth and ~60 TFLOP/s of
//! f32 arithmetic, so one byte moved costs as much time as ~20 flops; a kernel launch costs
//! ~3 µs, the time to move ~9 MB.

use kiln_ir::graph::{Attrs, Graph};
use kiln_ir::ops::{OpClass, OpKind};
use kiln_ir::DType;

/// A kernel launch (and the synchronisation around it): ~3 µs at ~3 TB/s, in bytes.
pub const LAUNCH_COST: f64 = 9.0e6;
/// Flops that take as long as moving one byte (~60 TFLOP/s over ~3 TB/s).
pub const FLOPS_PER_BYTE: f64 = 20.0;
/// Per element of a view or `iota` (index arithmetic), in bytes.
pub const VIEW_WEIGHT: f64 = 0.01;
/// Per element of an arithmetic, comparison, logic or cast op: one flop.
pub const ARITH_WEIGHT: f64 = 1.0 / FLOPS_PER_BYTE;
/// Per element of a division or square root: ~5 flops.
pub const SLOW_WEIGHT: f64 = 5.0 / FLOPS_PER_BYTE;
/// Per element of a transcendental function (exp, log, sin, pow ...): ~20 flops.
pub const TRANSCENDENTAL_WEIGHT: f64 = 20.0 / FLOPS_PER_BYTE;
/// Per operand of an elementwise op, per element (a register read).
pub const OPERAND_WEIGHT: f64 = 0.005;

/// Bytes of an array.
pub fn bytes(dtype: DType, shape: &[usize]) -> f64 {
    numel(shape) * dtype.itemsize() as f64
}

fn numel(shape: &[usize]) -> f64 {
    shape.iter().map(|&n| n as f64).product()
}

/// The per-element compute weight of an elementwise op or view (0 for the other classes,
/// whose cost is their traffic).
pub fn element_weight(op: OpKind) -> f64 {
    use OpKind::*;
    match op {
        Input | Const | Label => 0.0,
        Iota | Reshape | Permute | BroadcastTo | Slice | ExpandDims | Squeeze | Flip | Real
        | Imag => VIEW_WEIGHT,
        Neg | Abs | Sign | Square | Floor | Ceil | Trunc | Rint | IsNan | IsInf | IsFinite
        | LogicalNot | Invert | Conj => ARITH_WEIGHT,
        Add | Sub | Mul | Maximum | Minimum | Fmax | Fmin | CopySign | Where | Cast | Bitcast => {
            ARITH_WEIGHT
        }
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => ARITH_WEIGHT,
        BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift => ARITH_WEIGHT,
        Sqrt | Reciprocal | Div | FloorDiv | Remainder | Fmod | Take => SLOW_WEIGHT,
        FrexpMantissa | FrexpExponent | Ldexp | NextAfter | MakeComplex => ARITH_WEIGHT,
        Cbrt | Exp | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Erf | Power | Philox
        | PhiloxHigh | PhiloxBits | BoxMullerCos | BoxMullerSin => TRANSCENDENTAL_WEIGHT,
        Sin | Cos | Tan | Arcsin | Arccos | Arctan | Arctan2 | Hypot | LogAddExp | LogAddExp2 => {
            TRANSCENDENTAL_WEIGHT
        }
        Sinh | Cosh | Tanh | Arcsinh | Arccosh | Arctanh => TRANSCENDENTAL_WEIGHT,
        Erfc | Erfinv | Gammaln | Digamma | Gcd | Lcm => TRANSCENDENTAL_WEIGHT,
        Sum | Prod | Max | Min | ArgMax | ArgMin | All | Any => 0.0,
        ScatterAdd | ScatterMax | ScatterMin | Scatter | Cumsum | Cumprod | Cummax | Cummin
        | Compact | CompactCount | Sort | Argsort | SortTake | Argtopk => 0.0,
        Concatenate | Stack | Contiguous | CustomKernel | kiln_ir::ops_of!(Vendor) => 0.0,
    }
}

/// The cost of one node: `op` with `attrs`, of result type `out`, reading `inputs`.
pub fn node_cost(
    op: OpKind,
    attrs: &Attrs,
    out: (DType, &[usize]),
    inputs: &[(DType, &[usize])],
) -> f64 {
    let n = numel(out.1);
    let boundary = || {
        LAUNCH_COST + bytes(out.0, out.1) + inputs.iter().map(|&(d, s)| bytes(d, s)).sum::<f64>()
    };
    match op.class() {
        OpClass::Leaf => {
            if op == OpKind::Input {
                bytes(out.0, out.1)
            } else {
                n * element_weight(op)
            }
        }
        OpClass::Elementwise | OpClass::Gather => {
            n * (element_weight(op) + OPERAND_WEIGHT * inputs.len() as f64)
        }
        OpClass::View => n * element_weight(op),
        OpClass::Reduce => {
            boundary() + inputs.iter().map(|&(_, s)| numel(s)).sum::<f64>() * ARITH_WEIGHT
        }
        // A scatter or a scan is a kernel of its own: it reads its inputs and writes its result.
        OpClass::Copy | OpClass::Custom | OpClass::Scatter | OpClass::Scan | OpClass::Sort => {
            boundary()
        }
        OpClass::Vendor => {
            let flops = match attrs {
                // 2·m·n·k for each output element's dot product of length k.
                Attrs::None if op == OpKind::MatMul => {
                    2.0 * n * inputs[0].1.last().map_or(1.0, |&k| k as f64)
                }
                // ~5·N·log2(len) per axis of length len (N complex points); half that for the
                // real transforms.
                Attrs::Fft { axes, .. } => 5.0 * n * log_lengths(out.1, axes, None),
                Attrs::RealFft { axes, n: len, .. } => {
                    2.5 * n.max(numel(inputs[0].1)) * log_lengths(out.1, axes, Some(*len))
                }
                _ => 0.0,
            };
            boundary() + flops / FLOPS_PER_BYTE
        }
    }
}

/// Σ log2(length) over the transformed axes (at least 1 each); `last` overrides the length of the
/// last axis (the real length of rfft/irfft).
fn log_lengths(shape: &[usize], axes: &[usize], last: Option<usize>) -> f64 {
    axes.iter()
        .enumerate()
        .map(|(i, &a)| {
            let len = match last {
                Some(n) if i + 1 == axes.len() => n,
                _ => shape.get(a).copied().unwrap_or(1),
            };
            (len as f64).max(2.0).log2()
        })
        .sum()
}

/// The cost of a graph: the sum of its nodes' costs (each node once: a shared subexpression is
/// computed once).
pub fn graph_cost(g: &Graph) -> f64 {
    g.nodes()
        .iter()
        .map(|node| {
            let inputs: Vec<(DType, &[usize])> = node
                .inputs
                .iter()
                .map(|&i| (g.node(i).dtype, g.node(i).shape.as_slice()))
                .collect();
            node_cost(node.op, &node.attrs, (node.dtype, &node.shape), &inputs)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_cost_a_launch_and_their_traffic() {
        let x: (DType, &[usize]) = (DType::Float32, &[1000, 64]);
        let s = node_cost(OpKind::Sum, &Attrs::None, (DType::Float32, &[64]), &[x]);
        assert_eq!(s, LAUNCH_COST + 256_000.0 + 256.0 + 64_000.0 * ARITH_WEIGHT);
        assert_eq!(node_cost(OpKind::Input, &Attrs::Input { index: 0 }, x, &[]), 256_000.0);
        // Fused ops cost little, and less when simpler.
        let sq = node_cost(OpKind::Square, &Attrs::None, x, &[x]);
        let mul = node_cost(OpKind::Mul, &Attrs::None, x, &[x, x]);
        let exp = node_cost(OpKind::Exp, &Attrs::None, x, &[x]);
        assert!(sq < mul && mul < exp && exp < 256_000.0);
    }
}
