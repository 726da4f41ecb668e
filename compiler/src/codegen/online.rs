//! Softmax's max and sum in one pass over a row: the online normaliser (Milakov and
//! Gimelshein, "Online normalizer calculation for softmax", 2018).
//!
//! A row reduction region whose reductions over its axes include `m = max(x)` and
//! `s = sum(exp(x - m))` (the max kept as `keepdims` and broadcast back, as
//! `kiln::nn::softmax` builds it) folds both in one pass over the row. The fold carries the
//! running max `m` and the sum `s` of `exp(x - m)` relative to it; when an element raises the
//! max, the sum is rescaled first:
//!
//! ```text
//! m' = max(m, x)      s' = s · exp(m - m') + exp(x - m')      (the rescale only when m' ≠ m)
//! ```
//!
//! Two partial folds (the lanes of a cooperative kernel) combine as
//!
//! ```text
//! M = max(m1, m2)     s = s1 · exp(m1 - M) + s2 · exp(m2 - M)  (the factor 1 where m = M)
//! ```
//!
//! so two empty folds (`-inf` both) stay at 0, and a NaN or `+inf` makes the sum NaN as the
//! three-pass form does. `exp(x - m')` is the region's own `subtract` and `exp` nodes: the
//! element type, math library and flags are those of the three-pass form. The sum differs from
//! the reference evaluator's by the rounding of the rescale factors (rounded `exp`s of the
//! element type, a few per fold: the running max of a row rises about `ln n` times).
//!
//! The max is folded with IEEE `maximum` and no record of zeros' signs (see `reduce`'s docs):
//! [`Online::find`] takes it only where its one use is `exp(x - m)`, in which the sign of a
//! zero `m` makes no difference (`x - (+0)` and `x - (-0)` differ only for `x = -0`, as `-0`
//! and `+0`, and `exp(±0) = 1`).

use kiln_ir::{Attrs, DType, Graph, Node, NodeId, OpKind};

use super::builder::Builder;
use super::reduce::{widen, Acc, Combine};
use super::scalar;
use super::types::{float_const, work_ty, Val};
use super::{MathLib, Unsupported};

/// A softmax's max and sum, folded in one pass (see the module docs).
pub(crate) struct Online {
    /// `max(x)` over the region's axes, `keepdims`.
    pub max: NodeId,
    /// `sum(exp(x - broadcast_to(max)))` over the same axes.
    pub sum: NodeId,
    /// `x`, of a real float dtype.
    pub x: NodeId,
    /// `exp(x - broadcast_to(max))`.
    pub exp: NodeId,
    x_dt: DType,
    /// The running max's type (`x`'s register type).
    m_ty: &'static str,
    /// The sum's accumulator (one component).
    acc: Acc,
    /// The region's `exp` at the rescale factors' type: the sum's (`wide`) or float32.
    factor_exp: Node,
    sum_dt: DType,
    /// `[m_ty, acc type]`: the fold's components.
    tys: [&'static str; 2],
}

impl Online {
    /// The softmaxes among `level1` (the reductions over a row region's axes of `shape`; the
    /// kept shape with those axes at 1 is `keep_ones`), each a max and a sum of that form whose
    /// max, broadcast and difference have no other use.
    ///
    /// The rescale factors are computed in the sum's type when `wide` (float64 for float32
    /// elements: the difference of two float32s is exact there), else in float32. A fold that
    /// rises at every element rescales at every element, so a long one (a host kernel's, one
    /// thread to a row) needs them wide: over an ascending row of 4096 float32, float32 factors
    /// put the sum 14 ulps from the evaluator's. A GPU lane rescales at most once per step of
    /// its loop and once per combine level, and float64 `exp` inlined took the softmax kernel
    /// from 32 registers to 128 (40 with float32 factors). A wide float64 factor needs float64
    /// `exp`: not under [`MathLib::Polynomial`], where those softmaxes keep three passes.
    pub fn find(
        body: &Graph,
        shape: &[usize],
        keep_ones: &[usize],
        level1: &[NodeId],
        math: MathLib,
        wide: bool,
    ) -> Vec<Online> {
        let users = body.use_counts();
        let mut found = Vec::new();
        for &sum in level1 {
            let s = body.node(sum);
            if s.op != OpKind::Sum {
                continue;
            }
            let exp = s.inputs[0];
            let e = body.node(exp);
            let dt = e.dtype;
            if e.op != OpKind::Exp || !dt.is_float() || dt.is_complex() {
                continue;
            }
            let d = e.inputs[0];
            let dn = body.node(d);
            if dn.op != OpKind::Sub || users[d.index()] != 1 || dn.dtype != dt {
                continue;
            }
            let (x, bcast) = (dn.inputs[0], dn.inputs[1]);
            let bn = body.node(bcast);
            if bn.op != OpKind::BroadcastTo
                || users[bcast.index()] != 1
                || bn.shape.as_slice() != shape
            {
                continue;
            }
            let max = bn.inputs[0];
            let m = body.node(max);
            let keepdims = matches!(m.attrs, Attrs::Reduce { keepdims: true, .. });
            if m.op != OpKind::Max
                || !keepdims
                || users[max.index()] != 1
                || !level1.contains(&max)
                || m.inputs[0] != x
                || m.shape.as_slice() != keep_ones
                || body.node(x).dtype != dt
            {
                continue;
            }
            let (Ok(acc), Ok(m_ty)) = (Acc::new(OpKind::Sum, dt), work_ty(dt)) else { continue };
            let acc_dt = if acc.tys == ["f64"] { DType::Float64 } else { DType::Float32 };
            let factor_dt = if wide { acc_dt } else { DType::Float32 };
            if acc.tys.len() != 1 || (factor_dt == DType::Float64 && math == MathLib::Polynomial) {
                // float64's compensated sum, or no float64 exp: left to the three passes.
                continue;
            }
            let tys = [m_ty, acc.tys[0]];
            let factor_exp = Node { dtype: factor_dt, ..e.clone() };
            found.push(Online {
                max,
                sum,
                x,
                exp,
                x_dt: dt,
                m_ty,
                acc,
                factor_exp,
                sum_dt: s.dtype,
                tys,
            });
        }
        found
    }

