//! Math functions without a library ([`MathLib::Polynomial`](super::MathLib)): for GPUs where
//! libdevice is missing. Float32 only (float16 and bfloat16 compute in float32): float64
//! functions are [`Unsupported`], naming the function and libdevice.
//!
//! Two kinds of code:
//! - MLIR's polynomial approximation of `erf`: emitted as `math.erf` and rewritten into `arith`
//!   ops when the module is compiled (`shim/approximate.cpp`,
//!   `populateMathPolynomialApproximationPatterns`; 3 ulps).
//! - Every other function: an expansion in f64 arithmetic (add, multiply, divide, fma, sqrt,
//!   roundeven: instructions on every target) of the float32 argument, rounded once to float32.
//!   They rest on three f64 kernels, [`exp_f64`], [`log_f64`] and [`atan_pos`], accurate to
//!   about 2^-50 relative, so each float32 result is within one ulp (usually correctly rounded).
//!
//! MLIR's other float32 approximations were measured against the reference evaluator
//! (`tests/suite/polynomial.rs`) and are not used: `exp` flushes subnormal results to 0 (5.9·10^6
//! ulps at x = -87.7), `log`/`log2` are wrong for subnormal arguments (-87.3 for ln 1.4·10^-45),
//! `cbrt` gives NaN for inf and is wrong for subnormals, `atan` is 40 ulps off, `atan2` has the
//! wrong sign for (-2·10^-16, -2·10^31) and gives NaN for (-0, -0), `asin` 7 ulps; its `sin`/`cos`
//! reduce the argument by one float32 constant (errors of 10^-3 near |x| = 10^5). MLIR's
//! expansions (`-math-expand-ops`) are not used either: `sinh` as `(e^x - e^-x)/2`, `asinh` as
//! `log(x + sqrt(x²+1))` and `atanh` as `log((1+x)/(1-x))/2` in float32 cancel near 0, `exp2` as
//! `exp(x ln 2)` and `pow` as `exp(y log x)` lose up to ~|y log x| ulps.
//!
//! `sin`, `cos` and `tan` reduce the argument by π/2 in f64 with a three-part constant and fmas:
//! accurate for |x| < 2^48; beyond that (float32 values of 2.8·10^14 and more, whose reduction
//! needs Payne–Hanek's many bits of 2/π) they return NaN rather than a wrong number.
//!
//! The accuracy measured against the reference evaluator is in `codegen`'s docs ("Accuracy").

use super::builder::Builder;
use super::types::{float_const, int_const};
use super::Unsupported;

/// f64, the type of the expansions' arithmetic.
const D: &str = "f64";

/// Largest |x| whose sine and cosine are computed (see the module docs).
const TRIG_LIMIT: f64 = 281474976710656.0; // 2^48

