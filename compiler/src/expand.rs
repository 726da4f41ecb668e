//! Ops the frontend writes as one node, expanded into the ops the pipeline optimises, before
//! simplification.
//!
//! `philox_bits(x, y) {per_call, words}` (a lazy draw's bits: one node a draw, so that building
//! a draw and its dispatch key stays cheap on every call) becomes the C-order position `i`
//! (`iota` of the flat length, `cast` to uint64, `reshape`), the call counter
//! `ctr = (i >> log2(per_call)) + x`, `philox`/`philox_high` of `ctr` under `y`, and the bit ops
//! that pick the element's words:
//!
//! ```text
//! per_call 4, words 1:  where(i & 1 != 0, p >> 32, p) & 0xffffffff,  p = where(i & 2 != 0, hi, lo)
//! per_call 4, words 2:  where(i & 2 != 0, hi, lo)
//! per_call 2, words 2:  where(i & 1 != 0, hi, lo)
//! ```
//!
//! (`lo = philox(ctr, y)` holds words 1:0 of the call, `hi = philox_high(ctr, y)` words 3:2),
//! which is the op's definition in the reference evaluator (`kiln_ir::eval::random::philox_bits`)
//! and the graph `kiln::random` built node by node before: the e-graph's rules (the integer
//! compare of `compare-int-grid`) and the kernels see what they saw then.

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, DType, Graph, Literal, Node, NodeId, OpKind};

use crate::CompileError;

/// Whether `g` has an op this pass expands.
pub fn needed(g: &Graph) -> bool {
    g.nodes().iter().any(|n| n.op == OpKind::PhiloxBits)
}

/// `g` with every `philox_bits` replaced by its expansion (the same graph when it has none).
pub fn expand(g: &Graph) -> Result<Graph, CompileError> {
    if !needed(g) {
        return Ok(g.clone());
    }
    rewrite(g, |out, n, inputs| {
        if n.op != OpKind::PhiloxBits {
            return Ok(None);
        }
        Ok(Some(philox_bits(out, n, inputs[0], inputs[1])?))
    })
}

/// `g` copied node by node into a new graph, each node replaced by what `f` makes of it in the
/// new graph (given its inputs there) or, where `f` gives `None`, copied as it is.
pub(crate) fn rewrite(
    g: &Graph,
    mut f: impl FnMut(&mut Graph, &Node, &[NodeId]) -> Result<Option<NodeId>, CompileError>,
) -> Result<Graph, CompileError> {
    let mut out = Graph::new();
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
        let id = match f(&mut out, n, &inputs)? {
            Some(id) => id,
            None => out.insert(Node { inputs: inputs.as_slice().into(), ..n.clone() }),
        };
        map.push(id);
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}

