//! Reduction accumulators: their types, initial values, one step, and the final value.
//!
//! | op | accumulator | notes |
//! |---|---|---|
//! | sum, prod of bool/int | i64, wrapping | unsigned too (two's complement) |
//! | sum of float16/bfloat16 | f32 | rounded once at the end |
//! | sum of float32, prod of float16/bfloat16/float32 | f64 | rounded once at the end |
//! | sum of float64 | f64 and its compensation | Neumaier's summation, as the evaluator |
//! | prod of float64 | f64 | |
//! | max, min of floats | the element type, the last zero's position and sign | NaN propagates; a zero result has the last zero's sign (below) |
//! | max, min of bool/int | the element type | |
//! | argmax, argmin | (best value, its index) | the first NaN wins |
//! | all, any | i1 | |
//!
//! Sums of float16, bfloat16 and float32 carry `fastmath<reassoc>` so LLVM may vectorise them
//! (several partial sums, combined at the end): the reference evaluator sums exactly
//! (compensated, in f64), so results may differ from it by the rounding of the wide sum. Sums of
//! float64 use the evaluator's compensated summation in the same order, and products multiply in
//! order: those match it exactly.
//!
//! Float max and min use IEEE 754-2019 maximum/minimum (`llvm.maximum`, which LLVM vectorises),
//! which orders -0 below +0; the evaluator's fold (NumPy's too) keeps the later of two equal
//! values, so a zero result is the last zero of the reduction, of either sign. A second
//! accumulator, the largest 2·position + sign bit over the zeros (an integer max, vectorised
//! too), gives that sign.

use kiln_ir::{ops_not_of, DType, DTypeKind, OpKind};

use super::builder::Builder;
use super::cast::cast;
use super::types::{float_const, int_const, work_ty, Val};
use super::Unsupported;

/// The accumulator of one reduction.
pub(crate) struct Acc {
    pub op: OpKind,
    /// `op`, one of the reductions.
    fold: Fold,
    /// The input's dtype.
    pub dt: DType,
    /// Accumulator types, in `iter_args` order.
    pub tys: Vec<&'static str>,
}

/// The reductions (the ops of class `Reduce`): what [`Acc`]'s methods match on, so that a new
/// reduction is a compile error in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fold {
    Sum,
    Prod,
    Max,
    Min,
    ArgMax,
    ArgMin,
    All,
    Any,
}

impl Fold {
    /// The fold of `op`; `None` for an op that is not a reduction.
    fn of(op: OpKind) -> Option<Fold> {
        Some(match op {
            OpKind::Sum => Fold::Sum,
            OpKind::Prod => Fold::Prod,
            OpKind::Max => Fold::Max,
            OpKind::Min => Fold::Min,
            OpKind::ArgMax => Fold::ArgMax,
            OpKind::ArgMin => Fold::ArgMin,
            OpKind::All => Fold::All,
            OpKind::Any => Fold::Any,
            ops_not_of!(Reduce) => return None,
        })
    }
}

/// What a cooperative kernel's group combine folds (see `Lower::group_combine`): the
/// components of a partial fold and how two partials over disjoint elements merge.
pub(crate) trait Combine {
    /// The components' types, in `iter_args` order.
    fn tys(&self) -> &[&'static str];
    /// `a` and `o` merged (`a` covers the earlier elements).
    fn combine(
        &self,
        b: &mut Builder,
        a: &[String],
        o: &[String],
    ) -> Result<Vec<String>, Unsupported>;
}

impl Combine for Acc {
    fn tys(&self) -> &[&'static str] {
        &self.tys
    }

    fn combine(
        &self,
        b: &mut Builder,
        a: &[String],
        o: &[String],
    ) -> Result<Vec<String>, Unsupported> {
        Acc::combine(self, b, a, o)
    }
}

/// The accumulator type of a float sum or product of `dt`.
fn float_acc(op: OpKind, dt: DType) -> &'static str {
    if op == OpKind::Sum && matches!(dt, DType::Float16 | DType::BFloat16) {
        "f32"
    } else {
        "f64"
    }
}

