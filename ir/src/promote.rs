//! NumPy 2 type promotion (`np.result_type`), with Rust scalars as NEP 50's weak scalars.

use num_complex::Complex64;

use crate::dtype::{DType, DTypeKind};
use crate::error::IrError;

/// `np.result_type(a, b)` for two arrays (strong dtypes), NumPy 2 rules. bfloat16 behaves as
/// `ml_dtypes`: it holds int8/uint8 exactly, and `bfloat16 + float16` is float32.
pub fn result_type(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.kind(), b.kind()) {
        (DTypeKind::Bool, _) => b,
        (_, DTypeKind::Bool) => a,
        (DTypeKind::Complex, _) | (_, DTypeKind::Complex) => {
            let real = result_type(a.real_dtype(), b.real_dtype());
            if real == Float64 || a == Complex128 || b == Complex128 {
                Complex128
            } else {
                Complex64
            }
        }
        (DTypeKind::Float, DTypeKind::Float) => match (a, b) {
            (Float16, BFloat16) | (BFloat16, Float16) => Float32,
            _ => {
                if a.itemsize() >= b.itemsize() {
                    a
                } else {
                    b
                }
            }
        },
        (DTypeKind::Float, _) => float_with_int(a, b),
        (_, DTypeKind::Float) => float_with_int(b, a),
        (ka, kb) if ka == kb => {
            if a.itemsize() >= b.itemsize() {
                a
            } else {
                b
            }
        }
        _ => {
            // One signed, one unsigned.
            let (s, u) = if a.is_signed_integer() { (a, b) } else { (b, a) };
            if s.itemsize() > u.itemsize() {
                s
            } else {
                match u.itemsize() {
                    1 => Int16,
                    2 => Int32,
                    4 => Int64,
                    _ => Float64,
                }
            }
        }
    }
}

/// A float dtype promoted with an integer dtype: the float if it holds every value of the
/// integer exactly (8-bit integers fit float16 and bfloat16), else the smallest that does.
fn float_with_int(float: DType, int: DType) -> DType {
    if int.itemsize() == 1 {
        float
    } else {
        result_type(float, float_holding(int))
    }
}

/// The smallest float dtype that holds every value of an integer dtype exactly.
fn float_holding(int: DType) -> DType {
    match int.itemsize() {
        1 => DType::Float16,
        2 => DType::Float32,
        _ => DType::Float64,
    }
}

/// `np.result_type` over several dtypes. NumPy promotes a sequence as a whole, not pairwise
/// left to right: the dtypes of the highest category (complex, then float, then integer) absorb
/// the lower ones first, so `(int8, uint8, float16)` gives float16 where a left fold would give
/// float32. Folding in that order reproduces it.
pub fn result_type_many(dtypes: &[DType]) -> Option<DType> {
    let category = |d: &DType| match d.kind() {
        DTypeKind::Complex => 0,
        DTypeKind::Float => 1,
        DTypeKind::SignedInt | DTypeKind::UnsignedInt => 2,
        DTypeKind::Bool => 3,
    };
    let mut sorted = dtypes.to_vec();
    sorted.sort_by_key(category);
    sorted.into_iter().reduce(result_type)
}

/// A Rust scalar as an operand: *weak* in NEP 50's sense, so it takes the array's dtype where its
/// kind allows (`f32_array * 2.0` is float32).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WeakScalar {
    Bool(bool),
    Int(i128),
    Float(f64),
    Complex(Complex64),
}

impl WeakScalar {
    /// The dtype the scalar has on its own (NumPy's defaults: int64, float64, complex128).
    pub fn default_dtype(self) -> DType {
        match self {
            WeakScalar::Bool(_) => DType::Bool,
            WeakScalar::Int(_) => DType::Int64,
            WeakScalar::Float(_) => DType::Float64,
            WeakScalar::Complex(_) => DType::Complex128,
        }
    }
}

/// The result dtype of an operation between an array of dtype `array` and a weak scalar (NEP 50).
///
/// Errors: an integer scalar that does not fit an integer array's dtype
/// ([`IrError::ScalarOutOfBounds`], NumPy's `OverflowError`).
pub fn result_type_weak(op: &str, array: DType, scalar: WeakScalar) -> Result<DType, IrError> {
    use DType::*;
    Ok(match scalar {
        WeakScalar::Bool(_) => array,
        WeakScalar::Int(v) => match array.kind() {
            DTypeKind::Bool => Int64,
            DTypeKind::SignedInt | DTypeKind::UnsignedInt => {
                let (lo, hi) = array.int_range().expect("integer dtype has a range");
                if v < lo || v > hi {
                    return Err(IrError::ScalarOutOfBounds {
                        op: op.to_string(),
                        value: v.to_string(),
                        dtype: array,
                    });
                }
                array
            }
            DTypeKind::Float | DTypeKind::Complex => array,
        },
        WeakScalar::Float(_) => match array.kind() {
            DTypeKind::Bool | DTypeKind::SignedInt | DTypeKind::UnsignedInt => Float64,
            DTypeKind::Float | DTypeKind::Complex => array,
        },
        WeakScalar::Complex(_) => match array {
            Float16 | BFloat16 | Float32 | Complex64 => Complex64,
            _ => Complex128,
        },
    })
}

