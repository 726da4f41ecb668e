//! C/CUDA types as kiln dtypes, and C++'s conversion rules over them.
//!
//! A kernel's C types map to dtypes as on CUDA's 64-bit targets (LP64): `char`/`signed char` int8,
//! `short` int16, `int` int32, `long` and `long long` int64 (and their `unsigned` forms),
//! `size_t` uint64, `ptrdiff_t` int64, `float` float32, `double` float64, `half`/`float16`
//! float16, `bfloat16`, `complex<float>` complex64, `complex<double>` complex128.
//!
//! Arithmetic follows C++'s usual arithmetic conversions: bool and integers narrower than `int`
//! are promoted to `int`; then a complex operand makes the result complex, `double` beats
//! `float`, and between integers the wider wins, unsigned when the unsigned operand is at least
//! as wide. CuPy's `float16` keeps float16 against float16 and becomes `float` against anything
//! else (it converts implicitly to `float`).

use kiln_ir::{DType, DTypeKind};

/// The dtype of a C type written as words (`unsigned long long`, `int64_t`, `float`), or `None`.
pub(crate) fn c_type(words: &[&str]) -> Option<DType> {
    use DType::*;
    let d = match words {
        ["bool"] => Bool,
        ["char"] | ["signed", "char"] | ["int8_t"] => Int8,
        ["unsigned", "char"] | ["uint8_t"] => UInt8,
        ["short"] | ["short", "int"] | ["signed", "short"] | ["int16_t"] => Int16,
        ["unsigned", "short"] | ["unsigned", "short", "int"] | ["uint16_t"] => UInt16,
        ["int"] | ["signed"] | ["signed", "int"] | ["int32_t"] => Int32,
        ["unsigned"] | ["unsigned", "int"] | ["uint32_t"] => UInt32,
        ["long"]
        | ["long", "int"]
        | ["signed", "long"]
        | ["long", "long"]
        | ["long", "long", "int"] => Int64,
        ["signed", "long", "long"] | ["int64_t"] | ["ptrdiff_t"] | ["ssize_t"] => Int64,
        ["unsigned", "long"] | ["unsigned", "long", "int"] | ["unsigned", "long", "long"] => UInt64,
        ["unsigned", "long", "long", "int"] | ["uint64_t"] | ["size_t"] => UInt64,
        ["float"] => Float32,
        ["double"] => Float64,
        ["half"] | ["float16"] | ["__half"] => Float16,
        ["bfloat16"] | ["__nv_bfloat16"] => BFloat16,
        _ => return None,
    };
    Some(d)
}

/// Words that start (or continue) a C type name.
pub(crate) fn is_type_word(w: &str) -> bool {
    matches!(
        w,
        "bool"
            | "char"
            | "short"
            | "int"
            | "long"
            | "signed"
            | "unsigned"
            | "float"
            | "double"
            | "half"
            | "float16"
            | "__half"
            | "bfloat16"
            | "__nv_bfloat16"
            | "int8_t"
            | "uint8_t"
            | "int16_t"
            | "uint16_t"
            | "int32_t"
            | "uint32_t"
            | "int64_t"
            | "uint64_t"
            | "size_t"
            | "ptrdiff_t"
            | "ssize_t"
            | "complex"
            | "auto"
    )
}

/// The C spelling of a dtype, for messages.
pub(crate) fn c_name(d: DType) -> &'static str {
    use DType::*;
    match d {
        Bool => "bool",
        Int8 => "signed char",
        UInt8 => "unsigned char",
        Int16 => "short",
        UInt16 => "unsigned short",
        Int32 => "int",
        UInt32 => "unsigned int",
        Int64 => "long long",
        UInt64 => "unsigned long long",
        Float16 => "float16",
        BFloat16 => "bfloat16",
        Float32 => "float",
        Float64 => "double",
        Complex64 => "complex<float>",
        Complex128 => "complex<double>",
    }
}

/// The C type of an integer literal: `int`, then `long` (decimal), also the unsigned types
/// for hexadecimal and octal literals; suffixes `u` and `l` narrow the choice (C++'s table).
pub(crate) fn int_literal_type(
    value: u128,
    unsigned: bool,
    long: bool,
    radix_not_10: bool,
) -> DType {
    let fits = |d: DType| value as i128 <= d.int_range().expect("an integer dtype").1;
    let candidates: &[DType] = match (unsigned, long) {
        (false, false) if radix_not_10 => {
            &[DType::Int32, DType::UInt32, DType::Int64, DType::UInt64]
        }
        (false, false) => &[DType::Int32, DType::Int64, DType::UInt64],
        (true, false) => &[DType::UInt32, DType::UInt64],
        (false, true) if radix_not_10 => &[DType::Int64, DType::UInt64],
        (false, true) => &[DType::Int64, DType::UInt64],
        (true, true) => &[DType::UInt64],
    };
    candidates.iter().copied().find(|&d| fits(d)).unwrap_or(DType::UInt64)
}

