//! The rewrite rules, by topic, and the machinery for rules written in Rust.
//!
//! Plain algebra on attribute-free ops is written as egg patterns (`(negative (negative ?x))`).
//! Rules that read attributes, types or constants are [`NodeRule`]s: a Rust function that looks
//! at one e-node of the ops it is registered for and, if it applies, builds the equivalent
//! expression with a [`Build`]; the searcher carries that expression to the applier as the
//! match's pattern (egg's `SearchMatches::ast`), and the applier adds it and merges it into the
//! matched class. A [`Build`] infers the type of every node it adds, so a rule cannot add an
//! ill-typed node, and the searcher drops a result whose type differs from the class's.
//!
//! Every rule is exact (IEEE-exact for floats, wrap-around for integers) unless its name starts
//! with `fast-math-`: those are added only with [`SimplifyOptions::fast_math`].

use std::borrow::Cow;

use egg::{
    Applier, ENodeOrVar, Id, PatternAst, RecExpr, SearchMatches, Searcher, Subst, Symbol, Var,
};
use kiln_ir::graph::{Attrs, Literal};
use kiln_ir::infer::infer;
use kiln_ir::ops::{OpClass, OpKind};
use kiln_ir::{DType, Shape};
use smallvec::SmallVec;

use super::lang::{declares_type, Data, ENode, KilnAnalysis, Ty, EG};
use super::SimplifyOptions;

pub mod algebra;
pub mod casts;
pub mod compare;
pub mod constants;
pub mod reductions;
pub mod views;

/// A rewrite of kiln's e-graph.
pub type Rewrite = egg::Rewrite<ENode, KilnAnalysis>;

/// Every rule the options ask for.
pub fn all(opts: &SimplifyOptions) -> Vec<Rewrite> {
    let mut rules = Vec::new();
    rules.extend(algebra::rules(opts));
    rules.extend(casts::rules());
    rules.extend(compare::rules());
    rules.extend(views::rules());
    rules.extend(reductions::rules());
    rules.extend(constants::rules());
    rules
}

/// An index into the expression a [`Build`] is making.
pub type Idx = Id;

/// The expression a [`NodeRule`] builds: new nodes over existing classes, bottom-up, the last
/// one the result. Each node's type is inferred as it is added.
pub struct Build<'a> {
    pub egraph: &'a EG,
    ast: PatternAst<ENode>,
    types: Vec<Ty>,
    subst: Subst,
    /// The classes referred to, in the order of their variables.
    classes: SmallVec<[Id; 4]>,
}

