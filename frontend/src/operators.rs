//! Rust operators on arrays, by value and by reference, with arrays or scalars on either side.
//! They panic (with the `try_` form's message, at the caller) on shape or dtype errors.

use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Neg, Not, Rem, Shl, Shr, Sub};

use kiln_ir::OpKind;
use num_complex::{Complex32, Complex64};

use crate::array::Array;
use crate::elementwise::{binary, Operand};

macro_rules! binop {
    ($($trait:ident, $method:ident => $op:ident;)*) => {$(
        impl<T: Into<Operand>> $trait<T> for Array {
            type Output = Array;
            #[track_caller]
            fn $method(self, rhs: T) -> Array {
                crate::unwrap(binary(OpKind::$op, self.into(), rhs.into()))
            }
        }
        impl<T: Into<Operand>> $trait<T> for &Array {
            type Output = Array;
            #[track_caller]
            fn $method(self, rhs: T) -> Array {
                crate::unwrap(binary(OpKind::$op, self.into(), rhs.into()))
            }
        }
        binop!(@scalars $trait, $method => $op; i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 bool Complex32 Complex64);
    )*};
    (@scalars $trait:ident, $method:ident => $op:ident; $($s:ty)*) => {$(
        impl $trait<Array> for $s {
            type Output = Array;
            #[track_caller]
            fn $method(self, rhs: Array) -> Array {
                crate::unwrap(binary(OpKind::$op, self.into(), rhs.into()))
            }
        }
        impl $trait<&Array> for $s {
            type Output = Array;
            #[track_caller]
            fn $method(self, rhs: &Array) -> Array {
                crate::unwrap(binary(OpKind::$op, self.into(), rhs.into()))
            }
        }
    )*};
}

binop! {
    Add, add => Add;
    Sub, sub => Sub;
    Mul, mul => Mul;
    Div, div => Div;
    Rem, rem => Remainder;
    BitAnd, bitand => BitwiseAnd;
    BitOr, bitor => BitwiseOr;
    BitXor, bitxor => BitwiseXor;
    Shl, shl => LeftShift;
    Shr, shr => RightShift;
}

impl Neg for Array {
    type Output = Array;
    #[track_caller]
    fn neg(self) -> Array {
        self.negative()
    }
}
impl Neg for &Array {
    type Output = Array;
    #[track_caller]
    fn neg(self) -> Array {
        self.negative()
    }
}

/// `!x` is NumPy's `~x` (`np.invert`): bitwise not of integers, logical not of bools.
impl Not for Array {
    type Output = Array;
    #[track_caller]
    fn not(self) -> Array {
        self.invert()
    }
}
impl Not for &Array {
    type Output = Array;
    #[track_caller]
    fn not(self) -> Array {
        self.invert()
    }
}
