//! In-place operators: `+= -= *= /= %= &= |= ^= <<= >>=` (Rust's `AddAssign`, ... traits, in
//! `operators.rs`), and `//=` and `**=` as methods ([`Array::floor_divide_assign`],
//! [`Array::power_assign`]), each with a `try_` form: `a.try_add_assign(&b)?`.
//!
//! kiln's arrays are values, so `a += &b` rebinds `a` to a new lazy array: NumPy's
//! `np.add(a, b, out=a)`. The ufunc computes in the dtype its operands promote to (Rust scalars
//! weak, NEP 50), and its result is cast back to `a`'s dtype, which `a` keeps, under NumPy's
//! `same_kind` rule: `int8 += int64` wraps, `float32 += float64` rounds, but `int8 += float64`,
//! integer `/=` (true division gives float64), `uint8 += int8` (int16) and `float += complex`
//! are a typed [`Error::Casting`] naming the op, both dtypes and the rule (NumPy's
//! `UFuncTypeError`); the operators panic with its message. An integer scalar that does not fit
//! `a`'s dtype is NumPy 2's `OverflowError` (`int8 += 1000`): [`kiln_ir::IrError::ScalarOutOfBounds`].
//! The result's shape must be `a`'s: `b` broadcasts to `a`, never `a` to `b`. A failed
//! operation leaves `a` unchanged.

use kiln_ir::promote::{can_cast, Casting};
use kiln_ir::shape::ShapeDisplay;
use kiln_ir::{DType, OpKind};

use crate::elementwise::{binary, Operand};
use crate::error::{value_err, Error, Result};
use crate::Array;

/// NumPy's `ufunc(a, b, out=out)` for an output of dtype `out` and shape `shape`: `op`'s result
/// cast to `out` where `casting` allows it.
///
/// Errors: those of the op; [`Error::Casting`]; a result whose shape is not `shape` (NumPy's
/// "non-broadcastable output operand").
pub(crate) fn ufunc_into(
    op: OpKind,
    a: Operand,
    b: Operand,
    out: DType,
    shape: &[usize],
    casting: Casting,
) -> Result<Array> {
    let r = binary(op, a, b)?;
    if !can_cast(r.dtype(), out, casting) {
        return Err(Error::Casting {
            op: op.name().to_string(),
            ufunc: op.name().to_string(),
            from: r.dtype(),
            to: out,
            casting: casting.name(),
        });
    }
    if r.shape() != shape {
        return Err(value_err(
            op.name(),
            format!(
                "non-broadcastable output operand with shape {} doesn't match the broadcast \
                 shape {}",
                ShapeDisplay(shape),
                ShapeDisplay(r.shape())
            ),
        ));
    }
    Ok(r.cast_to(out))
}

macro_rules! assign_methods {
    ($($(#[$doc:meta])* $try_name:ident => $op:ident;)*) => {
        impl Array {$(
            $(#[$doc])*
            ///
            /// `other` is an array or a Rust scalar (weak, NEP 50). Errors: as the op's; a result
            /// dtype that does not cast to `self`'s under `same_kind` ([`Error::Casting`]); a
            /// result shape other than `self`'s. `self` is unchanged on error.
            pub fn $try_name(&mut self, other: impl Into<Operand>) -> Result<()> {
                *self = ufunc_into(
                    OpKind::$op,
                    Operand::Array(self.clone()),
                    other.into(),
                    self.dtype(),
                    self.shape(),
                    Casting::SameKind,
                )?;
                Ok(())
            }
        )*}
    };
}

assign_methods! {
    /// `a += b`: `np.add(a, b, out=a)`.
    try_add_assign => Add;
    /// `a -= b`: `np.subtract(a, b, out=a)`.
    try_sub_assign => Sub;
    /// `a *= b`: `np.multiply(a, b, out=a)`.
    try_mul_assign => Mul;
    /// `a /= b`: `np.true_divide(a, b, out=a)` (an integer `a` is an error: the quotient is
    /// float64).
    try_div_assign => Div;
    /// `a //= b`: `np.floor_divide(a, b, out=a)`.
    try_floor_divide_assign => FloorDiv;
    /// `a %= b`: `np.remainder(a, b, out=a)`.
    try_rem_assign => Remainder;
    /// `a **= b`: `np.power(a, b, out=a)`.
    try_power_assign => Power;
    /// `a &= b`: `np.bitwise_and(a, b, out=a)`.
    try_bitand_assign => BitwiseAnd;
    /// `a |= b`: `np.bitwise_or(a, b, out=a)`.
    try_bitor_assign => BitwiseOr;
    /// `a ^= b`: `np.bitwise_xor(a, b, out=a)`.
    try_bitxor_assign => BitwiseXor;
    /// `a <<= b`: `np.left_shift(a, b, out=a)`.
    try_shl_assign => LeftShift;
    /// `a >>= b`: `np.right_shift(a, b, out=a)`.
    try_shr_assign => RightShift;
}

impl Array {
    /// `a //= b` (Rust has no `//=`). Panics where [`Array::try_floor_divide_assign`] errs.
    #[track_caller]
    pub fn floor_divide_assign(&mut self, other: impl Into<Operand>) {
        crate::unwrap(self.try_floor_divide_assign(other))
    }

    /// `a **= b` (Rust has no `**=`). Panics where [`Array::try_power_assign`] errs.
    #[track_caller]
    pub fn power_assign(&mut self, other: impl Into<Operand>) {
        crate::unwrap(self.try_power_assign(other))
    }
}
