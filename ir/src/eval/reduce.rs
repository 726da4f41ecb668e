//! Reductions over axes. The input is regrouped (kept axes first, reduced axes last, each in
//! order) so that every output element reduces one contiguous run of values.
//!
//! Sums and products of bool and signed integers accumulate in int64 (wrapping), of unsigned
//! integers in uint64; float sums accumulate in f64 with Neumaier's compensated summation and
//! round once to the result dtype; float products are plain f64 products rounded once; complex
//! likewise per part.

use num_complex::Complex64;

use super::elementwise;
use super::value::Value;
use super::view::positions;
use super::Tensor;
use crate::dtype::DType;
use crate::shape::{numel, Layout, Shape};

/// The values of `x` grouped by output element: `(values, group size)`, each group one run.
fn groups(x: &Tensor, axes: &[usize]) -> (Vec<Value>, usize) {
    let kept = (0..x.shape.len()).filter(|a| !axes.contains(a));
    let perm: Vec<usize> = kept.chain(axes.iter().copied()).collect();
    let size = numel(&axes.iter().map(|&a| x.shape[a]).collect::<Vec<_>>());
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return (x.vals.clone(), size);
    }
    let l = Layout::contiguous(&x.shape).permute(&perm);
    (positions(&l).into_iter().map(|p| x.vals[p]).collect(), size)
}

/// Applies `f` to each group, one per element of `shape` (groups may be empty).
fn reduce_with(
    x: &Tensor,
    axes: &[usize],
    dtype: DType,
    shape: Shape,
    f: impl Fn(&[Value]) -> Value,
) -> Tensor {
    let (vals, size) = groups(x, axes);
    let n_out = numel(&shape);
    let out = (0..n_out).map(|g| f(&vals[g * size..(g + 1) * size])).collect();
    Tensor { dtype, shape, vals: out }
}

/// Neumaier's compensated sum. Non-finite sums (inf, NaN) are returned as the plain sum.
pub fn neumaier(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for x in xs {
        let t = s + x;
        if s.abs() >= x.abs() {
            c += (s - t) + x;
        } else {
            c += (x - t) + s;
        }
        s = t;
    }
    if s.is_finite() {
        s + c
    } else {
        s
    }
}

pub fn sum(x: &Tensor, axes: &[usize], dtype: DType, shape: Shape) -> Tensor {
    reduce_with(x, axes, dtype, shape, |g| match g.first() {
        None => match dtype.kind() {
            crate::dtype::DTypeKind::Complex => Value::Complex(Complex64::new(0.0, 0.0)),
            crate::dtype::DTypeKind::Float => Value::Float(0.0),
            crate::dtype::DTypeKind::UnsignedInt => Value::UInt(0),
            _ => Value::Int(0),
        },
        Some(Value::Bool(_)) | Some(Value::Int(_)) => {
            Value::Int(g.iter().fold(0i64, |acc, v| acc.wrapping_add(as_i64(*v))))
        }
        Some(Value::UInt(_)) => {
            Value::UInt(g.iter().fold(0u64, |acc, v| acc.wrapping_add(as_u64(*v))))
        }
        Some(Value::Float(_)) => Value::Float(neumaier(g.iter().map(|v| as_f64(*v)))),
        Some(Value::Complex(_)) => {
            let re = neumaier(g.iter().map(|v| as_c64(*v).re));
            let im = neumaier(g.iter().map(|v| as_c64(*v).im));
            Value::Complex(Complex64::new(re, im))
        }
    })
}

pub fn prod(x: &Tensor, axes: &[usize], dtype: DType, shape: Shape) -> Tensor {
    reduce_with(x, axes, dtype, shape, |g| match g.first() {
        None => match dtype.kind() {
            crate::dtype::DTypeKind::Complex => Value::Complex(Complex64::new(1.0, 0.0)),
            crate::dtype::DTypeKind::Float => Value::Float(1.0),
            crate::dtype::DTypeKind::UnsignedInt => Value::UInt(1),
            _ => Value::Int(1),
        },
        Some(Value::Bool(_)) | Some(Value::Int(_)) => {
            Value::Int(g.iter().fold(1i64, |acc, v| acc.wrapping_mul(as_i64(*v))))
        }
        Some(Value::UInt(_)) => {
            Value::UInt(g.iter().fold(1u64, |acc, v| acc.wrapping_mul(as_u64(*v))))
        }
        Some(Value::Float(_)) => Value::Float(g.iter().fold(1.0, |acc, v| acc * as_f64(*v))),
        Some(Value::Complex(_)) => {
            g.iter().fold(Value::Complex(Complex64::new(1.0, 0.0)), |acc, v| {
                elementwise::multiply(dtype, acc, *v)
            })
        }
    })
}

