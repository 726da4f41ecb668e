//! Float division by a compile-time constant, correctly rounded without a division per element.
//!
//! `x / c` for a constant `c` (dropout's `/ (1 - p)`, a mean's `/ n` written by hand) is
//! `q = x·r` with the reciprocal `r = RN(1/c)` computed here, then one exact correction by the
//! remainder: `q' = RN(q + (x - q·c)·r)`, the remainder an FMA (exact: Markstein's theorem),
//! the correction another. With `r` correctly rounded, `q'` is the correctly rounded quotient
//! for every `x` (Brisebarre, Muller and Raina, "Accelerating correctly rounded floating-point
//! division when the divisor is known in advance", IEEE TC 53(8), 2004: one multiplication and
//! two FMAs), as long as nothing underflows or overflows. Operands outside that range (see
//! [`fast_range`]), infinities and NaN take the ordinary IEEE division in a branch; zeros stay
//! on the fast path, whose form is chosen by the divisor's sign so that `±0 / c` keeps IEEE's
//! sign. On the GPU this replaces `div.rn`'s per-element reciprocal, its range check (`FCHK`)
//! and three FMAs by one multiplication, two FMAs and the range comparisons.

use super::builder::Builder;
use super::scalar::{bin, cmp};
use super::types::float_const;

/// The float format of `ty`: (precision p, least normal exponent, greatest exponent).
fn format(ty: &str) -> Option<(i32, i32, i32)> {
    match ty {
        "f32" => Some((24, -126, 127)),
        "f64" => Some((53, -1022, 1023)),
        _ => None,
    }
}

/// For divisor `c` of float type `ty` (f32 or f64): `(r, lo, hi)`, the reciprocal `RN(1/c)`
/// and the magnitudes `lo <= |x| <= hi` of the dividends the corrected product divides
/// correctly; `None` where `c` or its reciprocal is zero, subnormal, infinite or NaN.
///
/// The range keeps every intermediate normal and finite, with margins: `|x| >= 2^(emin+p+2)`
/// makes the remainder `x - q·c` (of magnitude about `2^-p·|x|`, on the grid of `q·c`'s
/// products) exactly representable; `|x| >= 2^(emin+2)·|c|` keeps the quotient normal;
/// `|x| <= 2^(emax-1)·|c|` keeps it and `x·r` finite.
pub(crate) fn fast_range(c: f64, ty: &str) -> Option<(f64, f64, f64)> {
    let (p, emin, emax) = format(ty)?;
    let (r, max) = match ty {
        "f32" => ((1.0f32 / c as f32) as f64, f32::MAX as f64),
        _ => (1.0 / c, f64::MAX),
    };
    let normal = |v: f64| v.is_finite() && v.abs() >= 2f64.powi(emin);
    if !normal(c) || !normal(r) || (ty == "f32" && c.abs() > max) {
        return None;
    }
    let a = c.abs();
    let lo = 2f64.powi(emin + p + 2).max(2f64.powi(emin + 2) * a);
    let hi = (2f64.powi(emax - 1) * a).min(max);
    (lo <= hi).then_some((r, lo, hi))
}

