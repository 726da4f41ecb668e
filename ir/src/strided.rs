//! View ops as strided layouts: what a chain of views does to a buffer's [`Layout`], so that a
//! consumer that takes strides (a GEMM, an FFT's gather) reads the view without a copy.

use crate::graph::{Attrs, Graph, NodeId};
use crate::ops::OpKind;
use crate::shape::Layout;

/// The layout of view `op` (with `attrs`, giving `out_shape`) applied to an input laid out as
/// `input`; `None` for an op that is not a view, or a reshape the strides cannot express (NumPy
/// would copy).
pub fn view_layout(
    op: OpKind,
    attrs: &Attrs,
    input: &Layout,
    out_shape: &[usize],
) -> Option<Layout> {
    match (op, attrs) {
        (OpKind::Permute, Attrs::Perm { perm }) => Some(input.permute(perm)),
        (OpKind::BroadcastTo, Attrs::Shape { shape }) => Some(input.broadcast_to(shape)),
        (OpKind::Slice, Attrs::Slice { dims }) => {
            let ranges: Vec<(usize, isize, usize)> =
                dims.iter().map(|d| (d.start, d.step, d.len)).collect();
            Some(input.slice(&ranges))
        }
        (OpKind::Flip, Attrs::Axes { axes }) => Some(input.flip(axes)),
        (OpKind::ExpandDims, Attrs::Axes { axes }) => {
            let mut it = input.strides.iter();
            let strides = (0..out_shape.len()).map(|i| {
                if axes.contains(&i) {
                    0
                } else {
                    *it.next().expect("rank")
                }
            });
            Some(Layout {
                shape: out_shape.into(),
                strides: strides.collect(),
                offset: input.offset,
            })
        }
        (OpKind::Squeeze, Attrs::Axes { axes }) => {
            let keep = |i: &usize| !axes.contains(i);
            let strides = (0..input.rank()).filter(keep).map(|i| input.strides[i]).collect();
            Some(Layout { shape: out_shape.into(), strides, offset: input.offset })
        }
        (OpKind::Reshape, Attrs::Shape { shape }) => input.reshape(shape),
        _ => None,
    }
}

/// Follows views back from node `id` of `g` to the first node that is not a view (the *base*),
/// and returns the base and the layout of `id` over the base's C-contiguous buffer; `None` when
/// some view of the chain is a reshape the strides cannot express. A node that is not a view is
/// its own base, with the contiguous layout.
pub fn layout_over_base(g: &Graph, id: NodeId) -> Option<(NodeId, Layout)> {
    let mut chain = Vec::new();
    let mut base = id;
    while g.node(base).op.is_view() {
        chain.push(base);
        base = g.node(base).inputs[0];
    }
    let mut layout = Layout::contiguous(&g.node(base).shape);
    for &v in chain.iter().rev() {
        let n = g.node(v);
        layout = view_layout(n.op, &n.attrs, &layout, &n.shape)?;
    }
    Some((base, layout))
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::*;
    use crate::dtype::DType;
    use crate::graph::SliceDim;

    #[test]
    fn chains_of_views_compose() {
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[4, 6]);
        let t = g.add(OpKind::Permute, Attrs::Perm { perm: smallvec![1, 0] }, &[x]).unwrap();
        let dims = smallvec![
            SliceDim::normalize(6, Some(1), None, 2),
            SliceDim::normalize(4, None, None, -1)
        ];
        let s = g.add(OpKind::Slice, Attrs::Slice { dims }, &[t]).unwrap();
        let e = g.add(OpKind::ExpandDims, Attrs::Axes { axes: smallvec![0] }, &[s]).unwrap();
        let b =
            g.add(OpKind::BroadcastTo, Attrs::Shape { shape: smallvec![5, 3, 4] }, &[e]).unwrap();
        let (base, l) = layout_over_base(&g, b).unwrap();
        assert_eq!(base, x);
        assert_eq!(l.shape.as_slice(), &[5, 3, 4]);
        assert_eq!(l.strides.as_slice(), &[0, 2, -6]);
        // x.T[1::2, ::-1][0, 0] is x[3, 1].
        assert_eq!(l.offset, 3 * 6 + 1);
        // A reshape of a transposed view needs a copy.
        let r = g.add(OpKind::Reshape, Attrs::Shape { shape: smallvec![24] }, &[t]).unwrap();
        assert!(layout_over_base(&g, r).is_none());
        let sq = g.add(OpKind::Squeeze, Attrs::Axes { axes: smallvec![0] }, &[e]).unwrap();
        assert_eq!(layout_over_base(&g, sq).unwrap().1, layout_over_base(&g, s).unwrap().1);
    }
}
