//! A traced closure as a template: the expression DAG from its arguments to its results, which
//! is instantiated again for other arguments of the same signature.
//!
//! The closure is traced on stand-in arguments whose extents are distinct primes (a "sentinel"
//! per class of equal extents), so every size in the trace that comes from the arguments' shapes
//! is a product of sentinels, and every constant that comes from a scalar argument is that
//! scalar's sentinel. Instantiating replaces each sentinel factor by the real extent and each
//! sentinel scalar by the real one. A second trace with other sentinels checks the template: if
//! instantiating the first with the second's sentinels does not give the second exactly (a size
//! derived otherwise, like `n - 1` of a slice, or Rust code that looks at the values), the
//! closure is not shape-generic and is traced again for each call.

use std::collections::HashMap;
use std::sync::Arc;

use kiln_ir::graph::SliceDim;
use kiln_ir::infer::infer;
use kiln_ir::{Attrs, DType, Literal, OpKind, Shape, WeakScalar};
use smallvec::SmallVec;

use crate::array::{Array, Expr};
use crate::elementwise::scalar_literal;

/// One node of a template.
#[derive(Clone, Debug)]
pub(crate) enum TNode {
    /// The closure's argument `k`.
    Arg(usize),
    /// An array holding data (captured by the closure): used as it is.
    External(Array),
    Op {
        op: OpKind,
        attrs: Attrs,
        inputs: Vec<usize>,
        dtype: DType,
        shape: Shape,
    },
}

/// A traced closure: its nodes in topological order and the indices of its results.
#[derive(Clone, Debug)]
pub(crate) struct Template {
    pub nodes: Vec<TNode>,
    pub outputs: Vec<usize>,
}

impl Template {
    /// The template of `outputs`, computed from the stand-ins `args` (a stand-in is found by
    /// identity). Arrays holding data are externals; every other expression is recreated from
    /// the template (hash-consing merges what the closure captured with what it computed).
    pub fn extract(args: &[Option<Array>], outputs: &[Array]) -> Template {
        let arg_of: HashMap<*const Expr, usize> = args
            .iter()
            .enumerate()
            .filter_map(|(k, a)| a.as_ref().map(|a| (Arc::as_ptr(&a.e), k)))
            .collect();
        let mut index: HashMap<*const Expr, usize> = HashMap::new();
        let mut nodes: Vec<TNode> = Vec::new();
        for root in outputs {
            let mut stack: Vec<(&Array, bool)> = vec![(root, false)];
            while let Some((a, expanded)) = stack.pop() {
                let key = Arc::as_ptr(&a.e);
                if index.contains_key(&key) {
                    continue;
                }
                let leaf = if let Some(&k) = arg_of.get(&key) {
                    Some(TNode::Arg(k))
                } else if a.e.value.get().is_some() {
                    Some(TNode::External(a.clone()))
                } else {
                    None
                };
                if let Some(n) = leaf {
                    index.insert(key, nodes.len());
                    nodes.push(n);
                    continue;
                }
                if !expanded {
                    stack.push((a, true));
                    stack.extend(
                        a.e.inputs
                            .iter()
                            .rev()
                            .filter(|i| !index.contains_key(&Arc::as_ptr(&i.e)))
                            .map(|i| (i, false)),
                    );
                    continue;
                }
                index.insert(key, nodes.len());
                nodes.push(TNode::Op {
                    op: a.e.op,
                    attrs: a.e.attrs.clone(),
                    inputs: a.e.inputs.iter().map(|i| index[&Arc::as_ptr(&i.e)]).collect(),
                    dtype: a.e.dtype,
                    shape: a.e.shape.clone(),
                });
            }
        }
        Template { outputs: outputs.iter().map(|o| index[&Arc::as_ptr(&o.e)]).collect(), nodes }
    }

    /// The arrays holding data the closure captured (its externals).
    pub fn captured(&self) -> Vec<Array> {
        self.nodes
            .iter()
            .filter_map(|n| match n {
                TNode::External(a) => Some(a.clone()),
                TNode::Arg(_) | TNode::Op { .. } => None,
            })
            .collect()
    }

    /// Whether two templates are the same computation (externals by identity).
    pub fn same(&self, other: &Template) -> bool {
        self.outputs == other.outputs
            && self.nodes.len() == other.nodes.len()
            && self.nodes.iter().zip(&other.nodes).all(|(a, b)| match (a, b) {
                (TNode::Arg(x), TNode::Arg(y)) => x == y,
                (TNode::External(x), TNode::External(y)) => x.same_expr(y),
                (
                    TNode::Op { op, attrs, inputs, dtype, shape },
                    TNode::Op { op: o2, attrs: a2, inputs: i2, dtype: d2, shape: s2 },
                ) => op == o2 && attrs == a2 && inputs == i2 && dtype == d2 && shape == s2,
                _ => false,
            })
    }