/// `x / c` in `ty` (f32 or f64) for the constant `c` (the SSA constant `cv`), correctly
/// rounded: the same bits as `arith.divf`. `None` where [`fast_range`] has no range for `c`
/// (the caller divides).
pub(crate) fn by_constant(b: &mut Builder, x: &str, cv: &str, c: f64, ty: &str) -> Option<String> {
    let (r, lo, hi) = fast_range(c, ty)?;
    let r = float_const(b, r, ty);
    let q = bin(b, "arith.mulf", x, &r, ty);
    // The correction, q + (x - q·c)·r. For zero x the remainder's FMA gives +0 whatever the
    // signs, so the form is picked to add a zero of q's sign at the end: for c > 0 the negated
    // remainder e = q·c - x (+0 for x = ±0), then q - e·r (-e·r = -0); for c < 0, the remainder
    // x - q·c (+0), then q + e·r (+0·r = -0).
    let q1 = if c > 0.0 {
        let nx = b.op(&format!("arith.negf {x} : {ty}"));
        let e = b.op(&format!("math.fma {q}, {cv}, {nx} : {ty}"));
        let ne = b.op(&format!("arith.negf {e} : {ty}"));
        b.op(&format!("math.fma {ne}, {r}, {q} : {ty}"))
    } else {
        let nq = b.op(&format!("arith.negf {q} : {ty}"));
        let e = b.op(&format!("math.fma {nq}, {cv}, {x} : {ty}"));
        b.op(&format!("math.fma {e}, {r}, {q} : {ty}"))
    };
    // lo <= |x| <= hi, or x = ±0 (NaN fails every comparison).
    let (lo, hi, zero) = (float_const(b, lo, ty), float_const(b, hi, ty), float_const(b, 0.0, ty));
    let a = b.op(&format!("math.absf {x} : {ty}"));
    let below_hi = cmp(b, "arith.cmpf", "ole", &a, &hi, ty);
    let above_lo = cmp(b, "arith.cmpf", "oge", &a, &lo, ty);
    let is_zero = cmp(b, "arith.cmpf", "oeq", x, &zero, ty);
    let low_ok = bin(b, "arith.ori", &above_lo, &is_zero, "i1");
    let ok = bin(b, "arith.andi", &below_hi, &low_ok, "i1");
    let res = b.open(1, &format!("scf.if {ok} -> ({ty})")).swap_remove(0);
    b.stmt(&format!("scf.yield {q1} : {ty}"));
    b.next_region("else");
    let d = match (b.target, ty) {
        // As inline assembly on the GPU, which LLVM does not speculate: it would make the branch
        // a select and divide every element.
        (super::Target::Gpu, "f32" | "f64") => {
            let k = if ty == "f32" { "f" } else { "d" };
            b.op(&format!(
                "llvm.inline_asm \"div.rn.{ty} $0, $1, $2;\", \"={k},{k},{k}\" {x}, {cv} : ({ty}, {ty}) -> {ty}"
            ))
        }
        _ => bin(b, "arith.divf", x, cv, ty),
    };
    b.stmt(&format!("scf.yield {d} : {ty}"));
    b.close();
    Some(res)
}

#[cfg(test)]
mod tests {
    use super::fast_range;

