//! `kiln::random` on a CUDA device: cuRAND's Philox4x32-10 generator fills device memory, and
//! the distributions are made from its words by ordinary lazy array ops (so they fuse into
//! whatever reads them). Each draw seeds Philox with the next 64-bit word of the [`Generator`]'s
//! PCG64 stream: a seed still gives the same numbers on every run on the GPU, but **not** the
//! CPU's numbers (same distributions, different streams).
//!
//! - `random` (and `uniform` from it): float32 from the top 24 bits of a word, `k · 2⁻²⁴`;
//!   float64 from 27 + 26 bits of two words, `k · 2⁻⁵³`: exactly in [0, 1), as NumPy.
//! - `standard_normal`, `normal`: `curandGenerateNormal(Double)` (Box-Muller), drawn in the dtype.
//! - `integers`: `low + (w mod (high - low))` with `w` a 64-bit word from two draws; the modulo
//!   bias is below `(high - low) / 2⁶⁴`.
//!
//! [`Generator`]: crate::random::Generator

use kiln_ir::DType;
use kiln_runtime::rand::Draw;
use kiln_runtime::Backend;

use crate::array::Array;
use crate::error::Result;
use crate::materialize::backend;
use crate::views::SliceArg;

/// The CUDA device random arrays are made on, `None` on the CPU backend.
pub(crate) fn device() -> Option<usize> {
    match backend() {
        Backend::Cuda(ordinal) => Some(ordinal),
        Backend::Cpu => None,
    }
}

/// A device array of `count` values of `dtype` drawn by `draw` (seeded with `seed`).
fn draw(ordinal: usize, draw: Draw, dtype: DType, count: usize, seed: u64) -> Result<Array> {
    let out = kiln_exec::cuda::random::draw(ordinal, draw, dtype, count, seed)?;
    Ok(Array::from_device(std::sync::Arc::new(out)))
}

/// `count` uniform 32-bit words as a uint32 array.
fn words(ordinal: usize, count: usize, seed: u64) -> Result<Array> {
    draw(ordinal, Draw::U32, DType::UInt32, count, seed)
}

/// Pairs of words as (first, second) uint32 arrays of `n` elements each.
fn word_pairs(ordinal: usize, n: usize, seed: u64) -> Result<(Array, Array)> {
    let w = words(ordinal, 2 * n, seed)?.try_reshape(&[n as i64, 2])?;
    let first = w.try_slice(&[SliceArg::FULL, SliceArg::Index(0)])?;
    let second = w.try_slice(&[SliceArg::FULL, SliceArg::Index(1)])?;
    Ok((first, second))
}

fn shaped(a: Array, shape: &[usize]) -> Result<Array> {
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    a.try_reshape(&dims)
}

/// Uniform floats in [0, 1) of `dtype` (float32 or float64).
pub(crate) fn random(ordinal: usize, shape: &[usize], dtype: DType, seed: u64) -> Result<Array> {
    let n: usize = shape.iter().product();
    let u = if dtype == DType::Float64 {
        let (hi, lo) = word_pairs(ordinal, n, seed)?;
        let k = (hi >> 5u32).astype(DType::Float64) * 67108864.0f64
            + (lo >> 6u32).astype(DType::Float64);
        k * (1.0f64 / 9007199254740992.0)
    } else {
        (words(ordinal, n, seed)? >> 8u32).astype(DType::Float32) * (1.0f32 / 16777216.0)
    };
    shaped(u, shape)
}

/// Normal floats of `dtype` with mean `loc` and deviation `scale`.
pub(crate) fn normal(
    ordinal: usize,
    loc: f64,
    scale: f64,
    shape: &[usize],
    dtype: DType,
    seed: u64,
) -> Result<Array> {
    let n: usize = shape.iter().product();
    // Box-Muller makes pairs: draw an even count and keep `n`.
    let even = n + n % 2;
    let d = if dtype == DType::Float64 {
        Draw::NormalF64 { mean: loc, std: scale }
    } else {
        Draw::NormalF32 { mean: loc as f32, std: scale as f32 }
    };
    let z = draw(ordinal, d, dtype, even, seed)?;
    let z = if even == n { z } else { z.try_slice(&[SliceArg::from(0..n as i64)])? };
    shaped(z, shape)
}

/// Integers of `dtype` uniform in [low, high) (bounds checked by the caller).
pub(crate) fn integers(
    ordinal: usize,
    low: i64,
    high: i64,
    shape: &[usize],
    dtype: DType,
    seed: u64,
) -> Result<Array> {
    let n: usize = shape.iter().product();
    let (hi, lo) = word_pairs(ordinal, n, seed)?;
    let w = (hi.astype(DType::UInt64) << 32u64) | lo.astype(DType::UInt64);
    let range = high.wrapping_sub(low) as u64;
    // In range for the dtype, so the wrapping uint64 sum cast to it is the signed value.
    let v = (w % range) + (low as u64);
    shaped(v.astype(dtype), shape)
}