/// `name(args)` in `ty` (f32 or f64) without a library. `name` is the `math` dialect's name
/// (`exp`, `powf`, `atan2`, ...) or kiln's (`logaddexp`).
pub(crate) fn function(
    b: &mut Builder,
    name: &str,
    args: &[&str],
    ty: &str,
) -> Result<String, Unsupported> {
    if ty != "f32" {
        return Err(Unsupported::new(
            None,
            format!(
                "{ty} `{name}` without libdevice (MLIR's polynomial approximations are float32 only; \
                 set KILN_LIBDEVICE to libdevice.10.bc)"
            ),
        ));
    }
    if name == "erf" {
        return Ok(b.op(&format!("math.{name} {} : f32", args.join(", "))));
    }
    let x = ext(b, args[0]);
    let r = match name {
        "exp" => exp_f64(b, &x),
        "expm1" => expm1(b, &x),
        "log" => log_f64(b, &x),
        "log2" => {
            let l = log_f64(b, &x);
            mul_k(b, &l, std::f64::consts::LOG2_E)
        }
        "log1p" => log1p(b, &x),
        "cbrt" => {
            // |x|^(1/3) = e^(ln|x| / 3), with x's sign.
            let a = unary(b, "math.absf", &x);
            let l = log_f64(b, &a);
            let t = mul_k(b, &l, 1.0 / 3.0);
            let r = exp_f64(b, &t);
            copysign(b, &r, &x)
        }
        "atan" => {
            let a = unary(b, "math.absf", &x);
            let r = atan_pos(b, &a);
            copysign(b, &r, &x)
        }
        "atan2" => {
            let xx = ext(b, args[1]);
            atan2(b, &x, &xx)
        }
        "asin" => {
            // atan(x / sqrt((1 - x)(1 + x))): ±inf at |x| = 1 gives ±π/2; NaN beyond.
            let one = k(b, 1.0);
            let m = bin(b, "subf", &one, &x);
            let p = bin(b, "addf", &one, &x);
            let d = bin(b, "mulf", &m, &p);
            let root = unary(b, "math.sqrt", &d);
            let q = bin(b, "divf", &x, &root);
            let a = unary(b, "math.absf", &q);
            let r = atan_pos(b, &a);
            let r = copysign(b, &r, &x);
            let nan = cmp(b, "uno", &q, &q);
            sel(b, &nan, &q, &r)
        }
        "acos" => {
            // 2 atan(sqrt((1 - x)/(1 + x))): π at x = -1, 0 at 1, NaN beyond.
            let one = k(b, 1.0);
            let m = bin(b, "subf", &one, &x);
            let p = bin(b, "addf", &one, &x);
            let q = bin(b, "divf", &m, &p);
            let root = unary(b, "math.sqrt", &q);
            let r = atan_pos(b, &root);
            bin(b, "addf", &r, &r)
        }
        "exp2" => {
            let t = mul_k(b, &x, std::f64::consts::LN_2);
            exp_f64(b, &t)
        }
        "log10" => {
            let l = log_f64(b, &x);
            mul_k(b, &l, std::f64::consts::LOG10_E)
        }
        "sin" | "cos" | "tan" => trig(b, name, &x),
        "sinh" | "cosh" | "tanh" => hyperbolic(b, name, &x),
        "asinh" | "acosh" | "atanh" => inverse_hyperbolic(b, name, &x),
        "powf" => {
            let y = ext(b, args[1]);
            power(b, &x, &y)
        }
        "hypot" => {
            let y = ext(b, args[1]);
            hypot(b, &x, &y)
        }
        "logaddexp" => {
            let y = ext(b, args[1]);
            logaddexp(b, &x, &y)
        }
        _ => {
            return Err(Unsupported::new(
                None,
                format!("`{name}` without libdevice (no polynomial approximation of it)"),
            ))
        }
    };
    Ok(b.op(&format!("arith.truncf {r} : f64 to f32")))
}

pub(crate) fn ext(b: &mut Builder, x: &str) -> String {
    b.op(&format!("arith.extf {x} : f32 to f64"))
}

pub(crate) fn k(b: &mut Builder, v: f64) -> String {
    float_const(b, v, D)
}

pub(crate) fn bin(b: &mut Builder, op: &str, x: &str, y: &str) -> String {
    b.op(&format!("arith.{op} {x}, {y} : {D}"))
}

pub(crate) fn mul_k(b: &mut Builder, x: &str, v: f64) -> String {
    let c = k(b, v);
    bin(b, "mulf", x, &c)
}

pub(crate) fn fma(b: &mut Builder, x: &str, y: &str, z: &str) -> String {
    b.op(&format!("math.fma {x}, {y}, {z} : {D}"))
}

pub(crate) fn cmp(b: &mut Builder, pred: &str, x: &str, y: &str) -> String {
    b.op(&format!("arith.cmpf {pred}, {x}, {y} : {D}"))
}

pub(crate) fn cmp_k(b: &mut Builder, pred: &str, x: &str, v: f64) -> String {
    let c = k(b, v);
    cmp(b, pred, x, &c)
}

pub(crate) fn sel(b: &mut Builder, c: &str, x: &str, y: &str) -> String {
    b.op(&format!("arith.select {c}, {x}, {y} : {D}"))
}

pub(crate) fn unary(b: &mut Builder, op: &str, x: &str) -> String {
    b.op(&format!("{op} {x} : {D}"))
}