/// C's integer promotion: bool and integers narrower than `int` become `int`; CuPy's float16 and
/// bfloat16 stay themselves.
pub(crate) fn promote(d: DType) -> DType {
    match d {
        DType::Bool | DType::Int8 | DType::UInt8 | DType::Int16 | DType::UInt16 => DType::Int32,
        other => other,
    }
}

/// The complex dtype of at least `d`'s precision.
fn complex_of(d: DType) -> DType {
    match d {
        DType::Float64 | DType::Complex128 => DType::Complex128,
        _ => DType::Complex64,
    }
}

/// The type both operands of a binary arithmetic or comparison operator are converted to (the
/// usual arithmetic conversions).
pub(crate) fn common(a: DType, b: DType) -> DType {
    let (a, b) = (promote(a), promote(b));
    if a == b {
        return a;
    }
    if a.is_complex() || b.is_complex() {
        let wide = a.real_dtype() == DType::Float64 || b.real_dtype() == DType::Float64;
        return complex_of(if wide { DType::Float64 } else { DType::Float32 });
    }
    let narrow_float = |d: DType| matches!(d, DType::Float16 | DType::BFloat16);
    // Mixed float16/bfloat16 with anything else: through `float`.
    let (a, b) = match (narrow_float(a), narrow_float(b)) {
        (true, true) | (true, false) | (false, true) => {
            let f = |d: DType| if narrow_float(d) { DType::Float32 } else { d };
            (f(a), f(b))
        }
        (false, false) => (a, b),
    };
    if a == b {
        return a;
    }
    if a == DType::Float64 || b == DType::Float64 {
        return DType::Float64;
    }
    if a == DType::Float32 || b == DType::Float32 {
        return DType::Float32;
    }
    // Two integer types of rank int or more.
    let (sa, sb) = (a.kind() == DTypeKind::SignedInt, b.kind() == DTypeKind::SignedInt);
    let (wa, wb) = (a.itemsize(), b.itemsize());
    if sa == sb {
        return if wa >= wb { a } else { b };
    }
    let (s, u) = if sa { (a, b) } else { (b, a) };
    if u.itemsize() >= s.itemsize() {
        u
    } else {
        s
    }
}

/// The type a math function computes in for an argument of type `d`: integers call the
/// `double` overload; float16 and bfloat16 convert to `float` (CuPy's half types); float,
/// double and complex keep theirs.
pub(crate) fn math_type(d: DType) -> DType {
    match d.kind() {
        DTypeKind::Bool | DTypeKind::SignedInt | DTypeKind::UnsignedInt => DType::Float64,
        _ if matches!(d, DType::Float16 | DType::BFloat16) => DType::Float32,
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn usual_arithmetic_conversions() {
        assert_eq!(common(Int8, Int8), Int32);
        assert_eq!(common(Bool, UInt16), Int32);
        assert_eq!(common(Int32, UInt32), UInt32);
        assert_eq!(common(Int64, UInt32), Int64);
        assert_eq!(common(Int64, UInt64), UInt64);
        assert_eq!(common(Int32, Float32), Float32);
        assert_eq!(common(Float32, Float64), Float64);
        assert_eq!(common(UInt64, Float32), Float32);
        assert_eq!(common(Float16, Float16), Float16);
        assert_eq!(common(Float16, Int32), Float32);
        assert_eq!(common(Float16, Float64), Float64);
        assert_eq!(common(Complex64, Float64), Complex128);
        assert_eq!(common(Complex64, Int32), Complex64);
    }

    #[test]
    fn literal_types() {
        assert_eq!(int_literal_type(5, false, false, false), Int32);
        assert_eq!(int_literal_type(1 << 31, false, false, false), Int64);
        assert_eq!(int_literal_type(1 << 31, false, false, true), UInt32);
        assert_eq!(int_literal_type(5, true, false, false), UInt32);
        assert_eq!(int_literal_type(5, false, true, false), Int64);
        assert_eq!(int_literal_type(5, true, true, false), UInt64);
        assert_eq!(int_literal_type(u64::MAX as u128, false, false, false), UInt64);
    }

    #[test]
    fn type_words() {
        assert_eq!(c_type(&["unsigned", "long", "long"]), Some(UInt64));
        assert_eq!(c_type(&["ptrdiff_t"]), Some(Int64));
        assert_eq!(c_type(&["float32"]), None);
        assert_eq!(math_type(Int32), Float64);
        assert_eq!(math_type(Float16), Float32);
    }
}