    /// The fold's start: `(-inf, 0)`.
    pub fn init(&self, b: &mut Builder) -> Vec<String> {
        let m = float_const(b, f64::NEG_INFINITY, self.m_ty);
        let s = self.acc.init(b).swap_remove(0);
        vec![m, s]
    }

    /// A running max `m` as a value of `x`'s dtype (in its register type).
    pub fn running(&self, m: &str) -> Val {
        Val::new(m.to_string(), self.x_dt)
    }

    /// The running max after `x`.
    pub fn raise(&self, b: &mut Builder, m: &str, x: &Val) -> String {
        b.op(&format!("arith.maximumf {m}, {} : {}", x.ssa, self.m_ty))
    }

    /// `exp(from - to)` in the factor's type (see [`Online::find`]), widened to the sum's.
    fn factor(&self, b: &mut Builder, from: &str, to: &str) -> Result<String, Unsupported> {
        let ft = work_ty(self.factor_exp.dtype)?;
        let f = widen(b, &self.running(from), ft)?;
        let t = widen(b, &self.running(to), ft)?;
        let d = b.op(&format!("arith.subf {f}, {t} : {ft}"));
        let e = scalar::elementwise(b, &self.factor_exp, &[Val::new(d, self.factor_exp.dtype)])?;
        widen(b, &e, self.tys[1])
    }

    /// `s` relative to the running max `m` rescaled to `to` (a branch: the max rises rarely).
    pub fn rescale(
        &self,
        b: &mut Builder,
        s: &str,
        m: &str,
        to: &str,
    ) -> Result<String, Unsupported> {
        let (mt, st) = (self.m_ty, self.tys[1]);
        let risen = b.op(&format!("arith.cmpf une, {m}, {to} : {mt}"));
        let r = b.open(1, &format!("scf.if {risen} -> ({st})")).swap_remove(0);
        let f = self.factor(b, m, to)?;
        let p = b.op(&format!("arith.mulf {s}, {f} : {st}"));
        b.stmt(&format!("scf.yield {p} : {st}"));
        b.next_region("else");
        b.stmt(&format!("scf.yield {s} : {st}"));
        b.close();
        Ok(r)
    }

    /// `s + e`, the term `e = exp(x - m')` (of `x`'s dtype) taken as 0 while the running max
    /// `m'` is `-inf` (only `-inf`s so far: `exp(-inf - -inf)` is NaN, their terms are 0 once
    /// any element is larger, see [`Online::finish`]).
    pub fn add(&self, b: &mut Builder, s: &str, e: &Val, m: &str) -> Result<String, Unsupported> {
        let (mt, st) = (self.m_ty, self.tys[1]);
        let t = widen(b, e, st)?;
        let ninf = float_const(b, f64::NEG_INFINITY, mt);
        let none_yet = b.op(&format!("arith.cmpf oeq, {m}, {ninf} : {mt}"));
        let zero = float_const(b, 0.0, st);
        let t = b.op(&format!("arith.select {none_yet}, {zero}, {t} : {st}"));
        Ok(b.op(&format!("arith.addf {s}, {t} : {st}")))
    }

    /// The max's and the sum's values from the fold: a max of `-inf` (a row of `-inf`s) makes
    /// the sum NaN, as `exp(-inf - -inf)` makes the three-pass form's.
    pub fn finish(&self, b: &mut Builder, acc: &[String]) -> Result<(Val, Val), Unsupported> {
        let (m, mt, st) = (&acc[0], self.m_ty, self.tys[1]);
        let ninf = float_const(b, f64::NEG_INFINITY, mt);
        let none = b.op(&format!("arith.cmpf oeq, {m}, {ninf} : {mt}"));
        let nan = float_const(b, f64::NAN, st);
        let s = b.op(&format!("arith.select {none}, {nan}, {} : {st}", acc[1]));
        let s = self.acc.finish(b, &[s], self.sum_dt)?;
        Ok((self.running(m), s))
    }

    /// `s` relative to `m` rescaled to `big` (`big ≥ m`), with the factor 1 where `m = big`
    /// (no branch).
    pub fn rescaled(
        &self,
        b: &mut Builder,
        s: &str,
        m: &str,
        big: &str,
    ) -> Result<String, Unsupported> {
        let (mt, st) = (self.m_ty, self.tys[1]);
        let same = b.op(&format!("arith.cmpf oeq, {m}, {big} : {mt}"));
        let f = self.factor(b, m, big)?;
        let p = b.op(&format!("arith.mulf {s}, {f} : {st}"));
        Ok(b.op(&format!("arith.select {same}, {s}, {p} : {st}")))
    }
}

impl Combine for Online {
    fn tys(&self) -> &[&'static str] {
        &self.tys
    }

    fn combine(
        &self,
        b: &mut Builder,
        a: &[String],
        o: &[String],
    ) -> Result<Vec<String>, Unsupported> {
        let big = b.op(&format!("arith.maximumf {}, {} : {}", a[0], o[0], self.m_ty));
        let sa = self.rescaled(b, &a[1], &a[0], &big)?;
        let so = self.rescaled(b, &o[1], &o[0], &big)?;
        let s = b.op(&format!("arith.addf {sa}, {so} : {}", self.tys[1]));
        Ok(vec![big, s])
    }
}