    /// The template with every size and scalar constant substituted.
    pub fn substitute(&self, s: &Substitution) -> Option<Template> {
        let nodes = self
            .nodes
            .iter()
            .map(|n| match n {
                TNode::Op { op, attrs, inputs, dtype, shape } => Some(TNode::Op {
                    op: *op,
                    attrs: s.attrs(attrs, *dtype)?,
                    inputs: inputs.clone(),
                    dtype: *dtype,
                    shape: s.shape(shape)?,
                }),
                other => Some(other.clone()),
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Template { nodes, outputs: self.outputs.clone() })
    }

    /// The arrays of a (substituted) template for the arguments `args`: each op's type checked
    /// again by the op table's rules. `None` where a type does not follow (the template does not
    /// fit these arguments).
    pub fn instantiate(&self, args: &[Option<Array>]) -> Option<Vec<Array>> {
        let mut built: Vec<Array> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let a = match n {
                TNode::Arg(k) => args[*k].clone()?,
                TNode::External(a) => a.clone(),
                TNode::Op { op, attrs, inputs, dtype, shape } => {
                    let ins: SmallVec<[Array; 3]> =
                        inputs.iter().map(|&i| built[i].clone()).collect();
                    let declared =
                        op.is_leaf() || op.info().dtype_rule == kiln_ir::ops::DTypeRule::Declared;
                    if !declared {
                        let types: Vec<(DType, &[usize])> =
                            ins.iter().map(|a| (a.dtype(), a.shape())).collect();
                        let (d, s) = infer(*op, attrs, &types).ok()?;
                        if d != *dtype || s != *shape {
                            return None;
                        }
                    }
                    Array::node(*op, attrs.clone(), ins, *dtype, shape.clone())
                }
            };
            built.push(a);
        }
        Some(self.outputs.iter().map(|&o| built[o].clone()).collect())
    }
}

/// Sentinel extents (distinct primes) and scalars, and what replaces them.
#[derive(Clone, Debug)]
pub(crate) struct Substitution {
    /// (sentinel prime, its replacement) per class of equal extents.
    pub sizes: Vec<(usize, usize)>,
    /// (sentinel scalar, its replacement) per scalar argument.
    pub scalars: Vec<(WeakScalar, WeakScalar)>,
}

impl Substitution {
    /// `v` with each sentinel factor replaced; values below every sentinel are left alone.
    fn size(&self, v: usize) -> Option<usize> {
        if self.sizes.iter().all(|&(p, _)| v < p) {
            return Some(v);
        }
        let mut rest = v;
        let mut out: usize = 1;
        for &(p, r) in &self.sizes {
            while rest.is_multiple_of(p) {
                rest /= p;
                out = out.checked_mul(r)?;
            }
        }
        out.checked_mul(rest)
    }

    fn shape(&self, s: &[usize]) -> Option<Shape> {
        s.iter().map(|&v| self.size(v)).collect()
    }

    fn attrs(&self, a: &Attrs, dtype: DType) -> Option<Attrs> {
        Some(match a {
            Attrs::Shape { shape } => Attrs::Shape { shape: self.shape(shape)? },
            Attrs::Slice { dims } => Attrs::Slice {
                dims: dims
                    .iter()
                    .map(|d| {
                        Some(SliceDim {
                            start: self.size(d.start)?,
                            step: d.step,
                            len: self.size(d.len)?,
                        })
                    })
                    .collect::<Option<_>>()?,
            },
            Attrs::Const { value } => Attrs::Const { value: self.constant(*value, dtype)? },
            other => other.clone(),
        })
    }

    /// A constant: a scalar argument's sentinel (as converted to `dtype`) becomes the real
    /// scalar converted the same way; `None` if the real one does not fit the dtype.
    fn constant(&self, value: Literal, dtype: DType) -> Option<Literal> {
        for &(sentinel, real) in &self.scalars {
            if scalar_literal(dtype, sentinel) == value && sentinel != real {
                let lit = scalar_literal(dtype, real);
                if let (WeakScalar::Int(v), Some((lo, hi))) = (real, dtype.int_range()) {
                    if v < lo || v > hi {
                        return None;
                    }
                }
                return Some(lit);
            }
        }
        Some(value)
    }
}
