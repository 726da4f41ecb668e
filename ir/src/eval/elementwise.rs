//! Elementwise ops on single values, with NumPy's semantics.
//!
//! Each function takes the operands' dtype and values in the canonical form of that dtype
//! ([`super::value`]) and returns the exact or wide result (i64/u64 wrapping, f64,
//! `Complex<f64>`); the caller converts it to the result dtype with [`super::value::cast`], which
//! wraps integers to their width and rounds floats once. Operands outside an op's domain cannot
//! reach these functions: the evaluator type-checks every node first.

use num_complex::Complex64 as C64;

use super::cmath::{
    cacos, cacosh, casin, casinh, catan, catanh, cdiv, cexp, cexp2, clog, clog1p, cmul, cpow,
    csqrt, ctan, ctanh,
};
use super::value::Value::{self, Bool, Complex, Float, Int, UInt};
use crate::dtype::DType;

#[track_caller]
fn bad(op: &str, vals: &[Value]) -> ! {
    unreachable!("{op}: operand(s) {vals:?} outside the op's domain (the node was type-checked)")
}

/// A float op applied to Float, a complex one to Complex.
#[track_caller]
fn inexact(op: &str, v: Value, f: impl Fn(f64) -> f64, c: impl Fn(C64) -> C64) -> Value {
    match v {
        Float(x) => Float(f(x)),
        Complex(z) => Complex(c(z)),
        other => bad(op, &[other]),
    }
}

/// A float-only op.
#[track_caller]
fn real(op: &str, v: Value, f: impl Fn(f64) -> f64) -> Value {
    match v {
        Float(x) => Float(f(x)),
        other => bad(op, &[other]),
    }
}

/// A float-only binary op.
#[track_caller]
fn real2(op: &str, a: Value, b: Value, f: impl Fn(f64, f64) -> f64) -> Value {
    match (a, b) {
        (Float(x), Float(y)) => Float(f(x, y)),
        _ => bad(op, &[a, b]),
    }
}

/// Bits of an integer dtype.
fn width(dt: DType) -> i64 {
    dt.itemsize() as i64 * 8
}

// ----------------------------------------------------------------------- complex ordering

/// NumPy's ordering macros for complex (lexicographic; a NaN in an imaginary part spoils `<`).
fn c_lt(a: C64, b: C64) -> bool {
    (a.re < b.re && !a.im.is_nan() && !b.im.is_nan()) || (a.re == b.re && a.im < b.im)
}
fn c_le(a: C64, b: C64) -> bool {
    (a.re < b.re && !a.im.is_nan() && !b.im.is_nan()) || (a.re == b.re && a.im <= b.im)
}
fn c_gt(a: C64, b: C64) -> bool {
    c_lt(b, a)
}
fn c_ge(a: C64, b: C64) -> bool {
    c_le(b, a)
}
fn c_isnan(z: C64) -> bool {
    z.re.is_nan() || z.im.is_nan()
}

// ---------------------------------------------------------------------------------- unary ops

pub fn neg(_: DType, v: Value) -> Value {
    match v {
        Int(i) => Int(i.wrapping_neg()),
        UInt(u) => UInt(u.wrapping_neg()),
        Float(x) => Float(-x),
        Complex(z) => Complex(-z),
        other => bad("negative", &[other]),
    }
}

/// |x|; int8 -128 stays -128 (wraps) as in NumPy; complex gives hypot(re, im).
pub fn abs(_: DType, v: Value) -> Value {
    match v {
        Bool(b) => Bool(b),
        Int(i) => Int(i.wrapping_abs()),
        UInt(u) => UInt(u),
        Float(x) => Float(x.abs()),
        Complex(z) => Float(z.re.hypot(z.im)),
    }
}

/// -1, 0, 1 (the 0 of -0.0 is +0.0); NaN stays NaN; complex z/|z| with NumPy 2's special cases.
pub fn sign(_: DType, v: Value) -> Value {
    match v {
        Int(i) => Int(i.signum()),
        UInt(u) => UInt(u.min(1)),
        Float(x) => Float(if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else if x == 0.0 {
            0.0
        } else {
            x
        }),
        Complex(z) => {
            let m = z.re.hypot(z.im);
            Complex(if m.is_nan() {
                C64::new(f64::NAN, f64::NAN)
            } else if m.is_infinite() {
                match (z.re.is_infinite(), z.im.is_infinite()) {
                    (true, true) => C64::new(f64::NAN, f64::NAN),
                    (true, false) => C64::new(z.re.signum(), 0.0),
                    _ => C64::new(0.0, z.im.signum()),
                }
            } else if m == 0.0 {
                C64::new(0.0, 0.0)
            } else {
                C64::new(z.re / m, z.im / m)
            })
        }
        other => bad("sign", &[other]),
    }
}

pub fn sqrt(_: DType, v: Value) -> Value {
    inexact("sqrt", v, f64::sqrt, csqrt)
}

pub fn cbrt(_: DType, v: Value) -> Value {
    real("cbrt", v, f64::cbrt)
}

pub fn square(_: DType, v: Value) -> Value {
    match v {
        Int(i) => Int(i.wrapping_mul(i)),
        UInt(u) => UInt(u.wrapping_mul(u)),
        Float(x) => Float(x * x),
        Complex(z) => Complex(cmul(z, z)),
        other => bad("square", &[other]),
    }
}

/// 1/x. For integers NumPy computes `1.0/x` converted back, so 1 and -1 map to themselves and
/// every other value to 0; NumPy leaves 1/0 undefined (x86 gives the dtype's minimum): here 0.
pub fn reciprocal(_: DType, v: Value) -> Value {
    match v {
        Int(i) => Int(if i == 1 || i == -1 { i } else { 0 }),
        UInt(u) => UInt((u == 1) as u64),
        Float(x) => Float(1.0 / x),
        Complex(z) => Complex(cdiv(C64::new(1.0, 0.0), z)),
        other => bad("reciprocal", &[other]),
    }
}

pub fn exp(_: DType, v: Value) -> Value {
    inexact("exp", v, f64::exp, cexp)
}

pub fn exp2(_: DType, v: Value) -> Value {
    inexact("exp2", v, f64::exp2, cexp2)
}

/// NumPy's complex expm1: (expm1(x)·cos(y) - 2·sin²(y/2), exp(x)·sin(y)).
pub fn expm1(_: DType, v: Value) -> Value {
    inexact("expm1", v, f64::exp_m1, |z| {
        let a = (z.im / 2.0).sin();
        C64::new(z.re.exp_m1() * z.im.cos() - 2.0 * a * a, z.re.exp() * z.im.sin())
    })
}

pub fn log(_: DType, v: Value) -> Value {
    inexact("log", v, f64::ln, clog)
}

pub fn log2(_: DType, v: Value) -> Value {
    inexact("log2", v, f64::log2, |z| clog(z) * std::f64::consts::LOG2_E)
}

pub fn log10(_: DType, v: Value) -> Value {
    inexact("log10", v, f64::log10, |z| clog(z) * std::f64::consts::LOG10_E)
}

/// log(1 + x); complex: accurate near 0 (NumPy's formula log(hypot(1 + x, y)) is not).
pub fn log1p(_: DType, v: Value) -> Value {
    inexact("log1p", v, f64::ln_1p, clog1p)
}

pub fn sin(_: DType, v: Value) -> Value {
    inexact("sin", v, f64::sin, |z| z.sin())
}
pub fn cos(_: DType, v: Value) -> Value {
    inexact("cos", v, f64::cos, |z| z.cos())
}
pub fn tan(_: DType, v: Value) -> Value {
    inexact("tan", v, f64::tan, ctan)
}
pub fn arcsin(_: DType, v: Value) -> Value {
    inexact("arcsin", v, f64::asin, casin)
}
pub fn arccos(_: DType, v: Value) -> Value {
    inexact("arccos", v, f64::acos, cacos)
}
pub fn arctan(_: DType, v: Value) -> Value {
    inexact("arctan", v, f64::atan, catan)
}
pub fn sinh(_: DType, v: Value) -> Value {
    inexact("sinh", v, f64::sinh, |z| z.sinh())
}
pub fn cosh(_: DType, v: Value) -> Value {
    inexact("cosh", v, f64::cosh, |z| z.cosh())
}
pub fn tanh(_: DType, v: Value) -> Value {
    inexact("tanh", v, f64::tanh, ctanh)
}
pub fn arcsinh(_: DType, v: Value) -> Value {
    inexact("arcsinh", v, asinh, casinh)
}
pub fn arccosh(_: DType, v: Value) -> Value {
    inexact("arccosh", v, acosh, cacosh)
}
pub fn arctanh(_: DType, v: Value) -> Value {
    inexact("arctanh", v, atanh, catanh)
}

// The inverse hyperbolic functions follow glibc's algorithms (fdlibm's), which NumPy and the
// compiled kernels call, so that all three agree bit for bit (given the same `log`, `log1p` and
// `sqrt`): Rust's formulas are not as careful. `f64::acosh`, log(x + sqrt(x - 1)·sqrt(x + 1)),
// loses the digits of x - 1 near 1 (thousands of ulps off at 1 + 2^-50); `f64::atanh`,
// 0.5·log1p(2x/(1 - x)), cancels near -1; `f64::asinh` is within 2 ulps of glibc's.

/// The NaN glibc returns outside a function's domain, computed as glibc computes it: x86's
/// default NaN (sign bit set), or x's own if x is a NaN.
#[allow(clippy::eq_op)]
fn invalid(x: f64) -> f64 {
    (x - x) / (x - x)
}

/// The high 32 bits of a double (fdlibm's `GET_HIGH_WORD`), sign included.
fn high_word(x: f64) -> i32 {
    (x.to_bits() >> 32) as u32 as i32
}

/// asinh(x) (glibc's `s_asinh.c`): x below 2^-28; log(|x|) + log 2 above 2^28;
/// log(2|x| + 1/(sqrt(x² + 1) + |x|)) above 2; log1p(|x| + x²/(1 + sqrt(1 + x²))) below; the
/// sign put back.
fn asinh(x: f64) -> f64 {
    let ix = high_word(x) & 0x7fff_ffff;
    if ix < 0x3e30_0000 {
        return x;
    }
    let a = x.abs();
    let w = if ix > 0x41b0_0000 {
        if ix >= 0x7ff0_0000 {
            // inf or NaN.
            return x + x;
        }
        a.ln() + std::f64::consts::LN_2
    } else if ix > 0x4000_0000 {
        (2.0 * a + 1.0 / ((a * a + 1.0).sqrt() + a)).ln()
    } else {
        let t = a * a;
        (a + t / (1.0 + (1.0 + t).sqrt())).ln_1p()
    };
    w.copysign(x)
}

