//! Random draws whose distribution parameters are arrays (NumPy's array_like `loc`, `scale`,
//! `low`, `high`, `shape`, `a`, `b`, `lam`, `n`, `p`): `rng.normal(loc, scale, size)`,
//! `rng.uniform(low, high, size)`, `rng.exponential(scale, size)`, `rng.gamma(shape, scale,
//! size)`, `rng.beta(a, b, size)`, `rng.poisson(lam, size)` and `rng.binomial(n, p, size)`
//! with parameters that broadcast against each other and against `size`. Normal, uniform and
//! exponential draws are the scalar forms' (the same stream, lazy, fused into their reader)
//! with the parameters applied elementwise, in the draws' dtype; gamma, beta, poisson and
//! binomial run the scalar forms' samplers with each element's constants (float64, lazy,
//! fused).
//!
//! Checking the parameters (NumPy's `ValueError`s: a negative or NaN scale, a non-finite bound)
//! needs their values: each call reads one boolean back to the host (a synchronisation on a
//! GPU) unless every parameter is a scalar, which takes the scalar form (its checks, no read
//! back; the draws' shape `size`, or `[]` for `None`).

use kiln_ir::shape::broadcast_shapes;
use kiln_ir::{DType, IrError};

use crate::array::Array;
use crate::distributions::{float_dtype, POISSON_LAM_MAX};
use crate::elementwise::{try_where_, Operand};
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

/// Errs with the message of the first check whose `bad` (a bool array) has a true element:
/// one read back for all of them.
fn refuse_first(op: &str, checks: &[(Array, &str)]) -> Result<()> {
    let any = checks.iter().map(|(bad, _)| bad.try_any(None)).collect::<Result<Vec<_>>>()?;
    let flags =
        crate::views::try_stack(&any.iter().collect::<Vec<_>>(), 0)?.try_to_vec::<bool>()?;
    match checks.iter().zip(flags).find(|(_, f)| *f) {
        Some(((_, message), _)) => Err(value_err(op, *message)),
        None => Ok(()),
    }
}

/// True where `x` is below `low`, NaN or infinite.
fn not_finite_or_below(x: &Array, low: f64) -> Result<Array> {
    x.try_greater_equal(low)?.try_logical_and(&x.try_isfinite()?)?.try_logical_not()
}

