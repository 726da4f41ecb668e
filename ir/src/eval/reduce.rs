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
fn reduce_with(x: &Tensor, axes: &[usize], dtype: DType, shape: Shape, f: impl Fn(&[Value]) -> Value) -> Tensor {
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
        Some(Value::UInt(_)) => Value::UInt(g.iter().fold(0u64, |acc, v| acc.wrapping_add(as_u64(*v)))),
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
        Some(Value::UInt(_)) => Value::UInt(g.iter().fold(1u64, |acc, v| acc.wrapping_mul(as_u64(*v)))),
        Some(Value::Float(_)) => Value::Float(g.iter().fold(1.0, |acc, v| acc * as_f64(*v))),
        Some(Value::Complex(_)) => g.iter().fold(Value::Complex(Complex64::new(1.0, 0.0)), |acc, v| {
            elementwise::multiply(dtype, acc, *v)
        }),
    })
}

/// The maximum (`is_max`) or minimum; a NaN anywhere gives NaN (the first NaN met); complex
/// compares lexicographically. `None` for an empty group.
pub fn extreme(x: &Tensor, axes: &[usize], dtype: DType, shape: Shape, is_max: bool) -> Option<Tensor> {
    let reduced = numel(&axes.iter().map(|&a| x.shape[a]).collect::<Vec<_>>());
    if reduced == 0 && numel(&shape) > 0 {
        return None;
    }
    let f = if is_max { elementwise::maximum } else { elementwise::minimum };
    Some(reduce_with(x, axes, dtype, shape, |g| g[1..].iter().fold(g[0], |acc, &v| f(dtype, acc, v))))
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
            (Value::Bool(a), Value::Bool(b)) => if is_max { a & !b } else { !a & b },
            (Value::Int(a), Value::Int(b)) => if is_max { a > b } else { a < b },
            (Value::UInt(a), Value::UInt(b)) => if is_max { a > b } else { a < b },
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