/// The maximum (`is_max`) or minimum; a NaN anywhere gives NaN (the first NaN met); complex
/// compares lexicographically. `None` for an empty group.
pub fn extreme(
    x: &Tensor,
    axes: &[usize],
    dtype: DType,
    shape: Shape,
    is_max: bool,
) -> Option<Tensor> {
    let reduced = numel(&axes.iter().map(|&a| x.shape[a]).collect::<Vec<_>>());
    if reduced == 0 && numel(&shape) > 0 {
        return None;
    }
    let f = if is_max { elementwise::maximum } else { elementwise::minimum };
    Some(reduce_with(x, axes, dtype, shape, |g| {
        g[1..].iter().fold(g[0], |acc, &v| f(dtype, acc, v))
    }))
}

/// Index of the first maximum (`is_max`) or minimum along the one reduced axis; the first NaN
/// wins over everything. `None` for an empty axis.
pub fn arg_extreme(x: &Tensor, axes: &[usize], shape: Shape, is_max: bool) -> Option<Tensor> {
    let reduced = numel(&axes.iter().map(|&a| x.shape[a]).collect::<Vec<_>>());
    if reduced == 0 && numel(&shape) > 0 {
        return None;
    }
    // `better(v, best)`: v replaces the best so far (strictly better, or a NaN).
    let better = |v: Value, best: Value| -> bool {
        match (v, best) {
            (Value::Bool(a), Value::Bool(b)) => {
                if is_max {
                    a & !b
                } else {
                    !a & b
                }
            }
            (Value::Int(a), Value::Int(b)) => {
                if is_max {
                    a > b
                } else {
                    a < b
                }
            }
            (Value::UInt(a), Value::UInt(b)) => {
                if is_max {
                    a > b
                } else {
                    a < b
                }
            }
            (Value::Float(a), Value::Float(b)) => a.is_nan() || if is_max { a > b } else { a < b },
            (Value::Complex(a), Value::Complex(b)) => {
                a.re.is_nan()
                    || a.im.is_nan()
                    || if is_max {
                        a.re > b.re || (a.re == b.re && a.im > b.im)
                    } else {
                        a.re < b.re || (a.re == b.re && a.im < b.im)
                    }
            }
            _ => unreachable!("one dtype per array"),
        }
    };
    let is_nan = |v: Value| match v {
        Value::Float(a) => a.is_nan(),
        Value::Complex(a) => a.re.is_nan() || a.im.is_nan(),
        _ => false,
    };
    Some(reduce_with(x, axes, DType::Int64, shape, |g| {
        let mut best = 0usize;
        if !is_nan(g[0]) {
            for (i, &v) in g.iter().enumerate().skip(1) {
                if better(v, g[best]) {
                    best = i;
                    if is_nan(v) {
                        break;
                    }
                }
            }
        }
        Value::Int(best as i64)
    }))
}

pub fn all(x: &Tensor, axes: &[usize], shape: Shape) -> Tensor {
    reduce_with(x, axes, DType::Bool, shape, |g| Value::Bool(g.iter().all(|v| v.truthy())))
}

pub fn any(x: &Tensor, axes: &[usize], shape: Shape) -> Tensor {
    reduce_with(x, axes, DType::Bool, shape, |g| Value::Bool(g.iter().any(|v| v.truthy())))
}

