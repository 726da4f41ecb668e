//! scipy.special's `erfc`, `erfinv`, `gammaln`, `digamma` and NumPy's `gcd`, `lcm` on register
//! values, with the reference evaluator's semantics (`kiln_ir::eval::special`, whose formulas
//! and constants the code below computes, op for op).
//!
//! - Float functions compute in f64 and round once to the dtype, on every target, but for
//!   libdevice's float32 `__nv_erfcf` and `__nv_erfinvf` (CUDA's bounds: 4 and 2 ulps). Each is
//!   a function of the module (`@kiln_erfc`, `@kiln_erfinv`, `@kiln_gammaln`, `@kiln_digamma`,
//!   f64 to f64) called with `no_inline`, so that its library calls are the scalar ones the
//!   evaluator makes, never glibc's vector functions: on the host the results are the
//!   evaluator's but for `erfc`'s and `erfinv`'s `erf`/`erfc` (glibc's against the `libm`
//!   crate's). `erfc` is the library's (`erfc`, `__nv_erfc`) with SciPy's underflow to 0;
//!   `erfinv` on the host is the evaluator's Giles guess and two Halley steps (`erf`, `erfc`,
//!   `exp`, `log`), on the GPU libdevice's `__nv_erfinv`; `gammaln` is Cephes' `lgam` (SciPy's)
//!   and `digamma` SciPy's algorithm on every target (`log`, `sin`, `tan`), branch-free: every
//!   path computed and selected, the recurrences unrolled. Without libdevice
//!   ([`MathLib::Polynomial`]) there is no f64 `log`, `sin`, `erf`: [`Unsupported`] (the
//!   evaluator runs the region).
//! - `gcd`: Euclid's algorithm on `|x|` and `|y|` as unsigned, a fixed number of steps
//!   (`scf.for`, each a select: the worst case, consecutive Fibonacci numbers, takes
//!   1.44·w + 2 steps for w bits); `lcm`: `|x| / gcd * |y|` wrapping, 0 where gcd is 0.

use kiln_ir::eval::special as sp;
use kiln_ir::DType;

use super::builder::Builder;
use super::polynomial::{bin, cmp, cmp_k, copysign, fma, horner, k, mul_k, sel, unary};
use super::scalar::{math, select};
use super::types::{int_const, int_width, round_f64_to_narrow, Val};
use super::{MathLib, Unsupported};

/// The float functions of this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Function {
    Erfc,
    Erfinv,
    Gammaln,
    Digamma,
}

/// `f` of the float `x` of dtype `dt` (held in its working type, f32 or f64), rounded to `dt`;
/// errors name the op `op`.
pub(crate) fn function(
    b: &mut Builder,
    op: &'static str,
    f: Function,
    x: &str,
    dt: DType,
) -> Result<Val, Unsupported> {
    let ty = if dt == DType::Float64 { "f64" } else { "f32" };
    let un = |u: Unsupported| Unsupported::new(Some(op), u.reason);
    // libdevice's float32 erfc and erfinv, in the working type.
    if b.math == MathLib::Libdevice && ty == "f32" && matches!(f, Function::Erfc | Function::Erfinv)
    {
        let name = if f == Function::Erfc { "erfc" } else { "erfinv" };
        let mut r = math(b, name, &[x], ty).map_err(un)?;
        if f == Function::Erfinv {
            r = plus_zero_at_zero(b, x, &r, ty);
        }
        return Ok(Val::new(super::types::round(b, &r, dt), dt));
    }
    if b.math == MathLib::Polynomial {
        return Err(Unsupported::new(
            Some(op),
            "without libdevice (no polynomial form: its f64 functions need libdevice)".to_string(),
        ));
    }
    let xd =
        if ty == "f64" { x.to_string() } else { b.op(&format!("arith.extf {x} : f32 to f64")) };
    let r = match f {
        Function::Erfinv if b.math == MathLib::Libdevice => {
            let r = math(b, "erfinv", &[&xd], "f64").map_err(un)?;
            plus_zero_at_zero(b, &xd, &r, "f64")
        }
        Function::Erfc => module_function(b, "kiln_erfc", &xd, erfc).map_err(un)?,
        Function::Erfinv => module_function(b, "kiln_erfinv", &xd, erfinv).map_err(un)?,
        Function::Gammaln => module_function(b, "kiln_gammaln", &xd, gammaln).map_err(un)?,
        Function::Digamma => module_function(b, "kiln_digamma", &xd, digamma).map_err(un)?,
    };
    let r = match dt {
        DType::Float64 => r,
        DType::Float32 => b.op(&format!("arith.truncf {r} : f64 to f32")),
        _ => round_f64_to_narrow(b, &r, dt),
    };
    Ok(Val::new(r, dt))
}

