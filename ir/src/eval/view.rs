//! Views (reshape, permute, broadcast_to, slice, expand_dims, squeeze, flip) and copies
//! (concatenate, stack, contiguous). A view is a [`Layout`] composed over its input's C-contiguous
//! layout; evaluating it gathers the elements in the view's C order.

use super::value::Value;
use super::Tensor;
use crate::graph::SliceDim;
use crate::shape::{numel, Layout, Shape};

/// The buffer positions of a layout's elements, in the C order of its shape.
pub fn positions(l: &Layout) -> Vec<usize> {
    let n = l.numel();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let rank = l.rank();
    let mut idx = vec![0usize; rank];
    let mut pos = l.offset;
    loop {
        out.push(pos as usize);
        // Odometer: bump the last axis, carrying into earlier ones.
        let mut k = rank;
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            idx[k] += 1;
            pos += l.strides[k];
            if idx[k] < l.shape[k] {
                break;
            }
            pos -= l.strides[k] * l.shape[k] as isize;
            idx[k] = 0;
        }
    }
}

/// The elements of `x` seen through `l`, a layout over `x`'s C-contiguous buffer.
pub fn gather(x: &Tensor, l: &Layout) -> Tensor {
    let vals = positions(l).into_iter().map(|p| x.vals[p]).collect();
    Tensor { dtype: x.dtype, shape: l.shape.clone(), vals }
}

/// The same elements in C order under a new shape (reshape, expand_dims, squeeze).
pub fn reshape(x: &Tensor, shape: &[usize]) -> Tensor {
    debug_assert_eq!(numel(shape), x.vals.len());
    Tensor { dtype: x.dtype, shape: shape.into(), vals: x.vals.clone() }
}

pub fn permute(x: &Tensor, perm: &[usize]) -> Tensor {
    gather(x, &Layout::contiguous(&x.shape).permute(perm))
}

pub fn broadcast_to(x: &Tensor, shape: &[usize]) -> Tensor {
    gather(x, &Layout::contiguous(&x.shape).broadcast_to(shape))
}

pub fn slice(x: &Tensor, dims: &[SliceDim]) -> Tensor {
    let ranges: Vec<(usize, isize, usize)> =
        dims.iter().map(|d| (d.start, d.step, d.len)).collect();
    gather(x, &Layout::contiguous(&x.shape).slice(&ranges))
}

pub fn flip(x: &Tensor, axes: &[usize]) -> Tensor {
    gather(x, &Layout::contiguous(&x.shape).flip(axes))
}

/// Joins along an existing axis: for each index of the axes before `axis`, each input's
/// contiguous block in turn.
pub fn concatenate(xs: &[&Tensor], axis: usize, out_shape: Shape) -> Tensor {
    let outer = numel(&out_shape[..axis]);
    let mut vals: Vec<Value> = Vec::with_capacity(numel(&out_shape));
    for o in 0..outer {
        for x in xs {
            let block = numel(&x.shape[axis..]);
            vals.extend_from_slice(&x.vals[o * block..(o + 1) * block]);
        }
    }
    Tensor { dtype: xs[0].dtype, shape: out_shape, vals }
}

/// Joins along a new axis: concatenation of the inputs each with an extent-1 axis at `axis`.
pub fn stack(xs: &[&Tensor], axis: usize, out_shape: Shape) -> Tensor {
    let outer = numel(&xs[0].shape[..axis]);
    let block = numel(&xs[0].shape[axis..]);
    let mut vals: Vec<Value> = Vec::with_capacity(numel(&out_shape));
    for o in 0..outer {
        for x in xs {
            vals.extend_from_slice(&x.vals[o * block..(o + 1) * block]);
        }
    }
    Tensor { dtype: xs[0].dtype, shape: out_shape, vals }
}