fn as_i64(v: Value) -> i64 {
    match v {
        Value::Bool(b) => b as i64,
        Value::Int(i) => i,
        other => unreachable!("{other:?} in a bool or signed array"),
    }
}
fn as_u64(v: Value) -> u64 {
    match v {
        Value::UInt(u) => u,
        other => unreachable!("{other:?} in an unsigned array"),
    }
}
fn as_f64(v: Value) -> f64 {
    match v {
        Value::Float(x) => x,
        other => unreachable!("{other:?} in a float array"),
    }
}
fn as_c64(v: Value) -> Complex64 {
    match v {
        Value::Complex(z) => z,
        other => unreachable!("{other:?} in a complex array"),
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests {
    use half::f16;
    use num_complex::{Complex32, Complex64};
    use smallvec::SmallVec;

    use super::super::testutil::*;
    use crate::dtype::DType;
    use crate::graph::{Attrs, Graph};
    use crate::host::HostArray;
    use crate::ops::OpKind::{self, *};

    fn red(op: OpKind, axes: &[usize], keepdims: bool, x: HostArray) -> HostArray {
        apply_with(op, Attrs::Reduce { axes: SmallVec::from_slice(axes), keepdims }, &[x])
    }

    #[test]
    fn integer_sums_and_products_widen_and_wrap() {
        // np.sum(np.array([100, 100, 100, -128], np.int8)) -> 172 (int64)
        let r = red(Sum, &[0], false, vec1(vec![100i8, 100, 100, -128]));
        assert_eq!((r.dtype(), r.shape()), (DType::Int64, &[][..]));
        assert_eq!(r.as_slice::<i64>().unwrap(), &[172]);
        // np.sum(np.array([255, 255], np.uint8)) -> 510 (uint64)
        assert_eq!(
            red(Sum, &[0], false, vec1(vec![255u8, 255])).as_slice::<u64>().unwrap(),
            &[510]
        );
        // np.sum(np.array([True, True, False])) -> 2 (int64)
        assert_eq!(
            red(Sum, &[0], false, vec1(vec![true, true, false])).as_slice::<i64>().unwrap(),
            &[2]
        );
        // np.sum(np.array([2**63-1, 1])) -> -9223372036854775808
        assert_eq!(
            red(Sum, &[0], false, vec1(vec![i64::MAX, 1])).as_slice::<i64>().unwrap(),
            &[i64::MIN]
        );
        // np.prod(np.array([100, 100, -3], np.int8)) -> -30000
        assert_eq!(
            red(Prod, &[0], false, vec1(vec![100i8, 100, -3])).as_slice::<i64>().unwrap(),
            &[-30000]
        );
    }

    #[test]
    fn float_sums_accumulate_exactly_and_round_once() {
        // np.sum(np.full(10000, 0.1, np.float16)) -> 1000.0. The exact sum of the float16 value
        // 0.0999755859375 is 999.755859375, which rounds to float16 1000.0: the same result.
        let r = red(Sum, &[0], false, vec1(vec![f16::from_f64(0.1); 10000]));
        assert_eq!(r.as_slice::<f16>().unwrap(), &[f16::from_f64(1000.0)]);
        // np.sum(np.full(10**6, 0.1, np.float32)) -> 100000.0078125 (NumPy's pairwise float32
        // sum); the exact sum 100000.00149011612 rounds to float32 100000.0, one ulp lower.
        let r = red(Sum, &[0], false, vec1(vec![0.1f32; 1_000_000]));
        assert_eq!(r.as_slice::<f32>().unwrap(), &[100000.0]);
        // np.sum(np.array([1e8, 1.0, -1e8], np.float32)) -> 0.0 in NumPy (float32 accumulator);
        // the oracle gives the exact 1.0 (as np.sum of the float64 array).
        assert_eq!(
            red(Sum, &[0], false, vec1(vec![1e8f32, 1.0, -1e8])).as_slice::<f32>().unwrap(),
            &[1.0]
        );
        // np.sum(np.array([1+2j, 3-1j, 0.5+0.25j], np.complex64)) -> 4.5+1.25j
        let r = red(
            Sum,
            &[0],
            false,
            vec1(vec![
                Complex32::new(1.0, 2.0),
                Complex32::new(3.0, -1.0),
                Complex32::new(0.5, 0.25),
            ]),
        );
        assert_eq!(r.as_slice::<Complex32>().unwrap(), &[Complex32::new(4.5, 1.25)]);
        // np.prod(np.array([300, 300, 0.001], np.float16)) -> 90.0625 (no float16 overflow midway)
        let r = red(
            Prod,
            &[0],
            false,
            vec1(vec![f16::from_f64(300.0), f16::from_f64(300.0), f16::from_f64(0.001)]),
        );
        assert_eq!(f64s(&r), vec![90.0625]);
        // Infinities and NaNs pass through the compensated sum: sum([inf, 1]) = inf, sum([inf, -inf]) = nan
        assert_same(
            &f64s(&red(Sum, &[0], false, vec1(vec![f64::INFINITY, 1.0]))),
            &[f64::INFINITY],
        );
        assert_same(
            &f64s(&red(Sum, &[0], false, vec1(vec![f64::INFINITY, -f64::INFINITY]))),
            &[f64::NAN],
        );
    }

    #[test]
    fn axes_and_keepdims() {
        // t = np.arange(24).reshape(2, 3, 4); np.sum(t, axis=(0, 2)) -> [60, 92, 124];
        // with keepdims the shape is (1, 3, 1)
        let t = arr(&[2, 3, 4], (0..24).collect::<Vec<i32>>());
        let r = red(Sum, &[0, 2], false, t.clone());
        assert_eq!(
            (r.shape(), r.as_slice::<i64>().unwrap()),
            (&[3usize][..], &[60i64, 92, 124][..])
        );
        let r = red(Sum, &[0, 2], true, t);
        assert_eq!(
            (r.shape(), r.as_slice::<i64>().unwrap()),
            (&[1usize, 3, 1][..], &[60i64, 92, 124][..])
        );
        // np.prod(np.arange(24).reshape(2, 3, 4)[:, :2, :2] + 1, axis=1) -> [[5, 12], [221, 252]]
        let x = arr(&[2, 2, 2], vec![1u16, 2, 5, 6, 13, 14, 17, 18]);
        let r = red(Prod, &[1], false, x);
        assert_eq!(
            (r.shape(), r.as_slice::<u64>().unwrap()),
            (&[2usize, 2][..], &[5u64, 12, 221, 252][..])
        );
        // Reducing no axes is the identity (with the accumulator dtype).
        let r = red(Sum, &[], false, vec1(vec![1i8, 2]));
        assert_eq!(r.as_slice::<i64>().unwrap(), &[1, 2]);
    }

    #[test]
    fn nan_rules_of_max_min_argmax_argmin() {
        let nan = f64::NAN;
        // x = np.array([[1.0, nan, 3.0], [nan, 2.0, nan], [1.0, 5.0, 2.0]])
        let x = arr(&[3, 3], vec![1.0, nan, 3.0, nan, 2.0, nan, 1.0, 5.0, 2.0]);
        // np.max(x, axis=1) -> [nan, nan, 5.0]; np.min(x, axis=0) -> [nan, nan, nan]
        assert_same(&f64s(&red(Max, &[1], false, x.clone())), &[nan, nan, 5.0]);
        assert_same(&f64s(&red(Min, &[0], false, x.clone())), &[nan, nan, nan]);
        // np.argmax(x, axis=1) -> [1, 0, 1]; np.argmin(x, axis=0) -> [1, 0, 1] (the first NaN wins)
        assert_eq!(red(ArgMax, &[1], false, x.clone()).as_slice::<i64>().unwrap(), &[1, 0, 1]);
        assert_eq!(red(ArgMin, &[0], false, x).as_slice::<i64>().unwrap(), &[1, 0, 1]);
        // y = np.array([[3, 7, 7, 1], [2, 2, 9, 9]], np.int32): np.argmax(y, axis=1) -> [1, 2],
        // np.argmin(y, axis=1) -> [3, 0], np.argmax(y, axis=0) -> [0, 0, 1, 1] (first of ties)
        let y = arr(&[2, 4], vec![3i32, 7, 7, 1, 2, 2, 9, 9]);
        assert_eq!(red(ArgMax, &[1], false, y.clone()).as_slice::<i64>().unwrap(), &[1, 2]);
        assert_eq!(red(ArgMin, &[1], false, y.clone()).as_slice::<i64>().unwrap(), &[3, 0]);
        let r = red(ArgMax, &[0], true, y);
        assert_eq!(
            (r.shape(), r.as_slice::<i64>().unwrap()),
            (&[1usize, 4][..], &[0i64, 0, 1, 1][..])
        );
        // np.argmax(np.array([False, True, True])) -> 1; np.argmin(np.array([True, False, False])) -> 1
        assert_eq!(
            red(ArgMax, &[0], false, vec1(vec![false, true, true])).as_slice::<i64>().unwrap(),
            &[1]
        );
        assert_eq!(
            red(ArgMin, &[0], false, vec1(vec![true, false, false])).as_slice::<i64>().unwrap(),
            &[1]
        );
        // Complex: np.argmax(np.array([1+1j, complex(1, nan), 2+0j, 3+0j])) -> 1;
        // np.argmax([1+1j, 1+2j, 0j]) -> 1; np.argmin([1+1j, 1+2j, 1+0j]) -> 2; np.max([1+1j, 1+2j, 0j]) -> 1+2j
        let c = |re, im| Complex64::new(re, im);
        let r = red(
            ArgMax,
            &[0],
            false,
            vec1(vec![c(1.0, 1.0), c(1.0, nan), c(2.0, 0.0), c(3.0, 0.0)]),
        );
        assert_eq!(r.as_slice::<i64>().unwrap(), &[1]);
        let z = vec1(vec![c(1.0, 1.0), c(1.0, 2.0), c(0.0, 0.0)]);
        assert_eq!(red(ArgMax, &[0], false, z.clone()).as_slice::<i64>().unwrap(), &[1]);
        assert_eq!(c64s(&red(Max, &[0], false, z)), vec![c(1.0, 2.0)]);
        let z = vec1(vec![c(1.0, 1.0), c(1.0, 2.0), c(1.0, 0.0)]);
        assert_eq!(red(ArgMin, &[0], false, z).as_slice::<i64>().unwrap(), &[2]);
        // np.max(np.array([-0.0, 0.0])) -> 0.0; np.min(np.array([0.0, -0.0])) -> -0.0 (the later of equals)
        assert_same(&f64s(&red(Max, &[0], false, vec1(vec![-0.0, 0.0]))), &[0.0]);
        assert_same(&f64s(&red(Min, &[0], false, vec1(vec![0.0, -0.0]))), &[-0.0]);
        // np.max(np.array([False, True])) -> True; np.min -> False
        assert_eq!(bools(&red(Max, &[0], false, vec1(vec![false, true]))), vec![true]);
        assert_eq!(bools(&red(Min, &[0], false, vec1(vec![false, true]))), vec![false]);
    }

    #[test]
    fn empty_reductions() {
        // e = np.zeros((2, 0, 3)): np.sum(e, axis=1) -> zeros (2, 3); np.prod -> ones;
        // np.all -> all True; np.any -> all False
        let e = || HostArray::zeros(DType::Float32, &[2, 0, 3]);
        let r = red(Sum, &[1], false, e());
        assert_eq!((r.shape(), f64s(&r)), (&[2usize, 3][..], vec![0.0; 6]));
        assert_eq!(f64s(&red(Prod, &[1], false, e())), vec![1.0; 6]);
        assert_eq!(bools(&red(All, &[1], false, e())), vec![true; 6]);
        assert_eq!(bools(&red(Any, &[1], false, e())), vec![false; 6]);
        // np.sum(np.zeros((0,), np.int8)) -> 0; np.prod(np.zeros((0,), np.uint8)) -> 1 (uint64)
        assert_eq!(red(Sum, &[0], false, vec1(Vec::<i8>::new())).as_slice::<i64>().unwrap(), &[0]);
        assert_eq!(red(Prod, &[0], false, vec1(Vec::<u8>::new())).as_slice::<u64>().unwrap(), &[1]);
        let r = red(Sum, &[0], false, vec1(Vec::<Complex64>::new()));
        assert_eq!(c64s(&r), vec![Complex64::new(0.0, 0.0)]);
        // Reducing a non-empty axis of an empty array gives an empty result, even for max.
        let r = red(Max, &[0], false, e());
        assert_eq!(r.shape(), &[0, 3]);
    }

    #[test]
    fn max_of_an_empty_axis_is_an_eval_error() {
        // infer rejects it, so build the node by hand.
        use crate::graph::Node;
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[0]);
        let m = g.insert(Node {
            op: Max,
            attrs: Attrs::Reduce { axes: SmallVec::from_slice(&[0]), keepdims: false },
            inputs: SmallVec::from_slice(&[x]),
            dtype: DType::Float32,
            shape: SmallVec::new(),
        });
        g.push_output(m);
        let a = HostArray::zeros(DType::Float32, &[0]);
        let e = crate::eval::evaluate(&g, &[&a]).unwrap_err();
        assert!(matches!(e, crate::IrError::Eval { node: 1, .. }), "{e}");
    }

    #[test]
    fn all_and_any_use_truthiness() {
        let nan = f64::NAN;
        // np.all(np.array([[1.0, nan], [0.0, 1.0]]), axis=1) -> [True, False]
        assert_eq!(
            bools(&red(All, &[1], false, arr(&[2, 2], vec![1.0, nan, 0.0, 1.0]))),
            vec![true, false]
        );
        // np.any(np.array([[0j, 1j], [0j, 0j]]), axis=1) -> [True, False]
        let c = |re, im| Complex64::new(re, im);
        let z = arr(&[2, 2], vec![c(0.0, 0.0), c(0.0, 1.0), c(0.0, 0.0), c(0.0, 0.0)]);
        assert_eq!(bools(&red(Any, &[1], false, z)), vec![true, false]);
    }
}