/// `c[0] x^n + c[1] x^(n-1) + ... + c[n]` by Horner's rule.
pub(crate) fn horner(b: &mut Builder, x: &str, c: &[f64]) -> String {
    let mut acc = k(b, c[0]);
    for &ci in &c[1..] {
        let ci = k(b, ci);
        acc = fma(b, &acc, x, &ci);
    }
    acc
}

/// Coefficients of the Taylor series `sum x^i / i!` for i = `n` down to 0.
fn exp_taylor(n: u32) -> Vec<f64> {
    let mut fact = 1.0f64;
    let mut c: Vec<f64> = (0..=n)
        .map(|i| {
            if i > 0 {
                fact *= i as f64;
            }
            1.0 / fact
        })
        .collect();
    c.reverse();
    c
}

/// `2^n` for an integer-valued f64 `n` in [-1022, 1023], built from its exponent bits.
fn pow2(b: &mut Builder, n: &str) -> String {
    let bias = int_const(b, 1023, "i64");
    let shift = int_const(b, 52, "i64");
    let e = b.op(&format!("arith.addi {n}, {bias} : i64"));
    let bits = b.op(&format!("arith.shli {e}, {shift} : i64"));
    b.op(&format!("arith.bitcast {bits} : i64 to f64"))
}

/// e^t in f64, relative error about 2^-52 (see the module docs): t = n ln 2 + f with
/// |f| ≤ ln 2 / 2 (Cody–Waite with fmas), e^f by its Taylor series to degree 13, times 2^n in
/// two steps (2^n alone can leave the exponent range). ±inf and NaN as e^t.
pub(crate) fn exp_f64(b: &mut Builder, t: &str) -> String {
    const LN2_HI: f64 = std::f64::consts::LN_2;
    const LN2_LO: f64 = 2.3190468138462996e-17;
    // Beyond ±1100 the result is 0 or inf in f64 already; the clamp keeps n an exact integer.
    let hi = k(b, 1100.0);
    let lo = k(b, -1100.0);
    let c = bin(b, "minnumf", t, &hi);
    let c = bin(b, "maxnumf", &c, &lo);
    let scaled = mul_k(b, &c, std::f64::consts::LOG2_E);
    let n = unary(b, "math.roundeven", &scaled);
    let neg_n = unary(b, "arith.negf", &n);
    let ln2_hi = k(b, LN2_HI);
    let ln2_lo = k(b, LN2_LO);
    let f = fma(b, &neg_n, &ln2_hi, &c);
    let f = fma(b, &neg_n, &ln2_lo, &f);
    let p = horner(b, &f, &exp_taylor(13));
    let ni = b.op(&format!("arith.fptosi {n} : f64 to i64"));
    let one = int_const(b, 1, "i64");
    let n1 = b.op(&format!("arith.shrsi {ni}, {one} : i64"));
    let n2 = b.op(&format!("arith.subi {ni}, {n1} : i64"));
    let s1 = pow2(b, &n1);
    let s2 = pow2(b, &n2);
    let r = bin(b, "mulf", &p, &s1);
    let r = bin(b, "mulf", &r, &s2);
    let nan = cmp(b, "uno", t, t);
    sel(b, &nan, t, &r)
}