/// The expansion of `philox_bits` node `n` with counter bases `x` and keys `y` (nodes of `g`).
fn philox_bits(g: &mut Graph, n: &Node, x: NodeId, y: NodeId) -> Result<NodeId, CompileError> {
    let Attrs::Philox { per_call, words } = n.attrs else {
        unreachable!("philox_bits' attributes are Philox (verified)")
    };
    let shape = n.shape.clone();
    let u64s = |g: &mut Graph, v: u64| -> Result<NodeId, CompileError> {
        let c = g.constant(DType::UInt64, Literal::UInt(v))?;
        if shape.is_empty() {
            return Ok(c);
        }
        Ok(g.add(OpKind::BroadcastTo, Attrs::Shape { shape: shape.clone() }, &[c])?)
    };
    // The C-order position of each element.
    let flat = g.iota(DType::Int64, &[numel(&shape)], 0)?;
    let flat = g.add(OpKind::Cast, Attrs::DType { dtype: DType::UInt64 }, &[flat])?;
    let i = if shape.len() == 1 {
        flat
    } else {
        g.add(OpKind::Reshape, Attrs::Shape { shape: shape.clone() }, &[flat])?
    };
    let lane_bit = |g: &mut Graph, bit: u64| -> Result<NodeId, CompileError> {
        let b = u64s(g, bit)?;
        let masked = g.add(OpKind::BitwiseAnd, Attrs::None, &[i, b])?;
        let zero = u64s(g, 0)?;
        Ok(g.add(OpKind::Ne, Attrs::None, &[masked, zero])?)
    };
    let shift = u64s(g, u64::from(per_call.trailing_zeros()))?;
    let call = g.add(OpKind::RightShift, Attrs::None, &[i, shift])?;
    let ctr = g.add(OpKind::Add, Attrs::None, &[call, x])?;
    let hi = g.add(OpKind::PhiloxHigh, Attrs::None, &[ctr, y])?;
    let lo = g.add(OpKind::Philox, Attrs::None, &[ctr, y])?;
    let pair_lane = lane_bit(g, if per_call == 4 { 2 } else { 1 })?;
    let pair = g.add(OpKind::Where, Attrs::None, &[pair_lane, hi, lo])?;
    if words == 2 {
        return Ok(pair);
    }
    let odd = lane_bit(g, 1)?;
    let thirty_two = u64s(g, 32)?;
    let high = g.add(OpKind::RightShift, Attrs::None, &[pair, thirty_two])?;
    let word = g.add(OpKind::Where, Attrs::None, &[odd, high, pair])?;
    let mask = u64s(g, 0xffff_ffff)?;
    Ok(g.add(OpKind::BitwiseAnd, Attrs::None, &[word, mask])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::eval::evaluate;
    use kiln_ir::text::{parse, print};
    use kiln_ir::HostArray;

    /// `philox_bits` of `shape` with the given attributes, its counter base and key inputs
    /// broadcast from rank 0.
    fn draw(shape: &str, per_call: u8, words: u8) -> Graph {
        let text = format!(
            "kiln.graph v1
%0 = input {{index=0}} : u64[]
%1 = input {{index=1}} : u64[]
%2 = broadcast_to(%0) {{shape=[{shape}]}} : u64[{shape}]
%3 = broadcast_to(%1) {{shape=[{shape}]}} : u64[{shape}]
%4 = philox_bits(%2, %3) {{per_call={per_call}, words={words}}} : u64[{shape}]
return %4
"
        );
        parse(&text).unwrap()
    }

    /// The expansion computes the op's definition: every mode, 1-D and 2-D shapes, a counter
    /// base near the wrap.
    #[test]
    fn expansion_matches_the_evaluator() {
        for (per_call, words) in [(4, 1), (4, 2), (2, 2)] {
            for shape in ["13", "3,5"] {
                for offset in [0u64, 7, u64::MAX - 2] {
                    let g = draw(shape, per_call, words);
                    let e = expand(&g).unwrap();
                    kiln_ir::verify::verify(&e).unwrap();
                    assert!(!needed(&e));
                    let inputs = [
                        HostArray::from_vec(&[], vec![offset]).unwrap(),
                        HostArray::from_vec(&[], vec![0x1234_5678_9abc_def0u64]).unwrap(),
                    ];
                    let refs: Vec<&HostArray> = inputs.iter().collect();
                    let want = evaluate(&g, &refs).unwrap();
                    let got = evaluate(&e, &refs).unwrap();
                    assert_eq!(got, want, "per_call {per_call}, words {words}, shape {shape}");
                }
            }
        }
    }

    /// The text of the expansion of a float32 draw's word (per_call 4, words 1).
    #[test]
    fn expansion_of_a_float32_word() {
        let e = expand(&draw("8", 4, 1)).unwrap();
        assert_eq!(print(&e), FLOAT32_WORD);
    }

    const FLOAT32_WORD: &str = "kiln.graph v1
%0 = input {index=0} : u64[]
%1 = input {index=1} : u64[]
%2 = broadcast_to(%0) {shape=[8]} : u64[8]
%3 = broadcast_to(%1) {shape=[8]} : u64[8]
%4 = iota {axis=0} : i64[8]
%5 = cast(%4) {dtype=u64} : u64[8]
%6 = const {value=2} : u64[]
%7 = broadcast_to(%6) {shape=[8]} : u64[8]
%8 = right_shift(%5, %7) : u64[8]
%9 = add(%8, %2) : u64[8]
%10 = philox_high(%9, %3) : u64[8]
%11 = philox(%9, %3) : u64[8]
%12 = bitwise_and(%5, %7) : u64[8]
%13 = const {value=0} : u64[]
%14 = broadcast_to(%13) {shape=[8]} : u64[8]
%15 = not_equal(%12, %14) : bool[8]
%16 = where(%15, %10, %11) : u64[8]
%17 = const {value=1} : u64[]
%18 = broadcast_to(%17) {shape=[8]} : u64[8]
%19 = bitwise_and(%5, %18) : u64[8]
%20 = not_equal(%19, %14) : bool[8]
%21 = const {value=32} : u64[]
%22 = broadcast_to(%21) {shape=[8]} : u64[8]
%23 = right_shift(%16, %22) : u64[8]
%24 = where(%20, %23, %16) : u64[8]
%25 = const {value=4294967295} : u64[]
%26 = broadcast_to(%25) {shape=[8]} : u64[8]
%27 = bitwise_and(%24, %26) : u64[8]
return %27
";

    /// A graph without the op comes back unchanged.
    #[test]
    fn graphs_without_draws_are_unchanged() {
        let g = parse(
            "kiln.graph v1\n%0 = input {index=0} : f32[4]\n%1 = negative(%0) : f32[4]\nreturn %1\n",
        )
        .unwrap();
        assert!(!needed(&g));
        assert_eq!(print(&expand(&g).unwrap()), print(&g));
    }
}