impl<'a> Build<'a> {
    pub fn new(egraph: &'a EG) -> Build<'a> {
        Build {
            egraph,
            ast: RecExpr::default(),
            types: Vec::new(),
            subst: Subst::default(),
            classes: SmallVec::new(),
        }
    }

    fn push(&mut self, node: ENodeOrVar<ENode>, ty: Ty) -> Idx {
        self.types.push(ty);
        self.ast.add(node)
    }

    /// The existing class `id`.
    pub fn class(&mut self, id: Id) -> Idx {
        let id = self.egraph.find(id);
        let k = match self.classes.iter().position(|&c| c == id) {
            Some(k) => k,
            None => {
                self.classes.push(id);
                self.subst.insert(Var::from_u32(self.classes.len() as u32 - 1), id);
                self.classes.len() - 1
            }
        };
        let d = &self.egraph[id].data;
        self.push(ENodeOrVar::Var(Var::from_u32(k as u32)), (d.dtype, d.shape.clone()))
    }

    /// A node of an op whose type is inferred; `None` if the op's rules reject the inputs.
    pub fn op(&mut self, op: OpKind, attrs: Attrs, inputs: &[Idx]) -> Option<Idx> {
        debug_assert!(!declares_type(op));
        let ty = {
            let types: SmallVec<[(DType, &[usize]); 3]> = inputs
                .iter()
                .map(|&i| (self.types[usize::from(i)].0, self.types[usize::from(i)].1.as_slice()))
                .collect();
            infer(op, &attrs, &types).ok()?
        };
        Some(self.push(ENodeOrVar::ENode(ENode::new(op, attrs, inputs)), ty))
    }

    /// A rank-0 constant; `None` if the value does not fit the dtype.
    pub fn constant(&mut self, dtype: DType, value: Literal) -> Option<Idx> {
        if !value.fits(dtype) {
            return None;
        }
        let ty: Ty = (dtype, Shape::new());
        let node = ENode {
            op: OpKind::Const,
            attrs: Attrs::Const { value },
            ty: Some(Box::new(ty.clone())),
            children: SmallVec::new(),
        };
        Some(self.push(ENodeOrVar::ENode(node), ty))
    }

    /// An array of `shape` whose every element is `value`: `const`, broadcast unless rank 0.
    pub fn splat(&mut self, dtype: DType, shape: &[usize], value: Literal) -> Option<Idx> {
        let c = self.constant(dtype, value)?;
        if shape.is_empty() {
            Some(c)
        } else {
            self.op(OpKind::BroadcastTo, Attrs::Shape { shape: shape.into() }, &[c])
        }
    }

    /// The type of a built node.
    pub fn ty(&self, i: Idx) -> &Ty {
        &self.types[usize::from(i)]
    }

    /// The match: the expression ending at `root`, and the substitution of its classes.
    fn finish(mut self, root: Idx) -> (PatternAst<ENode>, Subst, Ty) {
        if usize::from(root) + 1 != self.ast.len() {
            // The result is an earlier node: only a class reference can be repeated as the root.
            match &self.ast[root] {
                ENodeOrVar::Var(v) => {
                    let (v, ty) = (*v, self.types[usize::from(root)].clone());
                    self.push(ENodeOrVar::Var(v), ty);
                }
                ENodeOrVar::ENode(_) => panic!("a rule's result must be the last node it builds"),
            }
        }
        let ty = self.types.pop().expect("a rule builds at least one node");
        (self.ast, self.subst, ty)
    }
}

/// The body of a [`NodeRule`]: given the e-node `node` of class `class`, the equivalent
/// expression's root (built with the [`Build`]), or `None` where the rule does not apply.
pub type RuleFn = fn(&mut Build, Id, &ENode) -> Option<Idx>;

/// The body of a nested [`NodeRule`]: as [`RuleFn`], given also an e-node `inner` of the class of
/// `node`'s first operand. The rule is tried on every such e-node the rule's predicate admits.
pub type NestedFn = fn(&mut Build, Id, &ENode, &ENode) -> Option<Idx>;

#[derive(Clone, Copy)]
enum Body {
    Node(RuleFn),
    Nested(fn(OpKind) -> bool, NestedFn),
}

/// A rule written in Rust: its function is tried on every e-node of the `roots` ops (every
/// e-node when `roots` is empty).
#[derive(Clone, Copy)]
pub struct NodeRule {
    roots: &'static [OpKind],
    body: Body,
}

impl NodeRule {
    /// The rewrite named `name`, trying `f` on each e-node of the `roots` ops.
    pub fn rewrite(name: &str, roots: &'static [OpKind], f: RuleFn) -> Rewrite {
        Self::make(name, NodeRule { roots, body: Body::Node(f) })
    }

    /// The rewrite named `name`, trying `f` on each e-node of the `roots` ops together with each
    /// e-node of an `inner` op in its first operand's class: `outer(inner(..))`.
    pub fn nested(
        name: &str,
        roots: &'static [OpKind],
        inner: fn(OpKind) -> bool,
        f: NestedFn,
    ) -> Rewrite {
        Self::make(name, NodeRule { roots, body: Body::Nested(inner, f) })
    }

    fn make(name: &str, rule: NodeRule) -> Rewrite {
        Rewrite::new(name, rule, rule).expect("a node rule binds no variables")
    }

