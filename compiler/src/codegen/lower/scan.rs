//! Scan regions (`Space::Scan`): a work item is a row of the scanned shape (every index but the
//! axis's). For each, the kernel runs along the axis in order: the first element converted to
//! the result's dtype is the running value, then each next element combines into it (the
//! evaluator's `add`, `multiply`, `maximum` or `minimum` of the result dtype, so each step is
//! rounded as NumPy's `ufunc.accumulate` rounds it), and every running value is stored. The
//! input's producers are computed in the loop (`cumsum(x * x)` reads x once).
//!
//! Rows are the work items, split among host threads or GPU threads; a row is sequential
//! (NumPy's bits).
//!
//! On the GPU, long scans run by tiles instead (module `scan_gpu`).
use kiln_ir::shape::numel;
use kiln_ir::{Attrs, Node};
use smallvec::SmallVec;

use kiln_ir::{Graph, OpKind};

use super::{Ix, Lower, Stop};
use crate::codegen::cast::cast;
use crate::codegen::index::{extent, ravel, unravel};
use crate::codegen::types::{store, Val};
use crate::codegen::{scalar, Unsupported};

/// Work items of a scan over `axis` of `shape`: its rows (none when the axis is empty).
pub(crate) fn rows(shape: &[usize], axis: usize) -> usize {
    numel(shape).checked_div(shape[axis]).unwrap_or(0)
}

impl Lower<'_> {
    /// The loop over rows `start..end` of a scan region over `axis` of `shape` (see the module
    /// docs).
    pub(super) fn scan(&mut self, shape: &[usize], axis: usize) -> Result<(), Stop> {
        let scans = scans(self.body, shape, axis)?;
        let row_shape: Vec<usize> =
            shape.iter().enumerate().filter(|&(a, _)| a != axis).map(|(_, &n)| n).collect();
        let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
        let row = if row_shape.len() == 1 {
            vec![iv.clone()]
        } else {
            unravel(&mut self.b, &iv, &row_shape)
        };
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
        let one = self.b.i64(1);
        let n = extent(&mut self.b, shape[axis]);
        // The running values as loop-carried parts (two for a complex value).
        let init: Vec<String> = first.iter().flat_map(parts).collect();
        let tys: Vec<&str> = first.iter().flat_map(|v| vec![v.ty(); parts(v).len()]).collect();
        let (j, args, _) = self.open_for(&one, &n, &init, &tys);
        let mut args = args.into_iter();
        let dims = at(&row, &j);
        let pos = ravel(&mut self.b, &dims, shape);
        let mut next = Vec::with_capacity(scans.len());
        for (k, (node, combine)) in scans.iter().enumerate() {
            let v = self.emit(node.inputs[0], &Ix { dims: Some(dims.clone()), flat: None })?;
            let v = cast(&mut self.b, &v, node.dtype)?;
            let op = Node {
                op: *combine,
                attrs: Attrs::None,
                inputs: SmallVec::new(),
                dtype: node.dtype,
                shape: SmallVec::new(),
            };
            let re = args.next().expect("a part per running value");
            let running = if node.dtype.is_complex() {
                Val::complex(re, args.next().expect("an imaginary part"), node.dtype)
            } else {
                Val::new(re, node.dtype)
            };
            let acc = scalar::elementwise(&mut self.b, &op, &[running, v])?;
            store(&mut self.b, &Self::out_ptr(k), &pos, &acc);
            next.extend(parts(&acc));
        }
        self.yield_(&next, &tys);
        self.close();
        self.close();
        Ok(())
    }
}

/// The outputs of a scan region over `axis` of `shape`, each with its combine.
pub(super) fn scans<'g>(
    body: &'g Graph,
    shape: &[usize],
    axis: usize,
) -> Result<Vec<(&'g Node, OpKind)>, Unsupported> {
    body.outputs()
        .iter()
        .map(|&o| {
            let node = body.node(o);
            let combine = node
                .op
                .combine()
                .filter(|_| matches!(node.attrs, Attrs::Axis { axis: a } if a == axis));
            match combine {
                Some(c) if node.shape.as_slice() == shape => Ok((node, c)),
                _ => Err(Unsupported::new(
                    Some(node.op.name()),
                    "an output of a scan region that is not its scan".into(),
                )),
            }
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