/// ln x in f64 for x > 0 normal in f64 (every float32 is), relative error about 2^-52:
/// x = m 2^e with m in [√½, √2), ln m = 2 atanh(s) with s = (m - 1)/(m + 1), |s| ≤ 0.172, by its
/// series to s^19. ln 0 = -inf, ln inf = inf, NaN for x < 0 or NaN.
pub(crate) fn log_f64(b: &mut Builder, x: &str) -> String {
    const LN2_HI: f64 = std::f64::consts::LN_2;
    const LN2_LO: f64 = 2.3190468138462996e-17;
    let bits = b.op(&format!("arith.bitcast {x} : f64 to i64"));
    let c52 = int_const(b, 52, "i64");
    let bias = int_const(b, 1023, "i64");
    let mask = int_const(b, 0x000F_FFFF_FFFF_FFFF, "i64");
    let one_bits = int_const(b, 0x3FF0_0000_0000_0000, "i64");
    let biased = b.op(&format!("arith.shrui {bits}, {c52} : i64"));
    let e = b.op(&format!("arith.subi {biased}, {bias} : i64"));
    let frac = b.op(&format!("arith.andi {bits}, {mask} : i64"));
    let mbits = b.op(&format!("arith.ori {frac}, {one_bits} : i64"));
    let m = b.op(&format!("arith.bitcast {mbits} : i64 to f64"));
    let e = b.op(&format!("arith.sitofp {e} : i64 to f64"));
    let big = cmp_k(b, "ogt", &m, std::f64::consts::SQRT_2);
    let half_m = mul_k(b, &m, 0.5);
    let m = sel(b, &big, &half_m, &m);
    let e1 = {
        let one = k(b, 1.0);
        bin(b, "addf", &e, &one)
    };
    let e = sel(b, &big, &e1, &e);
    let one = k(b, 1.0);
    let num = bin(b, "subf", &m, &one);
    let den = bin(b, "addf", &m, &one);
    let s = bin(b, "divf", &num, &den);
    let z = bin(b, "mulf", &s, &s);
    // 1 + z/3 + z^2/5 + ... + z^9/19
    let coeffs: Vec<f64> = (0..10).rev().map(|i| 1.0 / (2 * i + 1) as f64).collect();
    let p = horner(b, &z, &coeffs);
    let two_s = bin(b, "addf", &s, &s);
    let ln_m = bin(b, "mulf", &two_s, &p);
    let ln2_hi = k(b, LN2_HI);
    let ln2_lo = k(b, LN2_LO);
    let r = fma(b, &e, &ln2_lo, &ln_m);
    let r = fma(b, &e, &ln2_hi, &r);
    let inf = k(b, f64::INFINITY);
    let ninf = k(b, f64::NEG_INFINITY);
    let nan = k(b, f64::NAN);
    let is_inf = cmp(b, "oeq", x, &inf);
    let r = sel(b, &is_inf, &inf, &r);
    let is_zero = cmp_k(b, "oeq", x, 0.0);
    let r = sel(b, &is_zero, &ninf, &r);
    let bad = cmp_k(b, "ult", x, 0.0);
    sel(b, &bad, &nan, &r)
}

/// |x| < 2^-8: the odd series `x (c[0] x^2n + ... + c[n])` (small arguments, where the
/// exponential or logarithmic formulas cancel); else `other`.
fn small_odd(b: &mut Builder, a: &str, coeffs: &[f64], other: &str) -> String {
    let z = bin(b, "mulf", a, a);
    let p = horner(b, &z, coeffs);
    let s = bin(b, "mulf", a, &p);
    let small = cmp_k(b, "olt", a, 1.0 / 256.0);
    sel(b, &small, &s, other)
}

pub(crate) fn copysign(b: &mut Builder, x: &str, sign: &str) -> String {
    b.op(&format!("math.copysign {x}, {sign} : {D}"))
}

fn sinh_cosh_tanh(b: &mut Builder, name: &str, a: &str) -> String {
    match name {
        "sinh" | "cosh" => {
            let e = exp_f64(b, a);
            let one = k(b, 1.0);
            let inv = bin(b, "divf", &one, &e);
            let sum = bin(b, if name == "sinh" { "subf" } else { "addf" }, &e, &inv);
            let r = mul_k(b, &sum, 0.5);
            if name == "cosh" {
                return r;
            }
            small_odd(b, a, &[1.0 / 5040.0, 1.0 / 120.0, 1.0 / 6.0, 1.0], &r)
        }
        _ => {
            // (e^2a - 1)/(e^2a + 1), a clamped to 20 (tanh(20) rounds to 1 in f64).
            let twenty = k(b, 20.0);
            let c = bin(b, "minnumf", a, &twenty);
            let two_c = bin(b, "addf", &c, &c);
            let e = exp_f64(b, &two_c);
            let one = k(b, 1.0);
            let num = bin(b, "subf", &e, &one);
            let den = bin(b, "addf", &e, &one);
            let r = bin(b, "divf", &num, &den);
            let r = small_odd(b, a, &[-17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0, 1.0], &r);
            let nan = cmp(b, "uno", a, a);
            sel(b, &nan, a, &r)
        }
    }
}