    fn search_class(
        &self,
        egraph: &EG,
        class: Id,
        op: Option<OpKind>,
        out: &mut Vec<SearchMatches<'static, ENode>>,
    ) {
        let eclass = &egraph[class];
        let mut found = |b: Build, root: Option<Idx>| {
            let Some(root) = root else { return };
            let (ast, subst, ty) = b.finish(root);
            if ty.0 != eclass.data.dtype || ty.1 != eclass.data.shape {
                debug_assert!(
                    false,
                    "rule result {ty:?} for a class of {:?} {:?}",
                    eclass.data.dtype, eclass.data.shape
                );
                return;
            }
            out.push(SearchMatches {
                eclass: eclass.id,
                substs: vec![subst],
                ast: Some(Cow::Owned(ast)),
            });
        };
        for node in eclass.iter() {
            if op.is_some_and(|op| node.op != op) {
                continue;
            }
            match self.body {
                Body::Node(f) => {
                    let mut b = Build::new(egraph);
                    let root = f(&mut b, eclass.id, node);
                    found(b, root);
                }
                Body::Nested(admits, f) => {
                    let Some(&first) = node.children.first() else { continue };
                    for inner in egraph[first].iter().filter(|n| admits(n.op)) {
                        let mut b = Build::new(egraph);
                        let root = f(&mut b, eclass.id, node, inner);
                        found(b, root);
                    }
                }
            }
        }
    }
}

impl Searcher<ENode, KilnAnalysis> for NodeRule {
    fn search_eclass_with_limit(
        &self,
        egraph: &EG,
        eclass: Id,
        limit: usize,
    ) -> Option<SearchMatches<'_, ENode>> {
        let mut out = Vec::new();
        self.search_class(egraph, eclass, None, &mut out);
        out.truncate(limit.min(1));
        out.pop()
    }

    fn search_with_limit(&self, egraph: &EG, limit: usize) -> Vec<SearchMatches<'_, ENode>> {
        let mut out = Vec::new();
        if self.roots.is_empty() {
            for class in egraph.classes() {
                if out.len() >= limit {
                    break;
                }
                self.search_class(egraph, class.id, None, &mut out);
            }
        } else {
            for &op in self.roots {
                for class in egraph.classes_for_op(&op).into_iter().flatten() {
                    if out.len() >= limit {
                        break;
                    }
                    self.search_class(egraph, class, Some(op), &mut out);
                }
            }
        }
        out.truncate(limit);
        out
    }

    fn vars(&self) -> Vec<Var> {
        vec![]
    }
}

impl Applier<ENode, KilnAnalysis> for NodeRule {
    fn apply_matches(
        &self,
        egraph: &mut EG,
        matches: &[SearchMatches<ENode>],
        _rule: Symbol,
    ) -> Vec<Id> {
        let mut changed = Vec::new();
        for m in matches {
            let ast = m.ast.as_ref().expect("a node rule's match carries its expression");
            for subst in &m.substs {
                let id = egraph.add_instantiation(ast, subst);
                if egraph.union(m.eclass, id) {
                    changed.push(id);
                }
            }
        }
        changed
    }

    fn apply_one(
        &self,
        _: &mut EG,
        _: Id,
        _: &Subst,
        _: Option<&PatternAst<ENode>>,
        _: Symbol,
    ) -> Vec<Id> {
        unreachable!("node rules apply through apply_matches")
    }
}

// Helpers for rules.

/// The analysis data of a class.
pub fn data(egraph: &EG, id: Id) -> &Data {
    &egraph[id].data
}

/// The e-nodes of op `op` in class `id`.
pub fn nodes_of(egraph: &EG, id: Id, op: OpKind) -> impl Iterator<Item = &ENode> {
    egraph[id].iter().filter(move |n| n.op == op)
}

/// The constant every element of class `id` has, if known.
pub fn splat(egraph: &EG, id: Id) -> Option<Literal> {
    egraph[id].data.splat
}

