//! Reductions: over nothing, and reductions of reductions made one (one kernel fewer).
//!
//! Float sums and products are left alone: their rounding depends on the order of the terms, and
//! even a sum of one element depends on the accumulator's start (`0.0 + -0.0 = +0.0`).

use egg::Id;
use kiln_ir::graph::Attrs;
use kiln_ir::ops::OpKind;
use kiln_ir::{DType, Shape};
use smallvec::SmallVec;

use super::{data, lit, Build, Idx, NodeRule, Rewrite};
use crate::simplify::lang::ENode;

const REDUCTIONS: &[OpKind] = &[
    OpKind::Sum,
    OpKind::Prod,
    OpKind::Max,
    OpKind::Min,
    OpKind::ArgMax,
    OpKind::ArgMin,
    OpKind::All,
    OpKind::Any,
];

/// The reductions whose result does not depend on how the reduced elements are grouped, for an
/// input of `dtype`: max, min, all, any; sum and prod of integers and bools (they wrap).
fn regroups(op: OpKind, dtype: DType) -> bool {
    [OpKind::Max, OpKind::Min, OpKind::All, OpKind::Any].contains(&op)
        || ([OpKind::Sum, OpKind::Prod].contains(&op) && !dtype.is_inexact())
}

pub fn rules() -> Vec<Rewrite> {
    vec![
        // r(x, axes) = x reshaped (and cast to r's dtype: bool for all/any, int64/uint64 for
        // integer sum/prod) where every reduced axis has extent 1; argmax, argmin = 0
        NodeRule::rewrite("reduce-unit-axes", REDUCTIONS, reduce_unit_axes),
        // r(r(x, A), B) = r(x, A ∪ B) (reshaped where keepdims differ), for r = max, min, all,
        // any, and sum, prod of integers and bools
        NodeRule::nested("reduce-reduce", REDUCTIONS, OpKind::is_reduction, reduce_reduce),
    ]
}

fn reduce_attrs(node: &ENode) -> (&SmallVec<[usize; 4]>, bool) {
    match &node.attrs {
        Attrs::Reduce { axes, keepdims } => (axes, *keepdims),
        _ => unreachable!("reductions have reduce attributes"),
    }
}

fn reduce_unit_axes(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let (axes, _) = reduce_attrs(node);
    let x = node.children[0];
    let (xd, out) = (data(eg, x), data(eg, class));
    if !axes.iter().all(|&a| xd.shape[a] == 1) {
        return None;
    }
    if [OpKind::ArgMax, OpKind::ArgMin].contains(&node.op) {
        return b.splat(out.dtype, &out.shape.clone(), lit(out.dtype, 0));
    }
    if !regroups(node.op, xd.dtype) {
        return None;
    }
    let mut r = b.class(x);
    if xd.shape != out.shape {
        r = b.op(OpKind::Reshape, Attrs::Shape { shape: out.shape.clone() }, &[r])?;
    }
    if xd.dtype != out.dtype {
        r = b.op(OpKind::Cast, Attrs::DType { dtype: out.dtype }, &[r])?;
    }
    Some(r)
}

fn reduce_reduce(b: &mut Build, class: Id, node: &ENode, inner: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    if inner.op != node.op {
        return None;
    }
    let (outer_axes, k2) = reduce_attrs(node);
    let (inner_axes, k1) = reduce_attrs(inner);
    let x = inner.children[0];
    let xd = data(eg, x);
    if !regroups(node.op, xd.dtype) || [OpKind::ArgMax, OpKind::ArgMin].contains(&node.op) {
        return None;
    }
    // The outer axes as axes of x.
    let kept: SmallVec<[usize; 4]> =
        (0..xd.shape.len()).filter(|a| k1 || !inner_axes.contains(a)).collect();
    let mut axes: SmallVec<[usize; 4]> =
        inner_axes.iter().copied().chain(outer_axes.iter().map(|&a| kept[a])).collect();
    axes.sort_unstable();
    axes.dedup();
    let shape: Shape = data(eg, class).shape.clone();
    let xi = b.class(x);
    if k1 == k2 {
        b.op(node.op, Attrs::Reduce { axes, keepdims: k1 }, &[xi])
    } else {
        let r = b.op(node.op, Attrs::Reduce { axes, keepdims: true }, &[xi])?;
        b.op(OpKind::Reshape, Attrs::Shape { shape }, &[r])
    }
}

#[cfg(test)]
mod tests {
    use crate::simplify::rules::testing::{check, unchanged};

    #[test]
    fn reduce_unit_axes() {
        check(
            "reduce-unit-axes",
            "
%0 = input {index=0} : f32[3,1]
%1 = max(%0) {axes=[1], keepdims=false} : f32[3]
%2 = input {index=1} : i8[1,2]
%3 = sum(%2) {axes=[0], keepdims=true} : i64[1,2]
%4 = any(%0) {axes=[], keepdims=false} : bool[3,1]
%5 = argmin(%0) {axes=[1], keepdims=false} : i64[3]
return %1, %3, %4, %5
",
            "
%0 = input {index=0} : f32[3,1]
%1 = reshape(%0) {shape=[3]} : f32[3]
%2 = cast(%0) {dtype=bool} : bool[3,1]
%3 = input {index=1} : i8[1,2]
%4 = cast(%3) {dtype=i64} : i64[1,2]
%5 = const {value=0} : i64[]
%6 = broadcast_to(%5) {shape=[3]} : i64[3]
return %1, %4, %2, %6
",
        );
        // A float sum of one element is the accumulator's start plus it: left alone.
        unchanged(
            "
%0 = input {index=0} : f32[3,1]
%1 = sum(%0) {axes=[1], keepdims=false} : f32[3]
return %1
",
        );
    }

    #[test]
    fn reduce_reduce() {
        check(
            "reduce-reduce",
            "
%0 = input {index=0} : f32[2,3,4]
%1 = max(%0) {axes=[1], keepdims=false} : f32[2,4]
%2 = max(%1) {axes=[1], keepdims=false} : f32[2]
%3 = input {index=1} : i32[2,3,4]
%4 = sum(%3) {axes=[0], keepdims=true} : i64[1,3,4]
%5 = sum(%4) {axes=[2], keepdims=false} : i64[1,3]
return %2, %5
",
            "
%0 = input {index=0} : f32[2,3,4]
%1 = max(%0) {axes=[1,2], keepdims=false} : f32[2]
%2 = input {index=1} : i32[2,3,4]
%3 = sum(%2) {axes=[0,2], keepdims=true} : i64[1,3,1]
%4 = reshape(%3) {shape=[1,3]} : i64[1,3]
return %1, %4
",
        );
        // Float sums are not regrouped.
        unchanged(
            "
%0 = input {index=0} : f32[2,3]
%1 = sum(%0) {axes=[1], keepdims=false} : f32[2]
%2 = sum(%1) {axes=[0], keepdims=false} : f32[]
return %2
",
        );
    }
}
