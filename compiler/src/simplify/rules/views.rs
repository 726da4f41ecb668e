//! Views: identities, chains of one kind of view made one, and slices moved before the
//! elementwise ops they select from (which then compute only the selected elements).

use egg::Id;
use kiln_ir::graph::{Attrs, SliceDim};
use kiln_ir::ops::OpKind;
use kiln_ir::Shape;
use smallvec::SmallVec;

use super::{data, nodes_of, wholly_needed, Build, Idx, NodeRule, Rewrite};
use crate::simplify::lang::ENode;

const VIEWS: &[OpKind] = &[
    OpKind::Reshape,
    OpKind::Permute,
    OpKind::BroadcastTo,
    OpKind::Slice,
    OpKind::ExpandDims,
    OpKind::Squeeze,
    OpKind::Flip,
];

/// The views that only regroup axes, keeping C order: each is a reshape.
const RESHAPES: &[OpKind] = &[OpKind::Reshape, OpKind::ExpandDims, OpKind::Squeeze];

pub fn rules() -> Vec<Rewrite> {
    vec![
        // view(x) = x where the view is the identity (perm 0..n; reshape, broadcast_to,
        // expand_dims, squeeze to x's own shape; full slice; flip of axes of extent <= 1)
        NodeRule::rewrite("view-identity", VIEWS, view_identity),
        // permute(permute(x, p), q) = permute(x, [p[q[k]] for k])
        NodeRule::nested(
            "permute-permute",
            &[OpKind::Permute],
            |op| op == OpKind::Permute,
            permute_permute,
        ),
        // reshape(reshape(x, s1), s2) = reshape(x, s2) (expand_dims and squeeze are reshapes)
        NodeRule::nested("reshape-reshape", RESHAPES, |op| RESHAPES.contains(&op), reshape_reshape),
        // broadcast_to(broadcast_to(x, s1), s2) = broadcast_to(x, s2)
        NodeRule::nested(
            "broadcast-broadcast",
            &[OpKind::BroadcastTo],
            |op| op == OpKind::BroadcastTo,
            broadcast_broadcast,
        ),
        // slice(slice(x, d1), d2) = slice(x, d) with d.start = d1.start + d2.start*d1.step,
        // d.step = d1.step*d2.step (1 where d.len <= 1), d.len = d2.len
        NodeRule::nested("slice-slice", &[OpKind::Slice], |op| op == OpKind::Slice, slice_slice),
        // flip(flip(x, A), B) = flip(x, A △ B)
        NodeRule::nested("flip-flip", &[OpKind::Flip], |op| op == OpKind::Flip, flip_flip),
        // slice(f(x, y, ..)) = f(slice(x), slice(y), ..) for elementwise f (where f's whole
        // result is not needed anyway: an output, or read by a reduction, copy ...)
        NodeRule::nested(
            "slice-elementwise",
            &[OpKind::Slice],
            OpKind::is_elementwise,
            slice_elementwise,
        ),
        // slice(broadcast_to(x, s)) = broadcast_to(slice(x) on x's axes that are not stretched, s')
        NodeRule::nested(
            "slice-broadcast",
            &[OpKind::Slice],
            |op| op == OpKind::BroadcastTo,
            slice_broadcast,
        ),
    ]
}

/// Whether a slice of one axis of extent `n` selects all of it in order.
fn is_full(d: &SliceDim, n: usize) -> bool {
    d.len == n && (n == 0 || (d.start == 0 && (d.step == 1 || n == 1)))
}

fn view_identity(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let x = node.children[0];
    let (in_shape, out_shape) = (&data(eg, x).shape, &data(eg, class).shape);
    let identity = match &node.attrs {
        Attrs::Perm { perm } => perm.iter().enumerate().all(|(k, &p)| k == p),
        Attrs::Slice { dims } => dims.iter().zip(in_shape).all(|(d, &n)| is_full(d, n)),
        Attrs::Axes { axes } if node.op == OpKind::Flip => axes.iter().all(|&a| in_shape[a] <= 1),
        Attrs::Shape { .. } | Attrs::Axes { .. } => in_shape == out_shape,
        _ => false,
    };
    identity.then(|| b.class(x))
}

fn permute_permute(b: &mut Build, _class: Id, node: &ENode, inner: &ENode) -> Option<Idx> {
    let Attrs::Perm { perm: q } = &node.attrs else { return None };
    let Attrs::Perm { perm: p } = &inner.attrs else { return None };
    let composed: SmallVec<[usize; 4]> = q.iter().map(|&k| p[k]).collect();
    let x = b.class(inner.children[0]);
    if composed.iter().enumerate().all(|(k, &p)| k == p) {
        Some(x)
    } else {
        b.op(OpKind::Permute, Attrs::Perm { perm: composed }, &[x])
    }
}

