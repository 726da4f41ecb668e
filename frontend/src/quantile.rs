//! Order statistics on top of [`Array::try_sort`]: `np.median`, `np.quantile`,
//! `np.percentile` (method `"linear"`) and their NaN-ignoring forms.
//!
//! The one or two elements around the quantile's position of each line along the axis, and its
//! last (a NaN sorts there), are selected by one `sort_take` node (a sort region that selects:
//! on the GPU a radix select per line in shared memory, on the host `select_nth_unstable`),
//! then interpolated lazily: the arithmetic fuses into one kernel after it. The arithmetic is NumPy's: the position `q·(n-1)` and
//! its fraction `t` in float64; `a + (b-a)·t` below `t = 0.5`, `b - (b-a)·(1-t)` from it, with
//! `t` and `1-t` rounded to the result dtype; a median of two elements is their mean (float16
//! and bfloat16 added in float32). Results are float64 for integer and bool input, the input's
//! float dtype otherwise. A line holding a NaN gives NaN (the `nan` forms skip NaNs; a line of
//! NaNs gives NaN).

use kiln_ir::shape::normalize_axis;
use kiln_ir::{Attrs, DType, Literal, OpKind};

use crate::error::{value_err, Result};
use crate::{Array, SliceArg};

/// Which order statistic.
#[derive(Clone, Copy, PartialEq)]
enum Stat {
    Median,
    Quantile(f64),
}

impl Array {
    /// The order statistic `stat` of the lines along `axis` (`None`: the flattened array),
    /// skipping NaNs when `skip_nan`.
    fn order_stat(
        &self,
        op: &'static str,
        stat: Stat,
        axis: Option<i64>,
        skip_nan: bool,
    ) -> Result<Array> {
        if self.dtype().is_complex() {
            return Err(value_err(
                op,
                format!("a must be an array of real numbers (got {})", self.dtype()),
            ));
        }
        let (x, ax) = match axis {
            None => (self.try_reshape(&[self.size() as i64])?, 0),
            Some(a) => (self.clone(), normalize_axis(op, a, self.ndim())?),
        };
        let dt = if self.dtype().is_float() { self.dtype() } else { DType::Float64 };
        let n = x.shape()[ax];
        let mut out_shape = x.shape().to_vec();
        out_shape.remove(ax);
        if n == 0 {
            if let Stat::Quantile(_) = stat {
                return Err(value_err(op, "cannot take a quantile of an empty axis"));
            }
            return crate::try_full(&out_shape, f64::NAN, dt);
        }
        // The line's element at sorted position j of `ks` (one `sort_take`: a selection).
        let line_ks =
            |ks: &Array| Array::apply(OpKind::SortTake, Attrs::Axis { axis: ax }, &[&x, ks]);
        let pick = |s: &Array, j: i64| -> Result<Array> {
            let mut idx = vec![SliceArg::FULL; ax];
            idx.push(SliceArg::Index(j));
            Ok(s.try_slice(&idx)?.cast_to(dt))
        };
        let k_shape = |m: usize| -> Vec<usize> {
            let mut k = vec![1; x.ndim()];
            k[ax] = m;
            k
        };
        let nan = crate::full(&[], f64::NAN, dt);
        let q = match stat {
            Stat::Median => 0.5,
            Stat::Quantile(q) => q,
        };
        if !skip_nan || !self.dtype().is_inexact() {
            let v = (n - 1) as f64 * q;
            let lo = v.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            let t = v - lo as f64;
            // NaN sorts last: a line holding one has it at its end (position n - 1).
            let mut ks = vec![lo as i64, hi as i64];
            if self.dtype().is_inexact() {
                ks.push(n as i64 - 1);
            }
            let m = ks.len();
            let s = line_ks(&Array::from_vec(ks, &k_shape(m)))?;
            let (a, b) = (pick(&s, 0)?, pick(&s, 1)?);
            let r = match stat {
                Stat::Median if t == 0.0 => a,
                Stat::Median => mean2(&a, &b, dt)?,
                Stat::Quantile(_) => {
                    let d = b.try_subtract(&a)?;
                    if t >= 0.5 {
                        b.try_subtract(d.try_multiply(rounded(1.0 - t, dt))?)?
                    } else {
                        a.try_add(d.try_multiply(rounded(t, dt))?)?
                    }
                }
            };
            if !self.dtype().is_inexact() {
                return Ok(r);
            }
            return crate::try_where_(pick(&s, 2)?.try_isnan()?, &nan, &r);
        }
        // Skipping NaNs (sorted last): each line's count of numbers sets its positions.
        let count_k =
            x.try_isnan()?.try_logical_not()?.try_sum(crate::axis(ax as i64).keepdims())?;
        let v = count_k.cast_to(DType::Float64).try_subtract(1.0)?.try_multiply(q)?;
        let fl = v.try_floor()?;
        let lo = fl.try_maximum(0.0)?.cast_to(DType::Int64);
        let top = count_k.try_subtract(1i64)?.try_maximum(0i64)?;
        let hi = lo.try_add(1i64)?.try_minimum(&top)?;
        let s = line_ks(&crate::try_concatenate(&[&lo, &hi], ax as i64)?)?;
        let (a, b) = (pick(&s, 0)?, pick(&s, 1)?);
        let squeeze = |y: &Array| y.try_squeeze(Some(&[ax as i64]));
        let t = squeeze(&v.try_subtract(&fl)?)?;
        let r = match stat {
            Stat::Median => crate::try_where_(t.try_equal(0.0)?, &a, mean2(&a, &b, dt)?)?,
            Stat::Quantile(_) => {
                let d = b.try_subtract(&a)?;
                let up = b.try_subtract(
                    d.try_multiply(t.try_subtract(1.0)?.try_negative()?.cast_to(dt))?,
                )?;
                let down = a.try_add(d.try_multiply(t.cast_to(dt))?)?;
                crate::try_where_(t.try_greater_equal(0.5)?, &up, &down)?
            }
        };
        crate::try_where_(squeeze(&count_k)?.try_equal(0i64)?, &nan, &r)
    }

