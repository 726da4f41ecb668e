//! NaN-ignoring reductions (`np.nansum`, `nanprod`, `nanmean`, `nanvar`, `nanstd`, `nanmax`,
//! `nanmin`), `ptp`, `nan_to_num`, and the closeness tests (`isclose`, `allclose`,
//! `array_equal`). All are compositions of kiln's ops (a NaN replaced by `where`, a count of the
//! valid elements summed beside): they fuse like any expression, the replacement inside the
//! reduction's kernel. `nansum`, `nanprod`, `nanmean`, `nanvar` and `nanstd` take NumPy's
//! `dtype=` as `_dtype` forms (`x.nanmean_dtype(axis, DType::Float64)`; see
//! [`Array::try_sum_dtype`]).

use kiln_ir::{DType, IrError, OpKind};

use crate::error::Result;
use crate::reduce::{divide_by_count, squared_deviation, std_from_var, AxisArg};
use crate::Array;

impl Array {
    /// `self` with its NaNs replaced by `value` (itself for integers and bools, which have none;
    /// a complex value is NaN when either part is).
    pub(crate) fn nan_filled(&self, value: f64) -> Result<Array> {
        if !self.dtype().is_inexact() {
            return Ok(self.clone());
        }
        crate::try_where_(self.try_isnan()?, crate::full(&[], value, self.dtype()), self)
    }

    /// `np.nansum(x, axis, keepdims)`: [`Array::try_sum`] with NaNs counted as zero (an all-NaN
    /// slice sums to 0). Errors: as `sum`.
    pub fn try_nansum(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.nan_filled(0.0)?.try_sum(arg).map_err(|e| e.within("nansum"))
    }