/// `value` of `dtype` as a literal (integers, floats and complex; bools take 0 and 1).
pub fn lit(dtype: DType, value: i128) -> Literal {
    Literal::from_i128(dtype, value)
}

/// Whether class `id` is the constant `value` (converted to its dtype) everywhere.
pub fn is_splat(egraph: &EG, id: Id, value: i128) -> bool {
    let d = data(egraph, id);
    d.splat == Some(lit(d.dtype, value))
}

/// Whether class `id` is the float constant whose bits are those of `x` (`-0.0` is not `0.0`).
pub fn is_float_splat(egraph: &EG, id: Id, x: f64) -> bool {
    let d = data(egraph, id);
    match d.splat {
        Some(Literal::Float(bits)) => bits == x.to_bits(),
        Some(Literal::Complex(re, im)) => re == x.to_bits() && im == x.to_bits(),
        _ => false,
    }
}

/// Whether the whole value of class `id` is needed whatever the rewrites: it is an output, or
/// a fusion boundary (reduction, copy, vendor op, custom kernel) reads it.
pub fn wholly_needed(egraph: &EG, id: Id) -> bool {
    let id = egraph.find(id);
    egraph.analysis.outputs.iter().any(|&o| egraph.find(o) == id)
        || egraph[id].parents().any(|p| {
            let op = egraph.id_to_node(p).op;
            !matches!(op.class(), OpClass::Elementwise | OpClass::View | OpClass::Leaf)
                && egraph.find(p) != id
        })
}

#[cfg(test)]
pub(crate) mod testing {
    //! Rule tests: input text → simplified text.

    use std::time::Duration;

    use kiln_ir::text::{parse, print};
    use kiln_ir::verify::verify;

    use crate::simplify::{simplify, Simplified, SimplifyOptions};

    /// Limits that never stop a test's small graph early.
    pub fn opts() -> SimplifyOptions {
        SimplifyOptions {
            iter_limit: 64,
            node_limit: 100_000,
            time_limit: Duration::from_secs(60),
            fast_math: false,
        }
    }

    /// The text of a graph: the header, then `body`.
    pub fn text(body: &str) -> String {
        format!("kiln.graph v1\n{}", body.trim_start_matches('\n'))
    }

    pub fn run_with(body: &str, opts: &SimplifyOptions) -> Simplified {
        let g = parse(&text(body)).unwrap_or_else(|e| panic!("{e}\n{body}"));
        verify(&g).unwrap();
        let s = simplify(&g, opts).unwrap();
        verify(&s.graph).unwrap();
        assert_eq!(s.graph.outputs().len(), g.outputs().len());
        for (a, b) in s.graph.outputs().iter().zip(g.outputs()) {
            let (a, b) = (s.graph.node(*a), g.node(*b));
            assert_eq!((a.dtype, &a.shape), (b.dtype, &b.shape));
        }
        s
    }

    /// Simplifies `input`, checks that rule `rule` fired and that the result prints as `expected`.
    #[track_caller]
    pub fn check(rule: &str, input: &str, expected: &str) {
        check_with(rule, input, expected, &opts())
    }

    #[track_caller]
    pub fn check_with(rule: &str, input: &str, expected: &str, opts: &SimplifyOptions) {
        let s = run_with(input, opts);
        let got = print(&s.graph);
        assert_eq!(got, text(expected), "\nreport: {}", s.report);
        assert!(s.report.rules_applied.contains_key(rule), "{rule} did not fire: {}", s.report);
    }

    /// Simplifies `input` and checks nothing changed (the printed text is the same).
    #[track_caller]
    pub fn unchanged(input: &str) {
        unchanged_with(input, &opts())
    }

    #[track_caller]
    pub fn unchanged_with(input: &str, opts: &SimplifyOptions) {
        let s = run_with(input, opts);
        assert_eq!(print(&s.graph), text(input), "\nreport: {}", s.report);
    }
}
