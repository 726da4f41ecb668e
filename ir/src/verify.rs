//! The verifier, run between compiler stages: every node obeys its op's dtype, shape, arity and
//! attribute rules, and the graph is in topological order.
//!
//! Per node, in order:
//! * its inputs are earlier nodes;
//! * its attributes are of its op's schema ([`crate::ops::AttrKind`]);
//! * leaves take no inputs and their dtype is in the op's domain; a `const` is rank 0 and its
//!   literal fits its dtype ([`Literal::fits`]); an `iota`'s axis is less than its rank;
//! * a custom kernel has the op table's arity (its type is declared, there is no rule);
//! * every other node's declared dtype and shape are what [`infer`] gives for its inputs.
//!
//! Then the outputs name nodes of the graph.

use crate::error::{IrError, Result};
use crate::graph::{Attrs, Graph, Literal, Node};
use crate::infer::infer;
use crate::ops::{Arity, OpClass};
use crate::text::type_string;

/// Checks every node of `g`; the first violation is an [`IrError::Verify`].
pub fn verify(g: &Graph) -> Result<()> {
    for (i, node) in g.nodes().iter().enumerate() {
        verify_node(g, i, node).map_err(|message| IrError::Verify {
            node: i,
            op: node.op.name().to_string(),
            message,
        })?;
    }
    for (k, o) in g.outputs().iter().enumerate() {
        if o.index() >= g.len() {
            return Err(IrError::Verify {
                node: o.index(),
                op: "return".into(),
                message: format!(
                    "output {k} is {o}, which is not in the graph ({} nodes)",
                    g.len()
                ),
            });
        }
    }
    Ok(())
}

/// The violation of node `i`, as a message.
fn verify_node(g: &Graph, i: usize, node: &Node) -> Result<(), String> {
    let info = node.op.info();
    if let Some(bad) = node.inputs.iter().find(|id| id.index() >= i) {
        return Err(format!("input {bad} is not an earlier node"));
    }
    if node.attrs.kind() != info.attrs {
        return Err(format!(
            "has {:?} attributes, but the op takes {:?}",
            node.attrs.kind(),
            info.attrs
        ));
    }
    let declared = type_string(node.dtype, &node.shape);
    match info.class {
        OpClass::Leaf => {
            if !node.inputs.is_empty() {
                return Err(format!("a leaf takes no inputs, got {}", node.inputs.len()));
            }
            if !info.domain.contains(node.dtype) {
                return Err(format!(
                    "dtype {} is not allowed; it takes {}",
                    node.dtype.short_name(),
                    info.domain.describe()
                ));
            }
            match &node.attrs {
                Attrs::Const { value } => {
                    if !node.shape.is_empty() {
                        return Err(format!("declared {declared} but a constant is rank 0"));
                    }
                    if !value.fits(node.dtype) {
                        return Err(format!(
                            "value {} does not fit {}",
                            describe_literal(*value),
                            node.dtype.short_name()
                        ));
                    }
                }
                Attrs::Iota { axis } if *axis >= node.shape.len() => {
                    return Err(format!("axis {axis} is out of bounds for {declared}"));
                }
                _ => {}
            }
            Ok(())
        }
        OpClass::Custom => {
            let n = node.inputs.len();
            match info.arity {
                Arity::Fixed(k) if n != k => Err(format!("expected {k} input(s), got {n}")),
                Arity::Variadic if n == 0 => Err("expected at least 1 input, got 0".to_string()),
                _ => Ok(()),
            }
        }
        _ => {
            let types: Vec<_> = node
                .inputs
                .iter()
                .map(|&id| (g.node(id).dtype, g.node(id).shape.as_slice()))
                .collect();
            let (dtype, shape) = infer(node.op, &node.attrs, &types).map_err(|e| e.to_string())?;
            if dtype != node.dtype || shape != node.shape {
                return Err(format!(
                    "declared {declared} but the rules give {}",
                    type_string(dtype, &shape)
                ));
            }
            Ok(())
        }
    }
}