    /// `np.median(a, axis)`: the middle element of each line along `axis` (`None`: of the
    /// flattened array), the mean of the two middle ones for an even length. float64 for
    /// integer and bool input, else the input's dtype; the axis is removed. A line holding a
    /// NaN gives NaN; an empty line gives NaN (NumPy also warns).
    ///
    /// Errors: complex input, `axis` out of range.
    pub fn try_median(&self, axis: Option<i64>) -> Result<Array> {
        self.order_stat("median", Stat::Median, axis, false)
    }

    /// `np.median`. Panics where [`Array::try_median`] errs.
    #[track_caller]
    pub fn median(&self, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_median(axis))
    }

    /// `np.quantile(a, q, axis)` with method `"linear"`: the value at position `q·(n-1)` of
    /// each sorted line, interpolated between its neighbours (see the module docs). dtypes and
    /// NaN as [`Array::try_median`].
    ///
    /// Errors: `q` outside [0, 1], complex input, an empty axis, `axis` out of range.
    pub fn try_quantile(&self, q: f64, axis: Option<i64>) -> Result<Array> {
        checked_q("quantile", q, 1.0)?;
        self.order_stat("quantile", Stat::Quantile(q), axis, false)
    }

    /// `np.quantile`. Panics where [`Array::try_quantile`] errs.
    #[track_caller]
    pub fn quantile(&self, q: f64, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_quantile(q, axis))
    }

    /// `np.percentile(a, q, axis)`: [`Array::try_quantile`] at `q / 100`.
    ///
    /// Errors: `q` outside [0, 100], and as `quantile`.
    pub fn try_percentile(&self, q: f64, axis: Option<i64>) -> Result<Array> {
        checked_q("percentile", q, 100.0)?;
        self.order_stat("percentile", Stat::Quantile(q / 100.0), axis, false)
    }

    /// `np.percentile`. Panics where [`Array::try_percentile`] errs.
    #[track_caller]
    pub fn percentile(&self, q: f64, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_percentile(q, axis))
    }

    /// `np.nanmedian(a, axis)`: [`Array::try_median`] of each line's numbers, NaNs skipped (a
    /// line of NaNs gives NaN).
    pub fn try_nanmedian(&self, axis: Option<i64>) -> Result<Array> {
        self.order_stat("nanmedian", Stat::Median, axis, true)
    }

    /// `np.nanmedian`. Panics where [`Array::try_nanmedian`] errs.
    #[track_caller]
    pub fn nanmedian(&self, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_nanmedian(axis))
    }

    /// `np.nanquantile(a, q, axis)`: [`Array::try_quantile`] of each line's numbers.
    pub fn try_nanquantile(&self, q: f64, axis: Option<i64>) -> Result<Array> {
        checked_q("nanquantile", q, 1.0)?;
        self.order_stat("nanquantile", Stat::Quantile(q), axis, true)
    }

    /// `np.nanquantile`. Panics where [`Array::try_nanquantile`] errs.
    #[track_caller]
    pub fn nanquantile(&self, q: f64, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_nanquantile(q, axis))
    }

    /// `np.nanpercentile(a, q, axis)`: [`Array::try_nanquantile`] at `q / 100`.
    pub fn try_nanpercentile(&self, q: f64, axis: Option<i64>) -> Result<Array> {
        checked_q("nanpercentile", q, 100.0)?;
        self.order_stat("nanpercentile", Stat::Quantile(q / 100.0), axis, true)
    }

    /// `np.nanpercentile`. Panics where [`Array::try_nanpercentile`] errs.
    #[track_caller]
    pub fn nanpercentile(&self, q: f64, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_nanpercentile(q, axis))
    }
}

/// Checks that `q` lies in `[0, top]` (1 for quantiles, 100 for percentiles), NumPy's message.
fn checked_q(op: &str, q: f64, top: f64) -> Result<()> {
    if (0.0..=top).contains(&q) {
        return Ok(());
    }
    let what = if top == 1.0 { "Quantiles" } else { "Percentiles" };
    Err(value_err(op, format!("{what} must be in the range [0, {top}] (got {q})")))
}

/// `x` rounded to `dt` (a weak scalar that `dt` holds exactly).
fn rounded(x: f64, dt: DType) -> f64 {
    Literal::from_f64(dt, x).to_f64()
}

/// The mean of two values as `np.mean` takes it: their sum halved, float16 and bfloat16 in
/// float32.
fn mean2(a: &Array, b: &Array, dt: DType) -> Result<Array> {
    let work = if matches!(dt, DType::Float16 | DType::BFloat16) { DType::Float32 } else { dt };
    Ok(a.cast_to(work).try_add(b.cast_to(work))?.try_divide(2.0)?.cast_to(dt))
}
