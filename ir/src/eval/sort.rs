//! `sort` and `argsort` along one axis: NumPy's order, which the evaluator defines for every
//! backend. Floats ascend with NaN last and -0.0 equal to 0.0; complex values by real then
//! imaginary part, NaN last as NumPy puts it (`R + Rj`, then `R + nanj`, `nan + Rj`,
//! `nan + nanj`); bools false first. Equal elements keep their order (a stable sort), so
//! `argsort` is `np.argsort(kind='stable')` and `sort` of ±0 keeps their signs in order.

use std::cmp::Ordering;

use super::value::Value;
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
