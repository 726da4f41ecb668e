//! Values of traced kernel code and C++'s operators on them.
//!
//! A value is known when the kernel is traced (a literal, a loop counter, `_ind.size()`, and
//! what is computed from them by the arithmetic below), or a lazy array of the IR. Known values
//! keep loops unrollable and raw indices simple; as soon as an array takes part, the operation
//! becomes graph nodes with the same semantics (which the reference evaluator defines):
//!
//! - Operands are converted by the usual arithmetic conversions ([`super::ctypes::common`])
//!   with explicit `cast` nodes, and broadcast with explicit `broadcast_to` nodes.
//! - Integer `/` and `%` truncate toward zero (C), built from NumPy's flooring `floor_divide`
//!   and `remainder`; a division by a zero array element gives 0 (kiln's rule), by a known zero
//!   is an error (it is undefined in C).
//! - `&&`, `||` and `!` test truth (`!= 0`) and give bool; comparisons give bool.
//! - Shifts take the promoted left operand's type; counts out of range give the evaluator's
//!   result (C leaves them undefined).
//! - Conversions are NumPy's casts (floats to integers truncate; out-of-range values are
//!   undefined in C++ and follow NumPy on x86-64 here).

use kiln_ir::{Attrs, DType, DTypeKind, Literal, OpKind};

use super::ast::{BinOp, Span, UnOp};
use super::ctypes::{c_name, common, promote};
use super::diag::{DResult, Diag};
use crate::array::Array;

/// A value of traced code.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// Known at trace time: a bool, integer or float literal of its dtype.
    Const(Literal, DType),
    /// A lazy array (rank 0, or of the loop's shape).
    Array(Array),
}

impl Val {
    pub fn dtype(&self) -> DType {
        match self {
            Val::Const(_, d) => *d,
            Val::Array(a) => a.dtype(),
        }
    }

    /// The value as an array (a rank-0 constant for a known value).
    pub fn to_array(&self) -> Array {
        match self {
            Val::Const(l, d) => Array::literal(*d, *l),
            Val::Array(a) => a.clone(),
        }
    }

    /// Whether two values are the same (the same constant, or the same expression).
    pub fn same(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::Const(a, da), Val::Const(b, db)) => a == b && da == db,
            (Val::Array(a), Val::Array(b)) => a.same_expr(b),
            _ => false,
        }
    }

    /// The integer value of a known integer or bool.
    pub fn known_int(&self) -> Option<i128> {
        match self {
            Val::Const(l, _) => int_of(*l),
            Val::Array(_) => None,
        }
    }
}

fn int_of(l: Literal) -> Option<i128> {
    match l {
        Literal::Bool(b) => Some(b as i128),
        Literal::Int(i) => Some(i as i128),
        Literal::UInt(u) => Some(u as i128),
        Literal::Float(_) | Literal::Complex(..) => None,
    }
}

fn float_of(l: Literal) -> Option<f64> {
    match l {
        Literal::Float(b) => Some(f64::from_bits(b)),
        other => int_of(other).map(|i| i as f64),
    }
}

/// An IR error of a traced operation, at the operator's position.
pub(crate) fn ir_err(span: Span, e: impl std::fmt::Display) -> Diag {
    Diag::code(span, e.to_string())
}

/// `op` on arrays, broadcast to their common shape (operands of one dtype already).
pub(crate) fn apply(op: OpKind, attrs: Attrs, args: &[&Array], span: Span) -> DResult<Array> {
    let mut shape = kiln_ir::Shape::new();
    for a in args {
        shape = kiln_ir::shape::broadcast_shapes(op.name(), &shape, a.shape())
            .map_err(|e| ir_err(span, e))?;
    }
    let b: Vec<Array> = args
        .iter()
        .map(|a| a.broadcast_to_shape(&shape))
        .collect::<crate::Result<_>>()
        .map_err(|e| ir_err(span, e))?;
    let refs: Vec<&Array> = b.iter().collect();
    Array::apply(op, attrs, &refs).map_err(|e| ir_err(span, e))
}

fn arr(op: OpKind, args: &[&Val], span: Span) -> DResult<Val> {
    let a: Vec<Array> = args.iter().map(|v| v.to_array()).collect();
    let refs: Vec<&Array> = a.iter().collect();
    Ok(Val::Array(apply(op, Attrs::None, &refs, span)?))
}

