//! Lazy random draws: each element's value is a function of its position, computed by the
//! `philox` op (Philox4x32-10, cuRAND's and torch's generator) inside whatever kernel reads it,
//! so `x * (rng.random(shape) >= p)` (dropout) is one kernel that reads `x` once. The same
//! seed and shape give the same bits on the host and the GPU for `random` and `uniform`
//! (integer operations and exact conversions); the normals go through `log`, `sqrt` and `cos`,
//! whose last bits may differ between the host's and the GPU's math libraries.
//!
//! A generator's stream is a key and a counter offset; a draw of `n` elements uses counters
//! `offset ..` and advances the offset past them. The key and the offset reach the kernel as a
//! two-element uint64 input (not as constants), so a new draw of the same shape reuses the
//! compiled plan.
//!
//! Element `i` (C order) of a draw:
//! - float32 uniform: the top 24 bits of word `i mod 2` of Philox(`offset + i / 2`), `k · 2⁻²⁴`;
//! - float64 uniform: the top 53 bits of the two words of Philox(`offset + i`), `k · 2⁻⁵³`
//!   (both exactly in [0, 1), as NumPy's);
//! - integers in [low, high): `low + (w mod (high - low))`, `w` the 64 bits of
//!   Philox(`offset + i`);
//! - normal (Box-Muller, the cosine branch): `sqrt(-2 ln(1 - u₁)) · cos(2π u₂)`, in float32 from
//!   the two words of Philox(`offset + i`), in float64 from two calls (`offset + 2i`, `+ 1`).

use kiln_ir::DType;

use crate::array::Array;
use crate::error::Result;

/// A counter-based stream: Philox's key and the next unused counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stream {
    pub key: u64,
    pub offset: u64,
}

impl Stream {
    /// The key and this draw's first counter as an input (uint64 `[2]`), and the counters
    /// `calls` uses from it on.
    fn take(&mut self, calls: usize) -> Array {
        let state = Array::from_vec(vec![self.key, self.offset], &[2]);
        self.offset = self.offset.wrapping_add(calls as u64);
        state
    }

    /// Uniform floats in [0, 1) of `shape` (float32 or float64).
    pub fn uniform(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        let n: usize = shape.iter().product();
        if dtype == DType::Float64 {
            let state = self.take(n);
            let bits = philox(&state, &positions(shape)?)?;
            unit(&bits, 11, DType::Float64)
        } else {
            let state = self.take(n.div_ceil(2));
            let i = positions(shape)?;
            let bits = philox(&state, &i.try_right_shift(&u64s(1))?)?;
            unit(&half(&bits, &i)?, 8, DType::Float32)
        }
    }

    /// Integers of `dtype` uniform in [low, high) (bounds checked by the caller):
    /// `low + (w mod (high - low))` with `w` the 64 bits of Philox(`offset + i`); the modulo
    /// bias is below `(high - low) / 2⁶⁴`.
    pub fn integers(
        &mut self,
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        let n: usize = shape.iter().product();
        let state = self.take(n);
        let w = philox(&state, &positions(shape)?)?;
        let range = high.wrapping_sub(low) as u64;
        // In range for the dtype, so the wrapping uint64 sum cast to it is the signed value.
        Ok(w.try_remainder(&u64s(range))?.try_add(&u64s(low as u64))?.astype(dtype))
    }

    /// Standard normal floats of `shape` (float32 or float64).
    pub fn standard_normal(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        let n: usize = shape.iter().product();
        let i = positions(shape)?;
        let (u1, u2) = if dtype == DType::Float64 {
            let state = self.take(2 * n);
            let first = i.try_left_shift(&u64s(1))?;
            let a = philox(&state, &first)?;
            let b = philox(&state, &first.try_bitwise_or(&u64s(1))?)?;
            (unit(&a, 11, dtype)?, unit(&b, 11, dtype)?)
        } else {
            let state = self.take(n);
            let bits = philox(&state, &i)?;
            let lo = bits.try_bitwise_and(&u64s(0xffff_ffff))?;
            (unit(&lo, 8, dtype)?, unit(&bits.try_right_shift(&u64s(32))?, 8, dtype)?)
        };
        let one = Array::scalar(1.0).astype(dtype);
        let two_pi = Array::scalar(std::f64::consts::TAU).astype(dtype);
        let minus_two = Array::scalar(-2.0).astype(dtype);
        // 1 - u1 is in (0, 1]: its log is finite.
        let r = one.try_subtract(&u1)?.try_log()?.try_multiply(&minus_two)?.try_sqrt()?;
        r.try_multiply(&u2.try_multiply(&two_pi)?.try_cos()?)
    }
}

fn u64s(v: u64) -> Array {
    Array::scalar(v).astype(DType::UInt64)
}

/// Each element's C-order position, uint64, of `shape`.
fn positions(shape: &[usize]) -> Result<Array> {
    let n: usize = shape.iter().product();
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    crate::creation::arange(n as i64).astype(DType::UInt64).try_reshape(&dims)
}

/// `philox(offset + counter, key)` with the key and offset read from `state`.
fn philox(state: &Array, counter: &Array) -> Result<Array> {
    let at = |k: i64| -> Result<Array> {
        state.try_slice(&[crate::views::SliceArg::Range {
            start: Some(k),
            stop: Some(k + 1),
            step: 1,
        }])
    };
    let key = at(0)?.try_reshape(&[])?;
    let offset = at(1)?.try_reshape(&[])?;
    let ctr = counter.try_add(&offset)?;
    crate::elementwise::binary(kiln_ir::OpKind::Philox, (&ctr).into(), (&key).into())
}

/// Word `i mod 2` of each element's 64 random bits (the low word for even `i`).
fn half(bits: &Array, i: &Array) -> Result<Array> {
    let odd = i.try_bitwise_and(&u64s(1))?.try_equal(&u64s(1))?;
    let hi = bits.try_right_shift(&u64s(32))?;
    let lo = bits.try_bitwise_and(&u64s(0xffff_ffff))?;
    crate::elementwise::try_where_(&odd, &hi, &lo)
}

/// `(bits >> shift) · 2^-(64 - shift)`: the top bits of a word as a float in [0, 1), exact.
fn unit(bits: &Array, shift: u64, dtype: DType) -> Result<Array> {
    let width = if dtype == DType::Float64 { 64 } else { 32 };
    let k = bits.try_right_shift(&u64s(shift))?.astype(dtype);
    k.try_multiply(&Array::scalar(2f64.powi(-(width - shift as i32))).astype(dtype))
}