impl Acc {
    pub fn new(op: OpKind, dt: DType) -> Result<Acc, Unsupported> {
        if dt.is_complex() {
            return Err(Unsupported::new(Some(op.name()), format!("a reduction of {dt}")));
        }
        let ty = work_ty(dt)?;
        let Some(fold) = Fold::of(op) else { unreachable!("{} is not a reduction", op.name()) };
        let tys = match fold {
            Fold::Sum if dt == DType::Float64 => vec!["f64", "f64"],
            Fold::Sum | Fold::Prod => {
                if dt.is_float() {
                    vec![float_acc(op, dt)]
                } else {
                    vec!["i64"]
                }
            }
            Fold::Max | Fold::Min if dt.is_float() => vec![ty, "i64"],
            Fold::Max | Fold::Min => vec![ty],
            Fold::ArgMax | Fold::ArgMin => vec![ty, "i64"],
            Fold::All | Fold::Any => vec!["i1"],
        };
        Ok(Acc { op, fold, dt, tys })
    }

    /// A float32 sum accumulated in f32 (not the evaluator's: [`Acc::new`]'s is f64), in any
    /// order (`fastmath<reassoc>`): the screening pass of an argmin or argmax over float32 sums,
    /// which bounds its error (`lower/screen.rs`).
    pub fn float32_sum_in_f32() -> Acc {
        Acc { op: OpKind::Sum, fold: Fold::Sum, dt: DType::Float32, tys: vec!["f32"] }
    }

    /// Whether this is [`Acc::float32_sum_in_f32`]'s accumulator (the screening pass's).
    pub fn is_f32_screen(&self) -> bool {
        self.op == OpKind::Sum && self.dt == DType::Float32 && self.tys == ["f32"]
    }

    /// Whether [`Acc::step`] reads the element's position (argmax, argmin; float max, min).
    pub fn needs_pos(&self) -> bool {
        matches!(self.op, OpKind::ArgMax | OpKind::ArgMin) || self.tracks_zeros()
    }

    /// Float max and min: the last zero's position and sign are accumulated too.
    fn tracks_zeros(&self) -> bool {
        matches!(self.op, OpKind::Max | OpKind::Min) && self.dt.is_float()
    }

    /// Neumaier's compensated sum: (sum, compensation).
    fn compensated(&self) -> bool {
        self.op == OpKind::Sum && self.dt == DType::Float64
    }

    fn is_max(&self) -> bool {
        matches!(self.op, OpKind::Max | OpKind::ArgMax)
    }

    /// The identity: where the fold starts.
    pub fn init(&self, b: &mut Builder) -> Vec<String> {
        let ty = self.tys[0];
        let extreme = |b: &mut Builder, max: bool| -> String {
            // The value every element beats (or ties): -inf / MIN for max, +inf / MAX for min.
            match self.dt.kind() {
                DTypeKind::Float => {
                    float_const(b, if max { f64::NEG_INFINITY } else { f64::INFINITY }, ty)
                }
                DTypeKind::Bool => int_const(b, if max { 0 } else { 1 }, ty),
                DTypeKind::SignedInt => {
                    let (lo, hi) = self.dt.int_range().expect("integer");
                    int_const(b, if max { lo } else { hi }, ty)
                }
                DTypeKind::UnsignedInt => int_const(b, if max { 0 } else { -1 }, ty),
                DTypeKind::Complex => unreachable!("rejected in Acc::new"),
            }
        };
        match self.fold {
            Fold::Sum if self.compensated() => vec![float_const(b, 0.0, ty); 2],
            Fold::Sum => vec![if ty.starts_with('f') {
                float_const(b, 0.0, ty)
            } else {
                int_const(b, 0, ty)
            }],
            Fold::Prod => vec![if ty.starts_with('f') {
                float_const(b, 1.0, ty)
            } else {
                int_const(b, 1, ty)
            }],
            Fold::Max | Fold::Min if self.tracks_zeros() => {
                vec![extreme(b, self.is_max()), b.i64(-1)]
            }
            Fold::Max | Fold::Min => vec![extreme(b, self.is_max())],
            Fold::ArgMax | Fold::ArgMin => vec![extreme(b, self.is_max()), b.i64(0)],
            Fold::All => vec![int_const(b, 1, "i1")],
            Fold::Any => vec![int_const(b, 0, "i1")],
        }
    }

