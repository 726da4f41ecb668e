//! The evaluator's element representation and NumPy's conversions between dtypes.
//!
//! Every element of every intermediate array is a [`Value`] in the canonical form of its array's
//! dtype: `Bool` for bool, `Int` (within the dtype's range) for signed integers, `UInt` (within
//! range) for unsigned integers, `Float` (exactly representable in the dtype) for float16,
//! bfloat16, float32 and float64, `Complex` (each part representable in the real dtype) for
//! complex64 and complex128. Ops compute in i64/u64 (wrapping), f64 or `Complex<f64>` and
//! [`cast`] brings their result back to the canonical form of the result dtype (wrapping integers,
//! rounding floats once).

use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

use crate::dtype::{DType, DTypeKind};
use crate::graph::{round_to, wrap_signed, wrap_unsigned, Literal};
use crate::host::Data;

/// One element of any dtype. In an array of dtype `d` every element is in `d`'s canonical form:
/// `Bool` for bool, `Int` within range for signed integers, `UInt` within range for unsigned
/// ones, `Float` exactly representable in `d` for the floats, `Complex` with both parts
/// representable in `d`'s real dtype for complex. [`cast`] converts any value into that form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Complex(Complex64),
}

impl Value {
    /// The value of a literal, in the canonical form of `dtype`.
    pub fn from_literal(lit: Literal, dtype: DType) -> Value {
        let v = match lit {
            Literal::Bool(b) => Value::Bool(b),
            Literal::Int(i) => Value::Int(i),
            Literal::UInt(u) => Value::UInt(u),
            Literal::Float(bits) => Value::Float(f64::from_bits(bits)),
            Literal::Complex(re, im) => {
                Value::Complex(Complex64::new(f64::from_bits(re), f64::from_bits(im)))
            }
        };
        cast(v, dtype)
    }

    /// NumPy's truthiness (`bool(x)`): non-zero; NaN is true; a complex is true if either part is.
    pub fn truthy(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::UInt(u) => u != 0,
            Value::Float(x) => x != 0.0,
            Value::Complex(z) => z.re != 0.0 || z.im != 0.0,
        }
    }
}

/// The elements of typed storage as values.
pub fn load(data: &Data) -> Vec<Value> {
    fn map<T: Copy>(v: &[T], f: impl Fn(T) -> Value) -> Vec<Value> {
        v.iter().map(|&x| f(x)).collect()
    }
    match data {
        Data::Bool(v) => map(v, Value::Bool),
        Data::Int8(v) => map(v, |x| Value::Int(x as i64)),
        Data::Int16(v) => map(v, |x| Value::Int(x as i64)),
        Data::Int32(v) => map(v, |x| Value::Int(x as i64)),
        Data::Int64(v) => map(v, Value::Int),
        Data::UInt8(v) => map(v, |x| Value::UInt(x as u64)),
        Data::UInt16(v) => map(v, |x| Value::UInt(x as u64)),
        Data::UInt32(v) => map(v, |x| Value::UInt(x as u64)),
        Data::UInt64(v) => map(v, Value::UInt),
        Data::Float16(v) => map(v, |x| Value::Float(x.to_f64())),
        Data::BFloat16(v) => map(v, |x| Value::Float(x.to_f64())),
        Data::Float32(v) => map(v, |x| Value::Float(x as f64)),
        Data::Float64(v) => map(v, Value::Float),
        Data::Complex64(v) => map(v, |z| Value::Complex(Complex64::new(z.re as f64, z.im as f64))),
        Data::Complex128(v) => map(v, Value::Complex),
    }
}