#[cfg(test)]
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests {
    use smallvec::smallvec;

    use super::super::testutil::*;
    use crate::dtype::DType;
    use crate::graph::{Attrs, Graph, SliceDim};
    use crate::ops::OpKind;

    #[test]
    fn positions_follow_strides() {
        use super::positions;
        use crate::shape::Layout;
        let l = Layout::contiguous(&[2, 3]).permute(&[1, 0]);
        assert_eq!(positions(&l), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(positions(&Layout::contiguous(&[])), vec![0]);
        assert!(positions(&Layout::contiguous(&[3, 0])).is_empty());
    }

    #[test]
    fn transpose_of_a_matrix() {
        // np.arange(6).reshape(2, 3).T.ravel() -> [0, 3, 1, 4, 2, 5]
        let mut g = Graph::new();
        let x = g.input(0, DType::Int32, &[2, 3]);
        let t = g.add(OpKind::Permute, Attrs::Perm { perm: smallvec![1, 0] }, &[x]).unwrap();
        g.push_output(t);
        let out = run(&g, &[arr(&[2, 3], (0..6).collect::<Vec<i32>>())]);
        assert_eq!(out[0].shape(), &[3, 2]);
        assert_eq!(out[0].as_slice::<i32>().unwrap(), &[0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn permute_rank3() {
        // np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1).ravel()[:8]
        //   -> [0, 4, 8, 12, 16, 20, 1, 5]
        let mut g = Graph::new();
        let x = g.input(0, DType::Int64, &[2, 3, 4]);
        let t = g.add(OpKind::Permute, Attrs::Perm { perm: smallvec![2, 0, 1] }, &[x]).unwrap();
        g.push_output(t);
        let out = run(&g, &[arr(&[2, 3, 4], (0..24).collect::<Vec<i64>>())]);
        assert_eq!(out[0].shape(), &[4, 2, 3]);
        assert_eq!(&out[0].as_slice::<i64>().unwrap()[..8], &[0, 4, 8, 12, 16, 20, 1, 5]);
    }

    #[test]
    fn negative_step_slices() {
        // x = np.arange(20).reshape(4, 5); x[::-2, 4:0:-3].ravel() -> [19, 16, 9, 6]
        let mut g = Graph::new();
        let x = g.input(0, DType::Int16, &[4, 5]);
        let dims = smallvec![
            SliceDim::normalize(4, None, None, -2),
            SliceDim::normalize(5, Some(4), Some(0), -3)
        ];
        let s = g.add(OpKind::Slice, Attrs::Slice { dims }, &[x]).unwrap();
        g.push_output(s);
        let out = run(&g, &[arr(&[4, 5], (0..20).collect::<Vec<i16>>())]);
        assert_eq!(out[0].shape(), &[2, 2]);
        assert_eq!(out[0].as_slice::<i16>().unwrap(), &[19, 16, 9, 6]);
        // x[1:3, 5:] is (2, 0): empty.
        let mut g = Graph::new();
        let x = g.input(0, DType::Int16, &[4, 5]);
        let dims = smallvec![
            SliceDim::normalize(4, Some(1), Some(3), 1),
            SliceDim::normalize(5, Some(5), None, 1)
        ];
        let s = g.add(OpKind::Slice, Attrs::Slice { dims }, &[x]).unwrap();
        g.push_output(s);
        let out = run(&g, &[arr(&[4, 5], (0..20).collect::<Vec<i16>>())]);
        assert_eq!(out[0].shape(), &[2, 0]);
        assert!(out[0].is_empty());
    }

    #[test]
    fn broadcast_and_flip() {
        // np.broadcast_to(np.array([[1.], [2.]]), (3, 2, 2)) -> 3 copies of [[1, 1], [2, 2]]
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[2, 1]);
        let b =
            g.add(OpKind::BroadcastTo, Attrs::Shape { shape: smallvec![3, 2, 2] }, &[x]).unwrap();
        g.push_output(b);
        // np.flip(np.arange(6).reshape(2, 3), axis=1).ravel() -> [2, 1, 0, 5, 4, 3]
        let y = g.input(1, DType::UInt8, &[2, 3]);
        let f = g.add(OpKind::Flip, Attrs::Axes { axes: smallvec![1] }, &[y]).unwrap();
        g.push_output(f);
        // np.flip of both axes -> [5, 4, 3, 2, 1, 0]
        let f2 = g.add(OpKind::Flip, Attrs::Axes { axes: smallvec![0, 1] }, &[y]).unwrap();
        g.push_output(f2);
        let out =
            run(&g, &[arr(&[2, 1], vec![1.0f32, 2.0]), arr(&[2, 3], (0..6).collect::<Vec<u8>>())]);
        assert_eq!(out[0].shape(), &[3, 2, 2]);
        assert_eq!(
            out[0].as_slice::<f32>().unwrap(),
            &[1., 1., 2., 2., 1., 1., 2., 2., 1., 1., 2., 2.]
        );
        assert_eq!(out[1].as_slice::<u8>().unwrap(), &[2, 1, 0, 5, 4, 3]);
        assert_eq!(out[2].as_slice::<u8>().unwrap(), &[5, 4, 3, 2, 1, 0]);
    }

    #[test]
    fn reshape_expand_squeeze_compose_with_views() {
        // np.arange(6).reshape(2, 3).T.reshape(6) -> [0, 3, 1, 4, 2, 5] (a copy, C order)
        let mut g = Graph::new();
        let x = g.input(0, DType::Int32, &[2, 3]);
        let t = g.add(OpKind::Permute, Attrs::Perm { perm: smallvec![1, 0] }, &[x]).unwrap();
        let r = g.add(OpKind::Reshape, Attrs::Shape { shape: smallvec![6] }, &[t]).unwrap();
        let e = g.add(OpKind::ExpandDims, Attrs::Axes { axes: smallvec![0, 2] }, &[r]).unwrap();
        let s = g.add(OpKind::Squeeze, Attrs::Axes { axes: smallvec![2] }, &[e]).unwrap();
        let c = g.add(OpKind::Contiguous, Attrs::None, &[s]).unwrap();
        g.push_output(e);
        g.push_output(c);
        let out = run(&g, &[arr(&[2, 3], (0..6).collect::<Vec<i32>>())]);
        assert_eq!(out[0].shape(), &[1, 6, 1]);
        assert_eq!(out[1].shape(), &[1, 6]);
        assert_eq!(out[1].as_slice::<i32>().unwrap(), &[0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn concatenate_and_stack() {
        // a = np.arange(4).reshape(2, 2); b = np.arange(10, 16).reshape(2, 3)
        // np.concatenate([a, b], axis=1).ravel() -> [0, 1, 10, 11, 12, 2, 3, 13, 14, 15]
        let mut g = Graph::new();
        let a = g.input(0, DType::Int8, &[2, 2]);
        let b = g.input(1, DType::Int8, &[2, 3]);
        let c = g.add(OpKind::Concatenate, Attrs::Axis { axis: 1 }, &[a, b]).unwrap();
        g.push_output(c);
        // np.concatenate([a, a], axis=0).ravel() -> [0, 1, 2, 3, 0, 1, 2, 3]
        let c0 = g.add(OpKind::Concatenate, Attrs::Axis { axis: 0 }, &[a, a]).unwrap();
        g.push_output(c0);
        // np.stack([a, a + 10], axis=1).ravel() -> [0, 1, 10, 11, 2, 3, 12, 13], shape (2, 2, 2)
        let a10 = g.input(2, DType::Int8, &[2, 2]);
        let s1 = g.add(OpKind::Stack, Attrs::Axis { axis: 1 }, &[a, a10]).unwrap();
        g.push_output(s1);
        // np.stack([a, a + 10], axis=2).ravel() -> [0, 10, 1, 11, 2, 12, 3, 13]
        let s2 = g.add(OpKind::Stack, Attrs::Axis { axis: 2 }, &[a, a10]).unwrap();
        g.push_output(s2);
        // np.stack([a, a + 10], axis=0).ravel() -> [0, 1, 2, 3, 10, 11, 12, 13]
        let s0 = g.add(OpKind::Stack, Attrs::Axis { axis: 0 }, &[a, a10]).unwrap();
        g.push_output(s0);
        let out = run(
            &g,
            &[
                arr(&[2, 2], vec![0i8, 1, 2, 3]),
                arr(&[2, 3], vec![10i8, 11, 12, 13, 14, 15]),
                arr(&[2, 2], vec![10i8, 11, 12, 13]),
            ],
        );
        assert_eq!(out[0].shape(), &[2, 5]);
        assert_eq!(out[0].as_slice::<i8>().unwrap(), &[0, 1, 10, 11, 12, 2, 3, 13, 14, 15]);
        assert_eq!(out[1].as_slice::<i8>().unwrap(), &[0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(out[2].shape(), &[2, 2, 2]);
        assert_eq!(out[2].as_slice::<i8>().unwrap(), &[0, 1, 10, 11, 2, 3, 12, 13]);
        assert_eq!(out[3].as_slice::<i8>().unwrap(), &[0, 10, 1, 11, 2, 12, 3, 13]);
        assert_eq!(out[4].as_slice::<i8>().unwrap(), &[0, 1, 2, 3, 10, 11, 12, 13]);
    }
}
