//! Layer norm's mean and variance in one pass over a row: shifted sums.
//!
//! A row reduction region whose reductions over its axes include `s1 = sum(x)` and
//! `s2 = sum((x - mu)²)`, where `mu` is computed from `s1` alone (`s1 / n`, as `x.mean()` and
//! `kiln::nn::layer_norm` build it) and broadcast back, folds both in one pass over the row.
//! With `c` the row's first element (every lane reads it: the same shift for all, so partial
//! folds combine by adding) the fold keeps, in the sums' accumulator type (float64 for float32
//! elements),
//!
//! ```text
//! a = Σ (x - c)      q = Σ (x - c)²
//! ```
//!
//! and at the end `s1 = a + n·c`, `mu` from `s1` by the region's own ops, and with `e = mu - c`
//!
//! ```text
//! s2 = Σ (x - mu)² = q - 2·e·a + n·e² = q - e·(2a - n·e)     (at least 0)
//! ```
//!
//! The shift keeps the cancellation small: `|x - c|` is of the row's spread, not of its
//! magnitude (the plain `Σx²` form loses everything to a large mean). A non-finite first
//! element shifts by 0 instead (the sums are then inf or NaN as the two-pass form's). The
//! sums differ from the reference evaluator's by their rounding in the wide type: the
//! two-pass form rounds each `(x - mu)²` to the element type, this one does not.

use kiln_ir::{Attrs, DType, Graph, NodeId, OpClass, OpKind};

use super::builder::Builder;
use super::reduce::{widen, Acc, Combine};
use super::types::{float_const, Val};
use super::Unsupported;

/// A layer norm's sum and sum of squared deviations, folded in one pass (see the module docs).
pub(crate) struct Moments {
    /// `sum(x)` over the region's axes, `keepdims`.
    pub sum: NodeId,
    /// `sum(square(x - broadcast_to(mu)))` over the same axes.
    pub squares: NodeId,
    /// `x`, of float16, bfloat16 or float32.
    pub x: NodeId,
    /// `mu`: computed from `sum` and constants by elementwise ops.
    pub mean: NodeId,
    /// The sums' accumulator (one component).
    acc: Acc,
    sum_dt: DType,
    squares_dt: DType,
    /// `[acc type; 2]`: `a` and `q`.
    tys: [&'static str; 2],
}

impl Moments {
    /// The layer norms among `level1` (the reductions over a row region's axes of `shape`, the
    /// kept shape with those axes at 1 being `keep_ones`):
    /// each a sum of `x` and a sum of `square(x - broadcast_to(mu))` (or `d * d`), `mu`
    /// depending on no region input and on no reduction but that sum.
    pub fn find(
        body: &Graph,
        shape: &[usize],
        keep_ones: &[usize],
        level1: &[NodeId],
    ) -> Vec<Moments> {
        let mut found = Vec::new();
        for &squares in level1 {
            let s2 = body.node(squares);
            if s2.op != OpKind::Sum {
                continue;
            }
            let e = body.node(s2.inputs[0]);
            // d² as `square(d)` or `d * d`.
            let d = match e.inputs.as_slice() {
                [d] if e.op == OpKind::Square => *d,
                [d, d2] if e.op == OpKind::Mul && d == d2 => *d,
                _ => continue,
            };
            let dn = body.node(d);
            if dn.op != OpKind::Sub || dn.dtype != e.dtype {
                continue;
            }
            let (x, bcast) = (dn.inputs[0], dn.inputs[1]);
            let bn = body.node(bcast);
            if bn.op != OpKind::BroadcastTo || bn.shape.as_slice() != shape {
                continue;
            }
            let mean = bn.inputs[0];
            if body.node(mean).shape.as_slice() != keep_ones {
                continue;
            }
            let Some(sum) = only_reduction(body, mean) else { continue };
            let s1 = body.node(sum);
            let dt = body.node(x).dtype;
            let keepdims = matches!(s1.attrs, Attrs::Reduce { keepdims: true, .. });
            if s1.op != OpKind::Sum
                || !keepdims
                || !level1.contains(&sum)
                || s1.inputs[0] != x
                || !matches!(dt, DType::Float16 | DType::BFloat16 | DType::Float32)
                || dn.dtype != dt
            {
                continue;
            }
            let Ok(acc) = Acc::new(OpKind::Sum, dt) else { continue };
            let tys = [acc.tys[0], acc.tys[0]];
            found.push(Moments {
                sum,
                squares,
                x,
                mean,
                acc,
                sum_dt: s1.dtype,
                squares_dt: s2.dtype,
                tys,
            });
        }
        found
    }

    /// The sums' type (`f64` or `f32`).
    pub(crate) fn ty(&self) -> &'static str {
        self.tys[0]
    }

