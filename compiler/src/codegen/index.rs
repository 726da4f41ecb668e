//! Index math: the element of a node's result being computed, and how views move it.
//!
//! Views never copy: a node is evaluated *at an index* of its result, and a view maps that index
//! to an index of its input (permute reorders it, broadcast_to zeroes stretched axes, slice
//! scales and shifts, flip mirrors, expand_dims/squeeze drop or add zeros, reshape ravels then
//! unravels). At an `input` the index becomes a position in its C-contiguous buffer.
//!
//! Sizes, slice starts and steps are kernel parameters ([`Builder::param`]); only which axes
//! have extent 1 (broadcast), and starts of 0 and steps of ±1, are structure.

use kiln_ir::shape::numel;
use kiln_ir::{ops_not_of, Attrs, Node, OpKind, SliceDim};

use super::builder::Builder;

/// An index of a node's result: one i64 SSA value per axis, and, when known, its C-order flat
/// position (which then saves the ravel at a load from a buffer of the same shape).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Ix {
    /// `None` in flat mode: only the flat position is known (contiguous fast path).
    pub dims: Option<Vec<String>>,
    pub flat: Option<String>,
}

/// The lowering asked for a multi-index in flat mode: it must use the row loops.
#[derive(Debug)]
pub(crate) struct NeedsDims;

impl Ix {
    pub fn dims(&self) -> Result<&[String], NeedsDims> {
        self.dims.as_deref().ok_or(NeedsDims)
    }

    /// A memo key naming the index.
    pub fn key(&self) -> String {
        match (&self.dims, &self.flat) {
            (Some(d), _) => d.join(","),
            (None, Some(f)) => format!("flat {f}"),
            (None, None) => String::new(),
        }
    }
}

/// An extent as an SSA value: a parameter, or a constant for 1 and sizes up to
/// [`Builder::const_extents`].
pub(crate) fn extent(b: &mut Builder, n: usize) -> String {
    if n <= b.const_extents {
        b.i64(n as i64)
    } else {
        b.param(n as i64)
    }
}

/// The C-order flat position of `dims` in `shape`.
pub(crate) fn ravel(b: &mut Builder, dims: &[String], shape: &[usize]) -> String {
    let mut acc: Option<String> = None;
    for (d, &n) in dims.iter().zip(shape) {
        acc = Some(match acc {
            None => d.clone(),
            Some(a) if n == 1 => a,
            Some(a) => {
                let e = extent(b, n);
                let m = b.op(&format!("arith.muli {a}, {e} overflow<nsw, nuw> : i64"));
                b.op(&format!("arith.addi {m}, {d} overflow<nsw, nuw> : i64"))
            }
        });
    }
    acc.unwrap_or_else(|| b.i64(0))
}

/// The multi-index of flat position `flat` in `shape` (C order).
pub(crate) fn unravel(b: &mut Builder, flat: &str, shape: &[usize]) -> Vec<String> {
    let mut dims = vec![String::new(); shape.len()];
    let mut rest = flat.to_string();
    for k in (0..shape.len()).rev() {
        if shape[k] == 1 {
            dims[k] = b.i64(0);
        } else if k == 0 {
            dims[k] = rest.clone();
        } else {
            let e = extent(b, shape[k]);
            let (q, r) = b.divrem(&rest, &e);
            dims[k] = r;
            rest = q;
        }
    }
    dims
}

