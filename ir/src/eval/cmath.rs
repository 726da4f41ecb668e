//! Complex functions in `Complex<f64>`, accurate across the plane and with C99 Annex G's special
//! values (which glibc, and so NumPy on Linux, follows). The inverse trigonometric and hyperbolic
//! functions use Kahan's formulas ("Branch cuts for complex elementary functions", 1987), built
//! on a careful `csqrt`; `clog` computes ln|z| through log1p near |z| = 1.

use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use num_complex::Complex64 as C64;

use super::reduce::neumaier;

fn c(re: f64, im: f64) -> C64 {
    C64::new(re, im)
}

/// NumPy's complex multiplication (no special handling of infinities).
pub fn cmul(a: C64, b: C64) -> C64 {
    c(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

/// NumPy's complex division (Smith's algorithm; a zero divisor gives inf or NaN parts).
pub fn cdiv(a: C64, b: C64) -> C64 {
    let (br_abs, bi_abs) = (b.re.abs(), b.im.abs());
    if br_abs >= bi_abs {
        if br_abs == 0.0 && bi_abs == 0.0 {
            c(a.re / br_abs, a.im / br_abs)
        } else {
            let rat = b.im / b.re;
            let scl = 1.0 / (b.re + b.im * rat);
            c((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl)
        }
    } else {
        let rat = b.re / b.im;
        let scl = 1.0 / (b.im + b.re * rat);
        c((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl)
    }
}

/// The principal square root (C99's `csqrt`), scaled so that no intermediate overflows.
pub fn csqrt(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if y.is_infinite() {
        return c(f64::INFINITY, y);
    }
    if x.is_nan() {
        return c(x, f64::NAN);
    }
    if x.is_infinite() {
        if y.is_nan() {
            return if x > 0.0 { c(x, y) } else { c(y, f64::INFINITY) };
        }
        return if x > 0.0 { c(x, 0.0f64.copysign(y)) } else { c(0.0, f64::INFINITY.copysign(y)) };
    }
    if y.is_nan() {
        return c(f64::NAN, f64::NAN);
    }
    if x == 0.0 && y == 0.0 {
        return c(0.0, y);
    }
    // Scale huge inputs down by 4 (result up by 2) and tiny ones up by 2**600.
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
        c(t * k, y / (2.0 * t) * k)
    } else {
        c(y.abs() / (2.0 * t) * k, t.copysign(y) * k)
    }
}

/// x² split exactly into a rounded square and its rounding error.
fn square_parts(x: f64) -> [f64; 2] {
    let hi = x * x;
    [hi, x.mul_add(x, -hi)]
}

/// The natural logarithm: (ln|z|, arg z); ln|z| = log1p(x² + y² - 1)/2 near the unit circle,
/// with the squares summed exactly.
pub fn clog(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    let h = x.hypot(y);
    let re = if h > 0.5 && h < 2.0 {
        let [xh, xl] = square_parts(x);
        let [yh, yl] = square_parts(y);
        0.5 * neumaier([xh, yh, -1.0, xl, yl].into_iter()).ln_1p()
    } else {
        h.ln()
    };
    c(re, y.atan2(x))
}

/// log(1 + z), accurate for small z (NumPy's formula, log(hypot(1 + x, y)), is not).
pub fn clog1p(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if x.hypot(y) < 0.5 {
        // |1 + z|² - 1 = 2x + x² + y², summed exactly.
        let [xh, xl] = square_parts(x);
        let [yh, yl] = square_parts(y);
        let t = neumaier([2.0 * x, xh, yh, xl, yl].into_iter());
        c(0.5 * t.ln_1p(), y.atan2(1.0 + x))
    } else {
        clog(c(1.0 + x, y))
    }
}

/// The hyperbolic tangent by Kahan's formula (as FreeBSD's `ctanh`).
pub fn ctanh(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if x.is_nan() {
        return c(x, if y == 0.0 { y } else { f64::NAN });
    }
    if x.is_infinite() {
        let im = if y.is_finite() { y.sin() * y.cos() } else { y };
        return c(1.0f64.copysign(x), 0.0f64.copysign(im));
    }
    if !y.is_finite() {
        return c(if x == 0.0 { x } else { f64::NAN }, f64::NAN);
    }
    if x.abs() >= 22.0 {
        let e = (-x.abs()).exp();
        return c(1.0f64.copysign(x), 4.0 * y.sin() * y.cos() * e * e);
    }
    let t = y.tan();
    let beta = 1.0 + t * t;
    let s = x.sinh();
    let rho = (1.0 + s * s).sqrt();
    let denom = 1.0 + beta * s * s;
    c(beta * rho * s / denom, t / denom)
}

/// tan(z) = -i·tanh(i·z).
pub fn ctan(z: C64) -> C64 {
    let w = ctanh(c(-z.im, z.re));
    c(w.im, -w.re)
}

/// Applies the symmetries f(-z) = -f(z) and f(conj z) = conj f(z) to a value computed for
/// |re|, |im|.
fn odd_conj(w: C64, z: C64) -> C64 {
    c(w.re.copysign(z.re), w.im.copysign(z.im))
}

/// asinh(z) (C99 `casinh`). Finite z: Kahan's asinh(z) = -i·asin(i·z).
pub fn casinh(z: C64) -> C64 {
    let (ax, ay) = (z.re.abs(), z.im.abs());
    if !ax.is_finite() || !ay.is_finite() {
        let w = if ax.is_nan() {
            if ay == 0.0 {
                c(f64::NAN, 0.0)
            } else if ay.is_infinite() {
                c(f64::INFINITY, f64::NAN)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else if ay.is_nan() {
            if ax.is_infinite() {
                c(f64::INFINITY, f64::NAN)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else if ax.is_infinite() {
            c(f64::INFINITY, if ay.is_infinite() { FRAC_PI_4 } else { 0.0 })
        } else {
            c(f64::INFINITY, FRAC_PI_2)
        };
        return odd_conj(w, z);
    }
    let w = casin(c(-z.im, z.re));
    c(w.im, -w.re)
}

/// asin(z) (C99 `casin` = -i·casinh(i·z)). Finite z: Kahan's
/// (atan(x / Re(√(1-z)·√(1+z))), asinh(Im(conj(√(1-z))·√(1+z)))).
pub fn casin(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if !x.is_finite() || !y.is_finite() {
        let w = casinh(c(-y, x));
        return c(w.im, -w.re);
    }
    let s1 = csqrt(c(1.0 - x, -y));
    let s2 = csqrt(c(1.0 + x, y));
    let re = (x / (s1.re * s2.re - s1.im * s2.im)).atan();
    let im = (s1.re * s2.im - s1.im * s2.re).asinh();
    c(re, im)
}

/// acos(z) (C99 `cacos`). Finite z: Kahan's
/// (2·atan(Re √(1-z) / Re √(1+z)), asinh(Im(conj(√(1+z))·√(1-z)))).
pub fn cacos(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if !x.is_finite() || !y.is_finite() {
        // C99 G.6.1.1, for im >= 0 then conjugated.
        let (ax, ay) = (x, y.abs());
        let w = if ax.is_nan() {
            if ay.is_infinite() {
                c(f64::NAN, -f64::INFINITY)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else if ay.is_nan() {
            if ax.is_infinite() {
                // The sign of the imaginary part is unspecified; glibc's is negative.
                c(f64::NAN, -f64::INFINITY)
            } else if ax == 0.0 {
                c(FRAC_PI_2, f64::NAN)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else if ax.is_infinite() {
            let re = match (ax > 0.0, ay.is_infinite()) {
                (true, true) => FRAC_PI_4,
                (true, false) => 0.0,
                (false, true) => 3.0 * FRAC_PI_4,
                (false, false) => PI,
            };
            c(re, -f64::INFINITY)
        } else {
            c(FRAC_PI_2, -f64::INFINITY)
        };
        return if y.is_sign_negative() && !y.is_nan() { w.conj() } else { w };
    }
    let s1 = csqrt(c(1.0 - x, -y));
    let s2 = csqrt(c(1.0 + x, y));
    let re = 2.0 * (s1.re / s2.re).atan();
    let im = (s2.re * s1.im - s2.im * s1.re).asinh();
    c(re, im)
}

/// acosh(z) (C99 `cacosh`). Finite z: Kahan's
/// (asinh(Re(conj(√(z-1))·√(z+1))), 2·atan(Im √(z-1) / Re √(z+1))).
pub fn cacosh(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if !x.is_finite() || !y.is_finite() {
        // C99 G.6.2.1, for im >= 0 then conjugated.
        let ay = y.abs();
        let w = if x.is_nan() {
            if ay.is_infinite() {
                c(f64::INFINITY, f64::NAN)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else if ay.is_nan() {
            if x.is_infinite() {
                c(f64::INFINITY, f64::NAN)
            } else if x == 0.0 {
                // As glibc (and so NumPy): acosh(±0 + iNaN) = NaN + iπ/2.
                c(f64::NAN, FRAC_PI_2)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else if x.is_infinite() {
            let im = match (x > 0.0, ay.is_infinite()) {
                (true, true) => FRAC_PI_4,
                (true, false) => 0.0,
                (false, true) => 3.0 * FRAC_PI_4,
                (false, false) => PI,
            };
            c(f64::INFINITY, im)
        } else {
            c(f64::INFINITY, FRAC_PI_2)
        };
        return if y.is_sign_negative() && !y.is_nan() { w.conj() } else { w };
    }
    let s1 = csqrt(c(x - 1.0, y));
    let s2 = csqrt(c(x + 1.0, y));
    let re = (s1.re * s2.re + s1.im * s2.im).asinh();
    let im = 2.0 * (s1.im / s2.re).atan();
    c(re, im)
}

/// atanh(z) (C99 `catanh`). Finite z: Kahan's algorithm.
pub fn catanh(z: C64) -> C64 {
    let (ax, ay) = (z.re.abs(), z.im.abs());
    if !ax.is_finite() || !ay.is_finite() {
        let w = if ax.is_nan() {
            if ay.is_infinite() {
                c(0.0, FRAC_PI_2)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else if ay.is_nan() {
            if ax.is_infinite() || ax == 0.0 {
                c(0.0, f64::NAN)
            } else {
                c(f64::NAN, f64::NAN)
            }
        } else {
            c(0.0, FRAC_PI_2)
        };
        return odd_conj(w, z);
    }
    if ax == 1.0 && ay == 0.0 {
        return odd_conj(c(f64::INFINITY, 0.0), z);
    }
    // Kahan: with β = sign(x), work on β·conj(z) = (|x|, -β·y), answer β·conj(ξ + iη).
    let theta = f64::MAX.sqrt() / 4.0;
    let rho = 1.0 / theta;
    let beta = 1.0f64.copysign(z.re);
    let (x, y) = (ax, -beta * z.im);
    let (xi, eta) = if x > theta || y.abs() > theta {
        let r = cdiv(c(1.0, 0.0), c(x, y)).re;
        (r, FRAC_PI_2.copysign(y))
    } else if x == 1.0 && y.abs() < 1e-100 {
        // Near the pole: (1-x)² + y² would underflow.
        let ya = y.abs() + rho;
        (
            ((4.0 + y * y).sqrt().sqrt() / ya.sqrt()).ln(),
            (FRAC_PI_2 + (ya / 2.0).atan()).copysign(y) / 2.0,
        )
    } else {
        let ya = y.abs() + rho;
        let xi = (4.0 * x / ((1.0 - x) * (1.0 - x) + ya * ya)).ln_1p() / 4.0;
        let eta = (2.0 * y).atan2((1.0 - x) * (1.0 + x) - ya * ya) / 2.0;
        (xi, eta)
    };
    c(beta * xi, -beta * eta)
}

/// atan(z) = -i·atanh(i·z).
pub fn catan(z: C64) -> C64 {
    let w = catanh(c(-z.im, z.re));
    c(w.im, -w.re)
}

/// NumPy's complex power (`nc_pow`): x**0 = 1; 0**y is 0 for real y > 0 and NaN otherwise; small
/// integer exponents by repeated multiplication; else exp(y·log(x)).
pub fn cpow(a: C64, b: C64) -> C64 {
    if b.re == 0.0 && b.im == 0.0 {
        return c(1.0, 0.0);
    }
    if a.re == 0.0 && a.im == 0.0 {
        return if b.re > 0.0 && b.im == 0.0 { c(0.0, 0.0) } else { c(f64::NAN, f64::NAN) };
    }
    if b.im == 0.0 && b.re == b.re.trunc() && b.re.abs() < 100.0 {
        let n = b.re as i64;
        match n {
            1 => return a,
            2 => return cmul(a, a),
            3 => return cmul(cmul(a, a), a),
            _ => {
                let mut m = n.unsigned_abs();
                let (mut acc, mut p) = (c(1.0, 0.0), a);
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
                return if n < 0 { cdiv(c(1.0, 0.0), acc) } else { acc };
            }
        }
    }
    cexp(b * clog(a))
}

/// e**z (num-complex's, which follows C99's special values).
pub fn cexp(z: C64) -> C64 {
    z.exp()
}

/// 2**z = 2**x·(cos(y·ln 2) + i·sin(y·ln 2)), so that large x loses nothing to rounding x·ln 2.
pub fn cexp2(z: C64) -> C64 {
    let (x, y) = (z.re, z.im);
    if !x.is_finite() || !y.is_finite() {
        return cexp(z * std::f64::consts::LN_2);
    }
    let r = x.exp2();
    if y == 0.0 {
        return c(r, y);
    }
    let t = y * std::f64::consts::LN_2;
    c(r * t.cos(), r * t.sin())
}

#[cfg(test)]
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests;