/// Typed storage of `dtype` holding the values, each converted by [`cast`].
pub fn store(dtype: DType, vals: &[Value]) -> Data {
    fn map<T>(vals: &[Value], dtype: DType, f: impl Fn(Value) -> T) -> Vec<T> {
        vals.iter().map(|&v| f(cast(v, dtype))).collect()
    }
    let int = |v: Value| match v {
        Value::Int(i) => i,
        _ => unreachable!("cast to a signed dtype gives Int"),
    };
    let uint = |v: Value| match v {
        Value::UInt(u) => u,
        _ => unreachable!("cast to an unsigned dtype gives UInt"),
    };
    let float = |v: Value| match v {
        Value::Float(x) => x,
        _ => unreachable!("cast to a float dtype gives Float"),
    };
    let complex = |v: Value| match v {
        Value::Complex(z) => z,
        _ => unreachable!("cast to a complex dtype gives Complex"),
    };
    // The values are exactly representable after `cast`, so the narrowing below is exact.
    match dtype {
        DType::Bool => Data::Bool(map(vals, dtype, Value::truthy)),
        DType::Int8 => Data::Int8(map(vals, dtype, |v| int(v) as i8)),
        DType::Int16 => Data::Int16(map(vals, dtype, |v| int(v) as i16)),
        DType::Int32 => Data::Int32(map(vals, dtype, |v| int(v) as i32)),
        DType::Int64 => Data::Int64(map(vals, dtype, int)),
        DType::UInt8 => Data::UInt8(map(vals, dtype, |v| uint(v) as u8)),
        DType::UInt16 => Data::UInt16(map(vals, dtype, |v| uint(v) as u16)),
        DType::UInt32 => Data::UInt32(map(vals, dtype, |v| uint(v) as u32)),
        DType::UInt64 => Data::UInt64(map(vals, dtype, uint)),
        DType::Float16 => Data::Float16(map(vals, dtype, |v| f16::from_f64(float(v)))),
        DType::BFloat16 => Data::BFloat16(map(vals, dtype, |v| bf16::from_f64(float(v)))),
        DType::Float32 => Data::Float32(map(vals, dtype, |v| float(v) as f32)),
        DType::Float64 => Data::Float64(map(vals, dtype, float)),
        DType::Complex64 => Data::Complex64(map(vals, dtype, |v| {
            let z = complex(v);
            Complex32::new(z.re as f32, z.im as f32)
        })),
        DType::Complex128 => Data::Complex128(map(vals, dtype, complex)),
    }
}

/// NumPy's `astype` with unsafe casting, into the canonical form of `to`:
/// - to bool: `x != 0` ([`Value::truthy`]);
/// - to an integer: integers wrap (two's complement); bool is 0/1; floats truncate toward zero
///   ([`float_to_int`] for out-of-range values); complex takes its real part;
/// - to a float: correctly rounded to nearest even, from integers too (no double rounding through
///   f64); complex takes its real part;
/// - to complex: real values get a zero imaginary part; each part rounds to the real dtype.
pub fn cast(v: Value, to: DType) -> Value {
    match to.kind() {
        DTypeKind::Bool => Value::Bool(v.truthy()),
        DTypeKind::SignedInt => Value::Int(wrap_signed(to, int_of(v, to))),
        DTypeKind::UnsignedInt => Value::UInt(wrap_unsigned(to, int_of(v, to))),
        DTypeKind::Float => Value::Float(real_of(v, to)),
        DTypeKind::Complex => match v {
            Value::Complex(z) => {
                Value::Complex(Complex64::new(round_to(to, z.re), round_to(to, z.im)))
            }
            other => Value::Complex(Complex64::new(real_of(other, to), 0.0)),
        },
    }
}