fn reshape_reshape(b: &mut Build, class: Id, _node: &ENode, inner: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let shape: Shape = data(eg, class).shape.clone();
    let x = inner.children[0];
    let xi = b.class(x);
    if data(eg, x).shape == shape {
        Some(xi)
    } else {
        b.op(OpKind::Reshape, Attrs::Shape { shape }, &[xi])
    }
}

fn broadcast_broadcast(b: &mut Build, class: Id, _node: &ENode, inner: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let x = b.class(inner.children[0]);
    b.op(OpKind::BroadcastTo, Attrs::Shape { shape: data(eg, class).shape.clone() }, &[x])
}

fn slice_dims(node: &ENode) -> &SmallVec<[SliceDim; 4]> {
    match &node.attrs {
        Attrs::Slice { dims } => dims,
        _ => unreachable!("slice has slice attributes"),
    }
}

fn slice_slice(b: &mut Build, _class: Id, node: &ENode, inner: &ENode) -> Option<Idx> {
    let outer = slice_dims(node);
    let dims = slice_dims(inner)
        .iter()
        .zip(outer)
        .map(|(d1, d2)| {
            // A step matters only between two elements: of at most one, step 1. (A product of
            // steps grew without bound, overflowing, through the e-graph's cycles of slices of
            // one element: found by the `programs` fuzz target.) Past one element,
            // |d.step| * (len - 1) stays below the extent of x.
            let step = if d2.len <= 1 { 1 } else { d1.step * d2.step };
            if d2.len == 0 {
                SliceDim { start: 0, step, len: 0 }
            } else {
                let start = d1.start as isize + d2.start as isize * d1.step;
                SliceDim { start: start as usize, step, len: d2.len }
            }
        })
        .collect();
    let x = b.class(inner.children[0]);
    b.op(OpKind::Slice, Attrs::Slice { dims }, &[x])
}

fn flip_flip(b: &mut Build, _class: Id, node: &ENode, inner: &ENode) -> Option<Idx> {
    let Attrs::Axes { axes: outer } = &node.attrs else { return None };
    let Attrs::Axes { axes: first } = &inner.attrs else { return None };
    let mut axes: SmallVec<[usize; 4]> = first
        .iter()
        .chain(outer)
        .copied()
        .filter(|a| first.contains(a) != outer.contains(a))
        .collect();
    axes.sort_unstable();
    let x = b.class(inner.children[0]);
    if axes.is_empty() {
        Some(x)
    } else {
        b.op(OpKind::Flip, Attrs::Axes { axes }, &[x])
    }
}

/// `slice(x, dims)`, built the cheapest way known: a constant is sliced by broadcasting it to the
/// new shape; a `broadcast_to` by slicing its source on the axes it does not stretch
/// (see [`slice_of_broadcast`]); anything else by a `slice` node.
fn slice_of(b: &mut Build, x: Id, dims: &SmallVec<[SliceDim; 4]>) -> Option<Idx> {
    let eg = b.egraph;
    let d = data(eg, x);
    if let Some(value) = d.splat {
        let shape: Shape = dims.iter().map(|d| d.len).collect();
        return b.splat(d.dtype, &shape, value);
    }
    if let Some(bc) = nodes_of(eg, x, OpKind::BroadcastTo).next() {
        return slice_of_broadcast(b, x, bc, dims);
    }
    let xi = b.class(x);
    b.op(OpKind::Slice, Attrs::Slice { dims: dims.clone() }, &[xi])
}

/// The slice `dims` of `broadcast_to(src, shape)` (the node `bc` of class `x`): axis `i` of
/// `src` is axis `pad + i` of the broadcast; where it is not stretched (same extent) it is
/// sliced as that axis; where it is (extent 1 to n) it is kept whole and the new broadcast
/// shape takes the slice's extent.
fn slice_of_broadcast(
    b: &mut Build,
    x: Id,
    bc: &ENode,
    dims: &SmallVec<[SliceDim; 4]>,
) -> Option<Idx> {
    let eg = b.egraph;
    let shape = &data(eg, x).shape;
    let src = bc.children[0];
    let src_shape = &data(eg, src).shape;
    let pad = shape.len() - src_shape.len();
    let inner: SmallVec<[SliceDim; 4]> = src_shape
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            if n == shape[pad + i] {
                dims[pad + i]
            } else {
                SliceDim { start: 0, step: 1, len: n }
            }
        })
        .collect();
    let out: Shape = dims.iter().map(|d| d.len).collect();
    let mut s = b.class(src);
    if !inner.iter().zip(src_shape).all(|(d, &n)| is_full(d, n)) {
        s = b.op(OpKind::Slice, Attrs::Slice { dims: inner }, &[s])?;
    }
    b.op(OpKind::BroadcastTo, Attrs::Shape { shape: out }, &[s])
}