fn hyperbolic(b: &mut Builder, name: &str, x: &str) -> String {
    let a = unary(b, "math.absf", x);
    let r = sinh_cosh_tanh(b, name, &a);
    if name == "cosh" {
        r
    } else {
        copysign(b, &r, x)
    }
}

fn inverse_hyperbolic(b: &mut Builder, name: &str, x: &str) -> String {
    let one = k(b, 1.0);
    if name == "acosh" {
        // ln(x + sqrt(x² - 1)): x² is exact in f64, so x² - 1 is too near x = 1.
        let sq = bin(b, "mulf", x, x);
        let d = bin(b, "subf", &sq, &one);
        let root = unary(b, "math.sqrt", &d);
        let v = bin(b, "addf", x, &root);
        let l = log_f64(b, &v);
        let below = cmp_k(b, "olt", x, 1.0);
        let nan = k(b, f64::NAN);
        return sel(b, &below, &nan, &l);
    }
    let a = unary(b, "math.absf", x);
    let r = if name == "asinh" {
        // ln(a + sqrt(a² + 1)); a < 2^-8 by the series.
        let sq = bin(b, "mulf", &a, &a);
        let s = bin(b, "addf", &sq, &one);
        let root = unary(b, "math.sqrt", &s);
        let v = bin(b, "addf", &a, &root);
        let l = log_f64(b, &v);
        small_odd(b, &a, &[-5.0 / 112.0, 3.0 / 40.0, -1.0 / 6.0, 1.0], &l)
    } else {
        // ln((1 + a)/(1 - a)) / 2; a < 2^-8 by the series.
        let p = bin(b, "addf", &one, &a);
        let m = bin(b, "subf", &one, &a);
        let q = bin(b, "divf", &p, &m);
        let l = log_f64(b, &q);
        let l = mul_k(b, &l, 0.5);
        small_odd(b, &a, &[1.0 / 7.0, 1.0 / 5.0, 1.0 / 3.0, 1.0], &l)
    };
    copysign(b, &r, x)
}

