//! Lazy random draws: each element's value is a function of its position, computed by the
//! `philox` op (Philox4x32-10, cuRAND's and torch's generator) inside whatever kernel reads it,
//! so `x * (rng.random(shape) >= p)` (dropout) is one kernel that reads `x` once. The same
//! seed and shape give the same bits on the host and the GPU for `random` and `uniform`
//! (integer operations and exact conversions); the normals go through `log` (and in float64
//! `cos`, `sin`), whose last bits may differ between the host's and the GPU's math libraries.
//!
//! A generator's stream is a key and a counter offset; a draw of `n` elements uses counters
//! `offset ..` and advances the offset past them. The key and the offset reach the kernel as
//! two 0-d uint64 inputs (not as constants), so a new draw of the same shape reuses the
//! compiled plan, and a GPU thread loads each once (an input read at a constant position is
//! loaded at the kernel's entry).
//!
//! A Philox call gives four 32-bit words; element `i` (C order) of a draw takes:
//! - float32 uniform: the top 24 bits of word `i mod 4` of call `offset + i / 4`, `k · 2⁻²⁴`;
//! - float64 uniform: the top 53 bits of word pair `i mod 2` (words 0-1 or 2-3) of call
//!   `offset + i / 2`, `k · 2⁻⁵³` (both exactly in [0, 1), as NumPy's);
//! - integers in [low, high): `low + (w mod (high - low))`, `w` the 64 bits of float64's pair;
//! - normal (Box-Muller): from two uniforms `u₁, u₂` (words 0-1 or 2-3), `r = sqrt(-2 ln(1 - u₁))`
//!   and `θ = 2π u₂` give `r cos θ` and `r sin θ`: float32 takes four normals of a call (element
//!   `i mod 4`), float64 two (its uniforms from the two word pairs, element `i mod 2`). Float32
//!   computes `cos θ`, `sin θ` without `sin`/`cos` calls: one exact reduction of `u₂`'s 24 bits
//!   to the nearest quarter turn and two short polynomials ([`turn_sincos`]: within 2 ulps of the
//!   exact angle's, plain float32 arithmetic, so the same values on every backend).
//!
//! Constants are weak scalars (one literal node each, no cast): a draw's graph is what the
//! host builds and lowers on every call.
//!
//! The elements that share a call compute it once in a kernel (LLVM merges the identical rounds
//! of the elements a GPU thread or a host vector handles together).

use kiln_ir::DType;

use crate::array::Array;
use crate::elementwise::Operand;
use crate::error::Result;

/// A counter-based stream: Philox's key and the next unused counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stream {
    pub key: u64,
    pub offset: u64,
}

impl Stream {
    /// The key and this draw's first counter as inputs (0-d uint64), and the counters `calls`
    /// uses from it on.
    fn take(&mut self, calls: usize) -> State {
        // Host arrays, not scalars: inputs of the kernel, not constants folded into it.
        let input = |v: u64| Array::from_vec(vec![v], &[]);
        let state = State { key: input(self.key), offset: input(self.offset) };
        self.offset = self.offset.wrapping_add(calls as u64);
        state
    }

    /// Uniform floats in [0, 1) of `shape` (float32 or float64).
    pub fn uniform(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        let n: usize = shape.iter().product();
        let i = positions(shape)?;
        if dtype == DType::Float64 {
            let state = self.take(n.div_ceil(2));
            unit(&pair_of(&state, &i)?, 11, DType::Float64)
        } else {
            let state = self.take(n.div_ceil(4));
            let [w0, w1, w2, w3] = words(&state, &i.try_right_shift(u64s(2))?)?;
            unit(&by_lane(&i, [&w0, &w1, &w2, &w3])?, 8, DType::Float32)
        }
    }

    /// Integers of `dtype` uniform in [low, high) (bounds checked by the caller):
    /// `low + (w mod (high - low))` with `w` 64 random bits; the modulo bias is below
    /// `(high - low) / 2⁶⁴`.
    pub fn integers(
        &mut self,
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        let n: usize = shape.iter().product();
        let state = self.take(n.div_ceil(2));
        let w = pair_of(&state, &positions(shape)?)?;
        let range = high.wrapping_sub(low) as u64;
        // In range for the dtype, so the wrapping uint64 sum cast to it is the signed value.
        Ok(w.try_remainder(u64s(range))?.try_add(u64s(low as u64))?.astype(dtype))
    }