/// `r`, but +0 where `x` is a zero of either sign: scipy's `erfinv(-0.0)` is +0.0, libdevice's
/// -0.0 (measured on an H200).
fn plus_zero_at_zero(b: &mut Builder, x: &str, r: &str, ty: &str) -> String {
    let zero = b.constant("0.0", ty);
    let is_zero = b.op(&format!("arith.cmpf oeq, {x}, {zero} : {ty}"));
    b.op(&format!("arith.select {is_zero}, {zero}, {r} : {ty}"))
}

/// `body(x)` as the module's function `@sym` (f64 to f64), called with `no_inline`
/// ([`super::scalar::module_function`]).
fn module_function(
    b: &mut Builder,
    sym: &str,
    x: &str,
    body: fn(&mut Builder, &str) -> Result<String, Unsupported>,
) -> Result<String, Unsupported> {
    super::scalar::module_function(b, sym, &[x], "f64", |h, params| body(h, params[0]))
}

/// erfc of f64 `x` (`kiln_ir::eval::special::erfc_f64`): the library's, 0 where -x² is below
/// Cephes' `MAXLOG` (SciPy's underflow).
fn erfc(b: &mut Builder, x: &str) -> Result<String, Unsupported> {
    let r = f64_fn(b, "erfc", x)?;
    let xx = bin(b, "mulf", x, x);
    let nxx = unary(b, "arith.negf", &xx);
    let under = cmp_k(b, "olt", &nxx, -sp::ERFC_MAXLOG);
    let pos = cmp_k(b, "ogt", x, 0.0);
    let under = bin_i1(b, "arith.andi", &under, &pos);
    let zero = k(b, 0.0);
    Ok(sel(b, &under, &zero, &r))
}

/// Cephes' `polevl` (`p1evl` with `leading_one`: a leading 1 not stored): a multiply and an
/// add a step, no fused multiply-add, as the evaluator.
fn polevl(b: &mut Builder, x: &str, c: &[f64], leading_one: bool) -> String {
    let c0 = k(b, c[0]);
    let mut acc = if leading_one { bin(b, "addf", x, &c0) } else { c0 };
    for &ci in &c[1..] {
        let m = bin(b, "mulf", &acc, x);
        let ci = k(b, ci);
        acc = bin(b, "addf", &m, &ci);
    }
    acc
}

/// log Γ(x) of f64 `x` >= 13 by Stirling's series (`kiln_ir::eval::special::gammaln_stirling`).
fn gammaln_stirling(b: &mut Builder, x: &str) -> Result<String, Unsupported> {
    let lx = f64_fn(b, "log", x)?;
    let half = k(b, 0.5);
    let xh = bin(b, "subf", x, &half);
    let q = bin(b, "mulf", &xh, &lx);
    let q = bin(b, "subf", &q, x);
    let c = k(b, sp::LOG_SQRT_2PI);
    let q = bin(b, "addf", &q, &c);
    let one = k(b, 1.0);
    let xx = bin(b, "mulf", x, x);
    let p = bin(b, "divf", &one, &xx);
    // x >= 1000: three terms; else Cephes' A.
    let t = mul_k(b, &p, 7.9365079365079365079365e-4);
    let c2 = k(b, 2.7777777777777777777778e-3);
    let t = bin(b, "subf", &t, &c2);
    let t = bin(b, "mulf", &t, &p);
    let c3 = k(b, 0.0833333333333333333333);
    let t = bin(b, "addf", &t, &c3);
    let big = bin(b, "divf", &t, x);
    let a = polevl(b, &p, &sp::GAMMALN_A, false);
    let small = bin(b, "divf", &a, x);
    let ge1000 = cmp_k(b, "oge", x, 1000.0);
    let tail = sel(b, &ge1000, &big, &small);
    let q2 = bin(b, "addf", &q, &tail);
    let huge = cmp_k(b, "ogt", x, 1e8);
    let r = sel(b, &huge, &q, &q2);
    let over = cmp_k(b, "ogt", x, sp::GAMMALN_MAX);
    let inf = k(b, f64::INFINITY);
    Ok(sel(b, &over, &inf, &r))
}

