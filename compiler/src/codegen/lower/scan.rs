//! Scan regions (`Space::Scan`): a work item is a row of the scanned shape (every index but the
//! axis's). For each, the kernel runs along the axis in order: the first element converted to
//! the result's dtype is the running value, then each next element combines into it (the
//! evaluator's `add`, `multiply`, `maximum` or `minimum` of the result dtype, so each step is
//! rounded as NumPy's `ufunc.accumulate` rounds it), and every running value is stored. The
//! input's producers are computed in the loop (`cumsum(x * x)` reads x once).
//!
//! The same code on both targets: rows are the work items, split among host threads or GPU
//! threads; a row is sequential.

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, Node, OpKind};
use smallvec::SmallVec;

use super::{Ix, Lower, Stop};
use crate::codegen::cast::cast;
use crate::codegen::index::{extent, ravel, unravel};
use crate::codegen::types::{store, Val};
use crate::codegen::{scalar, Unsupported};

/// The elementwise op that combines an element into a scan's running value.
pub(crate) fn combine_op(op: OpKind) -> Option<OpKind> {
    match op {
        OpKind::Cumsum => Some(OpKind::Add),
        OpKind::Cumprod => Some(OpKind::Mul),
        OpKind::Cummax => Some(OpKind::Maximum),
        OpKind::Cummin => Some(OpKind::Minimum),
        _ => None,
    }
}

/// Elements of a row a scan's loop takes at a time: their loads are issued together (on the GPU
/// a row's thread otherwise waits for each load in turn).
const UNROLL: usize = 8;

/// Work items of a scan over `axis` of `shape`: its rows (none when the axis is empty).
pub(crate) fn rows(shape: &[usize], axis: usize) -> usize {
    if shape[axis] == 0 {
        0
    } else {
        numel(shape) / shape[axis]
    }
}

impl Lower<'_> {
    /// The loop over rows `start..end` of a scan region over `axis` of `shape` (see the module
    /// docs).
    pub(super) fn scan(&mut self, shape: &[usize], axis: usize) -> Result<(), Stop> {
        let body = self.body;
        let outs = body.outputs().to_vec();
        let mut scans = Vec::with_capacity(outs.len());
        for &o in &outs {
            let node = body.node(o);
            let combine = combine_op(node.op).filter(|_| matches!(node.attrs, Attrs::Axis { axis: a } if a == axis));
            match combine {
                Some(c) if node.shape.as_slice() == shape => scans.push((node, c)),
                _ => return Err(Unsupported::new(Some(node.op.name()), "an output of a scan region that is not its scan".into()).into()),
            }
        }
        let row_shape: Vec<usize> = shape.iter().enumerate().filter(|&(a, _)| a != axis).map(|(_, &n)| n).collect();
        let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
        let row = if row_shape.len() == 1 { vec![iv.clone()] } else { unravel(&mut self.b, &iv, &row_shape) };
        let at = |row: &[String], k: &str| -> Vec<String> {
            let mut dims = row.to_vec();
            dims.insert(axis, k.to_string());
            dims
        };
        // The first element of each scan is its running value.
        let zero = self.b.i64(0);
        let mut first = Vec::with_capacity(scans.len());
        for (k, (node, _)) in scans.iter().enumerate() {
            let dims = at(&row, &zero);
            let v = self.emit(node.inputs[0], &Ix { dims: Some(dims.clone()), flat: None })?;
            let v = cast(&mut self.b, &v, node.dtype)?;
            let pos = ravel(&mut self.b, &dims, shape);
            store(&mut self.b, &Self::out_ptr(k), &pos, &v);
            first.push(v);
        }
        // Then the rest of the row: chunks of UNROLL elements (their loads first, so that they
        // are in flight together; the combines after, in order), and the remainder one by one.
        let len = shape[axis];
        let whole = 1 + len.saturating_sub(1) / UNROLL * UNROLL;
        let mut running: Vec<Val> = first;
        for (from, to, step) in [(1, whole, UNROLL), (whole, len, 1)] {
            if from >= to {
                continue;
            }
            running = self.scan_loop(&scans, shape, &row, axis, (from, to, step), running)?;
        }
        self.close();
        Ok(())
    }
}

impl Lower<'_> {
    /// The loop along the axis from `from` to `to` by `step` (each step's `step` elements'
    /// values computed first, then combined into the running values in order and stored);
    /// returns the running values after it.
    fn scan_loop(
        &mut self,
        scans: &[(&Node, OpKind)],
        shape: &[usize],
        row: &[String],
        axis: usize,
        (from, to, step): (usize, usize, usize),
        running: Vec<Val>,
    ) -> Result<Vec<Val>, Stop> {
        let init: Vec<String> = running.iter().flat_map(parts).collect();
        let tys: Vec<&str> = running.iter().flat_map(|v| vec![v.ty(); parts(v).len()]).collect();
        let (lb, ub, by) = (extent(&mut self.b, from), extent(&mut self.b, to), self.b.i64(step as i64));
        let (j0, args, results) = self.open_for_step(&lb, &ub, Some(&by), &init, &tys);
        let mut dims_at = Vec::with_capacity(step);
        let mut values = Vec::with_capacity(step);
        for u in 0..step {
            let j = if u == 0 { j0.clone() } else {
                let du = self.b.i64(u as i64);
                self.b.op(&format!("arith.addi {j0}, {du} overflow<nsw, nuw> : i64"))
            };
            let mut dims = row.to_vec();
            dims.insert(axis, j);
            let mut vs = Vec::with_capacity(scans.len());
            for (node, _) in scans {
                let v = self.emit(node.inputs[0], &Ix { dims: Some(dims.clone()), flat: None })?;
                vs.push(cast(&mut self.b, &v, node.dtype)?);
            }
            values.push(vs);
            dims_at.push(dims);
        }
        let mut acc = unparts(&args, &running);
        for (dims, vs) in dims_at.iter().zip(values) {
            let pos = ravel(&mut self.b, dims, shape);
            for (k, ((node, combine), v)) in scans.iter().zip(vs).enumerate() {
                let op = Node { op: *combine, attrs: Attrs::None, inputs: SmallVec::new(), dtype: node.dtype, shape: SmallVec::new() };
                acc[k] = scalar::elementwise(&mut self.b, &op, &[acc[k].clone(), v])?;
                store(&mut self.b, &Self::out_ptr(k), &pos, &acc[k]);
            }
        }
        let next: Vec<String> = acc.iter().flat_map(parts).collect();
        self.yield_(&next, &tys);
        self.close_no_unroll();
        Ok(unparts(&results, &running))
    }
}

/// Values of the dtypes of `like` from their parts `ssa` (two for a complex value).
fn unparts(ssa: &[String], like: &[Val]) -> Vec<Val> {
    let mut it = ssa.iter().cloned();
    like.iter()
        .map(|v| match v.im {
            Some(_) => Val::complex(it.next().expect("a real part"), it.next().expect("an imaginary part"), v.dt),
            None => Val::new(it.next().expect("a value"), v.dt),
        })
        .collect()
}

/// The SSA values of `v`: its real and imaginary parts for a complex value.
fn parts(v: &Val) -> Vec<String> {
    match &v.im {
        Some(im) => vec![v.ssa.clone(), im.clone()],
        None => vec![v.ssa.clone()],
    }
}
