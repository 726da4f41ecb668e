//! Sort regions on the host: one `sort` or `argsort` node over a region input (or views of
//! one), run by Rust's stable sort on typed elements, lines in parallel (rayon), a single long
//! line by rayon's parallel stable merge sort. The order is the evaluator's
//! (`kiln_ir::eval`'s `sort`): NaN last, -0.0 equal to 0.0, complex by real then imaginary part
//! with NumPy's NaN classes, ties in their order.
//!
//! The GPU executor runs these regions here too, between copies (no GPU sort kernel yet).

use std::cmp::Ordering;

use half::{bf16, f16};
use kiln_ir::eval::sort::{complex_order, float_order};
use kiln_ir::host::HostElement;
use kiln_ir::{with_data, Attrs, HostArray, OpKind};
use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use crate::fusion::Region;
use crate::CompileError;

/// Elements the host orders: NumPy's order of [`kiln_ir::eval`].
trait Sortable: HostElement + Copy + Send + Sync {
    fn order(&self, other: &Self) -> Ordering;
}

macro_rules! ordered_by_ord {
    ($($t:ty),*) => {$(
        impl Sortable for $t {
            fn order(&self, other: &Self) -> Ordering {
                self.cmp(other)
            }
        }
    )*};
}
ordered_by_ord!(bool, i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! ordered_as_float {
    ($($t:ty),*) => {$(
        impl Sortable for $t {
            fn order(&self, other: &Self) -> Ordering {
                float_order(f64::from(*self), f64::from(*other))
            }
        }
    )*};
}
ordered_as_float!(f16, bf16, f32, f64);

macro_rules! ordered_as_complex {
    ($($t:ty),*) => {$(
        impl Sortable for $t {
            fn order(&self, other: &Self) -> Ordering {
                complex_order(Complex64::new(self.re.into(), self.im.into()), Complex64::new(other.re.into(), other.im.into()))
            }
        }
    )*};
}
ordered_as_complex!(Complex32, Complex64);

/// Runs a sort region (see the module docs) on `inputs`.
///
/// Errors: a region that is not one `sort`/`argsort` node, an evaluation error of its
/// operand's views.
pub fn run_region_on_host(region: &Region, inputs: &[&HostArray]) -> Result<Vec<HostArray>, CompileError> {
    let body = &region.body;
    let invalid = |why: &str| CompileError::InvalidInput(format!("sort region: {why}"));
    let [out] = body.outputs() else { return Err(invalid("several outputs")) };
    let node = body.node(*out);
    let (OpKind::Sort | OpKind::Argsort, Attrs::Axis { axis }) = (node.op, &node.attrs) else {
        return Err(invalid("its output is not a sort"));
    };
    // The operand: a region input, else its views computed by the evaluator.
    let operand = body.node(node.inputs[0]);
    let computed;
    let x: &HostArray = match operand.attrs {
        Attrs::Input { index } => inputs.get(index as usize).ok_or_else(|| invalid("a missing input"))?,
        _ => {
            let mut g = body.clone();
            g.set_outputs(vec![node.inputs[0]]);
            computed = kiln_ir::eval::evaluate(&g, inputs)?.remove(0);
            &computed
        }
    };
    let argsort = node.op == OpKind::Argsort;
    let shape = x.shape().to_vec();
    let out = with_data!(x.data(), v => sort_lines(v, &shape, *axis, argsort));
    Ok(vec![out.map_err(|e| invalid(&e.to_string()))?])
}

/// The lines of `vals` (C order, of `shape`) along `axis` sorted, or their sorting positions.
fn sort_lines<T: Sortable>(vals: &[T], shape: &[usize], axis: usize, argsort: bool) -> kiln_ir::Result<HostArray> {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    if n == 0 || outer * inner == 0 {
        return if argsort { HostArray::from_vec(shape, Vec::<i64>::new()) } else { HostArray::from_vec(shape, vals.to_vec()) };
    }
    // Each line contiguous (a copy when the axis is not the last).
    let lines: Vec<T> = if inner == 1 {
        vals.to_vec()
    } else {
        let mut l = Vec::with_capacity(vals.len());
        for o in 0..outer {
            for i in 0..inner {
                l.extend((0..n).map(|k| vals[(o * n + k) * inner + i]));
            }
        }
        l
    };
    // Back to C order of `shape` from lines.
    fn unline<U: Copy>(lines: Vec<U>, n: usize, inner: usize, outer: usize) -> Vec<U> {
        if inner == 1 {
            return lines;
        }
        let mut out = lines.clone();
        for o in 0..outer {
            for i in 0..inner {
                for k in 0..n {
                    out[(o * n + k) * inner + i] = lines[(o * inner + i) * n + k];
                }
            }
        }
        out
    }
    let single = outer * inner == 1;
    if argsort {
        let mut idx: Vec<i64> = Vec::with_capacity(lines.len());
        for _ in 0..outer * inner {
            idx.extend(0..n as i64);
        }
        let sort_line = |(line, pos): (&[T], &mut [i64])| pos.sort_by(|&a, &b| line[a as usize].order(&line[b as usize]));
        if single {
            idx.par_sort_by(|&a, &b| lines[a as usize].order(&lines[b as usize]));
        } else {
            lines.par_chunks(n).zip(idx.par_chunks_mut(n)).for_each(sort_line);
        }
        HostArray::from_vec(shape, unline(idx, n, inner, outer))
    } else {
        let mut lines = lines;
        if single {
            lines.par_sort_by(T::order);
        } else {
            lines.par_chunks_mut(n).for_each(|line| line.sort_by(T::order));
        }
        HostArray::from_vec(shape, unline(lines, n, inner, outer))
    }
}