/// `v` converted to `to` (a C conversion: NumPy's cast).
pub(crate) fn cast(v: &Val, to: DType) -> Val {
    if v.dtype() == to {
        return v.clone();
    }
    if let Val::Const(l, from) = *v {
        if let Some(folded) = fold_cast(l, from, to) {
            return Val::Const(folded, to);
        }
    }
    Val::Array(v.to_array().cast_to(to))
}

/// A known conversion, where it is exact to fold: integers (wrapping), to bool, floats to
/// floats (rounded once), integers of at most 53 bits to floats, and floats that truncate into
/// range to integers. The rest is left to the graph.
fn fold_cast(l: Literal, from: DType, to: DType) -> Option<Literal> {
    match to.kind() {
        DTypeKind::Bool => Some(Literal::Bool(float_of(l)? != 0.0)),
        DTypeKind::SignedInt | DTypeKind::UnsignedInt => match int_of(l) {
            Some(i) => Some(Literal::from_i128(to, i)),
            None => {
                let x = float_of(l)?.trunc();
                let (lo, hi) = to.int_range()?;
                (x.is_finite() && x >= lo as f64 && x <= hi as f64 && x.abs() < 9.0e15)
                    .then(|| Literal::from_i128(to, x as i128))
            }
        },
        DTypeKind::Float => match int_of(l) {
            Some(i) if i.abs() < (1 << 53) => Some(Literal::float(to, i as f64)),
            Some(_) => None,
            None if from.is_float() => Some(Literal::float(to, float_of(l)?)),
            None => None,
        },
        DTypeKind::Complex => None,
    }
}

/// C truthiness: `v != 0`, as bool.
pub(crate) fn truth(v: &Val, span: Span) -> DResult<Val> {
    if v.dtype() == DType::Bool {
        return Ok(v.clone());
    }
    let zero = cast(&Val::Const(Literal::Int(0), DType::Int64), v.dtype());
    binary(BinOp::Ne, v, &zero, span)
}

fn int_ty(d: DType) -> bool {
    d.is_integer() || d.is_bool()
}

/// `a op b` with C++'s semantics (see the module docs).
pub(crate) fn binary(op: BinOp, a: &Val, b: &Val, span: Span) -> DResult<Val> {
    use BinOp::*;
    let invalid = || {
        Diag::code(
            span,
            format!(
                "invalid operands of types {} and {} to `{}`",
                c_name(a.dtype()),
                c_name(b.dtype()),
                op.symbol()
            ),
        )
    };
    match op {
        And | Or => {
            let (x, y) = (truth(a, span)?, truth(b, span)?);
            // A known operand decides or drops out.
            for (k, other) in [(&x, &y), (&y, &x)] {
                if let Some(v) = k.known_int() {
                    let absorbing = (op == And && v == 0) || (op == Or && v != 0);
                    return Ok(if absorbing { k.clone() } else { other.clone() });
                }
            }
            arr(if op == And { OpKind::LogicalAnd } else { OpKind::LogicalOr }, &[&x, &y], span)
        }
        Shl | Shr => {
            if !int_ty(a.dtype()) || !int_ty(b.dtype()) {
                return Err(invalid());
            }
            let t = promote(a.dtype());
            let (x, y) = (cast(a, t), cast(b, t));
            if let (Some(v), Some(s)) = (x.known_int(), y.known_int()) {
                let width = t.itemsize() as i128 * 8;
                if (0..width).contains(&s) {
                    let r = if op == Shl { v.wrapping_shl(s as u32) } else { v >> s };
                    return Ok(Val::Const(Literal::from_i128(t, r), t));
                }
            }
            arr(if op == Shl { OpKind::LeftShift } else { OpKind::RightShift }, &[&x, &y], span)
        }
        _ => {
            let t = common(a.dtype(), b.dtype());
            let integral = int_ty(t);
            if matches!(op, Rem | BitAnd | BitOr | BitXor) && !integral {
                return Err(invalid());
            }
            if t.is_complex() && matches!(op, Lt | Le | Gt | Ge) {
                return Err(invalid());
            }
            let (x, y) = (cast(a, t), cast(b, t));
            if let (Val::Const(p, _), Val::Const(q, _)) = (&x, &y) {
                if let Some(v) = fold_binary(op, *p, *q, t, span)? {
                    return Ok(v);
                }
            }
            let kind = match op {
                Add => OpKind::Add,
                Sub => OpKind::Sub,
                Mul => OpKind::Mul,
                Div if integral => return c_divmod(&x, &y, false, span),
                Rem => return c_divmod(&x, &y, true, span),
                Div => OpKind::Div,
                Lt => OpKind::Lt,
                Le => OpKind::Le,
                Gt => OpKind::Gt,
                Ge => OpKind::Ge,
                Eq => OpKind::Eq,
                Ne => OpKind::Ne,
                BitAnd => OpKind::BitwiseAnd,
                BitOr => OpKind::BitwiseOr,
                BitXor => OpKind::BitwiseXor,
                And | Or | Shl | Shr => unreachable!("handled above"),
            };
            arr(kind, &[&x, &y], span)
        }
    }
}

