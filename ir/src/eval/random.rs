//! Counter-based random bits: Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random
//! numbers: as easy as 1, 2, 3", SC 2011), the generator of cuRAND's
//! `CURAND_RNG_PSEUDO_PHILOX4_32_10`, of torch's CUDA draws and of C++26's `std::philox4x32`.
//! A draw is a pure function of (counter, key), so the same element has the same bits on
//! every backend and in every kernel that computes it.

use super::value::Value;
use crate::dtype::DType;

/// The round multipliers and the key's increments (Weyl constants) of Philox4x32.
pub const PHILOX_M: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
pub const PHILOX_W: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// Philox4x32 with 10 rounds of counter `ctr` under key `key`.
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(PHILOX_W[0]), k[1].wrapping_add(PHILOX_W[1])];
        }
        let p0 = u64::from(PHILOX_M[0]) * u64::from(c[0]);
        let p1 = u64::from(PHILOX_M[1]) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// The `philox` op: the first two words of Philox4x32-10 of counter `(lo(x), hi(x), 0, 0)`
/// under key `(lo(y), hi(y))`, as `w1 · 2^32 + w0`, wrapped to `dt`.
pub fn philox(dt: DType, x: Value, y: Value) -> Value {
    pair(dt, x, y, 0)
}

/// The `philox_high` op: the last two words of the same call, `w3 · 2^32 + w2`.
pub fn philox_high(dt: DType, x: Value, y: Value) -> Value {
    pair(dt, x, y, 2)
}

/// Words `first` and `first + 1` of Philox4x32-10 of `x` under `y`, as one value of `dt`.
fn pair(dt: DType, x: Value, y: Value, first: usize) -> Value {
    let (Value::UInt(x), Value::UInt(y)) = (x, y) else {
        unreachable!("philox of {x:?} and {y:?}: the dtype rules admit unsigned integers only")
    };
    let w = philox4x32_10([x as u32, (x >> 32) as u32, 0, 0], [y as u32, (y >> 32) as u32]);
    let bits = u64::from(w[first + 1]) << 32 | u64::from(w[first]);
    let width = dt.itemsize() * 8;
    Value::UInt(if width >= 64 { bits } else { bits & ((1u64 << width) - 1) })
}

/// The `philox_bits` op at C-order position `i`: of Philox4x32-10 call `x + i / per_call`
/// (wrapping) under key `y`, word `i mod 4` (`per_call` 4, `words` 1) or the word pair
/// `w[2k+1]·2^32 + w[2k]`, `k = (i mod 4) / 2` (`per_call` 4, `words` 2) or `k = i mod 2`
/// (`per_call` 2, `words` 2). The compiler's expansion (`kiln_compiler::expand`) computes the
/// same with `iota`, `philox`, `philox_high` and bit ops.
pub fn philox_bits(i: u64, x: Value, y: Value, per_call: u8, words: u8) -> u64 {
    let (Value::UInt(x), Value::UInt(y)) = (x, y) else {
        unreachable!("philox_bits of {x:?} and {y:?}: the rules admit uint64 only")
    };
    let ctr = x.wrapping_add(i / u64::from(per_call));
    let w = philox4x32_10([ctr as u32, (ctr >> 32) as u32, 0, 0], [y as u32, (y >> 32) as u32]);
    let lane = (i % u64::from(per_call)) as usize;
    match (per_call, words) {
        (4, 1) => u64::from(w[lane]),
        (4, 2) => u64::from(w[2 * (lane / 2) + 1]) << 32 | u64::from(w[2 * (lane / 2)]),
        _ => u64::from(w[2 * lane + 1]) << 32 | u64::from(w[2 * lane]),
    }
}