/// log|Γ(x)| of f64 `x0` (`kiln_ir::eval::special::gammaln_f64`, Cephes' `lgam`), every path
/// computed and selected; the recurrences unrolled (10 steps down to [2, 3) from below 13, 36
/// up from -34).
fn gammaln(b: &mut Builder, x0: &str) -> Result<String, Unsupported> {
    let zero = k(b, 0.0);
    let one = k(b, 1.0);
    let inf = k(b, f64::INFINITY);
    // Stirling's series of x (x >= 13) or of -x (x < -34).
    let below34 = cmp_k(b, "olt", x0, -34.0);
    let q = unary(b, "arith.negf", x0);
    let sx = sel(b, &below34, &q, x0);
    let w = gammaln_stirling(b, &sx)?;
    // Reflection below -34: log π - log(q sin(π z)) - log Γ(q), z the distance to the nearer
    // integer.
    let p = unary(b, "math.floor", &q);
    let int = cmp(b, "oeq", &p, &q);
    let z = bin(b, "subf", &q, &p);
    let up = cmp_k(b, "ogt", &z, 0.5);
    let p1 = bin(b, "addf", &p, &one);
    let z1 = bin(b, "subf", &p1, &q);
    let z = sel(b, &up, &z1, &z);
    let pz = mul_k(b, &z, std::f64::consts::PI);
    let s = f64_fn(b, "sin", &pz)?;
    let qs = bin(b, "mulf", &q, &s);
    let lqs = f64_fn(b, "log", &qs)?;
    let lpi = k(b, sp::LOG_PI);
    let refl = bin(b, "subf", &lpi, &lqs);
    let refl = bin(b, "subf", &refl, &w);
    let qs0 = cmp(b, "oeq", &qs, &zero);
    let refl_pole = bin_i1(b, "arith.ori", &int, &qs0);
    // Recurrence into [2, 3) below 13.
    let (mut z, mut p, mut u) = (one.clone(), zero.clone(), x0.to_string());
    for _ in 0..10 {
        let go = cmp_k(b, "oge", &u, 3.0);
        let p2 = bin(b, "subf", &p, &one);
        let u2 = bin(b, "addf", x0, &p2);
        let z2 = bin(b, "mulf", &z, &u2);
        p = sel(b, &go, &p2, &p);
        u = sel(b, &go, &u2, &u);
        z = sel(b, &go, &z2, &z);
    }
    let mut pole = b.constant("false", "i1");
    for _ in 0..36 {
        let go = cmp_k(b, "olt", &u, 2.0);
        let at0 = cmp_k(b, "oeq", &u, 0.0);
        let hit = bin_i1(b, "arith.andi", &go, &at0);
        pole = bin_i1(b, "arith.ori", &pole, &hit);
        let z2 = bin(b, "divf", &z, &u);
        let p2 = bin(b, "addf", &p, &one);
        let u2 = bin(b, "addf", x0, &p2);
        z = sel(b, &go, &z2, &z);
        p = sel(b, &go, &p2, &p);
        u = sel(b, &go, &u2, &u);
    }
    let za = unary(b, "math.absf", &z);
    let lz = f64_fn(b, "log", &za)?;
    let two = k(b, 2.0);
    let pm2 = bin(b, "subf", &p, &two);
    let xr = bin(b, "addf", x0, &pm2);
    let pb = polevl(b, &xr, &sp::GAMMALN_B, false);
    let num = bin(b, "mulf", &xr, &pb);
    let den = polevl(b, &xr, &sp::GAMMALN_C, true);
    let rat = bin(b, "divf", &num, &den);
    let mid = bin(b, "addf", &lz, &rat);
    let at2 = cmp_k(b, "oeq", &u, 2.0);
    let mid = sel(b, &at2, &lz, &mid);
    // Combined: the range's value, its poles, and non-finite x as itself.
    let below13 = cmp_k(b, "olt", x0, 13.0);
    let r = sel(b, &below13, &mid, &w);
    let r = sel(b, &below34, &refl, &r);
    let no = b.constant("false", "i1");
    let pole = sel_i1(b, &below13, &pole, &no);
    let pole = sel_i1(b, &below34, &refl_pole, &pole);
    let r = sel(b, &pole, &inf, &r);
    let ax = unary(b, "math.absf", x0);
    let finite = cmp_k(b, "olt", &ax, f64::INFINITY);
    Ok(sel(b, &finite, &r, x0))
}