fn slice_elementwise(b: &mut Build, _class: Id, node: &ENode, f: &ENode) -> Option<Idx> {
    // Where the whole op is computed anyway, computing the slice again is more work, not less.
    if wholly_needed(b.egraph, node.children[0]) {
        return None;
    }
    let dims = slice_dims(node);
    let mut inputs: SmallVec<[Idx; 3]> = SmallVec::new();
    for &c in &f.children {
        inputs.push(slice_of(b, c, dims)?);
    }
    b.op(f.op, f.attrs.clone(), &inputs)
}

fn slice_broadcast(b: &mut Build, _class: Id, node: &ENode, bc: &ENode) -> Option<Idx> {
    slice_of_broadcast(b, node.children[0], bc, slice_dims(node))
}

#[cfg(test)]
mod tests {
    use crate::simplify::rules::testing::{check, unchanged};

    #[test]
    fn view_identity() {
        check(
            "view-identity",
            "
%0 = input {index=0} : f32[2,1,3]
%1 = permute(%0) {perm=[0,1,2]} : f32[2,1,3]
%2 = reshape(%1) {shape=[2,1,3]} : f32[2,1,3]
%3 = broadcast_to(%2) {shape=[2,1,3]} : f32[2,1,3]
%4 = slice(%3) {start=[0,0,0], step=[1,-1,1], len=[2,1,3]} : f32[2,1,3]
%5 = flip(%4) {axes=[1]} : f32[2,1,3]
%6 = expand_dims(%5) {axes=[]} : f32[2,1,3]
return %6
",
            "
%0 = input {index=0} : f32[2,1,3]
return %0
",
        );
        // A transpose of two axes of extent > 1 moves data.
        unchanged(
            "
%0 = input {index=0} : f32[2,3]
%1 = permute(%0) {perm=[1,0]} : f32[3,2]
%2 = flip(%0) {axes=[1]} : f32[2,3]
return %1, %2
",
        );
    }

    #[test]
    fn permute_permute() {
        check(
            "permute-permute",
            "
%0 = input {index=0} : f32[2,3,4]
%1 = permute(%0) {perm=[2,0,1]} : f32[4,2,3]
%2 = permute(%1) {perm=[0,2,1]} : f32[4,3,2]
%3 = permute(%1) {perm=[1,2,0]} : f32[2,3,4]
return %2, %3
",
            "
%0 = input {index=0} : f32[2,3,4]
%1 = permute(%0) {perm=[2,1,0]} : f32[4,3,2]
return %1, %0
",
        );
    }

    #[test]
    fn reshape_reshape() {
        check(
            "reshape-reshape",
            "
%0 = input {index=0} : f32[2,6]
%1 = reshape(%0) {shape=[3,4]} : f32[3,4]
%2 = reshape(%1) {shape=[12]} : f32[12]
%3 = expand_dims(%2) {axes=[0]} : f32[1,12]
%4 = reshape(%3) {shape=[2,6]} : f32[2,6]
return %3, %4
",
            "
%0 = input {index=0} : f32[2,6]
%1 = reshape(%0) {shape=[1,12]} : f32[1,12]
return %1, %0
",
        );
    }

    #[test]
    fn broadcast_broadcast() {
        check(
            "broadcast-broadcast",
            "
%0 = input {index=0} : f32[3]
%1 = broadcast_to(%0) {shape=[1,3]} : f32[1,3]
%2 = broadcast_to(%1) {shape=[5,2,3]} : f32[5,2,3]
return %2
",
            "
%0 = input {index=0} : f32[3]
%1 = broadcast_to(%0) {shape=[5,2,3]} : f32[5,2,3]
return %1
",
        );
    }

    #[test]
    fn slice_slice() {
        // x[2:9][::-3] = x[8:1:-3]: elements 8, 5, 2.
        check(
            "slice-slice",
            "
%0 = input {index=0} : f32[10]
%1 = slice(%0) {start=[2], step=[1], len=[7]} : f32[7]
%2 = slice(%1) {start=[6], step=[-3], len=[3]} : f32[3]
return %2
",
            "
%0 = input {index=0} : f32[10]
%1 = slice(%0) {start=[8], step=[-3], len=[3]} : f32[3]
return %1
",
        );
    }

