//! `ndarray.view(dtype)`: the array's bytes read as another dtype.
//!
//! One IR op does the work, `bitcast`: an elementwise reinterpretation between an int, uint or
//! float and another of the same item size (`arith.bitcast` in the generated code, on the host
//! and the GPU; the evaluator through the bits of each value). Everything else is composed
//! around it, so it fuses with its producer and its consumers:
//!
//! - bools are bytes 0 and 1 (`cast` to uint8); a view *as* bool is each byte `!= 0` (kiln's
//!   bools hold only true and false: a byte 2 reads as true, where NumPy keeps the byte);
//! - complex values are pairs of floats along the last axis (`real`, `imag` stacked; back by
//!   `make_complex`);
//! - between item sizes (NumPy's last-axis rule), the elements are split into or joined from
//!   unsigned words of the smaller size by shifts (little-endian, as the host and the GPU):
//!   a wider element's word `j` is `(u >> 8·size·j)` narrowed; `r` narrower words make one
//!   wider by `sum(word_j << 8·size·j)` (disjoint bits: a sum is an or).

use kiln_ir::{Attrs, DType, IrError, OpKind};

use crate::array::Array;
use crate::error::{value_err, Result};
use crate::views::SliceArg;

/// The unsigned dtype of `size` bytes.
fn uint_of(size: usize) -> DType {
    match size {
        1 => DType::UInt8,
        2 => DType::UInt16,
        4 => DType::UInt32,
        _ => DType::UInt64,
    }
}

/// `x`'s shape with the last extent `last`.
fn with_last(x: &Array, last: usize) -> Vec<i64> {
    let mut s: Vec<i64> = x.shape().iter().map(|&n| n as i64).collect();
    *s.last_mut().expect("rank checked") = last as i64;
    s
}

/// The bitcast node (same item size), or `x` when the dtype is already `to`.
fn bitcast(x: &Array, to: DType) -> Result<Array> {
    if x.dtype() == to {
        return Ok(x.clone());
    }
    Array::apply(OpKind::Bitcast, Attrs::DType { dtype: to }, &[x])
}

/// The shifts `0, 8·size, 16·size, ..` (`k` of them) in `dtype`.
fn shifts(k: usize, size: usize, dtype: DType) -> Result<Array> {
    crate::creation::arange(k as i64).try_multiply((8 * size) as i64).map(|s| s.cast_to(dtype))
}

/// Real `x` (int, uint or float) read as the real dtype `to`, sizes dividing one another along
/// the last axis (checked by the caller).
fn real_view(x: &Array, to: DType) -> Result<Array> {
    let (s, t) = (x.dtype().itemsize(), to.itemsize());
    if s == t {
        return bitcast(x, to);
    }
    let u = bitcast(x, uint_of(s))?;
    let n = *x.shape().last().expect("rank checked");
    let words = if s > t {
        // Each element gives k = s / t words, lowest first.
        let k = s / t;
        let parts = u.try_expand_dims(&[-1])?.try_right_shift(&shifts(k, t, uint_of(s))?)?;
        parts.cast_to(uint_of(t)).try_reshape(&with_last(x, n * k))?
    } else {
        // k = t / s elements make one word, the first lowest.
        let k = t / s;
        let mut split = with_last(x, n / k);
        split.push(k as i64);
        let wide = u.cast_to(uint_of(t)).try_reshape(&split)?;
        let placed = wide.try_left_shift(&shifts(k, s, uint_of(t))?)?;
        placed.try_sum_dtype(-1, uint_of(t))?
    };
    bitcast(&words, to)
}

