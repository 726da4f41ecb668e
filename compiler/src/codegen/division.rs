//! Float division by a compile-time constant or by a row's divisor, correctly rounded without
//! a division per element; [`divide`] picks the form.
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
//!
//! A GPU row kernel's output pass divides by a value fixed for the row (layer norm's
//! deviation, softmax's sum): [`by_invariant`] takes its reciprocal once a row and corrects
//! each quotient twice; the output step gathers the range checks of all its divisions
//! ([`Builder::div_checks`]) and recomputes the whole step with IEEE divisions in one branch
//! where any operand is out of range (`lower/coop.rs`).

use super::builder::Builder;
use super::scalar::{bin, cmp, select};
use super::types::float_const;
use super::Target;

/// `x / y` in float type `ty` (`f32` or `f64`), correctly rounded: the same bits as
/// `arith.divf` whichever form is emitted.
/// - A dividend invariant in the innermost loop (a row's value, such as its variance by the
///   row's length) on the GPU: `arith.divf`, which LLVM computes once before the loop
///   (`KILN_GPU_ROW_DIV` not `off`).
/// - In an output step's slow path ([`Builder::div_exact`]), the IEEE division as inline
///   assembly on the GPU.
/// - By a constant: [`by_constant`] (`KILN_CONST_DIV`).
/// - A float32 dividend varying in the loop by a divisor that does not, where the range
///   checks are gathered ([`Builder::div_checks`], `KILN_GPU_ROW_DIV=on`): [`by_invariant`].
/// - Else `arith.divf`.
pub(crate) fn divide(b: &mut Builder, x: &str, y: &str, ty: &str) -> String {
    let cfg = kiln_cache::config();
    let gpu = b.target == Target::Gpu;
    if gpu && cfg.gpu_row_div >= 1 && b.loop_invariant(x) {
        return bin(b, "arith.divf", x, y, ty);
    }
    if b.div_exact && gpu {
        return ieee(b, x, y, ty);
    }
    if let Some(c) = b.float_value(y, ty).filter(|_| cfg.const_div) {
        if let Some(q) = by_constant(b, x, y, c, ty) {
            return q;
        }
    }
    if gpu
        && ty == "f32"
        && cfg.gpu_row_div >= 2
        && b.gathers_div_checks()
        && b.loop_invariant(y)
        && !b.loop_invariant(x)
    {
        return by_invariant(b, x, y);
    }
    bin(b, "arith.divf", x, y, ty)
}

/// The IEEE division `x / y` in `ty`; on the GPU as inline assembly, which LLVM does not
/// speculate (it would make a slow path's branch a select and divide every element).
fn ieee(b: &mut Builder, x: &str, y: &str, ty: &str) -> String {
    match (b.target, ty) {
        (Target::Gpu, "f32" | "f64") => {
            let k = if ty == "f32" { "f" } else { "d" };
            b.op(&format!(
                "llvm.inline_asm \"div.rn.{ty} $0, $1, $2;\", \"={k},{k},{k}\" {x}, {y} : ({ty}, {ty}) -> {ty}"
            ))
        }
        _ => bin(b, "arith.divf", x, y, ty),
    }
}