    /// The accumulators after element `v` (at flat position `pos` within the reduced axes).
    pub fn step(
        &self,
        b: &mut Builder,
        acc: &[String],
        v: &Val,
        pos: &str,
    ) -> Result<Vec<String>, Unsupported> {
        let a = &acc[0];
        let ty = self.tys[0];
        Ok(match self.fold {
            Fold::Sum if self.compensated() => {
                // t = s + x; c += (s - t) + x if |s| >= |x| else (x - t) + s; s = t.
                let (s, c, x) = (a, &acc[1], &v.ssa);
                let t = b.op(&format!("arith.addf {s}, {x} : f64"));
                let abs_s = b.op(&format!("math.absf {s} : f64"));
                let abs_x = b.op(&format!("math.absf {x} : f64"));
                let ge = b.op(&format!("arith.cmpf oge, {abs_s}, {abs_x} : f64"));
                let st = b.op(&format!("arith.subf {s}, {t} : f64"));
                let c1 = b.op(&format!("arith.addf {st}, {x} : f64"));
                let xt = b.op(&format!("arith.subf {x}, {t} : f64"));
                let c2 = b.op(&format!("arith.addf {xt}, {s} : f64"));
                let d = b.op(&format!("arith.select {ge}, {c1}, {c2} : f64"));
                vec![t, b.op(&format!("arith.addf {c}, {d} : f64"))]
            }
            Fold::Sum | Fold::Prod => {
                let x = widen(b, v, ty)?;
                let sum = self.op == OpKind::Sum;
                if ty.starts_with('f') {
                    // Sums may be reassociated (vectorised); products keep the evaluator's order.
                    let op = if sum { "arith.addf" } else { "arith.mulf" };
                    let flags = if sum { " fastmath<reassoc>" } else { "" };
                    vec![b.op(&format!("{op} {a}, {x}{flags} : {ty}"))]
                } else {
                    let op = if sum { "arith.addi" } else { "arith.muli" };
                    vec![b.op(&format!("{op} {a}, {x} : {ty}"))]
                }
            }
            Fold::Max | Fold::Min => {
                let max = self.is_max();
                let x = &v.ssa;
                vec![match self.dt.kind() {
                    DTypeKind::Float => {
                        // IEEE 754-2019 maximum/minimum (see the module docs), and the key of the
                        // last zero: max(key, 2·pos + sign bit of x if x is ±0, else -1).
                        let op = if max { "arith.maximumf" } else { "arith.minimumf" };
                        let m = b.op(&format!("{op} {a}, {x} : {ty}"));
                        let zero = float_const(b, 0.0, ty);
                        let is_zero = b.op(&format!("arith.cmpf oeq, {x}, {zero} : {ty}"));
                        let (ity, top) = if ty == "f64" { ("i64", 63) } else { ("i32", 31) };
                        let bits = b.op(&format!("arith.bitcast {x} : {ty} to {ity}"));
                        let top = int_const(b, top, ity);
                        let sign = b.op(&format!("arith.shrui {bits}, {top} : {ity}"));
                        let sign = if ity == "i64" {
                            sign
                        } else {
                            b.op(&format!("arith.extui {sign} : {ity} to i64"))
                        };
                        let one = b.i64(1);
                        let twice = b.op(&format!("arith.shli {pos}, {one} : i64"));
                        let key = b.op(&format!("arith.ori {twice}, {sign} : i64"));
                        let none = b.i64(-1);
                        let key = b.op(&format!("arith.select {is_zero}, {key}, {none} : i64"));
                        return Ok(vec![m, b.op(&format!("arith.maxsi {}, {key} : i64", acc[1]))]);
                    }
                    DTypeKind::Bool => b.op(&format!(
                        "{} {a}, {x} : i1",
                        if max { "arith.ori" } else { "arith.andi" }
                    )),
                    DTypeKind::SignedInt => b.op(&format!(
                        "{} {a}, {x} : {ty}",
                        if max { "arith.maxsi" } else { "arith.minsi" }
                    )),
                    DTypeKind::UnsignedInt => b.op(&format!(
                        "{} {a}, {x} : {ty}",
                        if max { "arith.maxui" } else { "arith.minui" }
                    )),
                    DTypeKind::Complex => unreachable!("rejected in Acc::new"),
                }]
            }
            Fold::ArgMax | Fold::ArgMin => {
                let max = self.is_max();
                let x = &v.ssa;
                let i = &acc[1];
                // x replaces the best unless the best is a NaN; a NaN x always replaces.
                let better = match self.dt.kind() {
                    DTypeKind::Float => {
                        let pred = if max { "ogt" } else { "olt" };
                        let c = b.op(&format!("arith.cmpf {pred}, {x}, {a} : {ty}"));
                        let xnan = b.op(&format!("arith.cmpf uno, {x}, {x} : {ty}"));
                        let c = b.op(&format!("arith.ori {c}, {xnan} : i1"));
                        let anum = b.op(&format!("arith.cmpf ord, {a}, {a} : {ty}"));
                        b.op(&format!("arith.andi {c}, {anum} : i1"))
                    }
                    DTypeKind::SignedInt => b.op(&format!(
                        "arith.cmpi {}, {x}, {a} : {ty}",
                        if max { "sgt" } else { "slt" }
                    )),
                    DTypeKind::Bool | DTypeKind::UnsignedInt => b.op(&format!(
                        "arith.cmpi {}, {x}, {a} : {ty}",
                        if max { "ugt" } else { "ult" }
                    )),
                    DTypeKind::Complex => unreachable!("rejected in Acc::new"),
                };
                vec![
                    b.op(&format!("arith.select {better}, {x}, {a} : {ty}")),
                    b.op(&format!("arith.select {better}, {pos}, {i} : i64")),
                ]
            }
            Fold::All | Fold::Any => {
                let t = cast(b, v, DType::Bool)?;
                let op = if self.op == OpKind::All { "arith.andi" } else { "arith.ori" };
                vec![b.op(&format!("{op} {a}, {} : i1", t.ssa))]
            }
        })
    }