    /// `np.nansum`. Panics where [`Array::try_nansum`] errs.
    #[track_caller]
    pub fn nansum(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_nansum(arg))
    }

    /// `np.nanprod(x, axis, keepdims)`: [`Array::try_prod`] with NaNs counted as one.
    pub fn try_nanprod(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.nan_filled(1.0)?.try_prod(arg).map_err(|e| e.within("nanprod"))
    }

    /// `np.nanprod`. Panics where [`Array::try_nanprod`] errs.
    #[track_caller]
    pub fn nanprod(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_nanprod(arg))
    }

    /// The sum of the non-NaN elements and their count (as `work`), over `arg`.
    fn valid_sum_and_count(&self, arg: &AxisArg, work: DType) -> Result<(Array, Array)> {
        let x = self.cast_to(work);
        let valid = x.try_isnan()?.try_logical_not()?;
        let s = crate::try_where_(&valid, &x, crate::full(&[], 0.0, work))?.try_sum(arg.clone())?;
        let n = valid.try_sum(arg.clone())?.cast_to(work.real_dtype());
        Ok((s, n))
    }

    /// `np.nanmean(x, axis, keepdims)`: the mean of the non-NaN elements; an all-NaN slice
    /// gives NaN (NumPy also warns). dtypes as [`Array::try_mean`] (integers and bools have no
    /// NaN: their mean). Errors: an axis out of range or repeated.
    pub fn try_nanmean(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        let arg = arg.into();
        if !self.dtype().is_inexact() {
            return self.try_mean(arg);
        }
        self.resolve_axes("nanmean", &arg)?;
        let (work, out) = self.mean_dtypes();
        let (s, n) = self.valid_sum_and_count(&arg, work)?;
        Ok(s.try_divide(&n)?.cast_to(out))
    }

    /// `np.nanmean`. Panics where [`Array::try_nanmean`] errs.
    #[track_caller]
    pub fn nanmean(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_nanmean(arg))
    }

    /// `np.nanvar(x, axis, ddof, keepdims)`: `sum(|x - nanmean|²) / max(count - ddof, 0)` over
    /// the non-NaN elements (all-NaN, or `count <= ddof`: NaN or inf, as NumPy's values);
    /// complex gives its real dtype.
    pub fn try_nanvar(&self, arg: impl Into<AxisArg>, ddof: usize) -> Result<Array> {
        let arg = arg.into();
        if !self.dtype().is_inexact() {
            return self.try_var(arg, ddof);
        }
        self.resolve_axes("nanvar", &arg)?;
        let (work, out) = self.mean_dtypes();
        let x = self.cast_to(work);
        let mean = x.try_nanmean(AxisArg { axes: arg.axes.clone(), keepdims: true })?;
        let d = x.try_subtract(&mean)?.nan_filled(0.0)?;
        let sq = if work.is_complex() { d.try_abs()?.try_square()? } else { d.try_square()? };
        let s = sq.try_sum(arg.clone())?;
        let n = x.try_isnan()?.try_logical_not()?.try_sum(arg)?.cast_to(work.real_dtype());
        let denom = n.try_subtract(ddof as f64)?.try_maximum(0.0)?;
        // NumPy: NaN (not inf) where `count - ddof <= 0`.
        let var = crate::try_where_(&denom.try_greater(0.0)?, &s.try_divide(&denom)?, f64::NAN)?;
        Ok(var.cast_to(out.real_dtype()))
    }

    /// `np.nanvar`. Panics where [`Array::try_nanvar`] errs.
    #[track_caller]
    pub fn nanvar(&self, arg: impl Into<AxisArg>, ddof: usize) -> Array {
        crate::unwrap(self.try_nanvar(arg, ddof))
    }

    /// `np.nanstd(x, axis, ddof, keepdims)` = `sqrt(nanvar)`.
    pub fn try_nanstd(&self, arg: impl Into<AxisArg>, ddof: usize) -> Result<Array> {
        self.try_nanvar(arg, ddof).and_then(|v| v.try_sqrt()).map_err(|e| e.within("nanstd"))
    }

    /// `np.nanstd`. Panics where [`Array::try_nanstd`] errs.
    #[track_caller]
    pub fn nanstd(&self, arg: impl Into<AxisArg>, ddof: usize) -> Array {
        crate::unwrap(self.try_nanstd(arg, ddof))
    }

    /// `np.nanmean(self, axis, dtype=dtype)` as NumPy computes it: integers and bools (no NaN)
    /// are `mean(dtype=dtype)`; otherwise `dtype` must be inexact, and the sum of the non-NaN
    /// elements in `dtype` is divided by their int64 count.
    fn nanmean_as(&self, name: &str, arg: AxisArg, dtype: DType) -> Result<Array> {
        self.resolve_axes(name, &arg)?;
        if !self.dtype().is_inexact() {
            return self.mean_as(name, arg, dtype);
        }
        self.check_inexact_dtype(name, dtype)?;
        let count = self.try_isnan()?.try_logical_not()?.try_sum(arg.clone())?;
        let total = self.nan_filled(0.0)?.reduce_as(name, OpKind::Sum, arg, dtype)?;
        divide_by_count(&total, &count, dtype)
    }

    /// NumPy's `TypeError` for a float or complex array with an integer or bool `dtype=` in
    /// `nanmean`, `nanvar` and `nanstd`.
    fn check_inexact_dtype(&self, name: &str, dtype: DType) -> Result<()> {
        if dtype.is_inexact() {
            return Ok(());
        }
        Err(IrError::UnsupportedDType {
            op: name.into(),
            dtypes: vec![self.dtype(), dtype],
            accepted: "a float or complex dtype= for a float or complex array (NumPy: \"If a is \
                       inexact, then dtype must be inexact\")"
                .into(),
        }
        .into())
    }

    /// `np.nanvar(self, axis, dtype=dtype, ddof=ddof)` as NumPy's `nanvar` computes it:
    /// integers and bools are `var(dtype=dtype)`; otherwise the mean of the non-NaN elements in
    /// `dtype` (keepdims), the deviations stored back in `self`'s dtype (NumPy subtracts into
    /// its NaN-filled copy) and zero where NaN, squared there (`|d|²` for complex), summed in
    /// `dtype`, divided by `count - ddof`; NaN where `count - ddof <= 0`.
    fn nanvar_as(&self, name: &str, arg: AxisArg, ddof: usize, dtype: DType) -> Result<Array> {
        self.resolve_axes(name, &arg)?;
        if !self.dtype().is_inexact() {
            return self.var_as(name, arg, ddof, dtype);
        }
        self.check_inexact_dtype(name, dtype)?;
        let keep = AxisArg { axes: arg.axes.clone(), keepdims: true };
        let nan = self.try_isnan()?;
        let valid = nan.try_logical_not()?;
        let filled = self.nan_filled(0.0)?;
        let total = filled.reduce_as(name, OpKind::Sum, keep.clone(), dtype)?;
        let mean = divide_by_count(&total, &valid.try_sum(keep)?, dtype)?;
        let d = filled.try_subtract(&mean)?.cast_to(self.dtype());
        let d = crate::try_where_(&nan, crate::full(&[], 0.0, self.dtype()), &d)?;
        let sq = squared_deviation(self.dtype(), &d)?;
        let s = sq.reduce_as(name, OpKind::Sum, arg.clone(), dtype)?;
        let dof = valid.try_sum(arg)?.try_subtract(ddof as i64)?;
        let v = divide_by_count(&s, &dof, dtype)?;
        crate::try_where_(dof.try_less_equal(0i64)?, crate::full(&[], f64::NAN, dtype), &v)
    }
    /// `nanmax` or `nanmin`: NaNs replaced by the identity, an all-NaN slice NaN again.
    fn nan_extreme(&self, arg: AxisArg, max: bool) -> Result<Array> {
        if !self.dtype().is_inexact() {
            return if max { self.try_max(arg) } else { self.try_min(arg) };
        }
        let fill = if max { f64::NEG_INFINITY } else { f64::INFINITY };
        let filled = self.nan_filled(fill)?;
        let m = if max { filled.try_max(arg.clone())? } else { filled.try_min(arg.clone())? };
        let all_nan = self.try_isnan()?.try_all(arg)?;
        crate::try_where_(all_nan, crate::full(&[], f64::NAN, self.dtype()), &m)
    }

    /// `np.nanmax(x, axis, keepdims)`: the largest non-NaN element; an all-NaN slice gives NaN
    /// (NumPy also warns). Errors: as `max` (an empty axis).
    pub fn try_nanmax(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.nan_extreme(arg.into(), true).map_err(|e| e.within("nanmax"))
    }

    /// `np.nanmax`. Panics where [`Array::try_nanmax`] errs.
    #[track_caller]
    pub fn nanmax(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_nanmax(arg))
    }

    /// `np.nanargmax(x, axis, keepdims)`: the int64 index of the first maximum with NaNs read
    /// as -inf (NumPy's definition: in `[NaN, -inf]` that is 0, the NaN's position);
    /// `axis=None` indexes the flattened array. An all-NaN slice gives -1, as CuPy's
    /// `cupy.nanargmax` (NumPy raises ValueError "All-NaN slice encountered": a lazy array
    /// cannot raise on its values without reading them back). Integer and bool arrays have
    /// no NaN: their `argmax`. The NaN fill and the all-NaN test fuse into the reduction's
    /// kernel. Errors: as `argmax` (an empty axis, several axes).
    pub fn try_nanargmax(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.nan_arg_extreme(arg.into(), true)
    }

    /// `np.nanargmax`. Panics where [`Array::try_nanargmax`] errs.
    #[track_caller]
    pub fn nanargmax(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_nanargmax(arg))
    }

    /// `np.nanargmin(x, axis, keepdims)`: as [`Array::try_nanargmax`], NaNs read as +inf.
    pub fn try_nanargmin(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.nan_arg_extreme(arg.into(), false)
    }

    /// `np.nanargmin`. Panics where [`Array::try_nanargmin`] errs.
    #[track_caller]
    pub fn nanargmin(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_nanargmin(arg))
    }

    /// `nanargmax` or `nanargmin`: the arg-extreme of the NaN-filled array, -1 where all NaN.
    fn nan_arg_extreme(&self, arg: AxisArg, max: bool) -> Result<Array> {
        if !self.dtype().is_inexact() {
            return if max { self.try_argmax(arg) } else { self.try_argmin(arg) };
        }
        let filled = self.nan_filled(if max { f64::NEG_INFINITY } else { f64::INFINITY })?;
        let i =
            if max { filled.try_argmax(arg.clone())? } else { filled.try_argmin(arg.clone())? };
        let all_nan = self.try_isnan()?.try_all(arg)?;
        crate::try_where_(all_nan, -1i64, &i)
    }

    /// `np.nanmin(x, axis, keepdims)`, as [`Array::try_nanmax`].
    pub fn try_nanmin(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.nan_extreme(arg.into(), false).map_err(|e| e.within("nanmin"))
    }

    /// `np.nanmin`. Panics where [`Array::try_nanmin`] errs.
    #[track_caller]
    pub fn nanmin(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_nanmin(arg))
    }

    /// `np.count_nonzero(x, axis, keepdims)`: int64 count of the elements that are not zero
    /// (NaN counts; a complex value with either part non-zero counts).
    pub fn try_count_nonzero(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.cast_to(DType::Bool).try_sum(arg).map_err(|e| e.within("count_nonzero"))
    }

    /// `np.count_nonzero`. Panics where [`Array::try_count_nonzero`] errs.
    #[track_caller]
    pub fn count_nonzero(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_count_nonzero(arg))
    }

    /// `np.ptp(x, axis, keepdims)`: `max - min` (NaN propagates; integers wrap as NumPy's).
    pub fn try_ptp(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        let arg = arg.into();
        let ptp = || self.try_max(arg.clone())?.try_subtract(&self.try_min(arg.clone())?);
        ptp().map_err(|e| e.within("ptp"))
    }

    /// `np.ptp`. Panics where [`Array::try_ptp`] errs.
    #[track_caller]
    pub fn ptp(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_ptp(arg))
    }

    /// `np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)`: NaN → `nan`, +inf → `posinf`
    /// (default the dtype's largest finite value), -inf → `neginf` (default the lowest);
    /// complex parts separately. Integers and bools are returned as they are.
    pub fn try_nan_to_num(
        &self,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> Result<Array> {
        let dt = self.dtype();
        if !dt.is_inexact() {
            return Ok(self.clone());
        }
        if dt.is_complex() {
            let re = self.real().try_nan_to_num(nan, posinf, neginf)?;
            let im = self.imag().try_nan_to_num(nan, posinf, neginf)?;
            let i = crate::full(&[], num_complex::Complex64::new(0.0, 1.0), dt);
            return re.cast_to(dt).try_add(&im.cast_to(dt).try_multiply(&i)?);
        }
        let big = float_max(dt);
        let x = self.nan_filled(nan)?;
        let pos = crate::full(&[], posinf.unwrap_or(big), dt);
        let neg = crate::full(&[], neginf.unwrap_or(-big), dt);
        let x = crate::try_where_(x.try_equal(f64::INFINITY)?, pos, &x)?;
        crate::try_where_(x.try_equal(f64::NEG_INFINITY)?, neg, &x)
    }

    /// `np.nan_to_num`. Panics where [`Array::try_nan_to_num`] errs.
    #[track_caller]
    pub fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Array {
        crate::unwrap(self.try_nan_to_num(nan, posinf, neginf))
    }
}