    /// A splitmix64 stream.
    fn next(s: &mut u64) -> u64 {
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    macro_rules! emulate {
        ($name:ident, $t:ty) => {
            /// The emitted sequence on the host's floats (`mul_add` is a fused multiply-add),
            /// `None` off the fast path.
            fn $name(x: $t, c: $t) -> Option<$t> {
                let (r, lo, hi) = fast_range(c as f64, stringify!($t))?;
                let (r, lo, hi) = (r as $t, lo as $t, hi as $t);
                let a = x.abs();
                if !(a <= hi && (a >= lo || x == 0.0)) {
                    return None;
                }
                let q = x * r;
                Some(if c > 0.0 {
                    (-q.mul_add(c, -x)).mul_add(r, q)
                } else {
                    (-q).mul_add(c, x).mul_add(r, q)
                })
            }
        };
    }
    emulate!(fast32, f32);
    emulate!(fast64, f64);

    const DIVISORS: [f64; 12] = [0.9, 3.0, -3.0, 1e-30, 1e30, -0.9, 2.0, 0.5, 0.1, 7.0, 1.0, -1.0];

    /// The emulated quotients equal IEEE division bit for bit (f32 and f64): random
    /// significands and exponents over the whole range, dividends next to a rounding boundary
    /// (`RN(q·c)` and its neighbours), the range's edges, zeros.
    #[test]
    fn corrected_quotients_are_correctly_rounded() {
        let mut s = 11u64;
        let (mut fast, mut all) = (0u64, 0u64);
        let mut divisors: Vec<f64> = DIVISORS.to_vec();
        for _ in 0..20 {
            let v = next(&mut s);
            divisors.push(f64::from_bits(0x3FF0_0000_0000_0000 | (v >> 12)) * (v % 7 + 1) as f64);
        }
        for &c in &divisors {
            let (c32, c64) = (c as f32, c);
            let mut check32 = |x: f32| {
                all += 1;
                if let Some(q) = fast32(x, c32) {
                    assert_eq!(q.to_bits(), (x / c32).to_bits(), "f32 {x:e} / {c32:e}");
                    fast += 1;
                }
            };
            for _ in 0..150_000 {
                let v = next(&mut s);
                check32(f32::from_bits(v as u32));
                let q = f32::from_bits(0x3F80_0000 | (v >> 41) as u32)
                    * 2f32.powi((v % 61) as i32 - 30);
                let x = q * c32;
                for d in [-2i32, -1, 0, 1, 2] {
                    check32(f32::from_bits((x.to_bits() as i32).wrapping_add(d) as u32));
                }
            }
            let (_, lo, hi) = fast_range(c, "f32").unwrap();
            for e in [lo, hi, lo * 0.5, hi * 2.0, 0.0, -0.0, 1e-45, 1.2e-38] {
                for d in [-3i32, -1, 0, 1, 3] {
                    let x = f32::from_bits(((e as f32).to_bits() as i32).wrapping_add(d) as u32);
                    check32(x);
                    check32(-x);
                }
            }
            let mut check64 = |x: f64| {
                all += 1;
                if let Some(q) = fast64(x, c64) {
                    assert_eq!(q.to_bits(), (x / c64).to_bits(), "f64 {x:e} / {c64:e}");
                    fast += 1;
                }
            };
            for _ in 0..150_000 {
                let v = next(&mut s);
                check64(f64::from_bits(v));
                let q = f64::from_bits(0x3FF0_0000_0000_0000 | (v >> 12))
                    * 2f64.powi((v % 201) as i32 - 100);
                let x = q * c64;
                for d in [-2i64, -1, 0, 1, 2] {
                    check64(f64::from_bits((x.to_bits() as i64).wrapping_add(d) as u64));
                }
            }
            let (_, lo, hi) = fast_range(c, "f64").unwrap();
            for e in [lo, hi, lo * 0.5, hi * 2.0, 0.0, -0.0, 5e-324, 2.3e-308] {
                for d in [-3i64, -1, 0, 1, 3] {
                    let x = f64::from_bits((e.to_bits() as i64).wrapping_add(d) as u64);
                    check64(x);
                    check64(-x);
                }
            }
        }
        assert!(fast > all / 2, "{fast} of {all} on the fast path");
    }

    /// Every f32 significand of a dividend (one binade: the path scales exactly by powers of
    /// two inside the range) for a few divisors, 0.9 among them.
    #[test]
    fn every_f32_significand_divides_correctly() {
        for c in [0.9f32, 3.0, 1e-30, f32::from_bits(0x3FFF_FFFF), f32::from_bits(0x3F80_0001)] {
            for m in 0..1u32 << 23 {
                let x = f32::from_bits(0x3F80_0000 | m);
                let q = fast32(x, c).expect("in range");
                assert_eq!(q.to_bits(), (x / c).to_bits(), "{x:e} / {c:e}");
            }
        }
    }

    /// No range for divisors without a normal reciprocal.
    #[test]
    fn unusable_divisors_have_no_range() {
        for c in [0.0, -0.0, f64::INFINITY, f64::NAN, 1e-40, 1e39] {
            assert!(fast_range(c, "f32").is_none(), "{c:e}");
        }
        for c in [0.0, f64::INFINITY, 5e-324, 1e-310, 1e308] {
            assert!(fast_range(c, "f64").is_none(), "{c:e}");
        }
        assert!(fast_range(0.9, "f32").is_some());
    }
}