    /// Two partial accumulators merged (a cooperative reduction's combining step, on the GPU).
    /// `a` and `b` cover disjoint sets of elements; argmax/argmin break ties (and NaN against
    /// NaN) by the lower position, so the result is the sequential fold's.
    pub fn combine(
        &self,
        b: &mut Builder,
        a: &[String],
        o: &[String],
    ) -> Result<Vec<String>, Unsupported> {
        let ty = self.tys[0];
        Ok(match self.fold {
            Fold::Sum if self.compensated() => {
                let mut r = self.step(b, &a[..2], &Val::new(o[0].clone(), DType::Float64), "")?;
                r[1] = b.op(&format!("arith.addf {}, {} : f64", r[1], o[1]));
                r
            }
            Fold::Sum | Fold::Prod => {
                let sum = self.op == OpKind::Sum;
                let (x, y) = (&a[0], &o[0]);
                if ty.starts_with('f') {
                    vec![b.op(&format!(
                        "{} {x}, {y} : {ty}",
                        if sum { "arith.addf" } else { "arith.mulf" }
                    ))]
                } else {
                    vec![b.op(&format!(
                        "{} {x}, {y} : {ty}",
                        if sum { "arith.addi" } else { "arith.muli" }
                    ))]
                }
            }
            Fold::Max | Fold::Min if self.tracks_zeros() => {
                // The larger (smaller) value, NaN propagating; the later of the last zeros (the
                // keys are 2·position + sign over the whole reduction).
                let op = if self.is_max() { "arith.maximumf" } else { "arith.minimumf" };
                vec![
                    b.op(&format!("{op} {}, {} : {ty}", a[0], o[0])),
                    b.op(&format!("arith.maxsi {}, {} : i64", a[1], o[1])),
                ]
            }
            Fold::Max | Fold::Min => self.step(b, a, &Val::new(o[0].clone(), self.dt), "")?,
            Fold::All | Fold::Any => {
                let op = if self.op == OpKind::All { "arith.andi" } else { "arith.ori" };
                vec![b.op(&format!("{op} {}, {} : i1", a[0], o[0]))]
            }
            Fold::ArgMax | Fold::ArgMin => {
                let max = self.is_max();
                let (x, i, y, j) = (&a[0], &a[1], &o[0], &o[1]);
                let (o_better, tie) = match self.dt.kind() {
                    DTypeKind::Float => {
                        let pred = if max { "ogt" } else { "olt" };
                        let gt = b.op(&format!("arith.cmpf {pred}, {y}, {x} : {ty}"));
                        let xnan = b.op(&format!("arith.cmpf uno, {x}, {x} : {ty}"));
                        let ynan = b.op(&format!("arith.cmpf uno, {y}, {y} : {ty}"));
                        let xnum = b.op(&format!("arith.cmpf ord, {x}, {x} : {ty}"));
                        let ynan_only = b.op(&format!("arith.andi {ynan}, {xnum} : i1"));
                        let better = b.op(&format!("arith.ori {gt}, {ynan_only} : i1"));
                        let eq = b.op(&format!("arith.cmpf oeq, {y}, {x} : {ty}"));
                        let both = b.op(&format!("arith.andi {xnan}, {ynan} : i1"));
                        (better, b.op(&format!("arith.ori {eq}, {both} : i1")))
                    }
                    DTypeKind::SignedInt => (
                        b.op(&format!(
                            "arith.cmpi {}, {y}, {x} : {ty}",
                            if max { "sgt" } else { "slt" }
                        )),
                        b.op(&format!("arith.cmpi eq, {y}, {x} : {ty}")),
                    ),
                    DTypeKind::Bool | DTypeKind::UnsignedInt => (
                        b.op(&format!(
                            "arith.cmpi {}, {y}, {x} : {ty}",
                            if max { "ugt" } else { "ult" }
                        )),
                        b.op(&format!("arith.cmpi eq, {y}, {x} : {ty}")),
                    ),
                    DTypeKind::Complex => unreachable!("rejected in Acc::new"),
                };
                let first = b.op(&format!("arith.cmpi slt, {j}, {i} : i64"));
                let tie_first = b.op(&format!("arith.andi {tie}, {first} : i1"));
                let pick = b.op(&format!("arith.ori {o_better}, {tie_first} : i1"));
                vec![
                    b.op(&format!("arith.select {pick}, {y}, {x} : {ty}")),
                    b.op(&format!("arith.select {pick}, {j}, {i} : i64")),
                ]
            }
        })
    }