/// sin, cos or tan of x (an f64 holding a float32): x = q π/2 + r, |r| ≤ π/4 (three-part π/2,
/// fmas), then Taylor series of sin r (to r^15) and cos r (to r^16) chosen and signed by q mod 4.
/// NaN for |x| ≥ 2^48, ±inf and NaN.
fn trig(b: &mut Builder, name: &str, x: &str) -> String {
    // π/2 in three parts: the first is π/2 rounded to f64.
    const P1: f64 = std::f64::consts::FRAC_PI_2;
    const P2: f64 = 6.123233995736766e-17;
    const P3: f64 = -1.4973849048591698e-33;
    let a = unary(b, "math.absf", x);
    let out = cmp_k(b, "uge", &a, TRIG_LIMIT);
    let zero = k(b, 0.0);
    let xs = sel(b, &out, &zero, x);
    let scaled = mul_k(b, &xs, std::f64::consts::FRAC_2_PI);
    let q = unary(b, "math.roundeven", &scaled);
    let neg_q = unary(b, "arith.negf", &q);
    let (p1, p2, p3) = (k(b, P1), k(b, P2), k(b, P3));
    let r = fma(b, &neg_q, &p1, &xs);
    let r = fma(b, &neg_q, &p2, &r);
    let r = fma(b, &neg_q, &p3, &r);
    let z = bin(b, "mulf", &r, &r);
    let mut sin_c = Vec::new();
    let mut cos_c = Vec::new();
    let mut fact = 1.0f64;
    for i in 1..=16u32 {
        fact *= i as f64;
        let sign = if (i / 2) % 2 == 0 { 1.0 } else { -1.0 };
        if i % 2 == 1 {
            sin_c.push(sign / fact);
        } else {
            cos_c.push(sign / fact);
        }
    }
    sin_c.reverse();
    cos_c.reverse();
    // sin r = r (1 - z/3! + ...), cos r = 1 - z/2! + ...
    let ps = horner(b, &z, &sin_c);
    let s = bin(b, "mulf", &r, &ps);
    cos_c.push(1.0);
    let c = horner(b, &z, &cos_c);
    let qi = b.op(&format!("arith.fptosi {q} : f64 to i64"));
    let bit0 = {
        let one = int_const(b, 1, "i64");
        let v = b.op(&format!("arith.andi {qi}, {one} : i64"));
        b.op(&format!("arith.cmpi ne, {v}, {one} : i64"))
    };
    // bit0 is true when q is even.
    let bit1 = {
        let two = int_const(b, 2, "i64");
        let v = b.op(&format!("arith.andi {qi}, {two} : i64"));
        b.op(&format!("arith.cmpi ne, {v}, {two} : i64"))
    };
    // bit1 is true when q mod 4 is 0 or 1.
    let r = match name {
        "sin" => {
            // q: 0 s, 1 c, 2 -s, 3 -c
            let v = sel(b, &bit0, &s, &c);
            let nv = unary(b, "arith.negf", &v);
            sel(b, &bit1, &v, &nv)
        }
        "cos" => {
            // q: 0 c, 1 -s, 2 -c, 3 s
            let v = sel(b, &bit0, &c, &s);
            let nv = unary(b, "arith.negf", &v);
            let keep = {
                // sign +: q = 0 or 3, i.e. bit1 == bit0
                b.op(&format!("arith.cmpi eq, {bit0}, {bit1} : i1"))
            };
            sel(b, &keep, &v, &nv)
        }
        _ => {
            // q even: s/c; odd: -c/s
            let t = bin(b, "divf", &s, &c);
            let u = bin(b, "divf", &c, &s);
            let nu = unary(b, "arith.negf", &u);
            sel(b, &bit0, &t, &nu)
        }
    };
    // sin and tan keep the sign of a zero (the reduction makes -0 into +0).
    let zero_in = cmp(b, "oeq", x, &zero);
    let r = if name == "cos" { r } else { sel(b, &zero_in, x, &r) };
    let nan = k(b, f64::NAN);
    sel(b, &out, &nan, &r)
}

/// C's `pow` (IEEE 754's special cases): |x|^y = e^(y ln|x|) in f64, the sign from an odd
/// integer y and a negative x, NaN for a negative finite x and a non-integer y; pow(x, ±0) = 1
/// and pow(1, y) = 1 even for NaN, pow(-1, ±inf) = 1.
fn power(b: &mut Builder, x: &str, y: &str) -> String {
    let a = unary(b, "math.absf", x);
    let l = log_f64(b, &a);
    let t = bin(b, "mulf", y, &l);
    let r = exp_f64(b, &t);
    let fy = unary(b, "math.floor", y);
    let y_int = cmp(b, "oeq", &fy, y);
    let half = mul_k(b, y, 0.5);
    let fh = unary(b, "math.floor", &half);
    let y_even = cmp(b, "oeq", &fh, &half);
    let t1 = int_const(b, 1, "i1");
    let y_not_even = b.op(&format!("arith.xori {y_even}, {t1} : i1"));
    let y_odd = b.op(&format!("arith.andi {y_int}, {y_not_even} : i1"));
    let one = k(b, 1.0);
    let sign = copysign(b, &one, x);
    let x_neg = cmp_k(b, "olt", &sign, 0.0);
    let flip = b.op(&format!("arith.andi {x_neg}, {y_odd} : i1"));
    let nr = unary(b, "arith.negf", &r);
    let r = sel(b, &flip, &nr, &r);
    // A negative finite x and a finite non-integer y.
    let x_neg_finite = {
        let lt = cmp_k(b, "olt", x, 0.0);
        let fin = cmp_k(b, "olt", &a, f64::INFINITY);
        b.op(&format!("arith.andi {lt}, {fin} : i1"))
    };
    let ay = unary(b, "math.absf", y);
    let y_fin = cmp_k(b, "olt", &ay, f64::INFINITY);
    let y_frac = {
        let not_int = cmp(b, "une", &fy, y);
        b.op(&format!("arith.andi {not_int}, {y_fin} : i1"))
    };
    let bad = b.op(&format!("arith.andi {x_neg_finite}, {y_frac} : i1"));
    let nan = k(b, f64::NAN);
    let r = sel(b, &bad, &nan, &r);
    // |x| = 1 and y = ±inf: 1 (ln 1 · inf would be NaN).
    let a_one = cmp_k(b, "oeq", &a, 1.0);
    let y_inf = cmp_k(b, "oeq", &ay, f64::INFINITY);
    let unit = b.op(&format!("arith.andi {a_one}, {y_inf} : i1"));
    let r = sel(b, &unit, &one, &r);
    let x_one = cmp_k(b, "oeq", x, 1.0);
    let y_zero = cmp_k(b, "oeq", y, 0.0);
    let trivial = b.op(&format!("arith.ori {x_one}, {y_zero} : i1"));
    sel(b, &trivial, &one, &r)
}

