//! Elementwise ops on single values, with NumPy's semantics.
//!
//! Each function takes the operands' dtype and values in the canonical form of that dtype
//! ([`super::value`]) and returns the exact or wide result (i64/u64 wrapping, f64,
//! `Complex<f64>`); the caller converts it to the result dtype with [`super::value::cast`], which
//! wraps integers to their width and rounds floats once. Operands outside an op's domain cannot
//! reach these functions: the evaluator type-checks every node first.

use num_complex::Complex64 as C64;

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

// ---------------------------------------------------------------- complex helpers (NumPy's loops)

fn cmul(a: C64, b: C64) -> C64 {
    C64::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

/// NumPy's complex division (Smith's algorithm; a zero divisor gives inf or NaN parts).
fn cdiv(a: C64, b: C64) -> C64 {
    let (br_abs, bi_abs) = (b.re.abs(), b.im.abs());
    if br_abs >= bi_abs {
        if br_abs == 0.0 && bi_abs == 0.0 {
            C64::new(a.re / br_abs, a.im / br_abs)
        } else {
            let rat = b.im / b.re;
            let scl = 1.0 / (b.re + b.im * rat);
            C64::new((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl)
        }
    } else {
        let rat = b.re / b.im;
        let scl = 1.0 / (b.im + b.re * rat);
        C64::new((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl)
    }
}

/// The principal square root, C99's `csqrt` (special values per Annex G; scaled so that no
/// intermediate overflows).
fn csqrt(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if y.is_infinite() {
        return C64::new(f64::INFINITY, y);
    }
    if x.is_nan() {
        return C64::new(x, f64::NAN);
    }
    if x.is_infinite() {
        if y.is_nan() {
            return if x > 0.0 { C64::new(x, y) } else { C64::new(y, f64::INFINITY) };
        }
        return if x > 0.0 {
            C64::new(x, 0.0f64.copysign(y))
        } else {
            C64::new(0.0, f64::INFINITY.copysign(y))
        };
    }
    if y.is_nan() {
        return C64::new(f64::NAN, f64::NAN);
    }
    if x == 0.0 && y == 0.0 {
        return C64::new(0.0, y);
    }
    // Scale huge inputs down by 4 (result up by 2) and tiny ones up.
    let big = f64::MAX / 4.0;
    let (x, y, k) = if x.abs() > big || y.abs() > big {
        (x * 0.25, y * 0.25, 2.0)
    } else if x.abs() < 1e-300 && y.abs() < 1e-300 {
        (x * 2f64.powi(600), y * 2f64.powi(600), 2f64.powi(-300))
    } else {
        (x, y, 1.0)
    };
    let t = ((x.abs() + x.hypot(y)) * 0.5).sqrt();
    if x >= 0.0 {
        C64::new(t * k, y / (2.0 * t) * k)
    } else {
        C64::new(y.abs() / (2.0 * t) * k, t.copysign(y) * k)
    }
}

/// NumPy's complex power (`nc_pow`): x**0 = 1; 0**y is 0 for real y > 0 and NaN otherwise; small
/// integer exponents by repeated multiplication; else exp(y·log(x)).
fn cpow(a: C64, b: C64) -> C64 {
    if b.re == 0.0 && b.im == 0.0 {
        return C64::new(1.0, 0.0);
    }
    if a.re == 0.0 && a.im == 0.0 {
        return if b.re > 0.0 && b.im == 0.0 { C64::new(0.0, 0.0) } else { C64::new(f64::NAN, f64::NAN) };
    }
    if b.im == 0.0 && b.re == b.re.trunc() && b.re.abs() < 100.0 {
        let n = b.re as i64;
        match n {
            1 => return a,
            2 => return cmul(a, a),
            3 => return cmul(cmul(a, a), a),
            _ => {
                let mut m = n.unsigned_abs();
                let (mut acc, mut p) = (C64::new(1.0, 0.0), a);
                loop {
                    if m & 1 == 1 {
                        acc = cmul(acc, p);
                    }
                    m >>= 1;
                    if m == 0 {
                        break;
                    }
                    p = cmul(p, p);
                }
                return if n < 0 { cdiv(C64::new(1.0, 0.0), acc) } else { acc };
            }
        }
    }
    (b * a.ln()).exp()
}

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
    inexact("exp", v, f64::exp, |z| z.exp())
}

pub fn exp2(_: DType, v: Value) -> Value {
    inexact("exp2", v, f64::exp2, |z| (z * std::f64::consts::LN_2).exp())
}

/// NumPy's complex expm1: (expm1(x)·cos(y) - 2·sin²(y/2), exp(x)·sin(y)).
pub fn expm1(_: DType, v: Value) -> Value {
    inexact("expm1", v, f64::exp_m1, |z| {
        let a = (z.im / 2.0).sin();
        C64::new(z.re.exp_m1() * z.im.cos() - 2.0 * a * a, z.re.exp() * z.im.sin())
    })
}

pub fn log(_: DType, v: Value) -> Value {
    inexact("log", v, f64::ln, |z| z.ln())
}

pub fn log2(_: DType, v: Value) -> Value {
    inexact("log2", v, f64::log2, |z| z.ln() * std::f64::consts::LOG2_E)
}

pub fn log10(_: DType, v: Value) -> Value {
    inexact("log10", v, f64::log10, |z| z.ln() * std::f64::consts::LOG10_E)
}

/// NumPy's complex log1p: (log(hypot(x + 1, y)), atan2(y, x + 1)).
pub fn log1p(_: DType, v: Value) -> Value {
    inexact("log1p", v, f64::ln_1p, |z| C64::new((z.re + 1.0).hypot(z.im).ln(), z.im.atan2(z.re + 1.0)))
}

pub fn sin(_: DType, v: Value) -> Value {
    inexact("sin", v, f64::sin, |z| z.sin())
}
pub fn cos(_: DType, v: Value) -> Value {
    inexact("cos", v, f64::cos, |z| z.cos())
}
pub fn tan(_: DType, v: Value) -> Value {
    inexact("tan", v, f64::tan, |z| z.tan())
}
pub fn arcsin(_: DType, v: Value) -> Value {
    inexact("arcsin", v, f64::asin, |z| z.asin())
}
pub fn arccos(_: DType, v: Value) -> Value {
    inexact("arccos", v, f64::acos, |z| z.acos())
}
pub fn arctan(_: DType, v: Value) -> Value {
    inexact("arctan", v, f64::atan, |z| z.atan())
}
pub fn sinh(_: DType, v: Value) -> Value {
    inexact("sinh", v, f64::sinh, |z| z.sinh())
}
pub fn cosh(_: DType, v: Value) -> Value {
    inexact("cosh", v, f64::cosh, |z| z.cosh())
}
pub fn tanh(_: DType, v: Value) -> Value {
    inexact("tanh", v, f64::tanh, |z| z.tanh())
}
pub fn arcsinh(_: DType, v: Value) -> Value {
    inexact("arcsinh", v, f64::asinh, |z| z.asinh())
}
pub fn arccosh(_: DType, v: Value) -> Value {
    inexact("arccosh", v, f64::acosh, |z| z.acosh())
}
pub fn arctanh(_: DType, v: Value) -> Value {
    inexact("arctanh", v, f64::atanh, |z| z.atanh())
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
/// Round to nearest, ties to even (np.rint: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2).
pub fn rint(_: DType, v: Value) -> Value {
    real("rint", v, f64::round_ties_even)
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
        (UInt(x), UInt(y)) => UInt(if y == 0 { 0 } else { x / y }),
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

fn bitwise(op: &str, a: Value, b: Value, fb: fn(bool, bool) -> bool, fi: fn(u64, u64) -> u64) -> Value {
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