    /// The shift: the row's first element `first` widened, or 0 where it is not finite.
    pub fn shift(&self, b: &mut Builder, first: &Val) -> Result<String, Unsupported> {
        let t = self.ty();
        let c = widen(b, first, t)?;
        let abs = b.op(&format!("math.absf {c} : {t}"));
        let inf = float_const(b, f64::INFINITY, t);
        let finite = b.op(&format!("arith.cmpf olt, {abs}, {inf} : {t}"));
        let zero = float_const(b, 0.0, t);
        Ok(b.op(&format!("arith.select {finite}, {c}, {zero} : {t}")))
    }

    /// The fold's start: `(0, 0)`.
    pub fn init(&self, b: &mut Builder) -> Vec<String> {
        let zero = float_const(b, 0.0, self.ty());
        vec![zero.clone(), zero]
    }

    /// `(a, q)` after element `x`, with the shift `c`.
    pub fn step(
        &self,
        b: &mut Builder,
        acc: &[String],
        x: &Val,
        c: &str,
    ) -> Result<Vec<String>, Unsupported> {
        let t = self.ty();
        let xw = widen(b, x, t)?;
        let d = b.op(&format!("arith.subf {xw}, {c} : {t}"));
        let a = b.op(&format!("arith.addf {}, {d} fastmath<reassoc> : {t}", acc[0]));
        let dd = b.op(&format!("arith.mulf {d}, {d} : {t}"));
        let q = b.op(&format!("arith.addf {}, {dd} fastmath<reassoc> : {t}", acc[1]));
        Ok(vec![a, q])
    }

    /// The sum's value from the fold (`a + n·c`, `n` the row's length as an i64 SSA value).
    pub fn sum_value(
        &self,
        b: &mut Builder,
        acc: &[String],
        c: &str,
        n: &str,
    ) -> Result<Val, Unsupported> {
        let t = self.ty();
        let nf = b.op(&format!("arith.sitofp {n} : i64 to {t}"));
        let nc = b.op(&format!("arith.mulf {nf}, {c} : {t}"));
        let s1 = b.op(&format!("arith.addf {}, {nc} : {t}", acc[0]));
        self.acc.finish(b, &[s1], self.sum_dt)
    }

    /// The sum of squared deviations from the fold, given the mean's value `mu`: `q - e·(2a -
    /// n·e)` with `e = mu - c`, at least 0 (NaN stays NaN).
    pub fn squares_value(
        &self,
        b: &mut Builder,
        acc: &[String],
        c: &str,
        n: &str,
        mu: &Val,
    ) -> Result<Val, Unsupported> {
        let t = self.ty();
        let (a, q) = (&acc[0], &acc[1]);
        let m = widen(b, mu, t)?;
        let e = b.op(&format!("arith.subf {m}, {c} : {t}"));
        let nf = b.op(&format!("arith.sitofp {n} : i64 to {t}"));
        let ne = b.op(&format!("arith.mulf {nf}, {e} : {t}"));
        let two_a = b.op(&format!("arith.addf {a}, {a} : {t}"));
        let h = b.op(&format!("arith.subf {two_a}, {ne} : {t}"));
        let eh = b.op(&format!("arith.mulf {e}, {h} : {t}"));
        let r = b.op(&format!("arith.subf {q}, {eh} : {t}"));
        let zero = float_const(b, 0.0, t);
        let r = b.op(&format!("arith.maximumf {r}, {zero} : {t}"));
        self.acc.finish(b, &[r], self.squares_dt)
    }
}

impl Combine for Moments {
    fn tys(&self) -> &[&'static str] {
        &self.tys
    }

    fn combine(
        &self,
        b: &mut Builder,
        a: &[String],
        o: &[String],
    ) -> Result<Vec<String>, Unsupported> {
        let t = self.ty();
        Ok(vec![
            b.op(&format!("arith.addf {}, {} : {t}", a[0], o[0])),
            b.op(&format!("arith.addf {}, {} : {t}", a[1], o[1])),
        ])
    }
}

/// The one reduction `mean`'s value depends on, if it reads no region input and no other
/// reduction (through elementwise ops and views; constants and iotas allowed).
fn only_reduction(body: &Graph, mean: NodeId) -> Option<NodeId> {
    let mut found = None;
    let mut stack = vec![mean];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        let node = body.node(n);
        if node.op.is_reduction() {
            if found.is_some_and(|f| f != n) {
                return None;
            }
            found = Some(n);
            continue;
        }
        match node.op.class() {
            OpClass::Elementwise | OpClass::View => stack.extend(node.inputs.iter().copied()),
            // Constants and iotas are computed in place; an input (any other leaf) is read.
            OpClass::Leaf => {
                if !matches!(node.op, OpKind::Const | OpKind::Iota) {
                    return None;
                }
            }
            OpClass::Reduce
            | OpClass::Copy
            | OpClass::Gather
            | OpClass::Scatter
            | OpClass::Scan
            | OpClass::Sort
            | OpClass::Vendor
            | OpClass::Custom => return None,
        }
    }
    found
}