/// sqrt(x² + y²) in f64 (x², y² exact; one rounding each for the sum and the root); inf when
/// either is ±inf, even with a NaN.
fn hypot(b: &mut Builder, x: &str, y: &str) -> String {
    let xx = bin(b, "mulf", x, x);
    let s = fma(b, y, y, &xx);
    let r = unary(b, "math.sqrt", &s);
    let ax = unary(b, "math.absf", x);
    let ay = unary(b, "math.absf", y);
    let inf = k(b, f64::INFINITY);
    let xi = cmp(b, "oeq", &ax, &inf);
    let yi = cmp(b, "oeq", &ay, &inf);
    let any = b.op(&format!("arith.ori {xi}, {yi} : i1"));
    sel(b, &any, &inf, &r)
}

/// NumPy's `npy_logaddexp` (see `scalar`) in f64 with [`exp_f64`] and ln(1 + e): by its series
/// for e < 2^-8, else [`log_f64`] of 1 + e.
fn logaddexp(b: &mut Builder, x: &str, y: &str) -> String {
    let eq = cmp(b, "oeq", x, y);
    let ln2 = k(b, std::f64::consts::LN_2);
    let same = bin(b, "addf", x, &ln2);
    let d = bin(b, "subf", x, y);
    let pos = cmp_k(b, "ogt", &d, 0.0);
    let max = sel(b, &pos, x, y);
    let ad = unary(b, "math.absf", &d);
    let nad = unary(b, "arith.negf", &ad);
    let e = exp_f64(b, &nad);
    let one = k(b, 1.0);
    let v = bin(b, "addf", &one, &e);
    let big = log_f64(b, &v);
    // ln(1 + e) = e - e²/2 + e³/3 - ... (to e^7: the rest is below 2^-56 relative).
    let coeffs: Vec<f64> =
        (1..=7).rev().map(|i| if i % 2 == 1 { 1.0 / i as f64 } else { -1.0 / i as f64 }).collect();
    let p = horner(b, &e, &coeffs);
    let small = bin(b, "mulf", &e, &p);
    let is_small = cmp_k(b, "olt", &e, 1.0 / 256.0);
    let l = sel(b, &is_small, &small, &big);
    let r = bin(b, "addf", &max, &l);
    let nan = cmp(b, "uno", &d, &d);
    let r = sel(b, &nan, &d, &r);
    sel(b, &eq, &same, &r)
}

/// e^x - 1: by its Taylor series for |x| < 2^-8, else [`exp_f64`] - 1.
fn expm1(b: &mut Builder, x: &str) -> String {
    let e = exp_f64(b, x);
    let one = k(b, 1.0);
    let big = bin(b, "subf", &e, &one);
    let mut c = exp_taylor(8);
    c.pop(); // no constant term: x (1 + x/2 + ...)
    let p = horner(b, x, &c);
    let small = bin(b, "mulf", x, &p);
    let a = unary(b, "math.absf", x);
    let is_small = cmp_k(b, "olt", &a, 1.0 / 256.0);
    sel(b, &is_small, &small, &big)
}