/// acosh(x) (glibc's `e_acosh.c`): NaN below 1; log(x) + log 2 above 2^28;
/// log(2x - 1/(x + sqrt(x² - 1))) above 2; log1p(t + sqrt(2t + t²)) with t = x - 1 (exact)
/// below; 0 at 1.
fn acosh(x: f64) -> f64 {
    let ix = x.to_bits() as i64;
    if ix < 0x3ff0_0000_0000_0000 {
        // Below 1 (negative numbers and negative NaNs too).
        return invalid(x);
    }
    let hx = high_word(x);
    if hx >= 0x41b0_0000 {
        if hx >= 0x7ff0_0000 {
            return x + x;
        }
        x.ln() + std::f64::consts::LN_2
    } else if hx > 0x4000_0000 {
        (2.0 * x - 1.0 / (x + (x * x - 1.0).sqrt())).ln()
    } else if ix > 0x3ff0_0000_0000_0000 {
        let t = x - 1.0;
        (t + (2.0 * t + t * t).sqrt()).ln_1p()
    } else {
        0.0
    }
}

/// atanh(x) (glibc's `e_atanh.c`): on a = |x|, 0.5·log1p(2a + 2a·a/(1 − a)) below 0.5 (a itself
/// below 2^-28), 0.5·log1p(2a/(1 − a)) up to 1, the sign put back; ±inf at ±1, NaN beyond.
fn atanh(x: f64) -> f64 {
    let a = x.abs();
    let t = if a < 0.5 {
        if a < 2f64.powi(-28) {
            return x;
        }
        let t = a + a;
        0.5 * (t + t * a / (1.0 - a)).ln_1p()
    } else if a < 1.0 {
        0.5 * ((a + a) / (1.0 - a)).ln_1p()
    } else if a > 1.0 {
        return invalid(x);
    } else {
        // ±inf at ±1; NaN stays NaN.
        return x / 0.0;
    };
    t.copysign(x)
}

pub fn floor(_: DType, v: Value) -> Value {
    real("floor", v, f64::floor)
}
pub fn ceil(_: DType, v: Value) -> Value {
    real("ceil", v, f64::ceil)
}
pub fn trunc(_: DType, v: Value) -> Value {
    real("trunc", v, f64::trunc)
}
/// Round to nearest, ties to even (np.rint: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2); complex: each part
/// (NumPy's `nc_rint`).
pub fn rint(_: DType, v: Value) -> Value {
    inexact("rint", v, f64::round_ties_even, |z| {
        C64::new(z.re.round_ties_even(), z.im.round_ties_even())
    })
}

/// C's `frexp` of a float: (m, e) with x = m·2^e and 0.5 <= |m| < 1; ±0, ±inf and NaN give
/// (x, 0). The values of every float dtype are f64 values with the same decomposition.
pub fn frexp_parts(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    // A subnormal is scaled into the normal range first (exactly).
    let (x, scaled) = if x.abs() < f64::MIN_POSITIVE { (x * TWO_54, -54) } else { (x, 0) };
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32;
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, e - 1022 + scaled)
}

/// 2^54, exact.
const TWO_54: f64 = 18014398509481984.0;

/// np.frexp's mantissa.
pub fn frexp_mantissa(_: DType, v: Value) -> Value {
    real("frexp_mantissa", v, |x| frexp_parts(x).0)
}

/// np.frexp's exponent, as a float.
pub fn frexp_exponent(_: DType, v: Value) -> Value {
    real("frexp_exponent", v, |x| frexp_parts(x).1 as f64)
}
/// The error function (libm's port of fdlibm's s_erf.c, < 1 ulp).
pub fn erf(_: DType, v: Value) -> Value {
    real("erf", v, libm::erf)
}

pub fn isnan(_: DType, v: Value) -> Value {
    match v {
        Float(x) => Bool(x.is_nan()),
        Complex(z) => Bool(c_isnan(z)),
        other => bad("isnan", &[other]),
    }
}
pub fn isinf(_: DType, v: Value) -> Value {
    match v {
        Float(x) => Bool(x.is_infinite()),
        Complex(z) => Bool(z.re.is_infinite() || z.im.is_infinite()),
        other => bad("isinf", &[other]),
    }
}
pub fn isfinite(_: DType, v: Value) -> Value {
    match v {
        Float(x) => Bool(x.is_finite()),
        Complex(z) => Bool(z.re.is_finite() && z.im.is_finite()),
        other => bad("isfinite", &[other]),
    }
}

pub fn logical_not(_: DType, v: Value) -> Value {
    match v {
        Bool(b) => Bool(!b),
        other => bad("logical_not", &[other]),
    }
}

pub fn invert(_: DType, v: Value) -> Value {
    match v {
        Bool(b) => Bool(!b),
        Int(i) => Int(!i),
        UInt(u) => UInt(!u),
        other => bad("invert", &[other]),
    }
}

pub fn real_part(_: DType, v: Value) -> Value {
    match v {
        Complex(z) => Float(z.re),
        other => bad("real", &[other]),
    }
}
pub fn imag_part(_: DType, v: Value) -> Value {
    match v {
        Complex(z) => Float(z.im),
        other => bad("imag", &[other]),
    }
}
pub fn conjugate(_: DType, v: Value) -> Value {
    match v {
        Complex(z) => Complex(z.conj()),
        other => bad("conjugate", &[other]),
    }
}

/// `cast`: the value as is; the caller's conversion to the result dtype is the cast.
pub fn identity(_: DType, v: Value) -> Value {
    v
}

// --------------------------------------------------------------------------------- binary ops

/// x + y; logical or on bools.
pub fn add(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Bool(x), Bool(y)) => Bool(x | y),
        (Int(x), Int(y)) => Int(x.wrapping_add(y)),
        (UInt(x), UInt(y)) => UInt(x.wrapping_add(y)),
        (Float(x), Float(y)) => Float(x + y),
        (Complex(x), Complex(y)) => Complex(x + y),
        _ => bad("add", &[a, b]),
    }
}

pub fn subtract(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Int(x), Int(y)) => Int(x.wrapping_sub(y)),
        (UInt(x), UInt(y)) => UInt(x.wrapping_sub(y)),
        (Float(x), Float(y)) => Float(x - y),
        (Complex(x), Complex(y)) => Complex(x - y),
        _ => bad("subtract", &[a, b]),
    }
}

/// x * y; logical and on bools.
pub fn multiply(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Bool(x), Bool(y)) => Bool(x & y),
        (Int(x), Int(y)) => Int(x.wrapping_mul(y)),
        (UInt(x), UInt(y)) => UInt(x.wrapping_mul(y)),
        (Float(x), Float(y)) => Float(x * y),
        (Complex(x), Complex(y)) => Complex(cmul(x, y)),
        _ => bad("multiply", &[a, b]),
    }
}

pub fn divide(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Float(x), Float(y)) => Float(x / y),
        (Complex(x), Complex(y)) => Complex(cdiv(x, y)),
        _ => bad("divide", &[a, b]),
    }
}

/// NumPy's `npy_divmod` for floats: (floor quotient, remainder with the sign of the divisor).
/// Division by zero: quotient x/0 (±inf or NaN), remainder fmod(x, 0) = NaN.
fn float_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut m = a % b; // fmod
    if b == 0.0 {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(b);
    }
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    };
    (q, m)
}

/// floor(x / y); integer division by zero gives 0 (NumPy's result, with a warning there).
pub fn floor_divide(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Int(x), Int(y)) => Int(if y == 0 {
            0
        } else {
            let q = x.wrapping_div(y);
            if x.wrapping_rem(y) != 0 && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        }),
        (UInt(x), UInt(y)) => UInt(x.checked_div(y).unwrap_or(0)),
        (Float(x), Float(y)) => Float(float_divmod(x, y).0),
        _ => bad("floor_divide", &[a, b]),
    }
}

/// x mod y with the sign of y (Python's %); integer remainder by zero gives 0; float remainder
/// by zero is NaN.
pub fn remainder(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Int(x), Int(y)) => Int(if y == 0 {
            0
        } else {
            let r = x.wrapping_rem(y);
            if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }
        }),
        (UInt(x), UInt(y)) => UInt(if y == 0 { 0 } else { x % y }),
        (Float(x), Float(y)) => Float(if y == 0.0 { x % y } else { float_divmod(x, y).1 }),
        _ => bad("remainder", &[a, b]),
    }
}

/// x ** y. Integers: wrapping repeated squaring; a negative exponent is an error in NumPy
/// ("Integers to negative integer powers are not allowed"): here it gives 1/x**|y| truncated,
/// i.e. 1 for x = 1, ±1 for x = -1 (by parity), 0 otherwise. Floats: pow. Complex: NumPy's
/// `nc_pow`.
pub fn power(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Int(x), Int(y)) => Int(if y < 0 {
            match x {
                1 => 1,
                -1 => {
                    if y % 2 == 0 {
                        1
                    } else {
                        -1
                    }
                }
                _ => 0,
            }
        } else {
            wrapping_pow(x as u64, y as u64) as i64
        }),
        (UInt(x), UInt(y)) => UInt(wrapping_pow(x, y)),
        (Float(x), Float(y)) => Float(x.powf(y)),
        (Complex(x), Complex(y)) => Complex(cpow(x, y)),
        _ => bad("power", &[a, b]),
    }
}

/// x**e modulo 2**64 (two's complement makes this right for signed x too).
fn wrapping_pow(mut x: u64, mut e: u64) -> u64 {
    let mut acc = 1u64;
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(x);
        }
        x = x.wrapping_mul(x);
        e >>= 1;
    }
    acc
}

/// The larger; a NaN operand (the first if both) is the result; on ties of ±0, the second.
pub fn maximum(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Bool(x), Bool(y)) => Bool(x | y),
        (Int(x), Int(y)) => Int(x.max(y)),
        (UInt(x), UInt(y)) => UInt(x.max(y)),
        (Float(x), Float(y)) => Float(if x.is_nan() || x > y { x } else { y }),
        (Complex(x), Complex(y)) => Complex(if c_isnan(x) || c_ge(x, y) { x } else { y }),
        _ => bad("maximum", &[a, b]),
    }
}

