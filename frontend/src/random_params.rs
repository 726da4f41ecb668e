//! Random draws whose distribution parameters are arrays (NumPy's array_like `loc`, `scale`,
//! `low`, `high`): `rng.normal(loc, scale, size)`, `rng.uniform(low, high, size)` and
//! `rng.exponential(scale, size)` with parameters that broadcast against each other and
//! against `size`. The draws are the scalar forms' (the same stream, lazy, fused into their
//! reader) and the parameters are applied elementwise, in the draws' dtype.
//!
//! Checking the parameters (NumPy's `ValueError`s: a negative or NaN scale, a non-finite bound)
//! needs their values: each call reads one boolean back to the host (a synchronisation on a
//! GPU) unless every parameter is a scalar, which takes the scalar form (its checks, no read
//! back; the draws' shape `size`, or `[]` for `None`).

use kiln_ir::shape::broadcast_shapes;
use kiln_ir::{DType, IrError};

use crate::array::Array;
use crate::elementwise::Operand;
use crate::error::{value_err, Result};
use crate::random::Generator;

/// The parameters as arrays of `dtype` (a complex parameter is an error), and the draws' shape: `size`, to which every parameter
/// must broadcast, or for `None` the parameters' broadcast shape.
fn params(
    op: &str,
    ps: Vec<Operand>,
    size: Option<&[usize]>,
    dtype: DType,
) -> Result<(Vec<Array>, Vec<usize>)> {
    let mut arrays = Vec::with_capacity(ps.len());
    for p in &ps {
        let a = p.to_array();
        if a.dtype().is_complex() {
            return Err(IrError::UnsupportedDType {
                op: op.into(),
                dtypes: vec![a.dtype()],
                accepted: "real parameters".into(),
            }
            .into());
        }
        arrays.push(a.astype(dtype));
    }
    let mut shape: Vec<usize> = Vec::new();
    for a in &arrays {
        shape = broadcast_shapes(op, &shape, a.shape())?.to_vec();
    }
    if let Some(size) = size {
        // NumPy: the parameters must broadcast to `size` (the draws never take their shape).
        let joined = broadcast_shapes(op, &shape, size)?;
        if joined.as_slice() != size {
            return Err(value_err(
                op,
                format!("parameters of shape {shape:?} do not broadcast to size {size:?}"),
            ));
        }
        shape = size.to_vec();
    }
    Ok((arrays, shape))
}

/// Errs with `message` when any element of `bad` (a bool array) is true: one read back.
fn refuse_any(op: &str, bad: Array, message: &str) -> Result<()> {
    if bad.try_any(None)?.try_item::<bool>()? {
        return Err(value_err(op, message));
    }
    Ok(())
}

/// The operand's value when it is a real scalar (its checks then need no read back).
fn real_scalar(p: &Operand) -> Option<f64> {
    use kiln_ir::promote::WeakScalar;
    match p {
        Operand::Scalar(WeakScalar::Float(v)) => Some(*v),
        Operand::Scalar(WeakScalar::Int(v)) => Some(*v as f64),
        Operand::Scalar(WeakScalar::Bool(v)) => Some(f64::from(u8::from(*v))),
        _ => None,
    }
}

/// The draws' shape where every parameter is a scalar: `size`, or `[]` for `None`.
fn scalar_shape(size: Option<&[usize]>) -> Vec<usize> {
    size.map_or_else(Vec::new, <[usize]>::to_vec)
}