/// True where `x` is outside [`low`, `high`] or NaN.
fn not_within(x: &Array, low: f64, high: f64) -> Result<Array> {
    x.try_greater_equal(low)?.try_logical_and(&x.try_less_equal(high)?)?.try_logical_not()
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

    /// A standard gamma per element of the float64 shapes `k` (every `k > 0` or where `k = 0`
    /// the caller replaces the value), of shape `size`, as `(g, boost)`: the value is
    /// `g · exp(boost)`, Marsaglia–Tsang's `g` of shape `k` or, where `k < 1`, of shape `k + 1`
    /// with the boost `ln(u)/k` (`u` in (0, 1]; 0 where `k >= 1`). Both parts are drawn for
    /// every element.
    fn standard_gamma_array(&mut self, k: &Array, size: &[usize]) -> Result<(Array, Array)> {
        let small = k.try_less(1.0)?;
        let kk = try_where_(&small, &k.try_add(1.0)?, k)?;
        let d = kk.try_subtract(1.0 / 3.0)?;
        let c = d.try_multiply(9.0)?.try_sqrt()?.try_reciprocal()?;
        let g = self.marsaglia_tsang_dc(d.into(), c.into(), size)?;
        // 1 - u is uniform in (0, 1]: its log is finite.
        let u = self.try_random(size, DType::Float64)?;
        let boost = try_where_(&small, &u.try_multiply(-1.0)?.try_log1p()?.try_divide(k)?, 0.0)?;
        Ok((g, boost))
    }

    /// `rng.gamma(shape, scale, size)` with array_like `shape_k` and `scale`: each element
    /// Marsaglia–Tsang's gamma of its shape (12 rejection rounds, `shape < 1` by the boost, as
    /// [`Generator::try_gamma`]) times its scale, in float64 (the parameters cast to it) and
    /// cast to `dtype` (float32 or float64); zeros where the shape or the scale is 0. Shape
    /// `size`, or for `None` the parameters' broadcast shape. Every element draws both the
    /// `shape >= 1` and the boost's uniforms, so the values are not the scalar form's for a
    /// constant array (scalars take the scalar form).
    ///
    /// Errors: a shape or a scale negative, NaN or infinite ("shape < 0", "scale < 0"; one
    /// read back of both checks unless both are scalars); parameters that do not broadcast
    /// together or to `size`; another dtype.
    pub fn try_gamma_array(
        &mut self,
        shape_k: impl Into<Operand>,
        scale: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Result<Array> {
        let (shape_k, scale) = (shape_k.into(), scale.into());
        if let (Some(k), Some(s)) = (real_scalar(&shape_k), real_scalar(&scale)) {
            return self.try_gamma(k, s, &scalar_shape(size), dtype);
        }
        float_dtype("gamma", dtype)?;
        let (p, shape) = params("gamma", vec![shape_k, scale], size, DType::Float64)?;
        refuse_first(
            "gamma",
            &[
                (not_finite_or_below(&p[0], 0.0)?, "shape < 0 or not finite"),
                (not_finite_or_below(&p[1], 0.0)?, "scale < 0 or not finite"),
            ],
        )?;
        let (g, boost) = self.standard_gamma_array(&p[0], &shape)?;
        let value = g.try_multiply(&boost.try_exp()?)?.try_multiply(&p[1])?;
        let zero = p[0].try_equal(0.0)?.try_logical_or(&p[1].try_equal(0.0)?)?;
        Ok(try_where_(&zero, 0.0, &value)?.astype(dtype))
    }

    /// `rng.beta(a, b, size)` with array_like `a` and `b`: `X/(X+Y)` for gammas `X`, `Y` of
    /// each element's shapes ([`Generator::try_gamma_array`]'s draws), as
    /// `1/(1 + exp(ln Y - ln X))` ([`Generator::try_beta`]'s form), float64 arithmetic cast to
    /// `dtype`. Shape `size`, or for `None` the parameters' broadcast shape.
    ///
    /// Errors: `a` or `b` not positive, NaN or infinite ("a <= 0", "b <= 0"; one read back
    /// unless both are scalars); parameters that do not broadcast together or to `size`;
    /// another dtype.
    pub fn try_beta_array(
        &mut self,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Result<Array> {
        let (a, b) = (a.into(), b.into());
        if let (Some(x), Some(y)) = (real_scalar(&a), real_scalar(&b)) {
            return self.try_beta(x, y, &scalar_shape(size), dtype);
        }
        float_dtype("beta", dtype)?;
        let (p, shape) = params("beta", vec![a, b], size, DType::Float64)?;
        let not_positive = |x: &Array| -> Result<Array> {
            x.try_greater(0.0)?.try_logical_and(&x.try_isfinite()?)?.try_logical_not()
        };
        refuse_first(
            "beta",
            &[
                (not_positive(&p[0])?, "a <= 0 or not finite"),
                (not_positive(&p[1])?, "b <= 0 or not finite"),
            ],
        )?;
        let mut log_gamma = |k: &Array| -> Result<Array> {
            let (g, boost) = self.standard_gamma_array(k, &shape)?;
            g.try_log()?.try_add(&boost)
        };
        let (lx, ly) = (log_gamma(&p[0])?, log_gamma(&p[1])?);
        let beta = ly.try_subtract(&lx)?.try_exp()?.try_add(1.0)?.try_reciprocal()?;
        Ok(beta.astype(dtype))
    }

    /// `rng.poisson(lam, size)` with array_like `lam`: Poisson counts of each element's mean,
    /// int64 of shape `size`, or for `None` the shape of `lam` (cast to float64). Below a mean
    /// of 10 an element's count is found by inversion, above by PTRS
    /// ([`Generator::try_poisson`]'s rejection rounds with the element's constants); every
    /// element draws for both, so a constant array's values are not the scalar form's (a
    /// scalar takes the scalar form).
    ///
    /// Errors: a `lam` negative or NaN ("lam < 0 or lam is NaN"), or above NumPy's largest
    /// ("lam value too large"; one read back of both checks unless `lam` is a scalar); a `lam`
    /// that does not broadcast to `size`; a complex `lam`.
    pub fn try_poisson_array(
        &mut self,
        lam: impl Into<Operand>,
        size: Option<&[usize]>,
    ) -> Result<Array> {
        let lam = lam.into();
        if let Some(l) = real_scalar(&lam) {
            return self.try_poisson(l, &scalar_shape(size));
        }
        let (p, shape) = params("poisson", vec![lam], size, DType::Float64)?;
        refuse_first(
            "poisson",
            &[
                (p[0].try_greater_equal(0.0)?.try_logical_not()?, "lam < 0 or lam is NaN"),
                (p[0].try_greater(POISSON_LAM_MAX)?, "lam value too large"),
            ],
        )?;
        self.poisson_counts(&p[0], &shape)
    }

    /// `rng.binomial(n, p, size)` with array_like `n` (integers) and `p`: binomial counts of
    /// each element's trials and probability, int64 of shape `size`, or for `None` the
    /// broadcast shape of `n` and `p`. With `p' = min(p, 1-p)`, below `n·p' = 10` a count is
    /// found by inversion, above by BTRS ([`Generator::try_binomial`]'s rejection rounds with
    /// the element's constants); `p > 1/2` gives `n` less the count of `1 - p`. Every element
    /// draws for both, so a constant array's values are not the scalar form's (scalars take
    /// the scalar form).
    ///
    /// Errors: `n` not of an integer dtype; `n < 0` ("n < 0"); `p` outside [0, 1] or NaN
    /// ("p < 0, p > 1 or p is NaN"; one read back of both checks unless both are scalars);
    /// parameters that do not broadcast together or to `size`; a complex `p`.
    pub fn try_binomial_array(
        &mut self,
        n: impl Into<Operand>,
        p: impl Into<Operand>,
        size: Option<&[usize]>,
    ) -> Result<Array> {
        use kiln_ir::promote::WeakScalar;
        let (n, p) = (n.into(), p.into());
        if let (Operand::Scalar(WeakScalar::Int(k)), Some(p)) = (&n, real_scalar(&p)) {
            if let Ok(k) = i64::try_from(*k) {
                return self.try_binomial(k, p, &scalar_shape(size));
            }
        }
        let nd = n.to_array().dtype();
        if !(nd.is_integer() || nd == DType::Bool) {
            return Err(IrError::UnsupportedDType {
                op: "binomial".into(),
                dtypes: vec![nd],
                accepted: "integer n".into(),
            }
            .into());
        }
        let (ps, shape) = params("binomial", vec![n, p], size, DType::Float64)?;
        refuse_first(
            "binomial",
            &[
                (ps[0].try_less(0.0)?, "n < 0"),
                (not_within(&ps[1], 0.0, 1.0)?, "p < 0, p > 1 or p is NaN"),
            ],
        )?;
        self.binomial_counts(&ps[0], &ps[1], &shape)
    }

    /// [`Generator::try_binomial_array`], panicking on error.
    #[track_caller]
    pub fn binomial_array(
        &mut self,
        n: impl Into<Operand>,
        p: impl Into<Operand>,
        size: Option<&[usize]>,
    ) -> Array {
        crate::unwrap(self.try_binomial_array(n, p, size))
    }

    /// [`Generator::try_poisson_array`], panicking on error.
    #[track_caller]
    pub fn poisson_array(&mut self, lam: impl Into<Operand>, size: Option<&[usize]>) -> Array {
        crate::unwrap(self.try_poisson_array(lam, size))
    }

    /// [`Generator::try_gamma_array`], panicking on error.
    #[track_caller]
    pub fn gamma_array(
        &mut self,
        shape_k: impl Into<Operand>,
        scale: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Array {
        crate::unwrap(self.try_gamma_array(shape_k, scale, size, dtype))
    }

    /// [`Generator::try_beta_array`], panicking on error.
    #[track_caller]
    pub fn beta_array(
        &mut self,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        size: Option<&[usize]>,
        dtype: DType,
    ) -> Array {
        crate::unwrap(self.try_beta_array(a, b, size, dtype))
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