crate::reduce::dtype_forms! {
    /// `np.nansum(x, axis, keepdims, dtype=dtype)`: NaNs replaced by zero (in `x`'s dtype,
    /// before the cast), then [`Array::try_sum_dtype`]: summed in `dtype`, a result of `dtype`
    /// (`float64` with `dtype=int64` truncates each non-NaN element). `None`:
    /// [`Array::try_nansum`]. One kernel.
    ///
    /// Errors: an axis out of range or repeated (named `nansum`).
    nansum_dtype, try_nansum_dtype(arg: impl Into<AxisArg>) => try_nansum,
        |x, dt| x.nan_filled(0.0)?.reduce_as("nansum", OpKind::Sum, arg.into(), dt);

    /// `np.nanprod(x, axis, keepdims, dtype=dtype)`: NaNs replaced by one, then
    /// [`Array::try_prod_dtype`]. `None`: [`Array::try_nanprod`].
    ///
    /// Errors: an axis out of range or repeated (named `nanprod`).
    nanprod_dtype, try_nanprod_dtype(arg: impl Into<AxisArg>) => try_nanprod,
        |x, dt| x.nan_filled(1.0)?.reduce_as("nanprod", OpKind::Prod, arg.into(), dt);

    /// `np.nanmean(x, axis, keepdims, dtype=dtype)`: the sum of the non-NaN elements in `dtype`
    /// divided by their count (in float64, complex128 for complex64, as NumPy divides by an
    /// `intp` count), a result of `dtype`; an all-NaN slice gives NaN. An integer or bool `x`
    /// has no NaN: [`Array::try_mean_dtype`] (any `dtype`). `None`: [`Array::try_nanmean`].
    ///
    /// Errors: an axis out of range or repeated; a float or complex `x` with an integer or bool
    /// `dtype` (NumPy's `TypeError` "If a is inexact, then dtype must be inexact"),
    /// `IrError::UnsupportedDType` naming `nanmean` and both dtypes.
    nanmean_dtype, try_nanmean_dtype(arg: impl Into<AxisArg>) => try_nanmean,
        |x, dt| x.nanmean_as("nanmean", arg.into(), dt);

    /// `np.nanvar(x, axis, dtype=dtype, ddof=ddof, keepdims)`, as NumPy's `nanvar`: the mean
    /// of the non-NaN elements in `dtype`; the deviations rounded to `x`'s dtype (NumPy
    /// subtracts in place into its copy of `x`) and squared there (`|d|²` for complex `x`);
    /// their sum in `dtype` divided by `count - ddof`, NaN where that is `<= 0`. Result dtype
    /// `dtype`. An integer or bool `x`: [`Array::try_var_dtype`]. `None`:
    /// [`Array::try_nanvar`].
    ///
    /// Errors: as [`Array::try_nanmean_dtype`], named `nanvar`; a bool `x` with `dtype=bool`
    /// as [`Array::try_var_dtype`].
    nanvar_dtype, try_nanvar_dtype(arg: impl Into<AxisArg>, ddof: usize) => try_nanvar,
        |x, dt| x.nanvar_as("nanvar", arg.into(), ddof, dt);

    /// `np.nanstd(x, axis, dtype=dtype, ddof=ddof, keepdims)`: the square root of
    /// [`Array::try_nanvar_dtype`], of dtype `dtype` (an integer `dtype` only for an integer or
    /// bool `x`, as [`Array::try_std_dtype`]). `None`: [`Array::try_nanstd`].
    ///
    /// Errors: as [`Array::try_nanvar_dtype`] and [`Array::try_std_dtype`], named `nanstd`.
    nanstd_dtype, try_nanstd_dtype(arg: impl Into<AxisArg>, ddof: usize) => try_nanstd,
        |x, dt| std_from_var("nanstd", &x.nanvar_as("nanstd", arg.into(), ddof, dt)?, dt);
}