    /// Standard normal floats of `shape` (float32 or float64).
    pub fn standard_normal(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        let n: usize = shape.iter().product();
        let i = positions(shape)?;
        if dtype == DType::Float64 {
            let state = self.take(n.div_ceil(2));
            let ctr = i.try_right_shift(u64s(1))?;
            let (lo, hi) = (philox(&state, &ctr, false)?, philox(&state, &ctr, true)?);
            let [c, s] = box_muller(&unit(&lo, 11, dtype)?, &unit(&hi, 11, dtype)?)?;
            let odd = i.try_bitwise_and(u64s(1))?.try_equal(u64s(1))?;
            crate::elementwise::try_where_(&odd, &s, &c)
        } else {
            let state = self.take(n.div_ceil(4));
            let w = words(&state, &i.try_right_shift(u64s(2))?)?;
            let [c1, s1] = box_muller_f32(&w[0], &w[1])?;
            let [c2, s2] = box_muller_f32(&w[2], &w[3])?;
            by_lane(&i, [&c1, &s1, &c2, &s2])
        }
    }
}

/// A draw's Philox key and first counter, as 0-d uint64 inputs.
struct State {
    key: Array,
    offset: Array,
}

/// The two normals `r cos θ`, `r sin θ` of Box-Muller from uniforms `u1`, `u2` in [0, 1).
fn box_muller(u1: &Array, u2: &Array) -> Result<[Array; 2]> {
    let r = radius(u1)?;
    let theta = u2.try_multiply(std::f64::consts::TAU)?;
    Ok([r.try_multiply(&theta.try_cos()?)?, r.try_multiply(&theta.try_sin()?)?])
}

/// Box-Muller's radius `sqrt(-2 ln(1 - u))` of a uniform `u` in [0, 1) (`1 - u` is in (0, 1]: its
/// log is finite).
fn radius(u: &Array) -> Result<Array> {
    let v = crate::elementwise::binary(kiln_ir::OpKind::Sub, 1.0.into(), u.into())?;
    v.try_log()?.try_multiply(-2.0)?.try_sqrt()
}

/// Float32 Box-Muller from two words: `r = sqrt(-2 ln(1 - u₁))` with `u₁` word `w1`'s top 24
/// bits as a float32 in [0, 1), and `r cos θ`, `r sin θ` of the angle `θ = 2π k / 2²⁴`, `k` word
/// `w2`'s top 24 bits, by [`turn_sincos`].
fn box_muller_f32(w1: &Array, w2: &Array) -> Result<[Array; 2]> {
    let r = radius(&unit(w1, 8, DType::Float32)?)?;
    let [c, s] = turn_sincos(w2)?;
    Ok([r.try_multiply(&c)?, r.try_multiply(&s)?])
}

/// `sin x` on |x| ≤ π/4 as `x + x³ (S₀ + S₁x² + S₂x⁴)`, float32 (a weighted least-squares fit of
/// the relative error; with the reduction of [`turn_sincos`] within 2 ulps of the exact angle's
/// sine at each of its 2²² arguments, checked exhaustively with and without FMA contraction).
const SIN_F32: [f32; 3] = [-0.166_666_55, 0.008_332_16, -0.000_195_152_66];
/// `cos x` on |x| ≤ π/4 as `1 + x² (C₀ + C₁x² + C₂x⁴)`, float32 (likewise).
const COS_F32: [f32; 3] = [-0.499_998_84, 0.041_655_775, -0.001_359_184_2];