/// The index of `view`'s input that `ix` (an index of `view`'s result) reads.
pub(crate) fn through_view(
    b: &mut Builder,
    view: &Node,
    input: &Node,
    ix: &Ix,
) -> Result<Ix, NeedsDims> {
    let out_shape = &view.shape;
    let in_shape = &input.shape;
    match (view.op, &view.attrs) {
        (OpKind::Reshape, _) | (OpKind::ExpandDims, _) | (OpKind::Squeeze, _) => {
            // Same elements in the same C order: the flat position carries over.
            if numel(out_shape) == 0 {
                // No element is ever computed, but the input still needs an index of its own
                // rank (views under it, a permute say, index its axes).
                let zero = b.i64(0);
                return Ok(Ix {
                    dims: ix.dims.as_ref().map(|_| vec![zero.clone(); in_shape.len()]),
                    flat: Some(zero),
                });
            }
            let flat = match &ix.flat {
                Some(f) => f.clone(),
                None => ravel(b, ix.dims()?, out_shape),
            };
            // expand_dims and squeeze drop or add zeros; a reshape unravels the flat position.
            let dims = match (&ix.dims, &view.attrs) {
                (None, _) => None,
                (Some(d), Attrs::Axes { axes }) if view.op == OpKind::ExpandDims => Some(
                    d.iter()
                        .enumerate()
                        .filter(|(k, _)| !axes.contains(k))
                        .map(|(_, s)| s.clone())
                        .collect(),
                ),
                (Some(d), Attrs::Axes { axes }) if view.op == OpKind::Squeeze => {
                    let mut it = d.iter();
                    let zero = b.i64(0);
                    Some(
                        (0..in_shape.len())
                            .map(|k| {
                                if axes.contains(&k) {
                                    zero.clone()
                                } else {
                                    it.next().unwrap().clone()
                                }
                            })
                            .collect(),
                    )
                }
                (Some(_), _) => Some(unravel(b, &flat, in_shape)),
            };
            Ok(Ix { dims, flat: Some(flat) })
        }
        (OpKind::Permute, Attrs::Perm { perm }) => {
            let d = ix.dims()?;
            let mut dims = vec![String::new(); d.len()];
            for (k, &p) in perm.iter().enumerate() {
                dims[p] = d[k].clone();
            }
            Ok(Ix { dims: Some(dims), flat: None })
        }
        (OpKind::BroadcastTo, _) => {
            if in_shape == out_shape {
                return Ok(ix.clone());
            }
            if in_shape.iter().all(|&n| n == 1) {
                // A scalar (or all-ones) operand: every element reads element 0.
                let zero = b.i64(0);
                return Ok(Ix { dims: Some(vec![zero.clone(); in_shape.len()]), flat: Some(zero) });
            }
            let d = ix.dims()?;
            let pad = out_shape.len() - in_shape.len();
            let zero = b.i64(0);
            let dims = (0..in_shape.len())
                .map(|i| if in_shape[i] == 1 { zero.clone() } else { d[i + pad].clone() })
                .collect();
            Ok(Ix { dims: Some(dims), flat: None })
        }
        (OpKind::Slice, Attrs::Slice { dims: sl }) => {
            let d = ix.dims()?;
            let dims = d.iter().zip(sl.iter()).map(|(i, s)| slice_index(b, i, s)).collect();
            Ok(Ix { dims: Some(dims), flat: None })
        }
        (OpKind::Flip, Attrs::Axes { axes }) => {
            let d = ix.dims()?;
            let dims = d
                .iter()
                .enumerate()
                .map(|(k, i)| {
                    if axes.contains(&k) && in_shape[k] > 1 {
                        let last = b.param(in_shape[k] as i64 - 1);
                        b.op(&format!("arith.subi {last}, {i} overflow<nsw> : i64"))
                    } else {
                        i.clone()
                    }
                })
                .collect();
            Ok(Ix { dims: Some(dims), flat: None })
        }
        (OpKind::Permute | OpKind::Slice | OpKind::Flip, _) => {
            unreachable!("{} with the wrong attributes", view.op.name())
        }
        (ops_not_of!(View), _) => unreachable!("{} is not a view", view.op.name()),
    }
}

/// `start + i * step` along one sliced axis.
fn slice_index(b: &mut Builder, i: &str, s: &SliceDim) -> String {
    let scaled = match s.step {
        1 => i.to_string(),
        -1 => {
            let zero = b.i64(0);
            b.op(&format!("arith.subi {zero}, {i} overflow<nsw> : i64"))
        }
        step => {
            let st = b.param(step as i64);
            b.op(&format!("arith.muli {i}, {st} overflow<nsw> : i64"))
        }
    };
    if s.start == 0 {
        scaled
    } else {
        let st = b.param(s.start as i64);
        b.op(&format!("arith.addi {st}, {scaled} overflow<nsw> : i64"))
    }
}