    #[test]
    fn slice_slice_of_one_element_has_step_one() {
        // x[2:9:3][1:2:5] = x[5:6]: one element, so no product of steps (which grew without
        // bound through cycles of such slices in the e-graph, and overflowed).
        check(
            "slice-slice",
            "
%0 = input {index=0} : f32[10]
%1 = slice(%0) {start=[2], step=[3], len=[3]} : f32[3]
%2 = slice(%1) {start=[1], step=[5], len=[1]} : f32[1]
return %2
",
            "
%0 = input {index=0} : f32[10]
%1 = slice(%0) {start=[5], step=[1], len=[1]} : f32[1]
return %1
",
        );
    }

    #[test]
    fn flip_flip() {
        check(
            "flip-flip",
            "
%0 = input {index=0} : f32[2,3,4]
%1 = flip(%0) {axes=[0,1]} : f32[2,3,4]
%2 = flip(%1) {axes=[1,2]} : f32[2,3,4]
%3 = flip(%1) {axes=[0,1]} : f32[2,3,4]
return %2, %3
",
            "
%0 = input {index=0} : f32[2,3,4]
%1 = flip(%0) {axes=[0,2]} : f32[2,3,4]
return %1, %0
",
        );
    }

    #[test]
    fn slice_elementwise() {
        // (x + sin(y))[1:3] = x[1:3] + sin(y[1:3])
        check(
            "slice-elementwise",
            "
%0 = input {index=0} : f32[100]
%1 = input {index=1} : f32[100]
%2 = sin(%1) : f32[100]
%3 = add(%0, %2) : f32[100]
%4 = slice(%3) {start=[1], step=[1], len=[2]} : f32[2]
return %4
",
            "
%0 = input {index=0} : f32[100]
%1 = slice(%0) {start=[1], step=[1], len=[2]} : f32[2]
%2 = input {index=1} : f32[100]
%3 = slice(%2) {start=[1], step=[1], len=[2]} : f32[2]
%4 = sin(%3) : f32[2]
%5 = add(%1, %4) : f32[2]
return %5
",
        );
        // Not where the whole op is needed anyway (an output, or read by a reduction): slicing
        // first would compute the elements twice.
        unchanged(
            "
%0 = input {index=0} : f32[100]
%1 = sin(%0) : f32[100]
%2 = sum(%1) {axes=[0], keepdims=false} : f32[]
%3 = slice(%1) {start=[1], step=[1], len=[2]} : f32[2]
return %2, %3
",
        );
        unchanged(
            "
%0 = input {index=0} : f32[100]
%1 = sin(%0) : f32[100]
%2 = slice(%1) {start=[1], step=[1], len=[2]} : f32[2]
return %2, %1
",
        );
    }

    #[test]
    fn slice_elementwise_of_broadcast_operands() {
        // (x[4,1] * broadcast(row[5]) * 2)[1:3, ::2]: the row is sliced on its own axis only,
        // x only on the axis it is not stretched along, the constant is broadcast anew.
        check(
            "slice-elementwise",
            "
%0 = input {index=0} : f32[4,1]
%1 = broadcast_to(%0) {shape=[4,5]} : f32[4,5]
%2 = input {index=1} : f32[5]
%3 = broadcast_to(%2) {shape=[4,5]} : f32[4,5]
%4 = multiply(%1, %3) : f32[4,5]
%5 = const {value=2.0} : f32[]
%6 = broadcast_to(%5) {shape=[4,5]} : f32[4,5]
%7 = multiply(%4, %6) : f32[4,5]
%8 = slice(%7) {start=[1,0], step=[1,2], len=[2,3]} : f32[2,3]
return %8
",
            "
%0 = input {index=0} : f32[4,1]
%1 = slice(%0) {start=[1,0], step=[1,1], len=[2,1]} : f32[2,1]
%2 = broadcast_to(%1) {shape=[2,3]} : f32[2,3]
%3 = input {index=1} : f32[5]
%4 = slice(%3) {start=[0], step=[2], len=[3]} : f32[3]
%5 = broadcast_to(%4) {shape=[2,3]} : f32[2,3]
%6 = multiply(%2, %5) : f32[2,3]
%7 = const {value=2.0} : f32[]
%8 = broadcast_to(%7) {shape=[2,3]} : f32[2,3]
%9 = multiply(%6, %8) : f32[2,3]
return %9
",
        );
    }

    #[test]
    fn slice_broadcast() {
        check(
            "slice-broadcast",
            "
%0 = input {index=0} : f32[3,1]
%1 = broadcast_to(%0) {shape=[2,3,4]} : f32[2,3,4]
%2 = slice(%1) {start=[1,2,0], step=[1,-1,1], len=[1,2,4]} : f32[1,2,4]
return %2
",
            "
%0 = input {index=0} : f32[3,1]
%1 = slice(%0) {start=[2,0], step=[-1,1], len=[2,1]} : f32[2,1]
%2 = broadcast_to(%1) {shape=[1,2,4]} : f32[1,2,4]
return %2
",
        );
    }
}