/// A binary operator on two known values of dtype `t`, or `None` to leave it to the graph.
fn fold_binary(op: BinOp, p: Literal, q: Literal, t: DType, span: Span) -> DResult<Option<Val>> {
    use BinOp::*;
    let boolean = |b: bool| Some(Val::Const(Literal::Bool(b), DType::Bool));
    if let (Some(x), Some(y)) = (int_of(p), int_of(q)) {
        let r = match op {
            Add => x.wrapping_add(y),
            Sub => x.wrapping_sub(y),
            Mul => x.wrapping_mul(y),
            Div | Rem if y == 0 => return Err(Diag::code(span, "division by zero")),
            Div => x / y,
            Rem => x % y,
            BitAnd => x & y,
            BitOr => x | y,
            BitXor => x ^ y,
            Lt => return Ok(boolean(x < y)),
            Le => return Ok(boolean(x <= y)),
            Gt => return Ok(boolean(x > y)),
            Ge => return Ok(boolean(x >= y)),
            Eq => return Ok(boolean(x == y)),
            Ne => return Ok(boolean(x != y)),
            And | Or | Shl | Shr => return Ok(None),
        };
        return Ok(Some(Val::Const(Literal::from_i128(t, r), t)));
    }
    let (Some(x), Some(y)) = (float_of(p), float_of(q)) else { return Ok(None) };
    let r = match op {
        Add => x + y,
        Sub => x - y,
        Mul => x * y,
        Div => x / y,
        Lt => return Ok(boolean(x < y)),
        Le => return Ok(boolean(x <= y)),
        Gt => return Ok(boolean(x > y)),
        Ge => return Ok(boolean(x >= y)),
        Eq => return Ok(boolean(x == y)),
        Ne => return Ok(boolean(x != y)),
        _ => return Ok(None),
    };
    Ok(Some(Val::Const(Literal::float(t, r), t)))
}

/// C's integer `/` (`rem` false) or `%` on arrays: truncating, from flooring ops. For signed
/// operands the floor quotient is one less than the truncated one exactly when the remainder is
/// not zero and the signs differ.
fn c_divmod(x: &Val, y: &Val, rem: bool, span: Span) -> DResult<Val> {
    let t = x.dtype();
    let q = arr(OpKind::FloorDiv, &[x, y], span)?;
    let r = arr(OpKind::Remainder, &[x, y], span)?;
    if !t.is_signed_integer() {
        return Ok(if rem { r } else { q });
    }
    let zero = Val::Const(Literal::Int(0), t);
    let nonzero = binary(BinOp::Ne, &r, &zero, span)?;
    let neg_x = binary(BinOp::Lt, x, &zero, span)?;
    let neg_y = binary(BinOp::Lt, y, &zero, span)?;
    let differ = arr(OpKind::Ne, &[&neg_x, &neg_y], span)?;
    let adjust = arr(OpKind::LogicalAnd, &[&nonzero, &differ], span)?;
    let fixed = if rem {
        arr(OpKind::Sub, &[&r, y], span)?
    } else {
        arr(OpKind::Add, &[&q, &Val::Const(Literal::Int(1), t)], span)?
    };
    arr(OpKind::Where, &[&adjust, &fixed, if rem { &r } else { &q }], span)
}

