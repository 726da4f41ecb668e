//! Rust operators on arrays, by value and by reference, with arrays or scalars on either side,
//! and the in-place operators (`+=`, ...: NumPy's `out=` semantics, see `inplace.rs`). They
//! panic (with the `try_` form's message, at the caller) on shape or dtype errors.

use std::ops::{
    Add, AddAssign, BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Div, DivAssign,
    Mul, MulAssign, Neg, Not, Rem, RemAssign, Shl, ShlAssign, Shr, ShrAssign, Sub, SubAssign,
};

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

macro_rules! assign_op {
    ($($trait:ident, $method:ident => $try_name:ident;)*) => {$(
        /// `a op= b` rebinds `a` to `a op b` cast back to `a`'s dtype under NumPy's `same_kind`
        /// rule; panics where the `try_` form (`Array::try_add_assign`, ...) errs.
        impl<T: Into<Operand>> $trait<T> for Array {
            #[track_caller]
            fn $method(&mut self, rhs: T) {
                crate::unwrap(self.$try_name(rhs))
            }
        }
    )*};
}

assign_op! {
    AddAssign, add_assign => try_add_assign;
    SubAssign, sub_assign => try_sub_assign;
    MulAssign, mul_assign => try_mul_assign;
    DivAssign, div_assign => try_div_assign;
    RemAssign, rem_assign => try_rem_assign;
    BitAndAssign, bitand_assign => try_bitand_assign;
    BitOrAssign, bitor_assign => try_bitor_assign;
    BitXorAssign, bitxor_assign => try_bitxor_assign;
    ShlAssign, shl_assign => try_shl_assign;
    ShrAssign, shr_assign => try_shr_assign;
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