/// `np.isclose(a, b, rtol, atol, equal_nan)` (bool, the broadcast shape): NumPy 2's
/// `(|a - b| <= atol + rtol·|b| and b finite) or a == b`, and with `equal_nan` NaN where both
/// are NaN. Not symmetric, as NumPy's. Integers compare in float64.
///
/// Errors: shapes that do not broadcast.
pub fn try_isclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    isclose_of(a, b, rtol, atol, equal_nan).map_err(|e| e.within("isclose"))
}

/// [`try_isclose`]'s steps (their errors name the ops they are made of).
fn isclose_of(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let dt = inexact_type(a, b);
    let (x, y) = (a.cast_to(dt), b.cast_to(dt));
    let tol = y.try_abs()?.try_multiply(rtol)?.try_add(atol)?;
    let near =
        x.try_subtract(&y)?.try_abs()?.try_less_equal(&tol)?.try_logical_and(&y.try_isfinite()?)?;
    let close = near.try_logical_or(&x.try_equal(&y)?)?;
    if equal_nan {
        close.try_logical_or(&x.try_isnan()?.try_logical_and(&y.try_isnan()?)?)
    } else {
        Ok(close)
    }
}

/// `np.isclose`. Panics where [`try_isclose`] errs.
#[track_caller]
pub fn isclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Array {
    crate::unwrap(try_isclose(a, b, rtol, atol, equal_nan))
}