fn describe_literal(value: Literal) -> String {
    match value {
        Literal::Bool(b) => b.to_string(),
        Literal::Int(i) => i.to_string(),
        Literal::UInt(u) => u.to_string(),
        Literal::Float(b) => format!("{:?}", f64::from_bits(b)),
        Literal::Complex(re, im) => format!("({:?}, {:?})", f64::from_bits(re), f64::from_bits(im)),
    }
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::*;
    use crate::dtype::DType;
    use crate::graph::NodeId;
    use crate::ops::OpKind;

    fn leaf(op: OpKind, attrs: Attrs, dtype: DType, shape: &[usize]) -> Node {
        Node { op, attrs, inputs: smallvec![], dtype, shape: shape.into() }
    }

    /// The message of the verifier's error, checking it names `node` and `op`.
    fn fails(g: &Graph, node: usize, op: &str) -> String {
        match verify(g) {
            Err(IrError::Verify { node: n, op: o, message }) => {
                assert_eq!((n, o.as_str()), (node, op), "{message}");
                message
            }
            other => panic!("expected a verifier error, got {other:?}"),
        }
    }

    fn f32_input(g: &mut Graph, shape: &[usize]) -> NodeId {
        g.input(0, DType::Float32, shape)
    }

    #[test]
    fn accepts_a_well_typed_graph() {
        let mut g = Graph::new();
        let x = f32_input(&mut g, &[2, 3]);
        let c = g.constant(DType::Float32, Literal::float(DType::Float32, 2.0)).unwrap();
        let b = g.add(OpKind::BroadcastTo, Attrs::Shape { shape: smallvec![2, 3] }, &[c]).unwrap();
        let m = g.add(OpKind::Mul, Attrs::None, &[x, b]).unwrap();
        let s = g
            .add(OpKind::Sum, Attrs::Reduce { axes: smallvec![1], keepdims: false }, &[m])
            .unwrap();
        let k = g.insert(Node {
            op: OpKind::CustomKernel,
            attrs: Attrs::Custom { name: "k".into() },
            inputs: smallvec![s],
            dtype: DType::Int8,
            shape: smallvec![7],
        });
        g.iota(DType::Int32, &[4, 5], 1).unwrap();
        g.set_outputs(vec![s, k]);
        verify(&g).unwrap();
    }

    #[test]
    fn wrong_declared_type() {
        let mut g = Graph::new();
        let x = f32_input(&mut g, &[3]);
        g.insert(Node {
            op: OpKind::Sin,
            attrs: Attrs::None,
            inputs: smallvec![x],
            dtype: DType::Float64,
            shape: smallvec![3],
        });
        assert_eq!(fails(&g, 1, "sin"), "declared f64[3] but the rules give f32[3]");

        let mut g = Graph::new();
        let x = f32_input(&mut g, &[3]);
        g.insert(Node {
            op: OpKind::Neg,
            attrs: Attrs::None,
            inputs: smallvec![x],
            dtype: DType::Float32,
            shape: smallvec![3, 1],
        });
        assert_eq!(fails(&g, 1, "negative"), "declared f32[3,1] but the rules give f32[3]");
    }

    #[test]
    fn rule_violations_carry_the_rules_message() {
        let mut g = Graph::new();
        let x = f32_input(&mut g, &[3]);
        let y = g.input(1, DType::Float64, &[3]);
        g.insert(Node {
            op: OpKind::Add,
            attrs: Attrs::None,
            inputs: smallvec![x, y],
            dtype: DType::Float32,
            shape: smallvec![3],
        });
        let m = fails(&g, 2, "add");
        assert!(m.contains("must share one dtype"), "{m}");

        let mut g = Graph::new();
        let x = g.input(0, DType::Int32, &[3]);
        g.insert(Node {
            op: OpKind::Sqrt,
            attrs: Attrs::None,
            inputs: smallvec![x],
            dtype: DType::Int32,
            shape: smallvec![3],
        });
        assert!(fails(&g, 1, "sqrt").contains("no loop for dtype"));

        let mut g = Graph::new();
        let x = f32_input(&mut g, &[3]);
        g.insert(Node {
            op: OpKind::Add,
            attrs: Attrs::None,
            inputs: smallvec![x],
            dtype: DType::Float32,
            shape: smallvec![3],
        });
        assert!(fails(&g, 1, "add").contains("expected 2 operand(s), got 1"));
    }

    #[test]
    fn attributes_of_the_wrong_schema() {
        let mut g = Graph::new();
        let x = f32_input(&mut g, &[3]);
        g.insert(Node {
            op: OpKind::Sum,
            attrs: Attrs::Axes { axes: smallvec![0] },
            inputs: smallvec![x],
            dtype: DType::Float32,
            shape: smallvec![],
        });
        assert_eq!(fails(&g, 1, "sum"), "has Axes attributes, but the op takes Reduce");

        let mut g = Graph::new();
        g.insert(leaf(OpKind::Input, Attrs::Iota { axis: 0 }, DType::Float32, &[3]));
        assert_eq!(fails(&g, 0, "input"), "has Iota attributes, but the op takes Input");
    }

    #[test]
    fn inputs_must_be_earlier_nodes() {
        let mut g = Graph::new();
        let x = f32_input(&mut g, &[3]);
        let neg = |input| Node {
            op: OpKind::Neg,
            attrs: Attrs::None,
            inputs: smallvec![input],
            dtype: DType::Float32,
            shape: smallvec![3],
        };
        g.insert(neg(x));
        let mut bad = g.clone();
        bad.push_unchecked(neg(NodeId(2)));
        assert_eq!(fails(&bad, 2, "negative"), "input %2 is not an earlier node");
        let mut bad = g.clone();
        bad.push_unchecked(neg(NodeId(7)));
        assert_eq!(fails(&bad, 2, "negative"), "input %7 is not an earlier node");
    }

    #[test]
    fn leaves() {
        let mut g = Graph::new();
        g.insert(leaf(OpKind::Const, Attrs::Const { value: Literal::Int(300) }, DType::Int8, &[]));
        assert_eq!(fails(&g, 0, "const"), "value 300 does not fit i8");

        let mut g = Graph::new();
        g.insert(leaf(
            OpKind::Const,
            Attrs::Const { value: Literal::Float(0.1f64.to_bits()) },
            DType::Float32,
            &[],
        ));
        assert!(fails(&g, 0, "const").starts_with("value 0.1 does not fit f32"));

        let mut g = Graph::new();
        g.insert(leaf(
            OpKind::Const,
            Attrs::Const { value: Literal::Bool(true) },
            DType::Int32,
            &[],
        ));
        assert_eq!(fails(&g, 0, "const"), "value true does not fit i32");

        let mut g = Graph::new();
        g.insert(leaf(OpKind::Const, Attrs::Const { value: Literal::Int(1) }, DType::Int32, &[2]));
        assert_eq!(fails(&g, 0, "const"), "declared i32[2] but a constant is rank 0");

        let mut g = Graph::new();
        g.insert(leaf(OpKind::Iota, Attrs::Iota { axis: 2 }, DType::Int32, &[2, 3]));
        assert_eq!(fails(&g, 0, "iota"), "axis 2 is out of bounds for i32[2,3]");

        let mut g = Graph::new();
        g.insert(leaf(OpKind::Iota, Attrs::Iota { axis: 0 }, DType::Bool, &[2]));
        assert!(fails(&g, 0, "iota").starts_with("dtype bool is not allowed"));

        let mut g = Graph::new();
        let x = f32_input(&mut g, &[3]);
        g.insert(Node {
            op: OpKind::Input,
            attrs: Attrs::Input { index: 1 },
            inputs: smallvec![x],
            dtype: DType::Float32,
            shape: smallvec![3],
        });
        assert_eq!(fails(&g, 1, "input"), "a leaf takes no inputs, got 1");
    }

    #[test]
    fn custom_kernels_need_an_input() {
        let mut g = Graph::new();
        g.insert(leaf(
            OpKind::CustomKernel,
            Attrs::Custom { name: "k".into() },
            DType::Float32,
            &[2],
        ));
        assert_eq!(fails(&g, 0, "custom"), "expected at least 1 input, got 0");
    }

    #[test]
    fn outputs_must_exist() {
        let mut g = Graph::new();
        f32_input(&mut g, &[3]);
        g.set_outputs(vec![NodeId(0), NodeId(4)]);
        assert_eq!(fails(&g, 4, "return"), "output 1 is %4, which is not in the graph (1 nodes)");
    }
}
