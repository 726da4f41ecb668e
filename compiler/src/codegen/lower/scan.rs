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
//!
//! A compaction region (every output a `compact` or `compact_count` of one condition,
//! [`compaction`]) runs the same loop with a running count of kept elements: each kept element
//! is stored at the count, each other one's slot is the zero at `n - 1 - (rejected so far)`
//! (so the line's tail is zeros, every slot written once), and the count is stored after the
//! line.
use kiln_ir::shape::numel;
use kiln_ir::{Attrs, DType, Literal, Node, NodeId};
use smallvec::SmallVec;

use kiln_ir::{Graph, OpKind};

use super::{Ix, Lower, Stop};
use crate::codegen::cast::cast;
use crate::codegen::index::{extent, ravel, unravel};
use crate::codegen::types::{literal, store, Val};
use crate::codegen::{scalar, Unsupported};

/// Work items of a scan over `axis` of `shape`: its rows (none when the axis is empty).
pub(crate) fn rows(shape: &[usize], axis: usize) -> usize {
    numel(shape).checked_div(shape[axis]).unwrap_or(0)
}

impl Lower<'_> {
    /// The loop over rows `start..end` of a scan region over `axis` of `shape` (see the module
    /// docs).
    pub(super) fn scan(&mut self, shape: &[usize], axis: usize) -> Result<(), Stop> {
        if let Some(c) = compaction(self.body, axis)? {
            return self.compact_rows(shape, axis, &c);
        }
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

/// A compaction region: the condition every output reads, and for each output whether it is a
/// `compact` (else a `compact_count`).
pub(crate) struct Compaction<'g> {
    pub cond: NodeId,
    pub outputs: Vec<(&'g Node, bool)>,
}

/// The region as a compaction along `axis` (see the module docs), `None` where no output is a
/// `compact` or `compact_count`. Errors: such outputs beside other ones, or of two conditions.
pub(crate) fn compaction(body: &Graph, axis: usize) -> Result<Option<Compaction<'_>>, Unsupported> {
    let outs: Vec<&Node> = body.outputs().iter().map(|&o| body.node(o)).collect();
    let is = |n: &Node| matches!(n.op, OpKind::Compact | OpKind::CompactCount);
    if !outs.iter().any(|n| is(n)) {
        return Ok(None);
    }
    let cond = outs[0].inputs[0];
    let fits = |n: &Node| {
        is(n) && n.inputs[0] == cond && matches!(n.attrs, Attrs::Axis { axis: a } if a == axis)
    };
    if let Some(n) = outs.iter().find(|n| !fits(n)) {
        return Err(Unsupported::new(
            Some(n.op.name()),
            "a compaction region's output that is not a compaction of its condition".into(),
        ));
    }
    let outputs = outs.into_iter().map(|n| (n, n.op == OpKind::Compact)).collect();
    Ok(Some(Compaction { cond, outputs }))
}

impl Lower<'_> {
    /// A compaction region's loop over rows `start..end` (see the module docs).
    fn compact_rows(&mut self, shape: &[usize], axis: usize, c: &Compaction) -> Result<(), Stop> {
        let row_shape: Vec<usize> =
            shape.iter().enumerate().filter(|&(a, _)| a != axis).map(|(_, &n)| n).collect();
        let mut count_shape = shape.to_vec();
        count_shape[axis] = 1;
        let (iv, _, _) = self.open_for("%start", "%end", &[], &[]);
        let row = match row_shape.len() {
            0 => Vec::new(),
            1 => vec![iv.clone()],
            _ => unravel(&mut self.b, &iv, &row_shape),
        };
        let at = |row: &[String], k: &str| -> Vec<String> {
            let mut dims = row.to_vec();
            dims.insert(axis, k.to_string());
            dims
        };
        let zero = self.b.i64(0);
        let one = self.b.i64(1);
        let n = extent(&mut self.b, shape[axis]);
        let last = self.b.op(&format!("arith.subi {n}, {one} : i64"));
        let (j, args, kept) = self.open_for(&zero, &n, std::slice::from_ref(&zero), &["i64"]);
        let ix = Ix { dims: Some(at(&row, &j)), flat: None };
        let sel = self.emit(c.cond, &ix)?;
        let sel = cast(&mut self.b, &sel, DType::Bool)?.ssa;
        // Kept: slot `kept`; else slot `n - 1 - (j - kept)`, a zero.
        let rejected = self.b.op(&format!("arith.subi {j}, {} : i64", args[0]));
        let tail = self.b.op(&format!("arith.subi {last}, {rejected} : i64"));
        let slot = self.b.op(&format!("arith.select {sel}, {}, {tail} : i64", args[0]));
        let pos = ravel(&mut self.b, &at(&row, &slot), shape);
        for (k, &(node, is_compact)) in c.outputs.iter().enumerate() {
            if is_compact {
                let x = self.emit(node.inputs[1], &ix)?;
                let z = literal(&mut self.b, Literal::from_f64(node.dtype, 0.0), node.dtype)?;
                let v = select_val(&mut self.b, &sel, &x, &z);
                store(&mut self.b, &Self::out_ptr(k), &pos, &v);
            }
        }
        let inc = self.b.op(&format!("arith.extui {sel} : i1 to i64"));
        let next = self.b.op(&format!("arith.addi {}, {inc} : i64", args[0]));
        self.yield_(&[next], &["i64"]);
        self.close();
        let pos = ravel(&mut self.b, &at(&row, &zero), &count_shape);
        for (k, &(_, is_compact)) in c.outputs.iter().enumerate() {
            if !is_compact {
                let v = Val::new(kept[0].clone(), DType::Int64);
                store(&mut self.b, &Self::out_ptr(k), &pos, &v);
            }
        }
        self.close();
        Ok(())
    }
}

/// `c ? a : b` of two values of one dtype (complex: part by part).
pub(super) fn select_val(
    b: &mut crate::codegen::builder::Builder,
    c: &str,
    x: &Val,
    y: &Val,
) -> Val {
    let re = b.op(&format!("arith.select {c}, {}, {} : {}", x.ssa, y.ssa, x.ty()));
    match (&x.im, &y.im) {
        (Some(xi), Some(yi)) => {
            let im = b.op(&format!("arith.select {c}, {xi}, {yi} : f64"));
            Val::complex(re, im, x.dt)
        }
        _ => Val::new(re, x.dt),
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
