//! Ufuncs and their relatives: shapes that do not broadcast, dtypes without a loop, scalars out
//! of range, in-place results that do not fit, NaN-laden data.

use kiln::{Array, DType};

use super::{bools, c64s, f32s, i64s, nans, Walk};

/// Each binary method (and the in-place ones) with shapes (2, 3) and (4,), which do not
/// broadcast; then `$bad_dtype` operands, when given, which it has no loop for.
macro_rules! binary {
    ($w:expr; $($m:ident, $op:literal $(, $bad:expr)?;)*) => {$(
        $w.err(concat!("Array::", stringify!($m)), $op, "shapes (2, 3) and (4,)", || {
            f32s(&[2, 3]).$m(&f32s(&[4]))
        });
        $($w.err(concat!("Array::", stringify!($m)), $op, "a dtype without a loop", || {
            let bad: Array = $bad;
            bad.$m(&bad)
        });)?
    )*};
}

/// Each unary method on `$bad`, a dtype it has no loop for.
macro_rules! unary_dtype {
    ($w:expr; $($m:ident, $op:literal, $bad:expr;)*) => {$(
        $w.err(concat!("Array::", stringify!($m)), $op, "a dtype without a loop", || {
            let bad: Array = $bad;
            bad.$m()
        });
    )*};
}

/// Each unary method on NaN-laden, infinite and empty data: values (NaN), not panics.
macro_rules! unary_nan {
    ($w:expr; $($m:ident, $op:literal;)*) => {$(
        $w.survives(concat!("Array::", stringify!($m)), $op, "NaN and inf", || nans(&[2, 3]).$m());
        $w.survives(concat!("Array::", stringify!($m)), $op, "empty", || f32s(&[0, 3]).$m());
    )*};
}

/// In-place methods: an operand whose broadcast shape is not `self`'s, and a result dtype that
/// does not cast back under `same_kind`.
macro_rules! in_place {
    ($w:expr; $($m:ident, $op:literal, $self_:expr, $other:expr;)*) => {$(
        $w.err(concat!("Array::", stringify!($m)), $op, "broadcasts beyond self", || {
            let mut a: Array = $self_;
            let before = a.clone();
            let r = a.$m(&f32s(&[4, 3]).astype(a.dtype()));
            assert!(a.same_expr(&before), "self changed on error");
            r
        });
        $w.err(concat!("Array::", stringify!($m)), $op, "a result that does not cast back", || {
            let mut a: Array = $self_;
            a.$m($other)
        });
    )*};
}