/// A unary operator.
pub(crate) fn unary(op: UnOp, v: &Val, span: Span) -> DResult<Val> {
    let invalid = || {
        Diag::code(
            span,
            format!("invalid operand of type {} to unary `{}`", c_name(v.dtype()), op.symbol()),
        )
    };
    match op {
        UnOp::Plus => Ok(cast(v, promote(v.dtype()))),
        UnOp::Neg => {
            let x = cast(v, promote(v.dtype()));
            match &x {
                Val::Const(l, t) if int_of(*l).is_some() => {
                    Ok(Val::Const(Literal::from_i128(*t, -int_of(*l).unwrap()), *t))
                }
                Val::Const(l, t) if t.is_float() => {
                    Ok(Val::Const(Literal::float(*t, -float_of(*l).unwrap()), *t))
                }
                _ => arr(OpKind::Neg, &[&x], span),
            }
        }
        UnOp::Not => {
            let b = truth(v, span)?;
            match b.known_int() {
                Some(k) => Ok(Val::Const(Literal::Bool(k == 0), DType::Bool)),
                None => arr(OpKind::LogicalNot, &[&b], span),
            }
        }
        UnOp::BitNot => {
            if !int_ty(v.dtype()) {
                return Err(invalid());
            }
            let x = cast(v, promote(v.dtype()));
            match x.known_int() {
                Some(k) => Ok(Val::Const(Literal::from_i128(x.dtype(), !k), x.dtype())),
                None => arr(OpKind::Invert, &[&x], span),
            }
        }
    }
}

/// `where(c, t, f)` of values already of one dtype; `c` bool.
pub(crate) fn select(c: &Val, t: &Val, f: &Val, span: Span) -> DResult<Val> {
    if t.same(f) {
        return Ok(t.clone());
    }
    match c.known_int() {
        Some(k) => Ok(if k != 0 { t.clone() } else { f.clone() }),
        None => arr(OpKind::Where, &[c, t, f], span),
    }
}

/// `op` on values of one dtype (for the math functions), folded never.
pub(crate) fn call_op(op: OpKind, args: &[&Val], span: Span) -> DResult<Val> {
    arr(op, args, span)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(v: i64, d: DType) -> Val {
        Val::Const(Literal::from_i128(d, v as i128), d)
    }

    const AT: Span = Span { line: 1, column: 1 };

    #[test]
    fn known_values_fold_with_c_semantics() {
        let v = binary(BinOp::Div, &k(-7, DType::Int32), &k(2, DType::Int32), AT).unwrap();
        assert_eq!(v.known_int(), Some(-3));
        let v = binary(BinOp::Rem, &k(-7, DType::Int32), &k(2, DType::Int32), AT).unwrap();
        assert_eq!(v.known_int(), Some(-1));
        // int + unsigned is unsigned: -1 becomes 4294967295.
        let v = binary(BinOp::Add, &k(-1, DType::Int32), &k(0, DType::UInt32), AT).unwrap();
        assert_eq!((v.known_int(), v.dtype()), (Some(4294967295), DType::UInt32));
        // char + char is int: no wrap at 8 bits.
        let v = binary(BinOp::Add, &k(100, DType::Int8), &k(100, DType::Int8), AT).unwrap();
        assert_eq!((v.known_int(), v.dtype()), (Some(200), DType::Int32));
        assert!(binary(BinOp::Div, &k(1, DType::Int32), &k(0, DType::Int32), AT).is_err());
        let f = Val::Const(Literal::float(DType::Float32, 1.5), DType::Float32);
        assert!(binary(BinOp::Rem, &f, &k(1, DType::Int32), AT).is_err());
        let v = binary(BinOp::Mul, &f, &k(2, DType::Int32), AT).unwrap();
        assert!(
            matches!(v, Val::Const(Literal::Float(b), DType::Float32) if f64::from_bits(b) == 3.0)
        );
        let v = unary(UnOp::Not, &k(3, DType::Int32), AT).unwrap();
        assert_eq!((v.known_int(), v.dtype()), (Some(0), DType::Bool));
        assert_eq!(cast(&f, DType::Int8).known_int(), Some(1));
    }

    #[test]
    fn integer_division_of_arrays_truncates() {
        let x = Array::from_vec(vec![-7i32, 7, -7, 7, 0, -8], &[6]);
        let y = Array::from_vec(vec![2i32, -2, -2, 2, 3, 0], &[6]);
        let q = binary(BinOp::Div, &Val::Array(x.clone()), &Val::Array(y.clone()), AT).unwrap();
        let r = binary(BinOp::Rem, &Val::Array(x), &Val::Array(y), AT).unwrap();
        assert_eq!(q.to_array().to_vec::<i32>(), vec![-3, -3, 3, 3, 0, 0]);
        assert_eq!(r.to_array().to_vec::<i32>(), vec![-1, 1, -1, 1, 0, 0]);
    }
}