/// `np.allclose(a, b, rtol, atol, equal_nan)`: every element of [`try_isclose`] true. Reads
/// one bool back to the host (a synchronisation). Errors: shapes that do not broadcast.
pub fn allclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
    try_isclose(a, b, rtol, atol, equal_nan)?.try_all(None::<i64>)?.try_item::<bool>()
}

/// `np.array_equal(a, b, equal_nan)`: the same shape and equal elements (NaNs equal where
/// `equal_nan`). Reads one bool back to the host. Arrays of different shapes are not equal (no
/// error, as NumPy).
pub fn array_equal(a: &Array, b: &Array, equal_nan: bool) -> Result<bool> {
    if a.shape() != b.shape() {
        return Ok(false);
    }
    let mut eq = a.try_equal(b)?;
    if equal_nan && a.dtype().is_inexact() && b.dtype().is_inexact() {
        eq = eq.try_logical_or(&a.try_isnan()?.try_logical_and(&b.try_isnan()?)?)?;
    }
    eq.try_all(None::<i64>)?.try_item::<bool>()
}

/// The largest finite value of a float dtype (`np.finfo(dt).max`).
fn float_max(dt: DType) -> f64 {
    match dt {
        DType::Float16 => 65504.0,
        DType::BFloat16 => 3.3895313892515355e38,
        DType::Float32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// `np.average(a, axis, weights)`: `sum(a * w) / sum(w)` over `axis` (`None`: every axis);
/// without weights the mean. `weights` has `a`'s shape, or is 1-D of the length of `axis`
/// (NumPy's two forms). Integers average in float64.
///
/// Errors: weights of another shape (naming both), a 1-D weights without an axis, an axis out
/// of range. A zero sum of weights gives inf or NaN (NumPy raises `ZeroDivisionError`).
pub fn try_average(a: &Array, axis: Option<i64>, weights: Option<&Array>) -> Result<Array> {
    average_of(a, axis, weights).map_err(|e| e.within("average"))
}

/// [`try_average`]'s steps (their errors name the ops they are made of).
fn average_of(a: &Array, axis: Option<i64>, weights: Option<&Array>) -> Result<Array> {
    let Some(w) = weights else { return a.try_mean(axis) };
    let w = if w.shape() == a.shape() {
        w.clone()
    } else {
        let bad = || {
            crate::error::value_err(
                "average",
                format!("weights of shape {:?} for an array of shape {:?}", w.shape(), a.shape()),
            )
        };
        let Some(ax) = axis else { return Err(bad()) };
        let ax = kiln_ir::shape::normalize_axis("average", ax, a.ndim())?;
        if w.ndim() != 1 || w.shape()[0] != a.shape()[ax] {
            return Err(bad());
        }
        let mut shape = vec![1i64; a.ndim()];
        shape[ax] = w.shape()[0] as i64;
        w.try_reshape(&shape)?
    };
    let dt = inexact_type(a, &w);
    let (x, w) = (a.cast_to(dt), w.cast_to(dt));
    let wsum = w.try_broadcast_to(a.shape())?.try_sum(axis)?;
    x.try_multiply(&w)?.try_sum(axis)?.try_divide(&wsum)
}

/// `np.average`. Panics where [`try_average`] errs.
#[track_caller]
pub fn average(a: &Array, axis: Option<i64>, weights: Option<&Array>) -> Array {
    crate::unwrap(try_average(a, axis, weights))
}

/// `np.heaviside(x1, x2)`: 0 where `x1 < 0`, `x2` where `x1 == 0`, 1 where `x1 > 0`, NaN
/// where `x1` is NaN; float dtypes (integers in float64).
///
/// Errors: shapes that do not broadcast.
pub fn try_heaviside(x1: &Array, x2: &Array) -> Result<Array> {
    heaviside_of(x1, x2).map_err(|e| e.within("heaviside"))
}

/// [`try_heaviside`]'s steps (their errors name the ops they are made of).
fn heaviside_of(x1: &Array, x2: &Array) -> Result<Array> {
    let dt = kiln_ir::promote::result_type(x1.dtype(), x2.dtype());
    let dt = if dt.is_float() { dt } else { DType::Float64 };
    let (x, h) = (x1.cast_to(dt), x2.cast_to(dt));
    let zero = crate::full(&[], 0.0, dt);
    let one = crate::full(&[], 1.0, dt);
    let step = crate::try_where_(
        x.try_less(0.0)?,
        &zero,
        crate::try_where_(x.try_greater(0.0)?, &one, &h)?,
    )?;
    crate::try_where_(x.try_isnan()?, &x, &step)
}

/// `np.heaviside`. Panics where [`try_heaviside`] errs.
#[track_caller]
pub fn heaviside(x1: &Array, x2: &Array) -> Array {
    crate::unwrap(try_heaviside(x1, x2))
}

/// The dtype `a` and `b` promote to, float64 where that is an integer or bool (the dtype
/// NumPy's `isclose` and `average` compute in).
fn inexact_type(a: &Array, b: &Array) -> DType {
    let dt = kiln_ir::promote::result_type(a.dtype(), b.dtype());
    if dt.is_inexact() {
        dt
    } else {
        DType::Float64
    }
}