fn sel_i1(b: &mut Builder, c: &str, x: &str, y: &str) -> String {
    b.op(&format!("arith.select {c}, {x}, {y} : i1"))
}

/// An f64 library function of one argument (libm's or libdevice's).
fn f64_fn(b: &mut Builder, name: &str, x: &str) -> Result<String, Unsupported> {
    math(b, name, &[x], "f64")
}

/// erfinv of f64 `y` (`kiln_ir::eval::special::erfinv_f64`).
fn erfinv(b: &mut Builder, y: &str) -> Result<String, Unsupported> {
    let a = unary(b, "math.absf", y);
    let one = k(b, 1.0);
    let q = bin(b, "subf", &one, &a);
    let p = bin(b, "addf", &one, &a);
    let qp = bin(b, "mulf", &q, &p);
    let l = f64_fn(b, "log", &qp)?;
    let w = unary(b, "arith.negf", &l);
    // Giles' two polynomials, and the asymptotic guess of the far tail.
    let k25 = k(b, 2.5);
    let c = bin(b, "subf", &w, &k25);
    let central = horner(b, &c, &sp::ERFINV_CENTRAL);
    let central = bin(b, "mulf", &central, &a);
    let sw = unary(b, "math.sqrt", &w);
    let k3 = k(b, 3.0);
    let t = bin(b, "subf", &sw, &k3);
    let tail = horner(b, &t, &sp::ERFINV_TAIL);
    let tail = bin(b, "mulf", &tail, &a);
    let lq = f64_fn(b, "log", &q)?;
    let lq = unary(b, "arith.negf", &lq);
    let mut far = unary(b, "math.sqrt", &lq);
    for _ in 0..3 {
        let s = mul_k(b, &far, sp::SQRT_PI);
        let ls = f64_fn(b, "log", &s)?;
        let d = bin(b, "subf", &lq, &ls);
        far = unary(b, "math.sqrt", &d);
    }
    let is_central = cmp_k(b, "olt", &w, 5.0);
    let is_tail = cmp_k(b, "olt", &w, sp::ERFINV_ASYMPTOTIC_W);
    let x = sel(b, &is_tail, &tail, &far);
    let mut x = sel(b, &is_central, &central, &x);
    let upper = cmp_k(b, "ogt", &a, 0.5);
    for _ in 0..2 {
        // Halley: f = erf(x) - a (q - erfc(x) above 0.5), t = f / erf'(x), x - t / (1 + x t).
        let e = f64_fn(b, "erf", &x)?;
        let ec = f64_fn(b, "erfc", &x)?;
        let f_lo = bin(b, "subf", &e, &a);
        let f_hi = bin(b, "subf", &q, &ec);
        let f = sel(b, &upper, &f_hi, &f_lo);
        let xx = bin(b, "mulf", &x, &x);
        let nxx = unary(b, "arith.negf", &xx);
        let ex = f64_fn(b, "exp", &nxx)?;
        let d = mul_k(b, &ex, 2.0 / sp::SQRT_PI);
        let t = bin(b, "divf", &f, &d);
        let den = fma(b, &x, &t, &one);
        let step = bin(b, "divf", &t, &den);
        x = bin(b, "subf", &x, &step);
    }
    let r = copysign(b, &x, y);
    // ±1: ±inf; 0: +0; |y| > 1 and NaN: NaN.
    let inf = k(b, f64::INFINITY);
    let sinf = copysign(b, &inf, y);
    let at1 = cmp_k(b, "oeq", &a, 1.0);
    let r = sel(b, &at1, &sinf, &r);
    let zero = k(b, 0.0);
    let at0 = cmp_k(b, "oeq", &a, 0.0);
    let r = sel(b, &at0, &zero, &r);
    let nan = k(b, f64::NAN);
    let outside = cmp_k(b, "ugt", &a, 1.0);
    Ok(sel(b, &outside, &nan, &r))
}

