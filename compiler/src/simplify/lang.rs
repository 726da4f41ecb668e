//! The e-graph language: IR nodes as e-nodes, taken from the op table (no second list of ops),
//! and the analysis that gives every e-class its dtype, shape and constant value.

use std::fmt;

use egg::{Analysis, DidMerge, FromOp, FromOpError, Id, Language};
use kiln_ir::graph::{Attrs, Graph, Literal, Node};
use kiln_ir::infer::infer;
use kiln_ir::ops::{Arity, AttrKind, DTypeRule, OpKind};
use kiln_ir::{DType, IrError, Shape};
use smallvec::SmallVec;

/// A dtype and a shape.
pub type Ty = (DType, Shape);

/// The e-graph kiln's rules run on.
pub type EG = egg::EGraph<ENode, KilnAnalysis>;

/// An IR node with e-class children: op, attributes, and for ops whose type is declared rather
/// than inferred (leaves, custom kernels) that type. Two e-nodes are the same when op,
/// attributes, declared type and children are, as [`Graph`]'s hash-consing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ENode {
    pub op: OpKind,
    pub attrs: Attrs,
    /// `Some` exactly for the ops of [`DTypeRule::Declared`].
    pub ty: Option<Box<Ty>>,
    pub children: SmallVec<[Id; 3]>,
}

/// Whether the op's node declares its type (leaves and custom kernels).
pub fn declares_type(op: OpKind) -> bool {
    op.info().dtype_rule == DTypeRule::Declared
}

impl ENode {
    /// An e-node of an op whose type is inferred.
    pub fn new(op: OpKind, attrs: Attrs, children: &[Id]) -> ENode {
        debug_assert!(!declares_type(op), "{} declares its type", op.name());
        ENode { op, attrs, ty: None, children: children.into() }
    }

    /// The e-node of a graph node whose inputs are the classes `children`.
    pub fn from_node(node: &Node, children: &[Id]) -> ENode {
        let ty = declares_type(node.op).then(|| Box::new((node.dtype, node.shape.clone())));
        ENode { op: node.op, attrs: node.attrs.clone(), ty, children: children.into() }
    }
}

impl Language for ENode {
    type Discriminant = OpKind;

    fn discriminant(&self) -> OpKind {
        self.op
    }

    fn matches(&self, other: &Self) -> bool {
        self.op == other.op
            && self.attrs == other.attrs
            && self.ty == other.ty
            && self.children.len() == other.children.len()
    }

    fn children(&self) -> &[Id] {
        &self.children
    }

    fn children_mut(&mut self) -> &mut [Id] {
        &mut self.children
    }
}

/// The op's IR name; ops with attributes or a declared type add them (for debugging only: only
/// attribute-free ops parse back, see [`FromOp`]).
impl fmt::Display for ENode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.op.name())?;
        if self.attrs != Attrs::None {
            write!(f, "{:?}", self.attrs)?;
        }
        if let Some(ty) = &self.ty {
            write!(f, ":{}", kiln_ir::text::type_string(ty.0, &ty.1))?;
        }
        Ok(())
    }
}

/// Parses the ops that take no attributes and infer their type, by their IR name, so that plain
/// algebra can be written as egg patterns: `(negative (negative ?x))`.
impl FromOp for ENode {
    type Error = FromOpError;

    fn from_op(op: &str, children: Vec<Id>) -> Result<Self, Self::Error> {
        let kind = OpKind::from_name(op).filter(|k| {
            let info = k.info();
            let arity_ok = match info.arity {
                Arity::Fixed(n) => n == children.len(),
                Arity::Variadic => !children.is_empty(),
            };
            info.attrs == AttrKind::None && !declares_type(*k) && arity_ok
        });
        match kind {
            Some(k) => Ok(ENode::new(k, Attrs::None, &children)),
            None => Err(FromOpError::new(op, children)),
        }
    }
}

/// What the analysis knows of an e-class.
#[derive(Clone, Debug, PartialEq)]
pub struct Data {
    pub dtype: DType,
    pub shape: Shape,
    /// The value of every element, where the class is a constant: a `const`, or views of one
    /// (`broadcast_to(const)`, reshapes of it ...). Constant folding adds more.
    pub splat: Option<Literal>,
}

/// The e-graph analysis: each class's [`Data`]; it also holds the graph's outputs, for rules
/// that must know whether a class's whole value is needed.
#[derive(Clone, Debug, Default)]
pub struct KilnAnalysis {
    /// The classes of the graph's outputs (not necessarily canonical).
    pub outputs: Vec<Id>,
}

/// The type of an e-node from its children's classes (or its declaration).
pub fn node_type(egraph: &EG, node: &ENode) -> Result<Ty, IrError> {
    if let Some(ty) = &node.ty {
        return Ok((**ty).clone());
    }
    let types: SmallVec<[(DType, &[usize]); 3]> = node
        .children
        .iter()
        .map(|&c| (egraph[c].data.dtype, egraph[c].data.shape.as_slice()))
        .collect();
    infer(node.op, &node.attrs, &types)
}

impl Analysis<ENode> for KilnAnalysis {
    type Data = Data;

    fn make(egraph: &mut EG, enode: &ENode, _id: Id) -> Data {
        let (dtype, shape) = node_type(egraph, enode).unwrap_or_else(|e| {
            panic!("simplify: an ill-typed e-node {enode}: {e} (rules build only well-typed nodes)")
        });
        let splat = match &enode.attrs {
            Attrs::Const { value } => Some(*value),
            _ if enode.op.is_view() => egraph[enode.children[0]].data.splat,
            _ => None,
        };
        Data { dtype, shape, splat }
    }

    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        debug_assert!(
            a.dtype == b.dtype && a.shape == b.shape,
            "simplify: merged classes of types {:?} and {:?}",
            (a.dtype, &a.shape),
            (b.dtype, &b.shape)
        );
        match (a.splat, b.splat) {
            (None, Some(v)) => {
                a.splat = Some(v);
                DidMerge(true, false)
            }
            (Some(_), None) => DidMerge(false, true),
            _ => DidMerge(false, false),
        }
    }
}

/// The e-graph of a graph (its outputs recorded in the analysis), and the class of each node.
pub fn egraph_of(g: &Graph) -> (EG, Vec<Id>) {
    let mut egraph = EG::new(KilnAnalysis::default());
    let mut ids: Vec<Id> = Vec::with_capacity(g.len());
    for node in g.nodes() {
        let children: SmallVec<[Id; 3]> = node.inputs.iter().map(|i| ids[i.index()]).collect();
        ids.push(egraph.add(ENode::from_node(node, &children)));
    }
    egraph.rebuild();
    egraph.analysis.outputs = g.outputs().iter().map(|o| ids[o.index()]).collect();
    (egraph, ids)
}
