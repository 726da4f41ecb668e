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
//!   is the `box_muller_cos`/`box_muller_sin` ops of the word pair (`cos θ`, `sin θ` without
//!   `sin`/`cos` calls: an exact reduction to the nearest quarter turn and two short
//!   polynomials, `kiln_ir::eval::random::turn_sincos`).
//!
//! A draw's bits are one `philox_bits` node of its shape (reading the offset and the key), which
//! the compiler expands into the position, the call counter, the Philox rounds and the word
//! selection (`kiln_compiler::expand`): a repeated draw's expression is what the host builds
//! and keys on every call, so it is kept to a few nodes (a float32 draw builds 5 a call; a
//! dropout 9, where it built 23).
//! Constants are weak scalars (one literal node each, no cast).
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
        let state =
            State { key: key_input(self.key), offset: Array::from_vec(vec![self.offset], &[]) };
        self.offset = self.offset.wrapping_add(calls as u64);
        state
    }

    /// Uniform floats in [0, 1) of `shape` (float32 or float64).
    pub fn uniform(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        let n: usize = shape.iter().product();
        if dtype == DType::Float64 {
            let state = self.take(n.div_ceil(2));
            unit(&state.bits(shape, 2, 2)?, 11, DType::Float64)
        } else {
            // The word's top 24 bits (`unit` shifts, then casts the uint64 exactly).
            let state = self.take(n.div_ceil(4));
            unit(&state.bits(shape, 4, 1)?, 8, DType::Float32)
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
        let w = state.bits(shape, 2, 2)?;
        let range = high.wrapping_sub(low) as u64;
        // In range for the dtype, so the wrapping uint64 sum cast to it is the signed value.
        Ok(w.try_remainder(u64s(range))?.try_add(u64s(low as u64))?.astype(dtype))
    }

    /// Standard normal floats of `shape` (float32 or float64).
    pub fn standard_normal(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        let n: usize = shape.iter().product();
        let i = positions(shape)?;
        if dtype == DType::Float64 {
            // Both word pairs of call i / 2: two uniforms an element.
            let state = self.take(n.div_ceil(2));
            let ctr = state.counter(&i.try_right_shift(u64s(1))?)?;
            let (lo, hi) = (philox(&state, &ctr, false)?, philox(&state, &ctr, true)?);
            let [c, s] = box_muller(&unit(&lo, 11, dtype)?, &unit(&hi, 11, dtype)?)?;
            crate::elementwise::try_where_(&lane_bit(&i, 1)?, &s, &c)
        } else {
            // Element i is r cos θ (even i) or r sin θ (odd) of the Box-Muller pair of words
            // 0-1 (i mod 4 < 2) or 2-3: one pair selected, then the `box_muller_cos`/`_sin`
            // ops, so the graph (which the host builds on every call) stays small.
            let state = self.take(n.div_ceil(4));
            let pair = state.bits(shape, 4, 2)?;
            let normal = |op| Array::apply(op, kiln_ir::Attrs::None, &[&pair]);
            let c = normal(kiln_ir::OpKind::BoxMullerCos)?;
            let s = normal(kiln_ir::OpKind::BoxMullerSin)?;
            crate::elementwise::try_where_(&lane_bit(&i, 1)?, &s, &c)
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

impl State {
    /// Call `counter` of this draw: `offset + counter`.
    fn counter(&self, counter: &Array) -> Result<Array> {
        counter.try_add(&self.offset)
    }

    /// The `philox_bits` of `shape` (one node; the compiler expands it): word `i mod 4` of call
    /// `offset + i / 4` (`per_call` 4, `words` 1), the word pair `(i mod 4) / 2` of that call
    /// (4, 2), or pair `i mod 2` of call `offset + i / 2` (2, 2), as uint64.
    fn bits(&self, shape: &[usize], per_call: u8, words: u8) -> Result<Array> {
        let offset = self.offset.broadcast_to_shape(shape)?;
        let key = key_at(&self.key, shape)?;
        Array::apply(
            kiln_ir::OpKind::PhiloxBits,
            kiln_ir::Attrs::Philox { per_call, words },
            &[&offset, &key],
        )
    }
}

/// The key input broadcast to `shape`, kept per thread for the last shape (a draw's key
/// operand is then the same node on every call of a repeated draw: one node fewer to build).
fn key_at(key: &Array, shape: &[usize]) -> Result<Array> {
    thread_local! {
        static AT: std::cell::RefCell<Option<(Array, Array)>> = const { std::cell::RefCell::new(None) };
    }
    AT.with(|at| {
        let mut at = at.borrow_mut();
        if let Some((k, b)) = &*at {
            if k.same_expr(key) && b.shape() == shape && !b.is_materialized() {
                return Ok(b.clone());
            }
        }
        let b = key.broadcast_to_shape(shape)?;
        *at = Some((key.clone(), b.clone()));
        Ok(b)
    })
}

/// `philox(ctr, key)` (words 0-1) or `philox_high` (words 2-3) of a call `ctr` of
/// [`State::counter`].
fn philox(state: &State, ctr: &Array, high: bool) -> Result<Array> {
    let op = if high { kiln_ir::OpKind::PhiloxHigh } else { kiln_ir::OpKind::Philox };
    crate::elementwise::binary(op, ctr.into(), (&state.key).into())
}

/// Whether bit `bit` (a power of two) of each position `i` is set.
fn lane_bit(i: &Array, bit: u64) -> Result<Array> {
    i.try_bitwise_and(u64s(bit))?.try_not_equal(u64s(0))
}

/// The draws' key as an input: one array per key and thread, kept, so that a generator's
/// draws on a GPU upload it once (a held array keeps its device copy), not on every call.
fn key_input(key: u64) -> Array {
    thread_local! {
        static KEY: std::cell::RefCell<Option<(u64, Array)>> = const { std::cell::RefCell::new(None) };
    }
    KEY.with(|k| {
        let mut k = k.borrow_mut();
        match &*k {
            Some((held, a)) if *held == key => a.clone(),
            _ => {
                let a = Array::from_vec(vec![key], &[]);
                *k = Some((key, a.clone()));
                a
            }
        }
    })
}

/// `(bits >> shift) · 2^-(64 - shift)`: the top bits of a word as a float in [0, 1), exact.
fn unit(bits: &Array, shift: u64, dtype: DType) -> Result<Array> {
    let width = if dtype == DType::Float64 { 64 } else { 32 };
    let k = bits.try_right_shift(u64s(shift))?.astype(dtype);
    k.try_multiply(2f64.powi(-(width - shift as i32)))
}