/// `sin x` on |x| ≤ π/4 as `x + x³ (S₀ + S₁x² + S₂x⁴)`, float32 (a weighted least-squares fit of
/// the relative error; with the reduction of [`turn_sincos`] within 2 ulps of the exact angle's
/// sine at each of its 2²² arguments, checked exhaustively with and without FMA contraction).
pub const SIN_F32: [f32; 3] = [-0.166_666_55, 0.008_332_16, -0.000_195_152_66];
/// `cos x` on |x| ≤ π/4 as `1 + x² (C₀ + C₁x² + C₂x⁴)`, float32 (likewise).
pub const COS_F32: [f32; 3] = [-0.499_998_84, 0.041_655_775, -0.001_359_184_2];

/// `[cos θ, sin θ]` in float32 of the angle `θ = 2π k / 2²⁴` (`k` the top 24 bits of the word
/// `w`), with one argument reduction for both and no `sin`/`cos` call: the nearest quarter turn
/// `q` and the offset `j = k - q·2²²` (|j| ≤ 2²¹) are exact integer bit operations on the word,
/// `x = j · (2π / 2²⁴)` is in [-π/4, π/4], two short polynomials give `sin x` and `cos x`, and
/// the quarter turn swaps them (odd `q`) and sets their signs (on the float bits). Each step is
/// one float32 operation, in this order, in the code generator too (`codegen::philox`), so
/// the values are the same on every backend but for FMA contraction (a last bit).
pub fn turn_sincos(w: u32) -> [f32; 2] {
    // t's top two bits are q = round(k / 2²²) mod 4; bits 29..8 of w, signed, are j.
    let t = w.wrapping_add(1 << 29);
    let j = ((w << 2) as i32) >> 10;
    let x = j as f32 * (std::f64::consts::TAU / 16_777_216.0) as f32;
    let x2 = x * x;
    let horner = |c: [f32; 3]| (x2 * c[2] + c[1]) * x2 + c[0];
    let sin = x + x * x2 * horner(SIN_F32);
    let cos = horner(COS_F32) * x2 + 1.0;
    let odd = t & (1 << 30) != 0;
    // sin θ is negative for q = 2, 3 (t's bit 31), cos θ for q = 1, 2 (bits 30 and 31 differ).
    let sign = 1u32 << 31;
    let (c, s) = if odd { (sin, cos) } else { (cos, sin) };
    let signed = |m: f32, bit: u32| f32::from_bits(m.to_bits() ^ bit);
    [signed(c, (t ^ (t << 1)) & sign), signed(s, t & sign)]
}

/// Float32 Box-Muller of the word pair `x = w₂·2³² + w₁` (bits above 64 of a narrower dtype are
/// zero): `[r cos θ, r sin θ]` with `r = sqrt(-2 ln(1 - u))`, `u` the top 24 bits of `w₁` as a
/// float32 in [0, 1) (so `1 - u` is in (0, 1] and the log finite), and `θ = 2π k / 2²⁴`, `k`
/// the top 24 bits of `w₂` ([`turn_sincos`]). The log is float32's (computed in float64 and
/// rounded, as the `log` op).
pub fn box_muller_f32(x: u64) -> [f32; 2] {
    let u = ((x as u32) >> 8) as f32 * (1.0 / 16_777_216.0);
    let r = (((1.0 - u) as f64).ln() as f32 * -2.0).sqrt();
    let [c, s] = turn_sincos((x >> 32) as u32);
    [r * c, r * s]
}

/// The `box_muller_cos` op: `r cos θ` of [`box_muller_f32`], a float32.
pub fn box_muller_cos(_: DType, x: Value) -> Value {
    Value::Float(f64::from(box_muller_f32(uint(x))[0]))
}

/// The `box_muller_sin` op: `r sin θ` of [`box_muller_f32`], a float32.
pub fn box_muller_sin(_: DType, x: Value) -> Value {
    Value::Float(f64::from(box_muller_f32(uint(x))[1]))
}