impl Array {
    /// `x.view(dtype)`: the elements' bytes read as `dtype` (NumPy's `ndarray.view`). Shape:
    /// `x`'s for the same item size; for another (`float32` as `uint8`, `int8` as `int32`) the
    /// last axis's extent times the ratio of the sizes (`(2, 3)` float32 as uint8 is `(2, 12)`,
    /// `(2, 4)` int16 as int32 is `(2, 2)`). Bytes are little-endian (the host's and the GPU's).
    /// Bools are bytes 0 and 1; a view as bool is each byte `!= 0` (kiln's bools are true or
    /// false: NumPy would keep a byte 2); complex values are their real and imaginary floats.
    /// Signalling NaNs of float16/bfloat16 may read back quiet (their working value is a
    /// float32). The result is a lazy array of its own (computed where it is read, fused),
    /// not memory shared with `x`; for the same item size it has `x`'s layout (an F-ordered
    /// `x` gives an F-ordered result: [`Array::strides`]).
    ///
    /// Errors ([`crate::Error::Value`] naming `view`, NumPy's messages): another item size for
    /// a 0-d array; another item size where `x`'s last axis is not contiguous in its buffer
    /// ([`Array::strides`]: an F-ordered copy of more than one column; kiln lays out lazy views
    /// such as `x.t()` C-contiguously, so they are accepted); a last axis whose bytes the larger
    /// size does not divide.
    pub fn try_view(&self, dtype: DType) -> Result<Array> {
        let (s, t) = (self.dtype().itemsize(), dtype.itemsize());
        if s != t {
            if self.ndim() == 0 {
                return Err(value_err(
                    "view",
                    "Changing the dtype of a 0d array is only supported if the itemsize is \
                     unchanged",
                ));
            }
            let layout = self.memory_layout();
            let last = self.ndim() - 1;
            if self.shape()[last] != 1 && self.size() > 0 && layout.strides[last] != 1 {
                return Err(value_err(
                    "view",
                    "To change to a dtype of a different size, the last axis must be contiguous",
                ));
            }
            if !(self.shape()[last] * s).is_multiple_of(t) {
                return Err(value_err(
                    "view",
                    "When changing to a larger dtype, its size must be a divisor of the total \
                     size in bytes of the last axis of the array.",
                ));
            }
        }
        if self.dtype() == dtype {
            return Ok(self.clone());
        }
        if self.ndim() == 0 {
            // The same item size: as a 1-element row.
            return self.try_reshape(&[1])?.try_view(dtype)?.try_reshape(&[]);
        }
        // The same item size keeps the layout (an F-ordered buffer read as `dtype`).
        crate::layout::laid_out_as(&self.reinterpret(dtype)?, self)
    }

    /// [`Array::try_view`] once its checks passed, laid out C-contiguously.
    fn reinterpret(&self, dtype: DType) -> Result<Array> {
        // The source as real words: bools as bytes, complex as float pairs.
        let x = match self.dtype() {
            DType::Bool => self.cast_to(DType::UInt8),
            d if d.is_complex() => {
                let pair = crate::views::try_stack(&[&self.real(), &self.imag()], -1)?;
                let n = *self.shape().last().expect("rank checked");
                pair.try_reshape(&with_last(self, 2 * n))?
            }
            _ => self.clone(),
        };
        match dtype {
            DType::Bool => real_view(&x, DType::UInt8)?.try_not_equal(0),
            d if d.is_complex() => {
                let part = d.real_dtype();
                let floats = real_view(&x, part)?;
                let m = *floats.shape().last().expect("rank checked");
                let mut split = with_last(&floats, m / 2);
                split.push(2);
                let pairs = floats.try_reshape(&split)?;
                let re = pairs.try_slice(&crate::s![SliceArg::Ellipsis, 0])?;
                let im = pairs.try_slice(&crate::s![SliceArg::Ellipsis, 1])?;
                Array::apply(OpKind::MakeComplex, Attrs::None, &[&re, &im])
            }
            d if d.is_integer() || d.is_float() => real_view(&x, d),
            d => Err(IrError::UnsupportedDType {
                op: "view".into(),
                dtypes: vec![self.dtype(), d],
                accepted: "bool, int, uint, float, complex".into(),
            }
            .into()),
        }
    }

    /// `x.view(dtype)`. Panics where [`Array::try_view`] errs.
    #[track_caller]
    pub fn view(&self, dtype: DType) -> Array {
        crate::unwrap(self.try_view(dtype))
    }
}