/// `x / y` in float32 for a divisor `y` invariant in the innermost loop, correctly rounded
/// where the check this pushes on [`Builder::div_checks`] holds (the caller divides again
/// where it does not). The reciprocal `r = RN(1/y)` is one IEEE division, which LLVM computes
/// once before the loop; per element `q0 = RN(x·r)` (within 1.5 ulps of `x/y`), then two
/// corrections `q' = RN(q + RN(x - q·y)·r)`, each two FMAs: the first brings the quotient
/// within one ulp, so the second's remainder is exact and by Markstein's theorem (a
/// reciprocal within half an ulp, a quotient within one) its result is `x/y` correctly
/// rounded. The sign of a zero quotient is `q0`'s (`copysign`). The check: `y` and `r`
/// normal, and `x` zero or within the range [`fast_range`] gives a constant divisor, here
/// computed once a row: `max(2^-100, 2^-124·|y|) <= |x| <= min(2^126·|y|, MAX)`.
pub(crate) fn by_invariant(b: &mut Builder, x: &str, y: &str) -> String {
    let ty = "f32";
    let one = float_const(b, 1.0, ty);
    let r = bin(b, "arith.divf", &one, y, ty);
    // The row's range of dividends: empty (hi = -1) where y or its reciprocal is not a normal
    // number (NaN fails the comparisons).
    let c = |b: &mut Builder, e: i32| float_const(b, 2f64.powi(e), ty);
    let ay = b.op(&format!("math.absf {y} : {ty}"));
    let (min_y, max_y) = (c(b, -126), c(b, 126));
    let y_lo = cmp(b, "arith.cmpf", "oge", &ay, &min_y, ty);
    let y_hi = cmp(b, "arith.cmpf", "ole", &ay, &max_y, ty);
    let y_ok = bin(b, "arith.andi", &y_lo, &y_hi, "i1");
    let (lo_abs, lo_rel) = (c(b, -100), c(b, -124));
    let lo_y = bin(b, "arith.mulf", &ay, &lo_rel, ty);
    let lo = bin(b, "arith.maximumf", &lo_abs, &lo_y, ty);
    let (hi_rel, max) = (c(b, 126), float_const(b, f32::MAX as f64, ty));
    let hi_y = bin(b, "arith.mulf", &ay, &hi_rel, ty);
    let hi = bin(b, "arith.minimumf", &hi_y, &max, ty);
    let none = float_const(b, -1.0, ty);
    let hi = select(b, &y_ok, &hi, &none, ty);
    // The quotient.
    let q0 = bin(b, "arith.mulf", x, &r, ty);
    let correct = |b: &mut Builder, q: &str| {
        let nq = b.op(&format!("arith.negf {q} : {ty}"));
        let rem = b.op(&format!("math.fma {nq}, {y}, {x} : {ty}"));
        b.op(&format!("math.fma {rem}, {r}, {q} : {ty}"))
    };
    let q1 = correct(b, &q0);
    let q2 = correct(b, &q1);
    let q = bin(b, "math.copysign", &q2, &q0, ty);
    // The element's check: lo <= |x| <= hi, or x = ±0.
    let zero = float_const(b, 0.0, ty);
    let a = b.op(&format!("math.absf {x} : {ty}"));
    let below_hi = cmp(b, "arith.cmpf", "ole", &a, &hi, ty);
    let above_lo = cmp(b, "arith.cmpf", "oge", &a, &lo, ty);
    let is_zero = cmp(b, "arith.cmpf", "oeq", x, &zero, ty);
    let low_ok = bin(b, "arith.ori", &above_lo, &is_zero, "i1");
    let ok = bin(b, "arith.andi", &below_hi, &low_ok, "i1");
    b.div_checks.as_mut().expect("checks gathered").push(ok);
    q
}

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
    // In an output step: its one branch (see `divide`).
    if b.gathers_div_checks() {
        b.div_checks.as_mut().expect("checks gathered").push(ok);
        return Some(q1);
    }
    let res = b.open(1, &format!("scf.if {ok} -> ({ty})")).swap_remove(0);
    b.stmt(&format!("scf.yield {q1} : {ty}"));
    b.next_region("else");
    let d = ieee(b, x, cv, ty);
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

    /// [`super::by_invariant`]'s sequence on the host's float32 (`mul_add` is a fused
    /// multiply-add), `None` where its check fails.
    fn fast_inv(x: f32, y: f32) -> Option<f32> {
        let ay = y.abs();
        let y_ok = ay >= 2f32.powi(-126) && ay <= 2f32.powi(126);
        let lo = 2f32.powi(-100).max(ay * 2f32.powi(-124));
        let hi = if y_ok { (ay * 2f32.powi(126)).min(f32::MAX) } else { -1.0 };
        let a = x.abs();
        if !(a <= hi && (a >= lo || x == 0.0)) {
            return None;
        }
        let r = 1.0 / y;
        let q0 = x * r;
        let q1 = (-q0).mul_add(y, x).mul_add(r, q0);
        let q2 = (-q1).mul_add(y, x).mul_add(r, q1);
        Some(q2.copysign(q0))
    }

    /// By a run-time divisor: random divisors of every exponent and significand, dividends of
    /// random bits, next to a rounding boundary (`RN(q·y)` and its neighbours) and at the
    /// range's edges, zeros of both signs; divisors without a normal reciprocal take no fast
    /// path at all.
    #[test]
    fn invariant_divisor_quotients_are_correctly_rounded() {
        let mut s = 23u64;
        let (mut fast, mut all) = (0u64, 0u64);
        let mut check = |x: f32, y: f32| {
            all += 1;
            if let Some(q) = fast_inv(x, y) {
                assert_eq!(q.to_bits(), (x / y).to_bits(), "{x:e} / {y:e}");
                fast += 1;
            }
        };
        for _ in 0..3_000 {
            let v = next(&mut s);
            let y = f32::from_bits(v as u32);
            let y = if y.is_finite() && y != 0.0 { y } else { 1.5 };
            for _ in 0..200 {
                let w = next(&mut s);
                check(f32::from_bits(w as u32), y);
                let q = f32::from_bits(0x3F80_0000 | (w >> 41) as u32)
                    * 2f32.powi((w % 61) as i32 - 30);
                let x = q * y;
                for d in [-2i32, -1, 0, 1, 2] {
                    check(f32::from_bits((x.to_bits() as i32).wrapping_add(d) as u32), y);
                }
            }
            let ay = y.abs();
            for e in [
                2f32.powi(-100),
                ay * 2f32.powi(-124),
                ay * 2f32.powi(126),
                f32::MAX,
                0.0,
                1e-45,
                1.2e-38,
            ] {
                for d in [-3i32, -1, 0, 1, 3] {
                    let x = f32::from_bits((e.to_bits() as i32).wrapping_add(d) as u32);
                    check(x, y);
                    check(-x, y);
                }
            }
        }
        assert!(fast > all / 2, "{fast} of {all} on the fast path");
        for y in
            [0.0, -0.0, 1e-40, 2f32.powi(127), -2f32.powi(127), f32::MAX, f32::NAN, f32::INFINITY]
        {
            for x in [0.0, 1.0, -3.5, 1e-30, 1e30] {
                assert!(fast_inv(x, y).is_none(), "{x:e} / {y:e}");
            }
        }
        // The range's ends of divisors (and zeros by them) are on it.
        for (x, y) in [(1.0, 2f32.powi(-126)), (2f32.powi(100), -2f32.powi(126)), (1.0, 1.999)] {
            assert!(fast_inv(x, y).is_some() && fast_inv(-0.0, y).is_some(), "{x:e} / {y:e}");
        }
    }

    /// Every f32 significand of a dividend (one binade) for divisors of awkward significands
    /// (all ones, one past a power of two, 0.9, a random one) and both signs.
    #[test]
    fn invariant_divisor_every_f32_significand() {
        for y in
            [0.9f32, -f32::from_bits(0x3FFF_FFFF), f32::from_bits(0x3F80_0001), 3.0e-5, -7.1e12]
        {
            for m in 0..1u32 << 23 {
                let x = f32::from_bits(0x3F80_0000 | m);
                let q = fast_inv(x, y).expect("in range");
                assert_eq!(q.to_bits(), (x / y).to_bits(), "{x:e} / {y:e}");
            }
        }
    }
}