pub fn walk(w: &mut Walk) {
    let cplx = || c64s(&[3]);
    let flt = || f32s(&[3]);
    binary! { w;
        try_add, "add";
        try_subtract, "subtract", bools(&[3]);
        try_multiply, "multiply";
        try_divide, "divide";
        try_floor_divide, "floor_divide", cplx();
        try_remainder, "remainder", cplx();
        try_power, "power";
        try_maximum, "maximum";
        try_minimum, "minimum";
        try_fmax, "fmax";
        try_fmin, "fmin";
        try_arctan2, "arctan2", cplx();
        try_hypot, "hypot", cplx();
        try_logaddexp, "logaddexp", cplx();
        try_copysign, "copysign", cplx();
        try_fmod, "fmod", cplx();
        try_logaddexp2, "logaddexp2", cplx();
        try_nextafter, "nextafter", cplx();
        try_equal, "equal";
        try_not_equal, "not_equal";
        try_less, "less";
        try_less_equal, "less_equal";
        try_greater, "greater";
        try_greater_equal, "greater_equal";
        try_logical_and, "logical_and";
        try_logical_or, "logical_or";
        try_logical_xor, "logical_xor";
        try_bitwise_and, "bitwise_and", flt();
        try_bitwise_or, "bitwise_or", flt();
        try_bitwise_xor, "bitwise_xor", flt();
        try_left_shift, "left_shift", flt();
        try_right_shift, "right_shift", flt();
        try_ldexp, "ldexp", cplx();
        try_divmod, "divmod", cplx();
    }
    unary_dtype! { w;
        try_negative, "negative", bools(&[3]);
        try_cbrt, "cbrt", cplx();
        try_floor, "floor", cplx();
        try_ceil, "ceil", cplx();
        try_trunc, "trunc", cplx();
        try_erf, "erf", cplx();
        try_erfc, "erfc", cplx();
        try_erfinv, "erfinv", cplx();
        try_gammaln, "gammaln", cplx();
        try_digamma, "digamma", cplx();
        try_invert, "invert", flt();
        try_fix, "fix", cplx();
        try_signbit, "signbit", cplx();
        try_deg2rad, "deg2rad", cplx();
        try_rad2deg, "rad2deg", cplx();
        try_frexp, "frexp", cplx();
        try_modf, "modf", cplx();
        try_i0, "i0", cplx();
    }
    unary_nan! { w;
        try_sqrt, "sqrt"; try_log, "log"; try_log2, "log2"; try_log10, "log10";
        try_log1p, "log1p"; try_exp, "exp"; try_exp2, "exp2"; try_expm1, "expm1";
        try_sin, "sin"; try_cos, "cos"; try_tan, "tan"; try_arcsin, "arcsin";
        try_arccos, "arccos"; try_arctan, "arctan"; try_sinh, "sinh"; try_cosh, "cosh";
        try_tanh, "tanh"; try_arcsinh, "arcsinh"; try_arccosh, "arccosh";
        try_arctanh, "arctanh"; try_rint, "rint"; try_abs, "absolute"; try_sign, "sign";
        try_square, "square"; try_reciprocal, "reciprocal"; try_isnan, "isnan";
        try_isinf, "isinf"; try_isfinite, "isfinite"; try_logical_not, "logical_not";
        try_sinc, "sinc"; try_gammaln, "gammaln"; try_digamma, "digamma"; try_erfinv, "erfinv";
    }
    in_place! { w;
        try_add_assign, "add", i64s(&[3]), 0.5;
        try_sub_assign, "subtract", i64s(&[3]), 0.5;
        try_mul_assign, "multiply", i64s(&[3]), 0.5;
        try_div_assign, "divide", i64s(&[3]), 2;
        try_floor_divide_assign, "floor_divide", bools(&[3]), 2;
        try_rem_assign, "remainder", bools(&[3]), 2;
        try_power_assign, "power", i64s(&[3]), 0.5;
        try_bitand_assign, "bitwise_and", bools(&[3]), 2;
        try_bitor_assign, "bitwise_or", bools(&[3]), 2;
        try_bitxor_assign, "bitwise_xor", bools(&[3]), 2;
        try_shl_assign, "left_shift", i64s(&[3]), 0.5;
        try_shr_assign, "right_shift", i64s(&[3]), 0.5;
    }

    // Scalars out of the array dtype's range (NEP 50), on both sides.
    let i8s = || Array::from_vec(vec![1i8, 2, 3], &[3]);
    w.err("Array::try_add", "add", "int8 + 300", || i8s().try_add(300));
    w.err("Array::try_subtract", "subtract", "uint8 - -1", || {
        Array::from_vec(vec![1u8, 2], &[2]).try_subtract(-1)
    });
    w.err("kiln::try_power", "power", "300 ** int8", || kiln::try_power(300, i8s()));
    w.err("kiln::try_full", "full", "300 as int8", || kiln::try_full(&[3], 300, DType::Int8));
    w.err("kiln::try_gcd", "gcd", "floats", || kiln::try_gcd(flt(), flt()));
    w.err("kiln::try_lcm", "lcm", "floats", || kiln::try_lcm(flt(), flt()));
    w.err("kiln::try_gcd", "gcd", "shapes (2, 3) and (4,)", || {
        kiln::try_gcd(i64s(&[2, 3]), i64s(&[4]))
    });
    w.err("kiln::try_divmod", "divmod", "shapes (2, 3) and (4,)", || {
        kiln::try_divmod(f32s(&[2, 3]), f32s(&[4]))
    });
    w.err("kiln::try_power", "power", "shapes (2, 3) and (4,)", || {
        kiln::try_power(f32s(&[2, 3]), f32s(&[4]))
    });
    w.err("Array::try_clip", "", "shapes (2, 3) and (4,)", || {
        f32s(&[2, 3]).try_clip(&f32s(&[4]), 1.0)
    });
    w.err("kiln::try_where_", "where", "condition (3,), x (2, 4)", || {
        kiln::try_where_(&bools(&[3]), f32s(&[2, 4]), 0.0)
    });
    w.err("kiln::try_heaviside", "heaviside", "shapes (2, 3) and (4,)", || {
        kiln::try_heaviside(&f32s(&[2, 3]), &f32s(&[4]))
    });
    w.err("kiln::try_isclose", "isclose", "shapes (2, 3) and (4,)", || {
        kiln::try_isclose(&f32s(&[2, 3]), &f32s(&[4]), 1e-5, 1e-8, false)
    });
    w.err("Array::try_around", "round", "bool with decimals", || bools(&[3]).try_around(-4));
    w.survives("kiln::try_isclose", "isclose", "NaN", || {
        kiln::try_isclose(&nans(&[4]), &nans(&[4]), f64::NAN, f64::INFINITY, true)
    });
    w.survives("Array::try_nan_to_num", "nan_to_num", "NaN", || {
        nans(&[4]).try_nan_to_num(f64::NAN, Some(f64::INFINITY), None)
    });
    w.survives("Array::try_round", "round", "huge decimals", || nans(&[4]).try_round(400));
    w.survives("Array::try_round", "round", "very negative decimals", || {
        nans(&[4]).try_round(i32::MIN)
    });
    w.survives("Array::try_ldexp", "ldexp", "huge exponents", || {
        nans(&[3]).try_ldexp(Array::from_vec(vec![i64::MAX, i64::MIN, 0], &[3]))
    });
}