    /// The result, of dtype `out`.
    pub fn finish(&self, b: &mut Builder, acc: &[String], out: DType) -> Result<Val, Unsupported> {
        match self.fold {
            Fold::ArgMax | Fold::ArgMin => Ok(Val::new(acc[1].clone(), DType::Int64)),
            Fold::All | Fold::Any => Ok(Val::new(acc[0].clone(), DType::Bool)),
            Fold::Max | Fold::Min if self.tracks_zeros() => {
                // A zero result takes the last zero's sign.
                let (v, key, ty) = (&acc[0], &acc[1], self.tys[0]);
                let zero = float_const(b, 0.0, ty);
                let neg_zero = float_const(b, -0.0, ty);
                let is_zero = b.op(&format!("arith.cmpf oeq, {v}, {zero} : {ty}"));
                let one = b.i64(1);
                let sign = b.op(&format!("arith.andi {key}, {one} : i64"));
                let negative = b.op(&format!("arith.cmpi eq, {sign}, {one} : i64"));
                let z = b.op(&format!("arith.select {negative}, {neg_zero}, {zero} : {ty}"));
                Ok(Val::new(b.op(&format!("arith.select {is_zero}, {z}, {v} : {ty}")), self.dt))
            }
            Fold::Max | Fold::Min => Ok(Val::new(acc[0].clone(), self.dt)),
            Fold::Sum if self.compensated() => {
                // s + c when s is finite, else s (inf or NaN), as the evaluator.
                let (s, c) = (&acc[0], &acc[1]);
                let abs = b.op(&format!("math.absf {s} : f64"));
                let inf = float_const(b, f64::INFINITY, "f64");
                let finite = b.op(&format!("arith.cmpf olt, {abs}, {inf} : f64"));
                let sc = b.op(&format!("arith.addf {s}, {c} : f64"));
                let r = b.op(&format!("arith.select {finite}, {sc}, {s} : f64"));
                cast(b, &Val::new(r, DType::Float64), out)
            }
            Fold::Sum | Fold::Prod => {
                let acc_dt = match self.tys[0] {
                    "f64" => DType::Float64,
                    "f32" => DType::Float32,
                    _ if out.is_unsigned_integer() => DType::UInt64,
                    _ => DType::Int64,
                };
                cast(b, &Val::new(acc[0].clone(), acc_dt), out)
            }
        }
    }
}

/// An element converted to a sum/product accumulator type.
pub(crate) fn widen(b: &mut Builder, v: &Val, ty: &str) -> Result<String, Unsupported> {
    let vt = v.ty();
    Ok(match (v.dt.kind(), ty) {
        (_, t) if t == vt => v.ssa.clone(),
        (DTypeKind::Float, "f64") => b.op(&format!("arith.extf {} : f32 to f64", v.ssa)),
        (DTypeKind::SignedInt, "i64") => b.op(&format!("arith.extsi {} : {vt} to i64", v.ssa)),
        (DTypeKind::Bool | DTypeKind::UnsignedInt, "i64") => {
            b.op(&format!("arith.extui {} : {vt} to i64", v.ssa))
        }
        _ => return Err(Unsupported::new(None, format!("a {} accumulator of {}", ty, v.dt))),
    })
}