fn uint(x: Value) -> u64 {
    let Value::UInt(x) = x else {
        unreachable!("box_muller of {x:?}: the dtype rules admit unsigned integers only")
    };
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known answers (`tests/kat_vectors`, the three `philox4x32 10` lines).
    #[test]
    fn philox_matches_random123s_known_answers() {
        let cases: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            ([0; 4], [0; 2], [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]),
            (
                [0xffff_ffff; 4],
                [0xffff_ffff; 2],
                [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd],
            ),
            (
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0],
                [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
            ),
        ];
        for (ctr, key, want) in cases {
            assert_eq!(philox4x32_10(ctr, key), want, "ctr {ctr:x?} key {key:x?}");
        }
    }

    #[test]
    fn the_op_packs_the_first_two_words() {
        let Value::UInt(b) = philox(DType::UInt64, Value::UInt(0), Value::UInt(0)) else {
            unreachable!()
        };
        assert_eq!(b, 0xe169_c58d_6627_e8d5);
        let Value::UInt(c) = philox(DType::UInt32, Value::UInt(0), Value::UInt(0)) else {
            unreachable!()
        };
        assert_eq!(c, 0x6627_e8d5);
        let Value::UInt(h) = philox_high(DType::UInt64, Value::UInt(0), Value::UInt(0)) else {
            unreachable!()
        };
        assert_eq!(h, 0x9b00_dbd8_bc57_ac4c);
    }

    /// The Box-Muller ops in IR text (printed as parsed; float32 from unsigned bits, a float
    /// operand refused), evaluated against `r cos θ`, `r sin θ` computed in float64 from the
    /// same 24-bit uniforms: within a few float32 ulps of `r` (the polynomials' 2 ulps, the
    /// log's rounding).
    #[test]
    fn box_muller_ops_in_text_and_against_float64() {
        let text = "kiln.graph v1\n%0 = input {index=0} : u64[4096]\n\
                    %1 = box_muller_cos(%0) : f32[4096]\n%2 = box_muller_sin(%0) : f32[4096]\n\
                    return %1, %2\n";
        let g = crate::text::parse(text).unwrap();
        assert_eq!(crate::text::print(&g), text);
        let (op, none) = (crate::OpKind::BoxMullerCos, crate::Attrs::None);
        assert!(crate::infer::infer(op, &none, &[(DType::Float32, &[4][..])]).is_err());
        let ok = crate::infer::infer(op, &none, &[(DType::UInt32, &[4][..])]).unwrap();
        assert_eq!(ok.0, DType::Float32);
        let x: Vec<u64> = (0..4096u64)
            .map(|i| {
                let w = philox4x32_10([i as u32, 0, 0, 0], [7, 9]);
                u64::from(w[1]) << 32 | u64::from(w[0])
            })
            .chain([0, u64::MAX, 0xffff_ff00, 1 << 62, 3 << 62, 1 << 63, 0x4000_0000_0000_0000])
            .take(4096)
            .collect();
        let input = crate::HostArray::from_vec(&[4096], x.clone()).unwrap();
        let out = crate::eval::evaluate(&g, &[&input]).unwrap();
        let (c, s) = (out[0].as_slice::<f32>().unwrap(), out[1].as_slice::<f32>().unwrap());
        for (k, &x) in x.iter().enumerate() {
            let u = f64::from((x as u32) >> 8) / 16_777_216.0;
            let r = (-2.0 * (1.0 - u).ln()).sqrt();
            let theta = std::f64::consts::TAU * f64::from((x >> 40) as u32) / 16_777_216.0;
            let tol = 4.0 * f64::from(f32::EPSILON) * r.max(f64::from(f32::MIN_POSITIVE));
            let (wc, ws) = (r * theta.cos(), r * theta.sin());
            assert!((f64::from(c[k]) - wc).abs() <= tol, "cos {x:#x}: {} vs {wc}", c[k]);
            assert!((f64::from(s[k]) - ws).abs() <= tol, "sin {x:#x}: {} vs {ws}", s[k]);
        }
    }
}
