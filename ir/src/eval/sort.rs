//! `sort` and `argsort` along one axis: NumPy's order, which the evaluator defines for every
//! backend; and `compact`/`compact_count`, the order-keeping selection along one axis. Floats ascend with NaN last and -0.0 equal to 0.0; complex values by real then
//! imaginary part, NaN last as NumPy puts it (`R + Rj`, then `R + nanj`, `nan + Rj`,
//! `nan + nanj`); bools false first. Equal elements keep their order (a stable sort), so
//! `argsort` is `np.argsort(kind='stable')` and `sort` of ±0 keeps their signs in order.

use std::cmp::Ordering;

use super::value::{cast, Value};
use super::Tensor;
use crate::graph::Node;
use crate::ops::OpKind;

/// NumPy's order of two elements of one dtype.
pub(crate) fn order(a: Value, b: Value) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(&y),
        (Value::Int(x), Value::Int(y)) => x.cmp(&y),
        (Value::UInt(x), Value::UInt(y)) => x.cmp(&y),
        (Value::Float(x), Value::Float(y)) => float_order(x, y),
        (Value::Complex(x), Value::Complex(y)) => complex_order(x, y),
        (a, b) => unreachable!("sorting values of two dtypes: {a:?} and {b:?}"),
    }
}

/// NumPy's order of complex values: the NaN class first (no part NaN, the imaginary part, the
/// real part, both), then the parts that are not NaN, real first.
pub fn complex_order(x: num_complex::Complex64, y: num_complex::Complex64) -> Ordering {
    let class = |z: num_complex::Complex64| (z.re.is_nan() as u8) * 2 + z.im.is_nan() as u8;
    class(x)
        .cmp(&class(y))
        .then_with(|| float_order(x.re, y.re))
        .then_with(|| float_order(x.im, y.im))
}

/// Ascending, NaN after every number (all NaNs equal), -0.0 equal to 0.0.
pub fn float_order(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (false, false) => x.partial_cmp(&y).expect("neither is NaN"),
        (a, b) => a.cmp(&b),
    }
}

/// `sort` or `argsort` (`node.op`) of `x` along `axis`: each row (every index but the axis's)
/// sorted stably on its own.
pub(crate) fn sort(x: &Tensor, node: &Node, axis: usize) -> Tensor {
    let n = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let mut vals = x.vals.clone();
    let mut perm: Vec<usize> = Vec::with_capacity(n);
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * n * inner + k * inner + i;
            perm.clear();
            perm.extend(0..n);
            perm.sort_by(|&a, &b| order(x.vals[at(a)], x.vals[at(b)]));
            for (k, &p) in perm.iter().enumerate() {
                vals[at(k)] = match node.op {
                    OpKind::Argsort => Value::Int(p as i64),
                    _ => x.vals[at(p)],
                };
            }
        }
    }
    Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

/// `sort_take(x, k)` along `axis`: each line sorted stably (as [`sort`]), then read at its
/// positions `k` (broadcast along the other axes, wrapped into the line as `take` wraps).
pub(crate) fn sort_take(x: &Tensor, k: &Tensor, node: &Node, axis: usize) -> Tensor {
    let n = x.shape[axis];
    let m = node.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    // k's C-order strides, 0 along its broadcast axes.
    let mut k_strides = vec![0usize; k.shape.len()];
    let mut s = 1;
    for d in (0..k.shape.len()).rev() {
        k_strides[d] = if k.shape[d] == 1 && d != axis { 0 } else { s };
        s *= k.shape[d];
    }
    let mut vals = Vec::with_capacity(outer * m * inner);
    vals.resize(outer * m * inner, Value::Bool(false));
    let mut perm: Vec<usize> = Vec::with_capacity(n);
    for o in 0..outer {
        for i in 0..inner {
            if m == 0 {
                continue;
            }
            let at = |j: usize| o * n * inner + j * inner + i;
            perm.clear();
            perm.extend(0..n);
            perm.sort_by(|&a, &b| order(x.vals[at(a)], x.vals[at(b)]));
            // The multi-index of (o, j, i) in x's shape, then its offset in k.
            let mut index = vec![0usize; x.shape.len()];
            let (mut ro, mut ri) = (o, i);
            for d in (axis + 1..x.shape.len()).rev() {
                index[d] = ri % x.shape[d];
                ri /= x.shape[d];
            }
            for d in (0..axis).rev() {
                index[d] = ro % x.shape[d];
                ro /= x.shape[d];
            }
            let base: usize = (0..index.len()).map(|d| index[d] * k_strides[d]).sum();
            for j in 0..m {
                let pos = match k.vals[base + j * k_strides[axis]] {
                    Value::Int(p) => p.rem_euclid(n as i64) as usize,
                    other => unreachable!("sort_take's positions are int64, got {other:?}"),
                };
                vals[o * m * inner + j * inner + i] = x.vals[at(perm[pos])];
            }
        }
    }
    Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

/// `argtopk` of `x` along its `axis` (`node.shape` holds `k` there): each line's positions in
/// ascending order (as [`sort`]) or descending order (`largest`: NaN first), equal elements in
/// line order either way, the first `k` of them.
pub(crate) fn argtopk(x: &Tensor, node: &Node) -> Tensor {
    let crate::Attrs::TopK { axis, largest, .. } = node.attrs else {
        unreachable!("argtopk's attributes are TopK (verified)")
    };
    let n = x.shape[axis];
    let k = node.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let mut vals = vec![Value::Int(0); outer * k * inner];
    let mut perm: Vec<usize> = Vec::with_capacity(n);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| o * n * inner + j * inner + i;
            perm.clear();
            perm.extend(0..n);
            // A stable sort: equal elements keep their order in both directions.
            perm.sort_by(|&a, &b| {
                let c = order(x.vals[at(a)], x.vals[at(b)]);
                if largest {
                    c.reverse()
                } else {
                    c
                }
            });
            for (j, &p) in perm[..k].iter().enumerate() {
                vals[o * k * inner + j * inner + i] = Value::Int(p as i64);
            }
        }
    }
    Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