/// The value of `dtype` (an int, uint or float) whose bits are `v`'s as a value of `from`, of
/// the same item size (`bitcast`, NumPy's `ndarray.view(dtype)`); little-endian as the host.
pub fn bitcast(v: Value, from: DType, to: DType) -> Value {
    let width = 8 * from.itemsize() as u32;
    let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
    let bits = match (v, from) {
        (Value::Int(i), _) => i as u64 & mask,
        (Value::UInt(u), _) => u & mask,
        (Value::Float(x), DType::Float16) => f16::from_f64(x).to_bits() as u64,
        (Value::Float(x), DType::BFloat16) => bf16::from_f64(x).to_bits() as u64,
        (Value::Float(x), DType::Float32) => (x as f32).to_bits() as u64,
        (Value::Float(x), _) => x.to_bits(),
        (other, _) => panic!("bitcast of {other:?} from {from}"),
    };
    match to {
        DType::Float16 => Value::Float(f16::from_bits(bits as u16).to_f64()),
        DType::BFloat16 => Value::Float(bf16::from_bits(bits as u16).to_f64()),
        DType::Float32 => Value::Float(f32::from_bits(bits as u32) as f64),
        DType::Float64 => Value::Float(f64::from_bits(bits)),
        d if d.kind() == DTypeKind::SignedInt => {
            let shift = 64 - width;
            Value::Int(((bits << shift) as i64) >> shift)
        }
        _ => Value::UInt(bits),
    }
}

/// `bitcast` of each element of `x` to `node`'s dtype.
pub(super) fn bitcast_tensor(x: &super::Tensor, node: &crate::graph::Node) -> super::Tensor {
    let vals = x.vals.iter().map(|&v| bitcast(v, x.dtype, node.dtype)).collect();
    super::Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

/// The integer a value converts to before wrapping to the integer dtype `to`.
fn int_of(v: Value, to: DType) -> i128 {
    match v {
        Value::Bool(b) => b as i128,
        Value::Int(i) => i as i128,
        Value::UInt(u) => u as i128,
        Value::Float(x) => float_to_int(x, to),
        Value::Complex(z) => float_to_int(z.re, to),
    }
}

/// A real value rounded to the float dtype `to` (complex: its real part).
fn real_of(v: Value, to: DType) -> f64 {
    match v {
        Value::Bool(b) => b as u8 as f64,
        Value::Int(i) => int_to_float(i as i128, to),
        Value::UInt(u) => int_to_float(u as i128, to),
        Value::Float(x) => round_to(to, x),
        Value::Complex(z) => round_to(to, z.re),
    }
}

/// An integer correctly rounded (nearest, ties to even) to the float dtype `to` (or the real
/// dtype of a complex `to`), returned as the f64 that holds it exactly.
pub fn int_to_float(v: i128, to: DType) -> f64 {
    let p = to.mantissa_bits().expect("a float or complex dtype");
    let a = v.unsigned_abs();
    let bits = 128 - a.leading_zeros();
    let mag = if bits <= 53 {
        // Exact in f64; round_to below rounds once.
        a as f64
    } else {
        // Round to p significant bits here, so that the f64 conversion is exact.
        let shift = bits - p;
        let mut q = a >> shift;
        let rem = a & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q += 1;
        }
        q as f64 * 2f64.powi(shift as i32)
    };
    round_to(to, if v < 0 { -mag } else { mag })
}

