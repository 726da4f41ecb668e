//! Float division by a constant (`compiler/src/codegen/division.rs`): the reciprocal computed
//! while lowering, one multiplication and an exact FMA correction per element, the IEEE division
//! in a branch outside the fast path's range. Run on whichever backend runs the suite, against
//! the host's IEEE division bit for bit (NaN as NaN), over random bit patterns (every class:
//! zeros, subnormals, infinities, NaN), dividends next to rounding boundaries and the edges of
//! the fast path's range, for float32 and float64 and divisors of both signs.

use kiln::Array;

/// A reproducible stream of 64-bit numbers (SplitMix64).
fn mix(i: u64, seed: u64) -> u64 {
    let mut z = i.wrapping_add(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const DIVISORS: [f64; 11] = [0.9, 3.0, -3.0, 1e-30, 1e30, 2.0, 0.5, -0.9, 0.1, 7.0, 1.0];

/// Dividends for `c`: random bits, quotients `RN(q·c)` of random `q` and their neighbours, and
/// the neighbours of powers of two around the fast path's edges (`2^k` and `2^k·|c|`).
macro_rules! dividends {
    ($name:ident, $t:ty, $bits:ty, $sbits:ty, $range:expr) => {
        fn $name(c: $t, n: usize, seed: u64) -> Vec<$t> {
            let mut v: Vec<$t> = Vec::with_capacity(n + 4096);
            for i in 0..n as u64 / 2 {
                let r = mix(i, seed);
                v.push(<$t>::from_bits(r as $bits));
                let q = <$t>::from_bits((r >> 3) as $bits & !(1 << (<$bits>::BITS - 1)));
                let q = if q.is_finite() { q } else { 1.5 };
                let x = q * c;
                v.push(<$t>::from_bits(
                    (x.to_bits() as $sbits).wrapping_add((r % 5) as $sbits - 2) as $bits,
                ));
            }
            for k in $range {
                for base in [(2.0 as $t).powi(k), (2.0 as $t).powi(k) * c.abs()] {
                    for d in -2..=2 {
                        let x =
                            <$t>::from_bits((base.to_bits() as $sbits).wrapping_add(d) as $bits);
                        v.push(x);
                        v.push(-x);
                    }
                }
            }
            v.extend([
                0.0,
                -0.0,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                <$t>::NAN,
                <$t>::MAX,
                <$t>::MIN_POSITIVE,
            ]);
            v
        }
    };
}
dividends!(dividends32, f32, u32, i32, -150..130);
dividends!(dividends64, f64, u64, i64, (-1080..1030).step_by(3));

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn division_by_a_constant_float32_is_ieee_division() {
    for (k, &c) in DIVISORS.iter().enumerate() {
        let c = c as f32;
        let x = dividends32(c, 400_000, k as u64);
        let got = (&Array::from_vec(x.clone(), &[x.len()]) / c).to_vec::<f32>();
        for (a, g) in x.iter().zip(&got) {
            assert!(same32(*g, a / c), "{a:e} / {c:e}: {g:e}, IEEE {:e}", a / c);
        }
    }
}

#[test]
fn division_by_a_constant_float64_is_ieee_division() {
    for (k, &c) in DIVISORS.iter().enumerate() {
        let x = dividends64(c, 400_000, 100 + k as u64);
        let got = (&Array::from_vec(x.clone(), &[x.len()]) / c).to_vec::<f64>();
        for (a, g) in x.iter().zip(&got) {
            assert!(same64(*g, a / c), "{a:e} / {c:e}: {g:e}, IEEE {:e}", a / c);
        }
    }
}

/// Dropout's shape: a product with zeros (both signs) divided by 0.9, fused.
#[test]
fn division_by_a_constant_keeps_the_sign_of_zero() {
    let x: Vec<f32> =
        (0..4096).map(|i| if i % 3 == 0 { -0.0 } else { (i as f32 - 2000.0) * 0.37 }).collect();
    let m: Vec<f32> = (0..4096).map(|i| (i % 7 != 0) as u8 as f32).collect();
    for c in [0.9f32, -0.9] {
        let a = Array::from_vec(x.clone(), &[4096]);
        let b = Array::from_vec(m.clone(), &[4096]);
        let got = (&(&a * &b) / c).to_vec::<f32>();
        for ((xv, mv), g) in x.iter().zip(&m).zip(&got) {
            let want = (xv * mv) / c;
            assert_eq!(g.to_bits(), want.to_bits(), "{xv:e} * {mv} / {c}");
        }
    }
}

/// The lowering: a constant divisor's quotient is a product and FMAs on both targets (the IEEE
/// division only in the branch), a divisor that is an array keeps `arith.divf` alone.
#[test]
fn division_by_a_constant_is_a_product_and_a_correction() {
    let x = Array::from_vec(vec![1.5f32; 1000], &[1000]);
    let y = Array::from_vec(vec![3.0f32; 1000], &[1000]);
    let host = kiln::kernel_code(&[&(&x / 0.9)], kiln::CodeStage::HostMlir).unwrap();
    // Two FMAs a quotient (the host's loop is unrolled: a multiple of two).
    let fmas = host.matches("math.fma").count();
    assert!(fmas >= 2 && fmas % 2 == 0, "{host}");
    assert!(host.contains("scf.if"), "{host}");
    let gpu = kiln::kernel_code(&[&(&x / 0.9)], kiln::CodeStage::GpuMlir).unwrap();
    assert!(gpu.matches("math.fma").count() >= 2, "{gpu}");
    assert!(gpu.contains("div.rn.f32"), "{gpu}");
    assert!(!gpu.contains("arith.divf"), "{gpu}");
    let q = kiln::kernel_code(&[&(&x / &y)], kiln::CodeStage::HostMlir).unwrap();
    assert!(q.contains("arith.divf") && !q.contains("math.fma"), "{q}");
    // A divisor without a normal reciprocal divides.
    let z = kiln::kernel_code(&[&(&x / 1e-39f32)], kiln::CodeStage::HostMlir).unwrap();
    assert!(z.contains("arith.divf") && !z.contains("math.fma"), "{z}");
}