#[cfg(test)]
mod tests {
    use num_complex::Complex64;

    use super::*;

    #[test]
    fn floats_ascend_with_nan_last_and_signed_zeros_in_their_order() {
        let v = [3.0, f64::NAN, -0.0, 1.0, 0.0, f64::NEG_INFINITY, -0.0];
        let mut s: Vec<f64> = v.to_vec();
        s.sort_by(|&a, &b| float_order(a, b));
        let bits: Vec<u64> = s.iter().map(|x| x.to_bits()).collect();
        let want = [f64::NEG_INFINITY, -0.0, 0.0, -0.0, 1.0, 3.0, f64::NAN];
        assert_eq!(bits, want.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }

    #[test]
    fn sort_take_reads_sorted_lines_at_broadcast_wrapped_positions() {
        use crate::{Attrs, DType, Graph, HostArray};
        // np.take_along_axis(np.sort(a, 1), [[0, -1, 2]] broadcast, 1) of a 2x4 float64 array.
        let mut g = Graph::new();
        let a = g.input(0, DType::Float64, &[2, 4]);
        let k = g.input(1, DType::Int64, &[1, 3]);
        let t = g.add(OpKind::SortTake, Attrs::Axis { axis: 1 }, &[a, k]).unwrap();
        g.set_outputs(vec![t]);
        let av = HostArray::from_vec(&[2, 4], vec![3.0, f64::NAN, -0.0, 1.0, 2.0, 0.0, -0.0, 5.0])
            .unwrap();
        let kv = HostArray::from_vec(&[1, 3], vec![0i64, -1, 6]).unwrap();
        let out = crate::eval::evaluate(&g, &[&av, &kv]).unwrap().remove(0);
        let got: Vec<u64> = out.as_slice::<f64>().unwrap().iter().map(|x| x.to_bits()).collect();
        let want = [-0.0, f64::NAN, 3.0, 0.0, 5.0, 2.0];
        assert_eq!(got, want.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        assert_eq!(out.shape(), &[2, 3]);
    }

    #[test]
    fn argtopk_takes_nan_first_for_largest_and_ties_in_line_order() {
        use crate::{Attrs, DType, Graph, HostArray};
        let line = vec![1.0f32, f32::NAN, -0.0, 3.0, 0.0, 3.0, f32::NEG_INFINITY];
        let run = |k: usize, largest: bool| -> Vec<i64> {
            let mut g = Graph::new();
            let a = g.input(0, DType::Float32, &[7]);
            let t = g.add(OpKind::Argtopk, Attrs::TopK { axis: 0, k, largest }, &[a]).unwrap();
            g.set_outputs(vec![t]);
            let av = HostArray::from_vec(&[7], line.clone()).unwrap();
            let out = crate::eval::evaluate(&g, &[&av]).unwrap().remove(0);
            out.as_slice::<i64>().unwrap().to_vec()
        };
        // Largest first: NaN, then the two 3.0s in line order, then 1.0, then ±0 in line order.
        assert_eq!(run(6, true), [1, 3, 5, 0, 2, 4]);
        // Smallest first: -inf, the zeros in line order, 1.0.
        assert_eq!(run(4, false), [6, 2, 4, 0]);
        assert_eq!(run(0, true), Vec::<i64>::new());
    }

    #[test]
    fn complex_values_order_by_parts_with_numpys_nan_classes() {
        let c = |re: f64, im: f64| Value::Complex(Complex64::new(re, im));
        let mut v = vec![
            c(f64::NAN, 1.0),
            c(2.0, f64::NAN),
            c(1.0, 5.0),
            c(1.0, -5.0),
            c(f64::NAN, f64::NAN),
            c(0.0, 9.0),
        ];
        v.sort_by(|&a, &b| order(a, b));
        let shown: Vec<String> = v
            .iter()
            .map(|x| match x {
                Value::Complex(z) => format!("{}{:+}j", z.re, z.im),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(shown, ["0+9j", "1-5j", "1+5j", "2NaNj", "NaN+1j", "NaNNaNj"]);
    }
}

/// `compact` (args: cond, x) or `compact_count` (args: cond) along `axis`: per line, the
/// elements of `x` where `cond` is true, in order, then zeros; or how many there are (int64,
/// the axis of extent 1).
pub(crate) fn compact(args: &[&Tensor], node: &Node, axis: usize) -> Tensor {
    let cond = args[0];
    let n = cond.shape[axis];
    let inner: usize = cond.shape[axis + 1..].iter().product();
    let outer: usize = cond.shape[..axis].iter().product();
    let counting = node.op == OpKind::CompactCount;
    let zero = cast(Value::Int(0), node.dtype);
    let mut vals = vec![zero; crate::shape::numel(&node.shape)];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * n * inner + k * inner + i;
            let mut kept = 0;
            for k in 0..n {
                if cond.vals[at(k)].truthy() {
                    if !counting {
                        vals[at(kept)] = args[1].vals[at(k)];
                    }
                    kept += 1;
                }
            }
            if counting {
                vals[o * inner + i] = Value::Int(kept as i64);
            }
        }
    }
    Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

#[cfg(test)]
mod compact_tests {
    use super::super::testutil::{arr, run};
    use crate::dtype::DType;
    use crate::graph::{Attrs, Graph};
    use crate::ops::OpKind;

    /// `compact` and `compact_count` of `x` by `cond` along `axis`.
    fn compacted(
        cond: Vec<bool>,
        x: Vec<i32>,
        shape: &[usize],
        axis: usize,
    ) -> (Vec<i32>, Vec<i64>) {
        let mut g = Graph::new();
        let c = g.input(0, DType::Bool, shape);
        let v = g.input(1, DType::Int32, shape);
        let kept = g.add(OpKind::Compact, Attrs::Axis { axis }, &[c, v]).unwrap();
        let count = g.add(OpKind::CompactCount, Attrs::Axis { axis }, &[c]).unwrap();
        let mut count_shape = shape.to_vec();
        count_shape[axis] = 1;
        assert_eq!(g.node(kept).shape.as_slice(), shape);
        assert_eq!(g.node(count).shape.as_slice(), count_shape);
        assert_eq!((g.node(kept).dtype, g.node(count).dtype), (DType::Int32, DType::Int64));
        g.push_output(kept);
        g.push_output(count);
        let out = run(&g, &[arr(shape, cond), arr(shape, x)]);
        (out[0].as_slice::<i32>().unwrap().to_vec(), out[1].as_slice::<i64>().unwrap().to_vec())
    }

    #[test]
    fn compaction_keeps_order_then_zeros_per_line() {
        // np.extract([F, T, T, F, T], [1, 2, 3, 4, 5]) = [2, 3, 5], then two zeros.
        let (k, c) = compacted(vec![false, true, true, false, true], vec![1, 2, 3, 4, 5], &[5], 0);
        assert_eq!((k, c), (vec![2, 3, 5, 0, 0], vec![3]));
        // Per row along axis 1, and per column along axis 0.
        let cond = vec![true, false, true, false, false, true];
        let x = vec![1, 2, 3, 4, 5, 6];
        assert_eq!(
            compacted(cond.clone(), x.clone(), &[2, 3], 1),
            (vec![1, 3, 0, 6, 0, 0], vec![2, 1])
        );
        assert_eq!(compacted(cond, x, &[2, 3], 0), (vec![1, 0, 3, 0, 0, 6], vec![1, 0, 2]));
        // The values must have the condition's shape.
        let mut g = Graph::new();
        let c = g.input(0, DType::Bool, &[3]);
        let v = g.input(1, DType::Int32, &[4]);
        assert!(g.add(OpKind::Compact, Attrs::Axis { axis: 0 }, &[c, v]).is_err());
    }
}