impl Generator {
    /// `rng.normal(loc, scale, size)` with array_like `loc` and `scale` (arrays or scalars):
    /// `loc + scale * z` for `z` standard normal ([`Generator::try_normal`]'s draws), of shape
    /// `size`, or for `None` the broadcast shape of `loc` and `scale`; `dtype` float32 or
    /// float64 (the parameters are cast to it).
    ///
    /// Errors: a negative or NaN scale (NumPy: "scale < 0"; one boolean read back unless both
    /// parameters are scalars); parameters that do not broadcast together or to `size`;
    /// another dtype.
    pub fn try_normal_array(
        &mut self,
        loc: impl Into<Operand>,
        scale: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Result<Array> {
        let (loc, scale) = (loc.into(), scale.into());
        if let (Some(l), Some(s)) = (real_scalar(&loc), real_scalar(&scale)) {
            return self.try_normal(l, s, &scalar_shape(size), dtype);
        }
        let (p, shape) = params("normal", vec![loc, scale], size, dtype)?;
        let bad = p[1].try_less(0.0)?.try_logical_or(&p[1].try_isnan()?)?;
        refuse_any("normal", bad, "scale < 0 (or NaN)")?;
        let z = self.try_standard_normal(&shape, dtype)?;
        z.try_multiply(&p[1])?.try_add(&p[0])
    }

    /// `rng.uniform(low, high, size)` with array_like bounds: `low + (high - low) * u` for `u`
    /// uniform in [0, 1) ([`Generator::try_uniform`]'s draws), of shape `size` or, for `None`,
    /// the bounds' broadcast shape; `dtype` float32 or float64.
    ///
    /// Errors: a bound that is not finite (one boolean read back unless both are scalars);
    /// bounds that do not broadcast together or to `size`; another dtype.
    pub fn try_uniform_array(
        &mut self,
        low: impl Into<Operand>,
        high: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Result<Array> {
        let (low, high) = (low.into(), high.into());
        if let (Some(l), Some(h)) = (real_scalar(&low), real_scalar(&high)) {
            return self.try_uniform(l, h, &scalar_shape(size), dtype);
        }
        let (p, shape) = params("uniform", vec![low, high], size, dtype)?;
        let finite = p[0].try_isfinite()?.try_logical_and(&p[1].try_isfinite()?)?;
        refuse_any("uniform", finite.try_logical_not()?, "low and high must be finite")?;
        let u = self.try_random(&shape, dtype)?;
        u.try_multiply(&p[1].try_subtract(&p[0])?)?.try_add(&p[0])
    }

    /// `rng.exponential(scale, size)` with an array_like `scale`: `-scale · log1p(-u)` for `u`
    /// uniform in [0, 1) ([`Generator::try_exponential`]'s draws), of shape `size` or, for
    /// `None`, the scale's; `dtype` float32 or float64.
    ///
    /// Errors: a negative, NaN or infinite scale (one boolean read back unless it is a
    /// scalar); a scale that does not broadcast to `size`; another dtype.
    pub fn try_exponential_array(
        &mut self,
        scale: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Result<Array> {
        let scale = scale.into();
        if let Some(s) = real_scalar(&scale) {
            return self.try_exponential(s, &scalar_shape(size), dtype);
        }
        let (p, shape) = params("exponential", vec![scale], size, dtype)?;
        let ok = p[0].try_greater_equal(0.0)?.try_logical_and(&p[0].try_isfinite()?)?;
        refuse_any("exponential", ok.try_logical_not()?, "scale < 0 or not finite")?;
        let e = self.try_exponential(1.0, &shape, dtype)?;
        e.try_multiply(&p[0])
    }

    /// [`Generator::try_normal_array`], panicking on error.
    #[track_caller]
    pub fn normal_array(
        &mut self,
        loc: impl Into<Operand>,
        scale: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Array {
        crate::unwrap(self.try_normal_array(loc, scale, size, dtype))
    }

    /// [`Generator::try_uniform_array`], panicking on error.
    #[track_caller]
    pub fn uniform_array(
        &mut self,
        low: impl Into<Operand>,
        high: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Array {
        crate::unwrap(self.try_uniform_array(low, high, size, dtype))
    }

    /// [`Generator::try_exponential_array`], panicking on error.
    #[track_caller]
    pub fn exponential_array(
        &mut self,
        scale: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Array {
        crate::unwrap(self.try_exponential_array(scale, size, dtype))
    }
}