/// The smaller; NaN propagates as in [`maximum`].
pub fn minimum(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Bool(x), Bool(y)) => Bool(x & y),
        (Int(x), Int(y)) => Int(x.min(y)),
        (UInt(x), UInt(y)) => UInt(x.min(y)),
        (Float(x), Float(y)) => Float(if x.is_nan() || x < y { x } else { y }),
        (Complex(x), Complex(y)) => Complex(if c_isnan(x) || c_le(x, y) { x } else { y }),
        _ => bad("minimum", &[a, b]),
    }
}

/// The larger, ignoring a NaN operand (NaN only if both are); on ties of ±0, the first.
pub fn fmax(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Float(x), Float(y)) => Float(if y.is_nan() || x >= y { x } else { y }),
        (Complex(x), Complex(y)) => Complex(if c_isnan(y) || c_ge(x, y) { x } else { y }),
        _ => maximum(DType::Bool, a, b),
    }
}

/// The smaller, ignoring a NaN operand.
pub fn fmin(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Float(x), Float(y)) => Float(if y.is_nan() || x <= y { x } else { y }),
        (Complex(x), Complex(y)) => Complex(if c_isnan(y) || c_le(x, y) { x } else { y }),
        _ => minimum(DType::Bool, a, b),
    }
}

pub fn arctan2(_: DType, a: Value, b: Value) -> Value {
    real2("arctan2", a, b, f64::atan2)
}

pub fn hypot(_: DType, a: Value, b: Value) -> Value {
    real2("hypot", a, b, f64::hypot)
}

/// NumPy's `npy_logaddexp`: equal operands give x + log 2 (so ±inf stay); else
/// max + log1p(exp(-|x - y|)); NaN propagates.
pub fn logaddexp(_: DType, a: Value, b: Value) -> Value {
    real2("logaddexp", a, b, |x, y| {
        if x == y {
            x + std::f64::consts::LN_2
        } else {
            let d = x - y;
            if d > 0.0 {
                x + (-d).exp().ln_1p()
            } else if d <= 0.0 {
                y + d.exp().ln_1p()
            } else {
                d
            }
        }
    })
}

pub fn copysign(_: DType, a: Value, b: Value) -> Value {
    real2("copysign", a, b, f64::copysign)
}

/// C's `fmod`: x - trunc(x / y)·y, exact, with the sign of x (NaN for y = 0 or infinite x);
/// integers: the remainder of truncating division, 0 for y = 0 (NumPy's result, with a warning
/// there) and for MIN % -1.
pub fn fmod(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Int(x), Int(y)) => Int(if y == 0 { 0 } else { x.wrapping_rem(y) }),
        (UInt(x), UInt(y)) => UInt(if y == 0 { 0 } else { x % y }),
        // Rust's `%` on floats is C's fmod; exact, so the f64 result of narrower floats is
        // theirs.
        (Float(x), Float(y)) => Float(x % y),
        _ => bad("fmod", &[a, b]),
    }
}

/// NumPy's `npy_logaddexp2`: equal operands give x + 1 (so ±inf stay); else
/// max + log2(e)·log1p(2^-|x - y|); NaN propagates.
pub fn logaddexp2(_: DType, a: Value, b: Value) -> Value {
    real2("logaddexp2", a, b, |x, y| {
        if x == y {
            x + 1.0
        } else {
            let d = x - y;
            if d > 0.0 {
                x + std::f64::consts::LOG2_E * (-d).exp2().ln_1p()
            } else if d <= 0.0 {
                y + std::f64::consts::LOG2_E * d.exp2().ln_1p()
            } else {
                d
            }
        }
    })
}

/// x·2^n for an integer n (musl's `scalbn`): exact where the result is normal, rounded once
/// where it is subnormal, ±inf past the largest value.
pub fn scalbn(x: f64, n: i32) -> f64 {
    let two_1023 = f64::from_bits(0x7fe0_0000_0000_0000);
    // 2^-1022 · 2^53: a step down that stays normal, so the last step rounds once.
    let two_m969 = f64::from_bits(((0x3ff - 969) as u64) << 52);
    let (mut y, mut n) = (x, n);
    if n > 1023 {
        y *= two_1023;
        n -= 1023;
        if n > 1023 {
            y *= two_1023;
            n -= 1023;
            n = n.min(1023);
        }
    } else if n < -1022 {
        y *= two_m969;
        n += 969;
        if n < -1022 {
            y *= two_m969;
            n += 969;
            n = n.max(-1022);
        }
    }
    y * f64::from_bits(((0x3ff + n) as u64) << 52)
}

/// np.ldexp: x·2^n, n (a float holding an integer) truncated; |n| past every dtype's range
/// saturates (as NumPy does for exponents outside C's int), a NaN n gives NaN.
pub fn ldexp(_: DType, a: Value, b: Value) -> Value {
    real2("ldexp", a, b, |x, n| {
        if n.is_nan() {
            x + n
        } else {
            scalbn(x, n.trunc().clamp(-100_000.0, 100_000.0) as i32)
        }
    })
}

/// x + y·i from two floats (exact: the result's parts are of the operands' precision or wider).
pub fn make_complex(_: DType, a: Value, b: Value) -> Value {
    match (a, b) {
        (Float(x), Float(y)) => Complex(C64::new(x, y)),
        _ => bad("complex", &[a, b]),
    }
}

/// np.nextafter: the neighbour of x in its dtype toward y, on the bits of the dtype. NaN
/// operands give NaN (float16: NumPy's `NPY_HALF_NAN`; else C's x + y); x == y gives y (float16:
/// x, as `npy_half_nextafter`; they differ for ±0); from ±0 the smallest subnormal with y's
/// sign.
pub fn nextafter(dt: DType, a: Value, b: Value) -> Value {
    real2("nextafter", a, b, |x, y| {
        if x.is_nan() || y.is_nan() {
            return if dt == DType::Float16 { f64::NAN } else { x + y };
        }
        if x == y {
            return if dt == DType::Float16 { x } else { y };
        }
        // The bits of x and y in the dtype's format, its sign bit, and back.
        let (xb, yb, sign): (u64, u64, u64) = match dt {
            DType::Float64 => (x.to_bits(), y.to_bits(), 1 << 63),
            DType::Float32 => ((x as f32).to_bits() as u64, (y as f32).to_bits() as u64, 1 << 31),
            DType::Float16 => (
                half::f16::from_f64(x).to_bits() as u64,
                half::f16::from_f64(y).to_bits() as u64,
                1 << 15,
            ),
            _ => (
                half::bf16::from_f64(x).to_bits() as u64,
                half::bf16::from_f64(y).to_bits() as u64,
                1 << 15,
            ),
        };
        let r = if x == 0.0 {
            (yb & sign) | 1
        } else if (x < y) == (x > 0.0) {
            xb + 1
        } else {
            xb - 1
        };
        match dt {
            DType::Float64 => f64::from_bits(r),
            DType::Float32 => f32::from_bits(r as u32) as f64,
            DType::Float16 => half::f16::from_bits(r as u16).to_f64(),
            _ => half::bf16::from_bits(r as u16).to_f64(),
        }
    })
}

/// A comparison: `ord` on bools and integers, IEEE on floats (NaN compares false), `cplx` on
/// complex.
fn compare(
    op: &str,
    a: Value,
    b: Value,
    ord: impl Fn(std::cmp::Ordering) -> bool,
    flt: impl Fn(f64, f64) -> bool,
    cplx: impl Fn(C64, C64) -> bool,
) -> Value {
    Bool(match (a, b) {
        (Bool(x), Bool(y)) => ord(x.cmp(&y)),
        (Int(x), Int(y)) => ord(x.cmp(&y)),
        (UInt(x), UInt(y)) => ord(x.cmp(&y)),
        (Float(x), Float(y)) => flt(x, y),
        (Complex(x), Complex(y)) => cplx(x, y),
        _ => bad(op, &[a, b]),
    })
}

pub fn equal(_: DType, a: Value, b: Value) -> Value {
    compare("equal", a, b, |o| o.is_eq(), |x, y| x == y, |x, y| x.re == y.re && x.im == y.im)
}
pub fn not_equal(_: DType, a: Value, b: Value) -> Value {
    compare("not_equal", a, b, |o| o.is_ne(), |x, y| x != y, |x, y| x.re != y.re || x.im != y.im)
}
pub fn less(_: DType, a: Value, b: Value) -> Value {
    compare("less", a, b, |o| o.is_lt(), |x, y| x < y, c_lt)
}
pub fn less_equal(_: DType, a: Value, b: Value) -> Value {
    compare("less_equal", a, b, |o| o.is_le(), |x, y| x <= y, c_le)
}
pub fn greater(_: DType, a: Value, b: Value) -> Value {
    compare("greater", a, b, |o| o.is_gt(), |x, y| x > y, c_gt)
}
pub fn greater_equal(_: DType, a: Value, b: Value) -> Value {
    compare("greater_equal", a, b, |o| o.is_ge(), |x, y| x >= y, c_ge)
}

fn logical(op: &str, a: Value, b: Value, f: impl Fn(bool, bool) -> bool) -> Value {
    match (a, b) {
        (Bool(x), Bool(y)) => Bool(f(x, y)),
        _ => bad(op, &[a, b]),
    }
}
pub fn logical_and(_: DType, a: Value, b: Value) -> Value {
    logical("logical_and", a, b, |x, y| x && y)
}
pub fn logical_or(_: DType, a: Value, b: Value) -> Value {
    logical("logical_or", a, b, |x, y| x || y)
}
pub fn logical_xor(_: DType, a: Value, b: Value) -> Value {
    logical("logical_xor", a, b, |x, y| x != y)
}

fn bitwise(
    op: &str,
    a: Value,
    b: Value,
    fb: fn(bool, bool) -> bool,
    fi: fn(u64, u64) -> u64,
) -> Value {
    match (a, b) {
        (Bool(x), Bool(y)) => Bool(fb(x, y)),
        (Int(x), Int(y)) => Int(fi(x as u64, y as u64) as i64),
        (UInt(x), UInt(y)) => UInt(fi(x, y)),
        _ => bad(op, &[a, b]),
    }
}
pub fn bitwise_and(_: DType, a: Value, b: Value) -> Value {
    bitwise("bitwise_and", a, b, |x, y| x & y, |x, y| x & y)
}
pub fn bitwise_or(_: DType, a: Value, b: Value) -> Value {
    bitwise("bitwise_or", a, b, |x, y| x | y, |x, y| x | y)
}
pub fn bitwise_xor(_: DType, a: Value, b: Value) -> Value {
    bitwise("bitwise_xor", a, b, |x, y| x ^ y, |x, y| x ^ y)
}