/// ln(1 + u): by its series for |u| < 2^-8, else [`log_f64`] of 1 + u (exact in f64 for a
/// float32 u of that size).
fn log1p(b: &mut Builder, u: &str) -> String {
    let one = k(b, 1.0);
    let v = bin(b, "addf", &one, u);
    let big = log_f64(b, &v);
    // u - u²/2 + u³/3 - ... (to u^7: the rest is below 2^-56 relative).
    let coeffs: Vec<f64> =
        (1..=7).rev().map(|i| if i % 2 == 1 { 1.0 / i as f64 } else { -1.0 / i as f64 }).collect();
    let p = horner(b, u, &coeffs);
    let small = bin(b, "mulf", u, &p);
    let a = unary(b, "math.absf", u);
    let is_small = cmp_k(b, "olt", &a, 1.0 / 256.0);
    sel(b, &is_small, &small, &big)
}

/// atan a for a ≥ 0 (or NaN) in f64: a > 1 as π/2 - atan(1/a); then a > tan(π/8) as
/// π/4 + atan((a - 1)/(a + 1)); then the series of atan t, |t| ≤ 0.4143, to t^43.
pub(crate) fn atan_pos(b: &mut Builder, a: &str) -> String {
    let one = k(b, 1.0);
    let inv = cmp_k(b, "ogt", a, 1.0);
    let ra = bin(b, "divf", &one, a);
    let u = sel(b, &inv, &ra, a);
    let mid = cmp_k(b, "ogt", &u, std::f64::consts::SQRT_2 - 1.0);
    let um = bin(b, "subf", &u, &one);
    let up = bin(b, "addf", &u, &one);
    let q = bin(b, "divf", &um, &up);
    let t = sel(b, &mid, &q, &u);
    let z = bin(b, "mulf", &t, &t);
    let coeffs: Vec<f64> = (0..=21)
        .rev()
        .map(|i| if i % 2 == 0 { 1.0 / (2 * i + 1) as f64 } else { -1.0 / (2 * i + 1) as f64 })
        .collect();
    let p = horner(b, &z, &coeffs);
    let s = bin(b, "mulf", &t, &p);
    let quarter = k(b, std::f64::consts::FRAC_PI_4);
    let sm = bin(b, "addf", &s, &quarter);
    let s = sel(b, &mid, &sm, &s);
    let half = k(b, std::f64::consts::FRAC_PI_2);
    let si = bin(b, "subf", &half, &s);
    sel(b, &inv, &si, &s)
}

/// atan2(y, x) (C's special cases: signed zeros, infinities) from atan(|y|/|x|).
fn atan2(b: &mut Builder, y: &str, x: &str) -> String {
    let ay = unary(b, "math.absf", y);
    let ax = unary(b, "math.absf", x);
    let q = bin(b, "divf", &ay, &ax);
    // 0/0 and inf/inf: the angle of the diagonal or the axis.
    let zero = k(b, 0.0);
    let one = k(b, 1.0);
    let inf = k(b, f64::INFINITY);
    let yz = cmp(b, "oeq", &ay, &zero);
    let yi = cmp(b, "oeq", &ay, &inf);
    let xi = cmp(b, "oeq", &ax, &inf);
    let both_inf = b.op(&format!("arith.andi {yi}, {xi} : i1"));
    let q = sel(b, &yz, &zero, &q);
    let q = sel(b, &both_inf, &one, &q);
    let r = atan_pos(b, &q);
    let sx = copysign(b, &one, x);
    let x_neg = cmp(b, "olt", &sx, &zero);
    let pi = k(b, std::f64::consts::PI);
    let rn = bin(b, "subf", &pi, &r);
    let r = sel(b, &x_neg, &rn, &r);
    let r = copysign(b, &r, y);
    let nan = cmp(b, "uno", y, x);
    let nanv = k(b, f64::NAN);
    sel(b, &nan, &nanv, &r)
}