/// The integer a float converts to for the integer dtype `to` (before wrapping to its width).
///
/// In range, this truncates toward zero, as NumPy. NumPy leaves NaN, ±inf and out-of-range values
/// undefined (C's behaviour); this reproduces what NumPy does on x86-64, whose conversions produce
/// the "integer indefinite" (the minimum of the 32- or 64-bit register) on overflow:
/// int8/int16/int32/uint8/uint16 convert through a 32-bit register then wrap (300.0 → int8 44,
/// -1.0 → uint8 255, 1e10 or NaN → int8 0, → int32 -2**31); int64 and uint32 through a 64-bit
/// register (NaN → int64 -2**63, 5e9 → uint32 705032704); uint64 converts values >= 2**63 by
/// subtracting 2**63 first (NaN → 2**63, inf → 0, -1.0 → 2**64-1).
pub fn float_to_int(x: f64, to: DType) -> i128 {
    fn cvt32(x: f64) -> i128 {
        let t = x.trunc();
        if (-2147483648.0..=2147483647.0).contains(&t) {
            t as i128
        } else {
            i32::MIN as i128
        }
    }
    fn cvt64(x: f64) -> i128 {
        let t = x.trunc();
        // 2**63 is not an i64; every f64 below it is.
        if (-9223372036854775808.0..9223372036854775808.0).contains(&t) {
            t as i128
        } else {
            i64::MIN as i128
        }
    }
    match to {
        DType::Int8 | DType::Int16 | DType::Int32 | DType::UInt8 | DType::UInt16 => cvt32(x),
        DType::Int64 | DType::UInt32 => cvt64(x),
        DType::UInt64 => {
            const TWO63: f64 = 9223372036854775808.0;
            if x >= TWO63 {
                (cvt64(x - TWO63) as i64 as u64 ^ (1u64 << 63)) as i128
            } else {
                cvt64(x) as i64 as u64 as i128
            }
        }
        other => unreachable!("float_to_int to the non-integer dtype {other}"),
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests {
    use super::*;

    fn cast_f(x: f64, to: DType) -> Value {
        cast(Value::Float(x), to)
    }

    #[test]
    fn float_to_int_casts_match_numpy_on_x86() {
        // np.array([300.0, -1.0, 1e10, np.nan, np.inf, -np.inf, 2.9, -2.9, 128.5]).astype(np.int8)
        //   -> [44, -1, 0, 0, 0, 0, 2, -2, -128]
        let xs = [300.0, -1.0, 1e10, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 2.9, -2.9, 128.5];
        let want = [44, -1, 0, 0, 0, 0, 2, -2, -128];
        for (x, w) in xs.iter().zip(want) {
            assert_eq!(cast_f(*x, DType::Int8), Value::Int(w), "{x}");
        }
        // .astype(np.uint8) of [300.0, -1.0, 1e10, nan, inf, -inf] -> [44, 255, 0, 0, 0, 0]
        let want = [44, 255, 0, 0, 0, 0];
        for (x, w) in xs.iter().zip(want) {
            assert_eq!(cast_f(*x, DType::UInt8), Value::UInt(w), "{x}");
        }
        // np.array([3e9, -1.0, 1e10, nan, inf, -inf]).astype(np.int32)
        //   -> [-2147483648, -1, -2147483648, -2147483648, -2147483648, -2147483648]
        let xs32 = [3e9, -1.0, 1e10, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        let want = [
            i32::MIN as i64,
            -1,
            i32::MIN as i64,
            i32::MIN as i64,
            i32::MIN as i64,
            i32::MIN as i64,
        ];
        for (x, w) in xs32.iter().zip(want) {
            assert_eq!(cast_f(*x, DType::Int32), Value::Int(w), "{x}");
        }
        // np.array([1e19, nan, inf, -inf]).astype(np.int64) -> all -9223372036854775808
        for x in [1e19, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(cast_f(x, DType::Int64), Value::Int(i64::MIN), "{x}");
        }
        // np.array([1e19, -1.0, nan, inf, -inf, 2e19]).astype(np.uint64)
        //   -> [10000000000000000000, 18446744073709551615, 9223372036854775808, 0,
        //       9223372036854775808, 0]
        let xs = [1e19, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 2e19];
        let want = [10000000000000000000, u64::MAX, 1 << 63, 0, 1 << 63, 0];
        for (x, w) in xs.iter().zip(want) {
            assert_eq!(cast_f(*x, DType::UInt64), Value::UInt(w), "{x}");
        }
        // np.array([-1.0, 5e9, nan]).astype(np.uint32) -> [4294967295, 705032704, 0]
        let xs = [-1.0, 5e9, f64::NAN];
        let want = [4294967295, 705032704, 0];
        for (x, w) in xs.iter().zip(want) {
            assert_eq!(cast_f(*x, DType::UInt32), Value::UInt(w), "{x}");
        }
    }

    #[test]
    fn casts_between_kinds() {
        // np.array([1.5-2j]).astype(np.float32) -> [1.5] (ComplexWarning), .astype(np.int16) -> [1]
        let z = Value::Complex(Complex64::new(1.5, -2.0));
        assert_eq!(cast(z, DType::Float32), Value::Float(1.5));
        assert_eq!(cast(z, DType::Int16), Value::Int(1));
        // np.array([0j, 1j, complex(np.nan, 0)]).astype(bool) -> [False, True, True]
        assert_eq!(cast(Value::Complex(Complex64::new(0.0, 0.0)), DType::Bool), Value::Bool(false));
        assert_eq!(cast(Value::Complex(Complex64::new(0.0, 1.0)), DType::Bool), Value::Bool(true));
        assert_eq!(
            cast(Value::Complex(Complex64::new(f64::NAN, 0.0)), DType::Bool),
            Value::Bool(true)
        );
        // np.array([0.0, -0.0, np.nan, 0.5]).astype(bool) -> [False, False, True, True]
        let want = [false, false, true, true];
        for (x, w) in [0.0, -0.0, f64::NAN, 0.5].iter().zip(want) {
            assert_eq!(cast_f(*x, DType::Bool), Value::Bool(w));
        }
        // np.array([True]).astype(np.float16) -> [1.0]; np.int8(-1).astype(np.uint16) -> 65535
        assert_eq!(cast(Value::Bool(true), DType::Float16), Value::Float(1.0));
        assert_eq!(cast(Value::Int(-1), DType::UInt16), Value::UInt(65535));
        // np.uint64(2**64-1).astype(np.int64) -> -1; np.int64(-2**31-1).astype(np.int32) -> 2**31-1
        assert_eq!(cast(Value::UInt(u64::MAX), DType::Int64), Value::Int(-1));
        assert_eq!(cast(Value::Int(-(1 << 31) - 1), DType::Int32), Value::Int(i32::MAX as i64));
        // Real to complex: np.float32(2.5).astype(np.complex64) -> (2.5+0j)
        assert_eq!(
            cast(Value::Float(2.5), DType::Complex64),
            Value::Complex(Complex64::new(2.5, 0.0))
        );
    }

    #[test]
    fn int_to_float_rounds_once() {
        // np.array([2**53+1, 2**62+2**38+1], np.int64).astype(np.float32).tolist()
        //   -> [9007199254740992.0, 4.611686568183202e+18]
        // (through f64 the second would double-round down to 2**62.)
        assert_eq!(
            cast(Value::Int((1 << 53) + 1), DType::Float32),
            Value::Float(9007199254740992.0)
        );
        assert_eq!(
            cast(Value::Int((1 << 62) + (1 << 38) + 1), DType::Float32),
            Value::Float(4.611686568183202e18)
        );
        // np.array([2**64-1], np.uint64).astype(np.float64) -> [1.8446744073709552e+19]
        assert_eq!(
            cast(Value::UInt(u64::MAX), DType::Float64),
            Value::Float(1.8446744073709552e19)
        );
        // np.array([65519, 65520, 2049], np.int32).astype(np.float16) -> [65504., inf, 2048.]
        assert_eq!(cast(Value::Int(65519), DType::Float16), Value::Float(65504.0));
        assert_eq!(cast(Value::Int(65520), DType::Float16), Value::Float(f64::INFINITY));
        assert_eq!(cast(Value::Int(2049), DType::Float16), Value::Float(2048.0));
        // bfloat16 keeps 8 significant bits: 257 -> 256, 259 -> 260 (ml_dtypes.bfloat16)
        assert_eq!(cast(Value::Int(257), DType::BFloat16), Value::Float(256.0));
        assert_eq!(cast(Value::Int(259), DType::BFloat16), Value::Float(260.0));
        // Above 2**53 a bfloat16 tie must not double-round: 2**60 + 2**52 + 1 -> 2**60 + 2**53
        let v = (1i64 << 60) + (1 << 52) + 1;
        assert_eq!(
            cast(Value::Int(v), DType::BFloat16),
            Value::Float(((1i64 << 60) + (1 << 53)) as f64)
        );
    }

    #[test]
    fn float_rounding_is_correct_at_ties() {
        // np.float16(1024 + 0.5 + 2**-24) -> 1025.0 (the sticky bit beyond a tie rounds up;
        // half::f16::from_f64 gives 1024.0 here).
        assert_eq!(cast_f(1024.0 + 0.5 + 2f64.powi(-24), DType::Float16), Value::Float(1025.0));
        assert_eq!(cast_f(1024.5, DType::Float16), Value::Float(1024.0));
        assert_eq!(cast_f(1025.5, DType::Float16), Value::Float(1026.0));
        // np.float16(65520.0) -> inf; np.float16(65519.99) -> 65504.0; np.float16(-1e-8) -> -0.0
        assert_eq!(cast_f(65520.0, DType::Float16), Value::Float(f64::INFINITY));
        assert_eq!(cast_f(65519.99, DType::Float16), Value::Float(65504.0));
        let z = cast_f(-1e-8, DType::Float16);
        assert!(matches!(z, Value::Float(x) if x == 0.0 && x.is_sign_negative()));
        // np.float16(2**-25) -> 0.0 (tie to even), np.float16(2**-25 * 1.5) -> 6e-08 (2**-24)
        assert_eq!(cast_f(2f64.powi(-25), DType::Float16), Value::Float(0.0));
        assert_eq!(cast_f(1.5 * 2f64.powi(-25), DType::Float16), Value::Float(2f64.powi(-24)));
        // float16 subnormal spacing: np.float16(3 * 2**-24 + 2**-26) -> 3 * 2**-24
        assert_eq!(
            cast_f(3.0 * 2f64.powi(-24) + 2f64.powi(-26), DType::Float16),
            Value::Float(3.0 * 2f64.powi(-24))
        );
        // bfloat16: 1 + 2**-8 is a tie -> 1.0; 1 + 2**-8 + 2**-40 -> 1 + 2**-7; 3.39e38 rounds to
        // the max (2 - 2**-7) * 2**127 = 3.3895313892515355e38; 3.4e38 is past the midpoint
        // (2 - 2**-8) * 2**127 = 3.3961775292304e38 to 2**128 -> inf
        assert_eq!(cast_f(1.0 + 2f64.powi(-8), DType::BFloat16), Value::Float(1.0));
        assert_eq!(
            cast_f(1.0 + 2f64.powi(-8) + 2f64.powi(-40), DType::BFloat16),
            Value::Float(1.0 + 2f64.powi(-7))
        );
        assert_eq!(cast_f(3.39e38, DType::BFloat16), Value::Float(3.3895313892515355e38));
        assert_eq!(cast_f(3.4e38, DType::BFloat16), Value::Float(f64::INFINITY));
        // float32 through Rust's `as`: np.float32(0.1) -> 0.10000000149011612
        assert_eq!(cast_f(0.1, DType::Float32), Value::Float(0.10000000149011612));
        assert!(matches!(cast_f(f64::NAN, DType::Float16), Value::Float(x) if x.is_nan()));
    }

    #[test]
    fn load_and_store_round_trip() {
        let d = Data::Float16(vec![f16::from_f32(1.5), f16::NAN]);
        let v = load(&d);
        assert_eq!(v[0], Value::Float(1.5));
        let back = store(DType::Float16, &v);
        assert_eq!(back.len(), 2);
        let d = Data::Complex64(vec![Complex32::new(1.0, -2.0)]);
        assert_eq!(store(DType::Complex64, &load(&d)), d);
        let d = Data::UInt64(vec![u64::MAX, 0]);
        assert_eq!(store(DType::UInt64, &load(&d)), d);
        // Storing converts: int64 300 into uint8 is 44.
        assert_eq!(store(DType::UInt8, &[Value::Int(300)]), Data::UInt8(vec![44]));
    }
}