/// ψ of f64 `x` (`kiln_ir::eval::special::digamma_f64`), every path computed and selected.
fn digamma(b: &mut Builder, x0: &str) -> Result<String, Unsupported> {
    let zero = k(b, 0.0);
    let one = k(b, 1.0);
    // The series about the negative root.
    let root = k(b, sp::DIGAMMA_NEGROOT);
    let z = bin(b, "subf", x0, &root);
    let pz = horner(b, &z, &sp::DIGAMMA_NEGROOT_SERIES);
    let root_value = k(b, sp::DIGAMMA_NEGROOT_VALUE);
    let series = fma(b, &z, &pz, &root_value);
    let az = unary(b, "math.absf", &z);
    let near_root = cmp_k(b, "olt", &az, 0.3);
    // Reflection of negative x: y = -π / tan(π r), x = 1 - x.
    let neg = cmp(b, "olt", x0, &zero);
    let tr = unary(b, "math.trunc", x0);
    let r = bin(b, "subf", x0, &tr);
    let pr = mul_k(b, &r, std::f64::consts::PI);
    let tan = f64_fn(b, "tan", &pr)?;
    let mpi = k(b, -std::f64::consts::PI);
    let refl = bin(b, "divf", &mpi, &tan);
    let y = sel(b, &neg, &refl, &zero);
    let x1 = bin(b, "subf", &one, x0);
    let x = sel(b, &neg, &x1, x0);
    // The integers 1..=10: H(n-1) - γ.
    let fl = unary(b, "math.floor", &x);
    let is_whole = cmp(b, "oeq", &x, &fl);
    let le10 = cmp_k(b, "ole", &x, 10.0);
    let is_int = bin_i1(b, "arith.andi", &is_whole, &le10);
    let mut int_value = k(b, f64::NAN);
    for n in 1..=10u32 {
        let at = cmp_k(b, "oeq", &x, n as f64);
        let v = k(b, sp::digamma_integer(n));
        int_value = sel(b, &at, &v, &int_value);
    }
    let int_value = bin(b, "addf", &y, &int_value);
    // Recurrence into [1, 2]: below 1 one step up, below 10 down while above 2.
    let below1 = cmp_k(b, "olt", &x, 1.0);
    let inv = bin(b, "divf", &one, &x);
    let y_up = bin(b, "subf", &y, &inv);
    let x_up = bin(b, "addf", &x, &one);
    let below10 = cmp_k(b, "olt", &x, 10.0);
    let ge1 = unary_not(b, &below1);
    let down = bin_i1(b, "arith.andi", &ge1, &below10);
    let mut y = sel(b, &below1, &y_up, &y);
    let mut x = sel(b, &below1, &x_up, &x);
    for _ in 0..8 {
        let above2 = cmp_k(b, "ogt", &x, 2.0);
        let go = bin_i1(b, "arith.andi", &down, &above2);
        let xm = bin(b, "subf", &x, &one);
        let inv = bin(b, "divf", &one, &xm);
        let ym = bin(b, "addf", &y, &inv);
        x = sel(b, &go, &xm, &x);
        y = sel(b, &go, &ym, &y);
    }
    // [1, 2]: Boost's rational approximation about the positive root.
    let mut g = x.clone();
    for part in sp::DIGAMMA_ROOT {
        let c = k(b, part);
        g = bin(b, "subf", &g, &c);
    }
    let xm1 = bin(b, "subf", &x, &one);
    let p = horner(b, &xm1, &sp::DIGAMMA_P);
    let q = horner(b, &xm1, &sp::DIGAMMA_Q);
    let ratio = bin(b, "divf", &p, &q);
    let gy = mul_k(b, &g, sp::DIGAMMA_Y);
    let gr = bin(b, "mulf", &g, &ratio);
    let unit = bin(b, "addf", &gy, &gr);
    let unit = bin(b, "addf", &y, &unit);
    // The asymptotic series (dropped from 1e17).
    let xx = bin(b, "mulf", &x, &x);
    let zz = bin(b, "divf", &one, &xx);
    let s = horner(b, &zz, &sp::DIGAMMA_ASYMPTOTIC);
    let s = bin(b, "mulf", &zz, &s);
    let huge = cmp_k(b, "oge", &x, 1e17);
    let s = sel(b, &huge, &zero, &s);
    let lx = f64_fn(b, "log", &x)?;
    let half = k(b, 0.5);
    let hx = bin(b, "divf", &half, &x);
    let asym = bin(b, "subf", &lx, &hx);
    let asym = bin(b, "subf", &asym, &s);
    let asym = bin(b, "addf", &y, &asym);
    let in12 = {
        let ge1 = cmp_k(b, "oge", &x, 1.0);
        let le2 = cmp_k(b, "ole", &x, 2.0);
        bin_i1(b, "arith.andi", &ge1, &le2)
    };
    let v = sel(b, &in12, &unit, &asym);
    let v = sel(b, &is_int, &int_value, &v);
    let v = sel(b, &near_root, &series, &v);
    // Special values: negative integers and -inf NaN, ±0 ∓inf, +inf and NaN themselves.
    let r_zero = cmp_k(b, "oeq", &r, 0.0);
    let neg_int = bin_i1(b, "arith.andi", &neg, &r_zero);
    let nan = k(b, f64::NAN);
    let v = sel(b, &neg_int, &nan, &v);
    let ninf = cmp_k(b, "oeq", x0, f64::NEG_INFINITY);
    let v = sel(b, &ninf, &nan, &v);
    let inf = k(b, f64::INFINITY);
    let nx = unary(b, "arith.negf", x0);
    let pole = copysign(b, &inf, &nx);
    let at0 = cmp_k(b, "oeq", x0, 0.0);
    let v = sel(b, &at0, &pole, &v);
    let special = cmp_k(b, "ueq", x0, f64::INFINITY);
    Ok(sel(b, &special, x0, &v))
}