/// NumPy's casting rules (`np.can_cast(from, to, casting)`), those kiln checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Casting {
    /// Every value is kept: `to` is the promotion of `from` and `to`.
    Safe,
    /// Safe casts, and casts to the same or a higher kind (bool < uint < int < float <
    /// complex): `float64` to `float16` and `int64` to `int8` are allowed, `float64` to `int8`
    /// and `int16` to `uint8` are not. The rule of NumPy's in-place operators (`out=`).
    SameKind,
}

impl Casting {
    /// NumPy's name of the rule (`"same_kind"`).
    pub fn name(self) -> &'static str {
        match self {
            Casting::Safe => "safe",
            Casting::SameKind => "same_kind",
        }
    }
}

/// `np.can_cast(from, to, casting)` for dtypes.
pub fn can_cast(from: DType, to: DType, casting: Casting) -> bool {
    let safe = result_type(from, to) == to;
    let order = |d: DType| match d.kind() {
        DTypeKind::Bool => 0,
        DTypeKind::UnsignedInt => 1,
        DTypeKind::SignedInt => 2,
        DTypeKind::Float => 3,
        DTypeKind::Complex => 4,
    };
    match casting {
        Casting::Safe => safe,
        Casting::SameKind => safe || order(from) <= order(to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn numpy_table_samples() {
        // Values from NumPy 2.4 `np.result_type`.
        let cases = [
            (Int8, UInt8, Int16),
            (Int16, UInt16, Int32),
            (Int32, UInt32, Int64),
            (Int64, UInt64, Float64),
            (UInt8, Int32, Int32),
            (Int8, Float16, Float16),
            (Int16, Float16, Float32),
            (Int32, Float16, Float64),
            (Int32, Float32, Float64),
            (Int16, Float32, Float32),
            (UInt64, Float32, Float64),
            (Float16, Float32, Float32),
            (Float32, Complex64, Complex64),
            (Float64, Complex64, Complex128),
            (Int16, Complex64, Complex64),
            (Int32, Complex64, Complex128),
            (Bool, Int8, Int8),
            (Bool, Float16, Float16),
            (Float16, BFloat16, Float32),
        ];
        for (a, b, r) in cases {
            assert_eq!(result_type(a, b), r, "{a} {b}");
            assert_eq!(result_type(b, a), r, "{b} {a}");
        }
    }

    #[test]
    fn same_kind_casting() {
        // np.can_cast(a, b, 'same_kind') from NumPy 2.4 (the whole table is checked against
        // NumPy's in the suite, `ufuncs23::can_cast_table`).
        assert!(can_cast(Float64, Float16, Casting::SameKind));
        assert!(can_cast(Int64, Int8, Casting::SameKind));
        assert!(can_cast(UInt8, Int8, Casting::SameKind));
        assert!(can_cast(Int8, Float16, Casting::SameKind));
        assert!(!can_cast(Float64, Int8, Casting::SameKind));
        assert!(!can_cast(Int16, UInt8, Casting::SameKind));
        assert!(!can_cast(Int64, Bool, Casting::SameKind));
        assert!(!can_cast(Complex64, Float64, Casting::SameKind));
        assert!(can_cast(Int64, Float64, Casting::Safe));
        assert!(!can_cast(UInt64, Int64, Casting::Safe));
        assert_eq!(Casting::SameKind.name(), "same_kind");
    }

    #[test]
    fn weak_scalars() {
        assert_eq!(result_type_weak("mul", Float32, WeakScalar::Float(2.0)).unwrap(), Float32);
        assert_eq!(result_type_weak("add", Int8, WeakScalar::Float(1.0)).unwrap(), Float64);
        assert_eq!(result_type_weak("add", Bool, WeakScalar::Int(1)).unwrap(), Int64);
        assert_eq!(
            result_type_weak(
                "add",
                Float16,
                WeakScalar::Complex(num_complex::Complex64::new(0.0, 1.0))
            )
            .unwrap(),
            Complex64
        );
        assert_eq!(
            result_type_weak(
                "add",
                Int8,
                WeakScalar::Complex(num_complex::Complex64::new(0.0, 1.0))
            )
            .unwrap(),
            Complex128
        );
        let e = result_type_weak("add", Int8, WeakScalar::Int(300)).unwrap_err();
        assert!(matches!(e, IrError::ScalarOutOfBounds { .. }));
        assert_eq!(e.to_string(), "add: integer scalar 300 out of bounds for int8");
        assert!(result_type_weak("add", UInt8, WeakScalar::Int(-1)).is_err());
        assert_eq!(result_type_weak("sub", Int32, WeakScalar::Int(-(1 << 31))).unwrap(), Int32);
    }
}
