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
mod tests;