fn bin_i1(b: &mut Builder, op: &str, x: &str, y: &str) -> String {
    b.op(&format!("{op} {x}, {y} : i1"))
}

fn unary_not(b: &mut Builder, c: &str) -> String {
    let t = b.constant("true", "i1");
    b.op(&format!("arith.xori {c}, {t} : i1"))
}

/// Euclid steps enough for any two `bits`-bit unsigned values (consecutive Fibonacci numbers
/// are the worst case: about 1.44·bits + 2 steps, one more when the first is the smaller).
pub(crate) fn euclid_steps(bits: u32) -> i64 {
    (bits as i64 * 3 + 1) / 2 + 3
}

/// `gcd(x, y)` or, with `lcm`, `lcm(x, y)` of integers `x`, `y` of dtype `dt` (see the module
/// docs).
pub(crate) fn gcd_lcm(b: &mut Builder, lcm: bool, x: &str, y: &str, dt: DType) -> String {
    let bits = int_width(dt);
    let ty = format!("i{bits}");
    let ty = ty.as_str();
    let z = int_const(b, 0, ty);
    let one = int_const(b, 1, ty);
    let magnitude = |b: &mut Builder, v: &str| -> String {
        if dt.is_signed_integer() {
            let n = b.op(&format!("arith.subi {z}, {v} : {ty}"));
            let lt = b.op(&format!("arith.cmpi slt, {v}, {z} : {ty}"));
            select(b, &lt, &n, v, ty)
        } else {
            v.to_string()
        }
    };
    let (ax, ay) = (magnitude(b, x), magnitude(b, y));
    let lb = b.i64(0);
    let ub = b.i64(euclid_steps(bits));
    let step = b.i64(1);
    let (u, v, iv) = (b.fresh(), b.fresh(), b.fresh());
    let r = b.open(
        2,
        &format!(
            "scf.for {iv} = {lb} to {ub} step {step} iter_args({u} = {ax}, {v} = {ay}) -> ({ty}, {ty}) : i64"
        ),
    );
    // (u, v) -> (v mod u, u) while u != 0.
    let nz = b.op(&format!("arith.cmpi ne, {u}, {z} : {ty}"));
    let safe = select(b, &nz, &u, &one, ty);
    let rem = b.op(&format!("arith.remui {v}, {safe} : {ty}"));
    let u2 = select(b, &nz, &rem, &u, ty);
    let v2 = select(b, &nz, &u, &v, ty);
    b.stmt(&format!("scf.yield {u2}, {v2} : {ty}, {ty}"));
    b.close();
    let g = r[1].clone();
    if !lcm {
        return g;
    }
    let g0 = b.op(&format!("arith.cmpi eq, {g}, {z} : {ty}"));
    let safe = select(b, &g0, &one, &g, ty);
    let q = b.op(&format!("arith.divui {ax}, {safe} : {ty}"));
    let l = b.op(&format!("arith.muli {q}, {ay} : {ty}"));
    select(b, &g0, &z, &l, ty)
}