/// `[cos θ, sin θ]` in float32 of the angle `θ = 2π k / 2²⁴` (`k` the top 24 bits of the 32-bit
/// word `w`, a uint64), with one argument reduction for both and no `sin`/`cos` call: the
/// nearest quarter turn `q` and the offset `j = k - q·2²²` (|j| ≤ 2²¹) are exact integer bit
/// operations on the word, `x = j · (2π / 2²⁴)` is in [-π/4, π/4], two short polynomials give
/// `sin x` and `cos x`, and the quarter turn swaps them (odd `q`) and sets their signs (on the
/// float bits). Plain float32 arithmetic and integer operations: the same values from the
/// evaluator and every backend but for FMA contraction (a last bit).
fn turn_sincos(w: &Array) -> Result<[Array; 2]> {
    // Constants as weak scalars (a literal node of the array's dtype each).
    let u32s = |v: u32| Operand::from(v);
    let f32s = |v: f32| Operand::from(f64::from(v));
    let w = w.astype(DType::UInt32);
    // t's top two bits are q = round(k / 2²²) mod 4; bits 29..8 of w, signed, are j.
    let t = w.try_add(u32s(1 << 29))?;
    let j = w.try_left_shift(u32s(2))?.try_view(DType::Int32)?.try_right_shift(10i32)?;
    let x = j
        .astype(DType::Float32)
        .try_multiply(f32s((std::f64::consts::TAU / 16_777_216.0) as f32))?;
    let x2 = x.try_multiply(&x)?;
    let horner = |coefs: &[f32]| -> Result<Array> {
        let (last, rest) = coefs.split_last().expect("coefficients");
        let p = x2.try_multiply(f32s(*last))?;
        let (first, rest) = rest.split_first().expect("two coefficients or more");
        let p = rest.iter().rev().try_fold(p, |p, &c| p.try_add(f32s(c))?.try_multiply(&x2))?;
        p.try_add(f32s(*first))
    };
    let sin = x.try_add(&x.try_multiply(&x2)?.try_multiply(&horner(&SIN_F32)?)?)?;
    let cos = horner(&COS_F32)?.try_multiply(&x2)?.try_add(1.0)?;
    let odd = t.try_bitwise_and(u32s(1 << 30))?.try_not_equal(u32s(0))?;
    let sign = u32s(1 << 31);
    // sin θ is negative for q = 2, 3 (t's bit 31), cos θ for q = 1, 2 (bits 30 and 31 differ).
    let sin_sign = t.try_bitwise_and(sign.clone())?;
    let cos_sign = t.try_bitwise_xor(&t.try_left_shift(u32s(1))?)?.try_bitwise_and(sign)?;
    let signed = |mag: Array, s: &Array| -> Result<Array> {
        mag.try_view(DType::UInt32)?.try_bitwise_xor(s)?.try_view(DType::Float32)
    };
    Ok([
        signed(crate::elementwise::try_where_(&odd, &sin, &cos)?, &cos_sign)?,
        signed(crate::elementwise::try_where_(&odd, &cos, &sin)?, &sin_sign)?,
    ])
}

/// A uint64 constant as a weak scalar: one literal node of the other operand's dtype (a
/// strong scalar would add a cast node).
fn u64s(v: u64) -> Operand {
    v.into()
}

/// Each element's C-order position, uint64, of `shape`.
fn positions(shape: &[usize]) -> Result<Array> {
    let n: usize = shape.iter().product();
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    crate::creation::arange(n as i64).astype(DType::UInt64).try_reshape(&dims)
}

/// `philox(offset + counter, key)` (words 0-1) or `philox_high` (words 2-3).
fn philox(state: &State, counter: &Array, high: bool) -> Result<Array> {
    let ctr = counter.try_add(&state.offset)?;
    let op = if high { kiln_ir::OpKind::PhiloxHigh } else { kiln_ir::OpKind::Philox };
    crate::elementwise::binary(op, (&ctr).into(), (&state.key).into())
}

/// The four 32-bit words of call `offset + counter`, each in a uint64.
fn words(state: &State, counter: &Array) -> Result<[Array; 4]> {
    let lo = philox(state, counter, false)?;
    let hi = philox(state, counter, true)?;
    let mask = u64s(0xffff_ffff);
    Ok([
        lo.try_bitwise_and(mask.clone())?,
        lo.try_right_shift(u64s(32))?,
        hi.try_bitwise_and(mask)?,
        hi.try_right_shift(u64s(32))?,
    ])
}

/// Word pair `i mod 2` of call `offset + i / 2`: 64 random bits per element.
fn pair_of(state: &State, i: &Array) -> Result<Array> {
    let ctr = i.try_right_shift(u64s(1))?;
    let odd = i.try_bitwise_and(u64s(1))?.try_equal(u64s(1))?;
    crate::elementwise::try_where_(&odd, &philox(state, &ctr, true)?, &philox(state, &ctr, false)?)
}

/// `lanes[i mod 4]` at each element.
fn by_lane(i: &Array, lanes: [&Array; 4]) -> Result<Array> {
    let j = i.try_bitwise_and(u64s(3))?;
    let odd = j.try_bitwise_and(u64s(1))?.try_equal(u64s(1))?;
    let upper = j.try_greater_equal(u64s(2))?;
    let low = crate::elementwise::try_where_(&odd, lanes[1], lanes[0])?;
    let high = crate::elementwise::try_where_(&odd, lanes[3], lanes[2])?;
    crate::elementwise::try_where_(&upper, &high, &low)
}

/// `(bits >> shift) · 2^-(64 - shift)`: the top bits of a word as a float in [0, 1), exact.
fn unit(bits: &Array, shift: u64, dtype: DType) -> Result<Array> {
    let width = if dtype == DType::Float64 { 64 } else { 32 };
    let k = bits.try_right_shift(u64s(shift))?.astype(dtype);
    k.try_multiply(2f64.powi(-(width - shift as i32)))
}