/// x << y, wrapping to the dtype; a count of the bit width or more, or negative, gives 0
/// (NumPy's `npy_lshift`, which compares the count as unsigned).
pub fn left_shift(dt: DType, a: Value, b: Value) -> Value {
    let w = width(dt);
    match (a, b) {
        (Int(x), Int(y)) => Int(if (0..w).contains(&y) { x.wrapping_shl(y as u32) } else { 0 }),
        (UInt(x), UInt(y)) => UInt(if y < w as u64 { x.wrapping_shl(y as u32) } else { 0 }),
        _ => bad("left_shift", &[a, b]),
    }
}

/// x >> y, arithmetic for signed; a count of the bit width or more, or negative, gives 0, or -1
/// for a negative signed x (NumPy's `npy_rshift`).
pub fn right_shift(dt: DType, a: Value, b: Value) -> Value {
    let w = width(dt);
    match (a, b) {
        (Int(x), Int(y)) => Int(if (0..w).contains(&y) {
            x >> y
        } else if x < 0 {
            -1
        } else {
            0
        }),
        (UInt(x), UInt(y)) => UInt(if y < w as u64 { x >> y } else { 0 }),
        _ => bad("right_shift", &[a, b]),
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests {
    use half::{bf16, f16};
    use num_complex::{Complex32, Complex64};

    use super::super::testutil::*;
    use crate::graph::Attrs;
    use crate::ops::OpKind::{self, *};
    use crate::DType;

    fn c(re: f64, im: f64) -> Complex64 {
        Complex64::new(re, im)
    }

    #[test]
    fn integer_wrap_around() {
        // np.array([127], np.int8) + np.array([1], np.int8) -> [-128]
        assert_eq!(
            apply(Add, &[vec1(vec![127i8]), vec1(vec![1i8])]).as_slice::<i8>().unwrap(),
            &[-128]
        );
        // np.array([-2**31], np.int32) - np.array([1], np.int32) -> [2147483647]
        assert_eq!(
            apply(Sub, &[vec1(vec![i32::MIN]), vec1(vec![1i32])]).as_slice::<i32>().unwrap(),
            &[i32::MAX]
        );
        // np.array([0], np.uint8) - np.array([1], np.uint8) -> [255]
        assert_eq!(
            apply(Sub, &[vec1(vec![0u8]), vec1(vec![1u8])]).as_slice::<u8>().unwrap(),
            &[255]
        );
        // np.array([100], np.int8) * np.array([3], np.int8) -> [44]
        assert_eq!(
            apply(Mul, &[vec1(vec![100i8]), vec1(vec![3i8])]).as_slice::<i8>().unwrap(),
            &[44]
        );
        // np.array([2**63-1]) + np.array([1]) -> [-9223372036854775808]
        assert_eq!(
            apply(Add, &[vec1(vec![i64::MAX]), vec1(vec![1i64])]).as_slice::<i64>().unwrap(),
            &[i64::MIN]
        );
        // np.negative(np.array([1, 0], np.uint8)) -> [255, 0]; np.negative(np.int8 -128) -> -128
        assert_eq!(apply(Neg, &[vec1(vec![1u8, 0])]).as_slice::<u8>().unwrap(), &[255, 0]);
        assert_eq!(apply(Neg, &[vec1(vec![-128i8])]).as_slice::<i8>().unwrap(), &[-128]);
        assert_eq!(apply(Neg, &[vec1(vec![1u64, 0])]).as_slice::<u64>().unwrap(), &[u64::MAX, 0]);
        // np.abs(np.array([-128, 5, -5], np.int8)) -> [-128, 5, 5]
        assert_eq!(
            apply(Abs, &[vec1(vec![-128i8, 5, -5])]).as_slice::<i8>().unwrap(),
            &[-128, 5, 5]
        );
        // np.square(np.array([16, -100], np.int8)) -> [0, 16]
        assert_eq!(apply(Square, &[vec1(vec![16i8, -100])]).as_slice::<i8>().unwrap(), &[0, 16]);
        // np.invert(np.array([0, -1, 127], np.int8)) -> [-1, 0, -128]; uint8 [0, 5] -> [255, 250]
        assert_eq!(
            apply(Invert, &[vec1(vec![0i8, -1, 127])]).as_slice::<i8>().unwrap(),
            &[-1, 0, -128]
        );
        assert_eq!(apply(Invert, &[vec1(vec![0u8, 5])]).as_slice::<u8>().unwrap(), &[255, 250]);
    }

    #[test]
    fn integer_floor_divide_and_remainder() {
        // a = np.array([7, -7, 7, -7, 5, 0, -128], np.int8); b = np.array([2, 2, -2, -2, 0, 0, -1], np.int8)
        // a // b -> [3, -4, -4, 3, 0, 0, -128]; a % b -> [1, 1, -1, -1, 0, 0, 0]
        let a = vec1(vec![7i8, -7, 7, -7, 5, 0, -128]);
        let b = vec1(vec![2i8, 2, -2, -2, 0, 0, -1]);
        assert_eq!(
            apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<i8>().unwrap(),
            &[3, -4, -4, 3, 0, 0, -128]
        );
        assert_eq!(apply(Remainder, &[a, b]).as_slice::<i8>().unwrap(), &[1, 1, -1, -1, 0, 0, 0]);
        // np.array([7, 5], np.uint16) // np.array([2, 0], np.uint16) -> [3, 0]; % -> [1, 0]
        let (a, b) = (vec1(vec![7u16, 5]), vec1(vec![2u16, 0]));
        assert_eq!(apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<u16>().unwrap(), &[3, 0]);
        assert_eq!(apply(Remainder, &[a, b]).as_slice::<u16>().unwrap(), &[1, 0]);
        // np.int64(-2**63) // np.int64(-1) -> -2**63 (overflow wraps)
        let (a, b) = (vec1(vec![i64::MIN]), vec1(vec![-1i64]));
        assert_eq!(
            apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<i64>().unwrap(),
            &[i64::MIN]
        );
        assert_eq!(apply(Remainder, &[a, b]).as_slice::<i64>().unwrap(), &[0]);
    }

    #[test]
    fn float_floor_divide_and_remainder() {
        // a = np.array([7., -7., 7., -7., 1., -1., 0., -1., 5., -5., 0.5])
        // b = np.array([2., 2., -2., -2., 0., 0., 0., 3., np.inf, np.inf, -0.25])
        let inf = f64::INFINITY;
        let nan = f64::NAN;
        let a = vec1(vec![7., -7., 7., -7., 1., -1., 0., -1., 5., -5., 0.5]);
        let b = vec1(vec![2., 2., -2., -2., 0., 0., 0., 3., inf, inf, -0.25]);
        // a // b -> [3, -4, -4, 3, inf, -inf, nan, -1, 0, -1, -2]
        assert_same(
            &f64s(&apply(FloorDiv, &[a.clone(), b.clone()])),
            &[3., -4., -4., 3., inf, -inf, nan, -1., 0., -1., -2.],
        );
        // a % b -> [1, 1, -1, -1, nan, nan, nan, 2, 5, inf, -0.0]  (np.remainder(-1.0, 3.0) == 2.0)
        assert_same(
            &f64s(&apply(Remainder, &[a, b])),
            &[1., 1., -1., -1., nan, nan, nan, 2., 5., inf, -0.0],
        );
        // float32: np.array([-7.5], np.float32) // np.float32(2) -> [-4.]; % -> [0.5]
        let (a, b) = (vec1(vec![-7.5f32]), vec1(vec![2.0f32]));
        assert_eq!(apply(FloorDiv, &[a.clone(), b.clone()]).as_slice::<f32>().unwrap(), &[-4.0]);
        assert_eq!(apply(Remainder, &[a, b]).as_slice::<f32>().unwrap(), &[0.5]);
    }

    #[test]
    fn float16_and_bfloat16_round_after_each_op() {
        // x = np.array([0.1, 2048, 1.0, 1.0, 65504, 0.0001], np.float16)
        // y = np.array([0.2, 1, 2**-11, 3*2**-11, 16, 0.0001], np.float16)
        // (x + y).astype(np.float64) -> [0.2998046875, 2048.0, 1.0, 1.001953125, inf, 0.00020003318786621094]
        // (x * y).astype(np.float64) -> [0.019989013671875, 2048.0, 0.00048828125, 0.00146484375, inf, 0.0]
        let h = |v: &[f64]| vec1(v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>());
        let x = h(&[0.1, 2048.0, 1.0, 1.0, 65504.0, 0.0001]);
        let y = h(&[0.2, 1.0, 2f64.powi(-11), 3.0 * 2f64.powi(-11), 16.0, 0.0001]);
        let inf = f64::INFINITY;
        assert_same(
            &f64s(&apply(Add, &[x.clone(), y.clone()])),
            &[0.2998046875, 2048.0, 1.0, 1.001953125, inf, 0.00020003318786621094],
        );
        assert_same(
            &f64s(&apply(Mul, &[x, y])),
            &[0.019989013671875, 2048.0, 0.00048828125, 0.00146484375, inf, 0.0],
        );
        // b = ml_dtypes.bfloat16; x = np.array([1.0, 1.0, 256, 0.1], b); y = np.array([3*2**-8, 2**-8, 1, 0.2], b)
        // (x + y).astype(np.float64) -> [1.015625, 1.0, 256.0, 0.30078125]
        let b = |v: &[f64]| vec1(v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>());
        let x = b(&[1.0, 1.0, 256.0, 0.1]);
        let y = b(&[3.0 * 2f64.powi(-8), 2f64.powi(-8), 1.0, 0.2]);
        assert_same(&f64s(&apply(Add, &[x, y])), &[1.015625, 1.0, 256.0, 0.30078125]);
    }

    /// The ufuncs of issue 23 with ops of their own, against NumPy 2.4's values.
    #[test]
    fn fmod_ldexp_frexp_nextafter_logaddexp2() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        // np.fmod([5., -5., 5., -5., inf, 1., -0., 1e300], [3., 3., -3., -3., 2., inf, 1., 3.])
        //   -> [2, -2, 2, -2, nan, 1, -0, 0]
        let a = vec1(vec![5.0, -5.0, 5.0, -5.0, inf, 1.0, -0.0, 1e300]);
        let b = vec1(vec![3.0, 3.0, -3.0, -3.0, 2.0, inf, 1.0, 3.0]);
        assert_same(&f64s(&apply(Fmod, &[a, b])), &[2.0, -2.0, 2.0, -2.0, nan, 1.0, -0.0, 0.0]);
        // np.fmod(np.int8([-128, 7, -7, 5]), np.int8([-1, 0, 2, -3])) -> [0, 0, -1, 2]
        let r = apply(Fmod, &[vec1(vec![-128i8, 7, -7, 5]), vec1(vec![-1i8, 0, 2, -3])]);
        assert_eq!(r.as_slice::<i8>().unwrap(), &[0, 0, -1, 2]);
        // np.ldexp([1., 5e-324, 1.7976931348623157e308, 1.5, 3., 1.0000000000000002],
        //          [-1074, 1074, -2098, -1075, 2**31 - 1, -1074]) -> [5e-324, 1, 5e-324, 5e-324, inf, 5e-324]
        let x = vec1(vec![1.0, 5e-324, 1.7976931348623157e308, 1.5, 3.0, 1.0000000000000002]);
        let n = vec1(vec![-1074.0, 1074.0, -2098.0, -1075.0, 2147483647.0, -1074.0]);
        assert_same(&f64s(&apply(Ldexp, &[x, n])), &[5e-324, 1.0, 5e-324, 5e-324, inf, 5e-324]);
        // np.ldexp(np.float32([1.5, 3, 1.0000001]), [-150, 200, -149]) -> [1.4e-45, inf, 1.4e-45]
        let x = vec1(vec![1.5f32, 3.0, 1.0000001]);
        let n = vec1(vec![-150.0f32, 200.0, -149.0]);
        let r = apply(Ldexp, &[x, n]);
        assert_eq!(r.as_slice::<f32>().unwrap(), &[1.4e-45, f32::INFINITY, 1.4e-45]);
        // np.frexp([0., -0., inf, 5e-324, -3., 0.75, 1e-310])
        //   -> [0, -0, inf, 0.5, -0.75, 0.75, 0.5752618031559393], [0, 0, 0, -1073, 2, 0, -1029]
        let x = vec1(vec![0.0, -0.0, inf, 5e-324, -3.0, 0.75, 1e-310]);
        assert_same(
            &f64s(&apply(FrexpMantissa, &[x.clone()])),
            &[0.0, -0.0, inf, 0.5, -0.75, 0.75, 0.5752618031559393],
        );
        assert_same(
            &f64s(&apply(FrexpExponent, &[x])),
            &[0.0, 0.0, 0.0, -1073.0, 2.0, 0.0, -1029.0],
        );
        // np.nextafter([0., -0., 1., 1., -1., inf, 0.], [1., -1., 2., 0., -2., 0., -0.])
        //   -> [5e-324, -5e-324, 1.0000000000000002, 0.9999999999999999, -1.0000000000000002,
        //       1.7976931348623157e308, -0.0]
        let x = vec1(vec![0.0, -0.0, 1.0, 1.0, -1.0, inf, 0.0]);
        let y = vec1(vec![1.0, -1.0, 2.0, 0.0, -2.0, 0.0, -0.0]);
        assert_same(
            &f64s(&apply(NextAfter, &[x, y])),
            &[
                5e-324,
                -5e-324,
                1.0000000000000002,
                0.9999999999999999,
                -1.0000000000000002,
                1.7976931348623157e308,
                -0.0,
            ],
        );
        // np.nextafter(np.float32([1, 0, 3.4028235e38]), np.float32([2, -1, inf]))
        //   -> [1.0000001192092896, -1.401298464324817e-45, inf]
        let r = apply(
            NextAfter,
            &[vec1(vec![1.0f32, 0.0, f32::MAX]), vec1(vec![2.0f32, -1.0, f32::INFINITY])],
        );
        assert_same(&f64s(&r), &[1.0000001192092896, -1.401298464324817e-45, inf]);
        // np.nextafter(np.float16([1, 0, -0., 65504]), np.float16([2, -1, 0, inf]))
        //   -> [1.0009765625, -5.96e-08, -0.0 (NumPy's half: x == y gives x), inf]
        let h = |v: &[f64]| vec1(v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>());
        let r = apply(NextAfter, &[h(&[1.0, 0.0, -0.0, 65504.0]), h(&[2.0, -1.0, 0.0, inf])]);
        assert_same(&f64s(&r), &[1.0009765625, -5.960464477539063e-8, -0.0, inf]);
        // np.logaddexp2([inf, -inf, 1, nan, 1000, -1000, -0.5], [inf, -inf, 2, 1, 1000, -999, -1.2])
        //   -> [inf, -inf, 2.584962500721156, nan, 1001.0, -998.4150374992788, 0.19204523211382707]
        let r = apply(
            LogAddExp2,
            &[
                vec1(vec![inf, -inf, 1.0, nan, 1000.0, -1000.0, -0.5]),
                vec1(vec![inf, -inf, 2.0, 1.0, 1000.0, -999.0, -1.2]),
            ],
        );
        assert_same(
            &f64s(&r),
            &[inf, -inf, 2.584962500721156, nan, 1001.0, -998.4150374992788, 0.19204523211382707],
        );
        // complex(x, y) and rint of complex (each part).
        let r = apply(MakeComplex, &[vec1(vec![1.5f32, -0.0]), vec1(vec![inf as f32, 2.5])]);
        assert_eq!(r.dtype(), DType::Complex64);
        let r = apply(Rint, &[r]);
        assert_eq!(
            r.as_slice::<Complex32>().unwrap(),
            &[Complex32::new(2.0, f32::INFINITY), Complex32::new(-0.0, 2.0)]
        );
    }

    #[test]
    fn nan_rules_of_maximum_and_fmax() {
        let nan = f64::NAN;
        // x = np.array([nan, 1.0, nan, 1.0, -0.0, 2.0]); y = np.array([2.0, nan, -nan, 3.0, 0.0, 1.0])
        let x = vec1(vec![nan, 1.0, nan, 1.0, -0.0, 2.0]);
        let y = vec1(vec![2.0, nan, -nan, 3.0, 0.0, 1.0]);
        let xy = [x, y];
        // np.maximum -> [nan, nan, nan, 3.0, 0.0, 2.0]; np.minimum -> [nan, nan, nan, 1.0, 0.0, 1.0]
        // (on ±0 ties NumPy's loops return the second operand)
        assert_same(&f64s(&apply(Maximum, &xy)), &[nan, nan, nan, 3.0, 0.0, 2.0]);
        assert_same(&f64s(&apply(Minimum, &xy)), &[nan, nan, nan, 1.0, 0.0, 1.0]);
        // np.fmax -> [2.0, 1.0, nan, 3.0, -0.0, 2.0]; np.fmin -> [2.0, 1.0, nan, 1.0, -0.0, 1.0]
        assert_same(&f64s(&apply(Fmax, &xy)), &[2.0, 1.0, nan, 3.0, -0.0, 2.0]);
        assert_same(&f64s(&apply(Fmin, &xy)), &[2.0, 1.0, nan, 1.0, -0.0, 1.0]);
        // np.maximum(np.array([complex(nan, 0), 1+1j]), np.array([1+0j, complex(0, nan)]))
        //   -> [nan+0j, 0+nanj]
        let got = c64s(&apply(
            Maximum,
            &[vec1(vec![c(nan, 0.0), c(1.0, 1.0)]), vec1(vec![c(1.0, 0.0), c(0.0, nan)])],
        ));
        assert!(
            got[0].re.is_nan() && got[0].im == 0.0 && got[1].re == 0.0 && got[1].im.is_nan(),
            "{got:?}"
        );
        // Integers and bools: np.maximum([True, False], [False, False]) -> [True, False]
        assert_eq!(
            bools(&apply(Maximum, &[vec1(vec![true, false]), vec1(vec![false, false])])),
            vec![true, false]
        );
        assert_eq!(
            apply(Minimum, &[vec1(vec![3u32, 9]), vec1(vec![5u32, 1])]).as_slice::<u32>().unwrap(),
            &[3, 1]
        );
    }

    #[test]
    fn shifts() {
        // np.left_shift(np.array([1, 1, 1, -3, 5, 1], np.int8), np.array([7, 8, -1, 2, 0, 100], np.int8))
        //   -> [-128, 0, 0, -12, 5, 0]
        let a = vec1(vec![1i8, 1, 1, -3, 5, 1]);
        let b = vec1(vec![7i8, 8, -1, 2, 0, 100]);
        assert_eq!(apply(LeftShift, &[a, b]).as_slice::<i8>().unwrap(), &[-128, 0, 0, -12, 5, 0]);
        // np.right_shift(np.array([-5, -5, 5, -128, 64, 5], np.int8), np.array([-1, 9, 1, 7, 6, 8], np.int8))
        //   -> [-1, -1, 2, -1, 1, 0]
        let a = vec1(vec![-5i8, -5, 5, -128, 64, 5]);
        let b = vec1(vec![-1i8, 9, 1, 7, 6, 8]);
        assert_eq!(apply(RightShift, &[a, b]).as_slice::<i8>().unwrap(), &[-1, -1, 2, -1, 1, 0]);
        // np.left_shift(np.array([1, 255, 3], np.uint8), np.array([7, 1, 8], np.uint8)) -> [128, 254, 0]
        let r = apply(LeftShift, &[vec1(vec![1u8, 255, 3]), vec1(vec![7u8, 1, 8])]);
        assert_eq!(r.as_slice::<u8>().unwrap(), &[128, 254, 0]);
        // np.right_shift(np.array([255, 255, 2**64-1], np.uint64), np.array([4, 64, 63], np.uint64)) -> [15, 0, 1]
        let r = apply(RightShift, &[vec1(vec![255u64, 255, u64::MAX]), vec1(vec![4u64, 64, 63])]);
        assert_eq!(r.as_slice::<u64>().unwrap(), &[15, 0, 1]);
        // np.left_shift(np.array([1, 1]), np.array([63, 64])) -> [-2**63, 0];
        // np.right_shift(np.array([-2**63]), 63) -> [-1]
        let r = apply(LeftShift, &[vec1(vec![1i64, 1]), vec1(vec![63i64, 64])]);
        assert_eq!(r.as_slice::<i64>().unwrap(), &[i64::MIN, 0]);
        let r = apply(RightShift, &[vec1(vec![i64::MIN]), vec1(vec![63i64])]);
        assert_eq!(r.as_slice::<i64>().unwrap(), &[-1]);
    }

    #[test]
    fn where_and_bool_arithmetic() {
        // np.where([True, False, True], np.float32([1.5, 2.5, 3.5]), np.float32([-1, -2, -3])) -> [1.5, -2, 3.5]
        let r = apply(
            Where,
            &[
                vec1(vec![true, false, true]),
                vec1(vec![1.5f32, 2.5, 3.5]),
                vec1(vec![-1.0f32, -2.0, -3.0]),
            ],
        );
        assert_eq!(r.as_slice::<f32>().unwrap(), &[1.5, -2.0, 3.5]);
        // np.add / np.multiply on bools: [T, T, F, F] (+,*) [T, F, T, F] -> or / and
        let (a, b) = (vec1(vec![true, true, false, false]), vec1(vec![true, false, true, false]));
        assert_eq!(bools(&apply(Add, &[a.clone(), b.clone()])), vec![true, true, true, false]);
        assert_eq!(bools(&apply(Mul, &[a.clone(), b.clone()])), vec![true, false, false, false]);
        assert_eq!(
            bools(&apply(BitwiseXor, &[a.clone(), b.clone()])),
            vec![false, true, true, false]
        );
        assert_eq!(
            bools(&apply(LogicalXor, &[a.clone(), b.clone()])),
            vec![false, true, true, false]
        );
        assert_eq!(
            bools(&apply(LogicalAnd, &[a.clone(), b.clone()])),
            vec![true, false, false, false]
        );
        assert_eq!(bools(&apply(BitwiseOr, &[a.clone(), b])), vec![true, true, true, false]);
        assert_eq!(bools(&apply(Invert, std::slice::from_ref(&a))), vec![false, false, true, true]);
        assert_eq!(bools(&apply(LogicalNot, &[a])), vec![false, false, true, true]);
        // np.bitwise_and(np.int16([12, -1]), np.int16([10, 7])) -> [8, 7]
        let r = apply(BitwiseAnd, &[vec1(vec![12i16, -1]), vec1(vec![10i16, 7])]);
        assert_eq!(r.as_slice::<i16>().unwrap(), &[8, 7]);
    }

    #[test]
    fn comparisons() {
        let nan = f64::NAN;
        // np.array([nan, 1.0, nan]) != np.array([nan, 1.0, 1.0]) -> [True, False, True]
        let (a, b) = (vec1(vec![nan, 1.0, nan]), vec1(vec![nan, 1.0, 1.0]));
        assert_eq!(bools(&apply(Ne, &[a.clone(), b.clone()])), vec![true, false, true]);
        assert_eq!(bools(&apply(Eq, &[a.clone(), b.clone()])), vec![false, true, false]);
        assert_eq!(bools(&apply(Le, &[a.clone(), b.clone()])), vec![false, true, false]);
        assert_eq!(bools(&apply(Ge, &[a, b])), vec![false, true, false]);
        // np.array([1+1j, 1+2j, complex(1, nan), 2+0j]) < np.array([1+2j, 1+1j, 2+0j, complex(nan, 0)])
        //   -> [True, False, False, False]
        let a = vec1(vec![c(1.0, 1.0), c(1.0, 2.0), c(1.0, nan), c(2.0, 0.0)]);
        let b = vec1(vec![c(1.0, 2.0), c(1.0, 1.0), c(2.0, 0.0), c(nan, 0.0)]);
        assert_eq!(bools(&apply(Lt, &[a.clone(), b.clone()])), vec![true, false, false, false]);
        assert_eq!(bools(&apply(Gt, &[a, b])), vec![false, true, false, false]);
        // Unsigned and bool orderings: np.uint64(2**63) > np.uint64(1); True > False
        assert_eq!(bools(&apply(Gt, &[vec1(vec![1u64 << 63]), vec1(vec![1u64])])), vec![true]);
        assert_eq!(
            bools(&apply(Gt, &[vec1(vec![true, false]), vec1(vec![false, false])])),
            vec![true, false]
        );
    }

    #[test]
    fn powers() {
        // np.power(np.array([2, 3, -2, 0, 7], np.int8), np.array([7, 5, 7, 0, 3], np.int8)) -> [-128, -13, -128, 1, 87]
        let r = apply(Power, &[vec1(vec![2i8, 3, -2, 0, 7]), vec1(vec![7i8, 5, 7, 0, 3])]);
        assert_eq!(r.as_slice::<i8>().unwrap(), &[-128, -13, -128, 1, 87]);
        // np.power(np.array([3], np.uint64), np.array([41], np.uint64)) -> [18026252303461234787]
        let r = apply(Power, &[vec1(vec![3u64]), vec1(vec![41u64])]);
        assert_eq!(r.as_slice::<u64>().unwrap(), &[18026252303461234787]);
        // Negative integer exponents (a NumPy error): 1**-3 = 1, (-1)**-3 = -1, (-1)**-2 = 1, 2**-1 = 0
        let r = apply(Power, &[vec1(vec![1i32, -1, -1, 2]), vec1(vec![-3i32, -3, -2, -1])]);
        assert_eq!(r.as_slice::<i32>().unwrap(), &[1, -1, 1, 0]);
        // np.power(np.float32([2, -8, 0, -1]), np.float32([0.5, 1/3, -1, inf])) -> [1.4142135381698608, nan, inf, 1.0]
        let r = apply(
            Power,
            &[
                vec1(vec![2.0f32, -8.0, 0.0, -1.0]),
                vec1(vec![0.5f32, 1.0 / 3.0, -1.0, f32::INFINITY]),
            ],
        );
        assert_same(&f64s(&r), &[1.4142135381698608, f64::NAN, f64::INFINITY, 1.0]);
        // np.power(np.array([1+2j, 1+2j, 2+0j, 0j, 1j]), np.array([3+0j, -2+0j, 0.5+0.5j, 2+0j, 0j]))
        //   -> [-11-2j, -0.12-0.16j, 1.3301274004259787+0.48037599714809626j, 0j, 1+0j]
        let r = apply(
            Power,
            &[
                vec1(vec![c(1.0, 2.0), c(1.0, 2.0), c(2.0, 0.0), c(0.0, 0.0), c(0.0, 1.0)]),
                vec1(vec![c(3.0, 0.0), c(-2.0, 0.0), c(0.5, 0.5), c(2.0, 0.0), c(0.0, 0.0)]),
            ],
        );
        let want = [
            c(-11.0, -2.0),
            c(-0.12, -0.16),
            c(1.3301274004259787, 0.48037599714809626),
            c(0.0, 0.0),
            c(1.0, 0.0),
        ];
        for (g, w) in c64s(&r).iter().zip(&want) {
            assert!((g - w).norm() <= 4e-16 * w.norm().max(1.0), "{g} vs {w}");
        }
    }

    /// The evaluator's arcsinh, arccosh and arctanh are glibc's `asinh`, `acosh` and `atanh`
    /// bit for bit (NumPy and the compiled kernels call glibc): over every binade, densely near
    /// 1 and ±1, and at the branch points and edges.
    #[test]
    fn inverse_hyperbolics_are_glibcs() {
        extern "C" {
            // C99 functions from the process's libm (glibc on the machines kiln runs on).
            fn asinh(x: f64) -> f64;
            fn acosh(x: f64) -> f64;
            fn atanh(x: f64) -> f64;
        }
        let mut xs: Vec<f64> =
            vec![0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.0, -2.0, 2.0000001, 1.0000000000000002];
        xs.extend([
            f64::INFINITY,
            -f64::INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MAX,
            5e-324,
            1e-300,
            -3e-9,
            3e8,
            -3e8,
        ]);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for i in 0..300_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let s = if state & 1 == 0 { 1.0 } else { -1.0 };
            xs.push(match i % 5 {
                // Every binade; 2^-60 .. 2^40; 1 + 2^-k; ±(1 - 2^-k); uniform on (-4, 4).
                0 => s * (u * 2000.0 - 1000.0).exp2(),
                1 => s * (u * 100.0 - 60.0).exp2(),
                2 => 1.0 + (u * 60.0 - 55.0).exp2(),
                3 => s * (1.0 - (-u * 52.0).exp2()),
                _ => s * u * 4.0,
            });
        }
        fn glibc_asinh(x: f64) -> f64 {
            // SAFETY: a pure libm function of one double.
            unsafe { asinh(x) }
        }
        fn glibc_acosh(x: f64) -> f64 {
            // SAFETY: a pure libm function of one double.
            unsafe { acosh(x) }
        }
        fn glibc_atanh(x: f64) -> f64 {
            // SAFETY: a pure libm function of one double.
            unsafe { atanh(x) }
        }
        type F = fn(f64) -> f64;
        let pairs: [(&str, F, F); 3] = [
            ("asinh", super::asinh, glibc_asinh),
            ("acosh", super::acosh, glibc_acosh),
            ("atanh", super::atanh, glibc_atanh),
        ];
        for (name, ours, glibc) in pairs {
            for &x in &xs {
                let (got, want) = (ours(x), glibc(x));
                let same = got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan();
                assert!(same, "{name}({x:e}): {got:e}, glibc {want:e}");
            }
        }
    }

    #[test]
    fn signs_abs_rounding_and_friends() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        // np.sign(np.array([-3.5, 0.0, -0.0, nan, inf])) -> [-1.0, 0.0, 0.0, nan, 1.0]
        assert_same(
            &f64s(&apply(Sign, &[vec1(vec![-3.5, 0.0, -0.0, nan, inf])])),
            &[-1.0, 0.0, 0.0, nan, 1.0],
        );
        assert_eq!(apply(Sign, &[vec1(vec![-3i16, 0, 5])]).as_slice::<i16>().unwrap(), &[-1, 0, 1]);
        // np.sign(np.array([3+4j, 0j, complex(inf, 1), complex(1, -inf), complex(nan, 1), complex(inf, inf)]))
        //   -> [0.6+0.8j, 0j, 1+0j, -1j, nan+nanj, nan+nanj]
        let z = vec1(vec![
            c(3.0, 4.0),
            c(0.0, 0.0),
            c(inf, 1.0),
            c(1.0, -inf),
            c(nan, 1.0),
            c(inf, inf),
        ]);
        let got = c64s(&apply(Sign, &[z]));
        assert_eq!(&got[..4], &[c(0.6, 0.8), c(0.0, 0.0), c(1.0, 0.0), c(0.0, -1.0)]);
        assert!(
            got[4].re.is_nan() && got[4].im.is_nan() && got[5].re.is_nan() && got[5].im.is_nan()
        );
        // np.abs(np.array([3+4j, complex(-inf, nan)])) -> [5.0, inf]; np.abs(3e200+4e200j) -> 4.9999999999999995e+200
        let r = apply(Abs, &[vec1(vec![c(3.0, 4.0), c(-inf, nan), c(3e200, 4e200)])]);
        assert_eq!(r.dtype(), DType::Float64);
        assert_same(&f64s(&r), &[5.0, inf, 4.9999999999999995e200]);
        // complex64 abs is float32: np.abs(np.complex64(1+1j)) -> 1.4142135
        let r = apply(Abs, &[vec1(vec![Complex32::new(1.0, 1.0)])]);
        assert_eq!(r.as_slice::<f32>().unwrap(), &[std::f32::consts::SQRT_2]);
        // np.rint(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996])) -> [0, 2, 2, -0, -2, 2]
        let r = apply(Rint, &[vec1(vec![0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996])]);
        assert_same(&f64s(&r), &[0.0, 2.0, 2.0, -0.0, -2.0, 2.0]);
        // np.logaddexp([inf, -inf, 1, nan, 1000, -1000], [inf, -inf, 2, 1, 1000, -999])
        //   -> [inf, -inf, 2.313261687518223, nan, 1000.6931471805599, -998.6867383124818]
        let r = apply(
            LogAddExp,
            &[
                vec1(vec![inf, -inf, 1.0, nan, 1000.0, -1000.0]),
                vec1(vec![inf, -inf, 2.0, 1.0, 1000.0, -999.0]),
            ],
        );
        assert_same(
            &f64s(&r),
            &[inf, -inf, 2.313261687518223, nan, 1000.6931471805599, -998.6867383124818],
        );
        // np.hypot([3, 1e300, inf], [4, 1e300, nan]) -> [5.0, 1.4142135623730952e+300, inf]
        let r = apply(Hypot, &[vec1(vec![3.0, 1e300, inf]), vec1(vec![4.0, 1e300, nan])]);
        assert_same(&f64s(&r), &[5.0, 1.4142135623730952e300, inf]);
        // np.arctan2([1, -0., 0., -1], [-1, -1, -0., 0]) -> [2.356194490192345, -pi, pi, -pi/2]
        let r =
            apply(Arctan2, &[vec1(vec![1.0, -0.0, 0.0, -1.0]), vec1(vec![-1.0, -1.0, -0.0, 0.0])]);
        assert_same(
            &f64s(&r),
            &[2.356194490192345, -3.141592653589793, 3.141592653589793, -1.5707963267948966],
        );
        // np.copysign([1, -2, 3], [-0., 1, nan]) -> [-1, 2, 3]
        let r = apply(CopySign, &[vec1(vec![1.0, -2.0, 3.0]), vec1(vec![-0.0, 1.0, nan])]);
        assert_same(&f64s(&r), &[-1.0, 2.0, 3.0]);
        // [math.erf(v) for v in [0.0, 0.5, -1.0, 1e-10, 3.0, 6.0]]
        let r = apply(Erf, &[vec1(vec![0.0, 0.5, -1.0, 1e-10, 3.0, 6.0])]);
        assert_same(
            &f64s(&r),
            &[
                0.0,
                0.5204998778130465,
                -0.8427007929497149,
                1.1283791670955126e-10,
                0.9999779095030014,
                1.0,
            ],
        );
        // np.reciprocal(np.int16([1, -1, 2, -3])) -> [1, -1, 0, 0]; float [2, 0, -0.] -> [0.5, inf, -inf]
        assert_eq!(
            apply(Reciprocal, &[vec1(vec![1i16, -1, 2, -3])]).as_slice::<i16>().unwrap(),
            &[1, -1, 0, 0]
        );
        assert_same(&f64s(&apply(Reciprocal, &[vec1(vec![2.0, 0.0, -0.0])])), &[0.5, inf, -inf]);
        // np.reciprocal(np.array([1+1j, 3-4j])) -> [0.5-0.5j, 0.12+0.16j]
        assert_close_c(
            &c64s(&apply(Reciprocal, &[vec1(vec![c(1.0, 1.0), c(3.0, -4.0)])])),
            &[c(0.5, -0.5), c(0.12, 0.16)],
            1e-16,
        );
        // np.array([1+2j, 1+1j, 1+0j]) / np.array([3-4j, 0j, 0j]) -> [-0.2+0.4j, inf+infj, inf+nanj]
        let r = c64s(&apply(
            Div,
            &[
                vec1(vec![c(1.0, 2.0), c(1.0, 1.0), c(1.0, 0.0)]),
                vec1(vec![c(3.0, -4.0), c(0.0, 0.0), c(0.0, 0.0)]),
            ],
        ));
        assert_close_c(&r[..1], &[c(-0.2, 0.4)], 1e-16);
        assert_eq!(r[1], c(inf, inf));
        assert!(r[2].re == inf && r[2].im.is_nan());
        // isnan/isinf/isfinite on complex look at both parts
        let z = vec1(vec![c(1.0, nan), c(0.0, 1.0), c(1.0, inf)]);
        assert_eq!(bools(&apply(IsNan, std::slice::from_ref(&z))), vec![true, false, false]);
        assert_eq!(bools(&apply(IsInf, std::slice::from_ref(&z))), vec![false, false, true]);
        assert_eq!(bools(&apply(IsFinite, &[z])), vec![false, true, false]);
        // real/imag/conjugate: np.real(np.complex64(1+2j)) is float32 1.0
        let z = vec1(vec![Complex32::new(1.0, 2.0)]);
        assert_eq!(apply(Real, std::slice::from_ref(&z)).as_slice::<f32>().unwrap(), &[1.0]);
        assert_eq!(apply(Imag, std::slice::from_ref(&z)).as_slice::<f32>().unwrap(), &[2.0]);
        assert_eq!(
            apply(Conj, &[z]).as_slice::<Complex32>().unwrap(),
            &[Complex32::new(1.0, -2.0)]
        );
    }

    /// f64 results against NumPy (np.FUNC(X)); libm may differ from NumPy's by an ulp.
    #[test]
    fn real_functions_match_numpy() {
        const X: [f64; 6] = [0.3, -0.7, 1.5, 2.0, 1e-8, 10.0];
        let table: &[(&str, [f64; 6])] = &[
            (
                "exp",
                [
                    1.3498588075760032,
                    0.4965853037914095,
                    4.4816890703380645,
                    7.38905609893065,
                    1.00000001,
                    22026.465794806718,
                ],
            ),
            (
                "exp2",
                [
                    1.2311444133449163,
                    0.6155722066724582,
                    2.8284271247461903,
                    4.0,
                    1.0000000069314718,
                    1024.0,
                ],
            ),
            (
                "expm1",
                [
                    0.3498588075760031,
                    -0.5034146962085905,
                    3.481689070338065,
                    6.38905609893065,
                    1.0000000050000001e-08,
                    22025.465794806718,
                ],
            ),
            (
                "log",
                [
                    -1.2039728043259361,
                    f64::NAN,
                    0.4054651081081644,
                    0.6931471805599453,
                    -18.420680743952367,
                    2.302585092994046,
                ],
            ),
            (
                "log2",
                [
                    -1.7369655941662063,
                    f64::NAN,
                    0.5849625007211562,
                    1.0,
                    -26.575424759098897,
                    3.321928094887362,
                ],
            ),
            (
                "log10",
                [-0.5228787452803376, f64::NAN, 0.17609125905568124, 0.3010299956639812, -8.0, 1.0],
            ),
            (
                "log1p",
                [
                    0.26236426446749106,
                    -1.203972804325936,
                    0.9162907318741551,
                    1.0986122886681098,
                    9.999999950000001e-09,
                    2.3978952727983707,
                ],
            ),
            (
                "sin",
                [
                    0.29552020666133955,
                    -0.644217687237691,
                    0.9974949866040544,
                    0.9092974268256817,
                    1e-08,
                    -0.5440211108893698,
                ],
            ),
            (
                "cos",
                [
                    0.955336489125606,
                    0.7648421872844885,
                    0.0707372016677029,
                    -0.4161468365471424,
                    1.0,
                    -0.8390715290764524,
                ],
            ),
            (
                "tan",
                [
                    0.3093362496096232,
                    -0.8422883804630794,
                    14.101419947171719,
                    -2.185039863261519,
                    1e-08,
                    0.6483608274590866,
                ],
            ),
            (
                "arcsin",
                [0.30469265401539747, -0.775397496610753, f64::NAN, f64::NAN, 1e-08, f64::NAN],
            ),
            (
                "arccos",
                [
                    1.2661036727794992,
                    2.34619382340565,
                    f64::NAN,
                    f64::NAN,
                    1.5707963167948966,
                    f64::NAN,
                ],
            ),
            (
                "arctan",
                [
                    0.2914567944778671,
                    -0.6107259643892086,
                    0.982793723247329,
                    1.1071487177940904,
                    1e-08,
                    1.4711276743037347,
                ],
            ),
            (
                "sinh",
                [
                    0.3045202934471426,
                    -0.7585837018395335,
                    2.1292794550948173,
                    3.6268604078470186,
                    1e-08,
                    11013.232874703393,
                ],
            ),
            (
                "cosh",
                [
                    1.0453385141288605,
                    1.255169005630943,
                    2.352409615243247,
                    3.7621956910836314,
                    1.0,
                    11013.232920103323,
                ],
            ),
            (
                "tanh",
                [
                    0.2913126124515909,
                    -0.6043677771171634,
                    0.9051482536448665,
                    0.9640275800758169,
                    1e-08,
                    0.9999999958776927,
                ],
            ),
            (
                "arcsinh",
                [
                    0.29567304756342244,
                    -0.6526665660823557,
                    1.1947632172871092,
                    1.4436354751788103,
                    1e-08,
                    2.99822295029797,
                ],
            ),
            (
                "arccosh",
                [
                    f64::NAN,
                    f64::NAN,
                    0.9624236501192069,
                    1.3169578969248168,
                    f64::NAN,
                    2.993222846126381,
                ],
            ),
            (
                "arctanh",
                [0.3095196042031117, -0.8673005276940531, f64::NAN, f64::NAN, 1e-08, f64::NAN],
            ),
            (
                "sqrt",
                [
                    0.5477225575051661,
                    f64::NAN,
                    1.224744871391589,
                    1.4142135623730951,
                    0.0001,
                    3.1622776601683795,
                ],
            ),
            (
                "cbrt",
                [
                    0.6694329500821695,
                    -0.8879040017426006,
                    1.1447142425533319,
                    1.2599210498948732,
                    0.002154434690031884,
                    2.154434690031884,
                ],
            ),
            ("floor", [0.0, -1.0, 1.0, 2.0, 0.0, 10.0]),
            ("ceil", [1.0, -0.0, 2.0, 2.0, 1.0, 10.0]),
            ("trunc", [0.0, -0.0, 1.0, 2.0, 0.0, 10.0]),
            ("square", [0.09, 0.48999999999999994, 2.25, 4.0, 1.0000000000000001e-16, 100.0]),
        ];
        for (name, want) in table {
            let op = OpKind::from_name(name).unwrap();
            let got = f64s(&apply(op, &[vec1(X.to_vec())]));
            assert_close(&got, want, 4.5e-16);
        }
    }

    /// complex128 results against NumPy (np.FUNC(Z)).
    #[test]
    fn complex_functions_match_numpy() {
        let zs = vec![c(0.3, 0.4), c(-1.5, 0.2), c(2.0, -1.0), c(-0.5, -0.5)];
        let table: &[(&str, [Complex64; 4])] = &[
            (
                "exp",
                [
                    c(1.2433022950695027, 0.5256597791969788),
                    c(0.2186824124698398, 0.04432911959688339),
                    c(3.992324048441272, -6.217676312367968),
                    c(0.5322807302156708, -0.29078628821269187),
                ],
            ),
            (
                "exp2",
                [
                    c(1.184126211560744, 0.33698914167254423),
                    c(0.3501615121026693, 0.04885606862992747),
                    c(3.0769556054558884, -2.555845105254539),
                    c(0.6650637002129894, -0.24018799857404816),
                ],
            ),
            (
                "expm1",
                [
                    c(0.24330229506950263, 0.5256597791969788),
                    c(-0.7813175875301602, 0.04432911959688339),
                    c(2.992324048441272, -6.217676312367968),
                    c(-0.4677192697843293, -0.29078628821269187),
                ],
            ),
            (
                "log",
                [
                    c(-0.6931471805599453, 0.9272952180016123),
                    c(0.41427590878307413, 3.0090411212931194),
                    c(0.8047189562170503, -0.4636476090008061),
                    c(-0.34657359027997264, -2.356194490192345),
                ],
            ),
            (
                "log2",
                [
                    c(-1.0, 1.3378042124509764),
                    c(0.5976737991611096, 4.341128703520549),
                    c(1.1609640474436813, -0.6689021062254881),
                    c(-0.5, -3.399270106370395),
                ],
            ),
            (
                "log10",
                [
                    c(-0.3010299956639812, 0.40271919627337316),
                    c(0.179917741169944, 1.3068099547975751),
                    c(0.34948500216800943, -0.20135959813668655),
                    c(-0.1505149978319906, -1.023282265381381),
                ],
            ),
            (
                "log1p",
                [
                    c(0.30759281954511686, 0.2984989315861793),
                    c(-0.6189371780008087, 2.761086276477428),
                    c(1.151292546497023, -0.3217505543966422),
                    c(-0.3465735902799726, -0.7853981633974483),
                ],
            ),
            (
                "sin",
                [
                    c(0.31947873074156474, 0.3924066848326388),
                    c(-1.0175114747314913, 0.014241945414718512),
                    c(1.4031192506220405, 0.4890562590412937),
                    c(-0.5406126857131534, -0.4573041531842493),
                ],
            ),
            (
                "cos",
                [
                    c(1.0327878842028413, -0.12138561220787392),
                    c(0.07215666780674598, 0.20083165315764245),
                    c(-0.64214812471552, 1.0686074213827783),
                    c(0.9895848833999199, -0.24982639750046154),
                ],
            ),
            (
                "tan",
                [
                    c(0.26107368184166296, 0.4106334708425564),
                    c(-1.5494093255078936, 4.509803342719125),
                    c(-0.2434582011857253, -1.16673625724092),
                    c(-0.40389645531602575, -0.5640831412674985),
                ],
            ),
            (
                "arcsin",
                [
                    c(0.2806295622918058, 0.4051123371780309),
                    c(-1.395847113661427, 0.9829370179713875),
                    c(1.0634400235777521, -1.4693517443681852),
                    c(-0.45227844715119064, -0.5306375309525179),
                ],
            ),
            (
                "arccos",
                [
                    c(1.2901667645030908, -0.4051123371780309),
                    c(2.9666434404563238, -0.9829370179713875),
                    c(0.5073563032171445, 1.4693517443681852),
                    c(2.0230747739460875, 0.5306375309525179),
                ],
            ),
            (
                "arctan",
                [
                    c(0.3373704711117763, 0.37908687234202215),
                    c(-0.9884471925562561, 0.06109248898202376),
                    c(1.1780972450961724, -0.17328679513998632),
                    c(-0.5535743588970452, -0.40235947810852507),
                ],
            ),
            (
                "sinh",
                [
                    c(0.2804817641764754, 0.4070739913234487),
                    c(-2.0868356288224414, 0.46735164401624335),
                    c(1.9596010414216063, -3.165778513216168),
                    c(-0.4573041531842493, -0.5406126857131534),
                ],
            ),
            (
                "cosh",
                [
                    c(0.9628205308930272, 0.11858578787353008),
                    c(2.3055180412922813, -0.42302252441935995),
                    c(2.0327230070196656, -3.0518977991518),
                    c(0.9895848833999199, 0.24982639750046154),
                ],
            ),
            (
                "tanh",
                [
                    c(0.33825474326547145, 0.3811320742724429),
                    c(-0.9116505108670387, 0.03543799790665429),
                    c(1.0147936161466335, -0.03381282607989669),
                    c(-0.5640831412674985, -0.40389645531602575),
                ],
            ),
            (
                "arcsinh",
                [
                    c(0.3189624333048184, 0.3903162045220237),
                    c(-1.1998761507906222, 0.11069455915999243),
                    c(1.528570919480998, -0.42707858639247614),
                    c(-0.5306375309525179, -0.45227844715119064),
                ],
            ),
            (
                "arccosh",
                [
                    c(0.4051123371780309, 1.2901667645030908),
                    c(0.9829370179713875, 2.9666434404563238),
                    c(1.4693517443681852, -0.5073563032171445),
                    c(0.5306375309525179, -2.0230747739460875),
                ],
            ),
            (
                "arctanh",
                [
                    c(0.2614921387956719, 0.4088225229163511),
                    c(-0.7692088566784916, 1.4204581310948328),
                    c(0.40235947810852507, -1.3389725222944935),
                    c(-0.40235947810852507, -0.5535743588970452),
                ],
            ),
            (
                "sqrt",
                [
                    c(0.6324555320336759, 0.31622776601683794),
                    c(0.08146961102814838, 1.2274515458954287),
                    c(1.455346690225355, -0.34356074972251244),
                    c(0.3217971264527913, -0.7768869870150187),
                ],
            ),
            (
                "square",
                [
                    c(-0.07000000000000003, 0.24),
                    c(2.21, -0.6000000000000001),
                    c(3.0, -4.0),
                    c(0.0, 0.5),
                ],
            ),
            (
                "reciprocal",
                [
                    c(1.1999999999999997, -1.6),
                    c(-0.6550218340611353, -0.08733624454148471),
                    c(0.4, 0.2),
                    c(-1.0, 1.0),
                ],
            ),
        ];
        for (name, want) in table {
            let op = OpKind::from_name(name).unwrap();
            let got = c64s(&apply(op, &[vec1(zs.clone())]));
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).norm() <= 1e-15 * w.norm(), "{name}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn float32_ops_are_correctly_rounded() {
        // np.exp(np.float32(0.3).astype(np.float64)).astype(np.float32) -> 1.3498588800430298
        // (NumPy's own float32 exp gives 1.3498587608337402, an ulp off; the oracle rounds once)
        let r = apply(Exp, &[vec1(vec![0.3f32, 10.0])]);
        assert_eq!(r.as_slice::<f32>().unwrap(), &[1.3498588800430298f64 as f32, 22026.46484375]);
        // np.sin(np.float32([0.3, 2.0])) -> [0.29552021622657776, 0.9092974066734314]
        let r = apply(Sin, &[vec1(vec![0.3f32, 2.0])]);
        assert_eq!(
            r.as_slice::<f32>().unwrap(),
            &[0.29552021622657776f64 as f32, 0.9092974066734314f64 as f32]
        );
    }

    #[test]
    fn casts() {
        let cast = |to: DType, x: crate::HostArray| {
            apply_with(OpKind::Cast, Attrs::DType { dtype: to }, &[x])
        };
        // np.array([2.7, -2.7, -0.5], np.float32).astype(np.int32) -> [2, -2, 0]
        assert_eq!(
            cast(DType::Int32, vec1(vec![2.7f32, -2.7, -0.5])).as_slice::<i32>().unwrap(),
            &[2, -2, 0]
        );
        // np.array([1.5-2j]).astype(np.float64) -> [1.5]
        assert_eq!(
            cast(DType::Float64, vec1(vec![c(1.5, -2.0)])).as_slice::<f64>().unwrap(),
            &[1.5]
        );
        // np.array([0.0, -0.0, nan, 0.1]).astype(bool) -> [False, False, True, True]
        assert_eq!(
            bools(&cast(DType::Bool, vec1(vec![0.0, -0.0, f64::NAN, 0.1]))),
            vec![false, false, true, true]
        );
        // np.array([300, -1], np.int32).astype(np.uint8) -> [44, 255]
        assert_eq!(
            cast(DType::UInt8, vec1(vec![300i32, -1])).as_slice::<u8>().unwrap(),
            &[44, 255]
        );
        // np.array([0.1]).astype(np.float16) -> 0.0999755859375; .astype(ml_dtypes.bfloat16) -> 0.10009765625
        assert_eq!(f64s(&cast(DType::Float16, vec1(vec![0.1]))), vec![0.0999755859375]);
        assert_eq!(f64s(&cast(DType::BFloat16, vec1(vec![0.1]))), vec![0.10009765625]);
        // np.array([True, False]).astype(np.complex64) -> [1+0j, 0j]
        let r = cast(DType::Complex64, vec1(vec![true, false]));
        assert_eq!(
            r.as_slice::<Complex32>().unwrap(),
            &[Complex32::new(1.0, 0.0), Complex32::new(0.0, 0.0)]
        );
    }
}
