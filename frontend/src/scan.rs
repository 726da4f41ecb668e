//! Scans: running sums, products, maxima and minima along an axis (`np.cumsum`, `np.cumprod`,
//! `np.maximum.accumulate`, `np.minimum.accumulate`), their NaN-ignoring forms, and `np.diff`.
//!
//! A scan is an op of its own (op class `Scan`): one kernel per scan, its input's producers
//! computed inside it (`(x * x).cumsum(None)` reads x once). Each step is rounded to the result
//! dtype, as NumPy's `ufunc.accumulate` rounds it. `cumsum`, `cumprod` and their `nan` forms
//! take NumPy's `dtype=` as `_dtype` forms (`x.cumsum_dtype(axis, DType::Int8)`; see
//! [`Array::try_sum_dtype`]): casts around the scan. The cast of the input is computed in the
//! scan's kernel; a scan's result fuses into nothing after it, so the narrowing cast of a bool
//! or integer `dtype` other than int64/uint64 (the IR scan's own widening) is a kernel after it.

use kiln_ir::shape::normalize_axis;
use kiln_ir::{Attrs, DType, OpKind};

use crate::error::Result;
use crate::views::SliceArg;
use crate::Array;

macro_rules! scans {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $op:ident;)*) => {
        impl Array {$(
            $(#[$doc])*
            ///
            /// Errors: `axis` out of range (a 0-d array has no axis; `None` works on it).
            pub fn $try_name(&self, axis: Option<i64>) -> Result<Array> {
                self.along_axis(OpKind::$op, axis)
            }
            $(#[$doc])*
            ///
            /// Panics where the `try_` form errs.
            #[track_caller]
            pub fn $name(&self, axis: Option<i64>) -> Array {
                crate::unwrap(self.$try_name(axis))
            }
        )*}
    };
}

scans! {
    /// `np.cumsum(a, axis)`: element `i` along `axis` is the sum of elements `0..=i`, added in
    /// order. Same shape as `a` (flattened for `axis = None`). dtype as `np.sum`'s: bool and
    /// signed integers give int64, unsigned uint64, floats and complex their own (float16 is
    /// rounded to float16 at each step, as NumPy does).
    cumsum, try_cumsum => Cumsum;
    /// `np.cumprod(a, axis)`: running products, with `cumsum`'s shapes and dtypes (integers
    /// wrap on overflow, as NumPy's do).
    cumprod, try_cumprod => Cumprod;
    /// `np.maximum.accumulate(a, axis)`: running maxima, the dtype of `a`; a NaN propagates to
    /// every later element; complex compares lexicographically. `None` flattens `a` (NumPy's
    /// `accumulate` has no `None`; this is `np.maximum.accumulate(a.ravel())`).
    cummax, try_cummax => Cummax;
    /// `np.minimum.accumulate(a, axis)`: running minima, as `cummax`.
    cummin, try_cummin => Cummin;
}

impl Array {
    /// Op `op` (a scan or a sort) along `axis`; `None` works on the flattened array (NumPy's
    /// `axis=None`).
    pub(crate) fn along_axis(&self, op: OpKind, axis: Option<i64>) -> Result<Array> {
        let (x, axis) = match axis {
            None => (self.try_reshape(&[self.size() as i64])?, 0),
            Some(a) => (self.clone(), normalize_axis(op.name(), a, self.ndim())?),
        };
        Array::apply(op, Attrs::Axis { axis }, &[&x])
    }

    /// NumPy's `ufunc.accumulate(self, axis, dtype=dtype)` for `op` (`Cumsum` or `Cumprod`):
    /// `self` cast to `dtype`, scanned, the result cast to `dtype`. The IR's scans widen bools
    /// and integers to int64/uint64; each element's narrowing cast is NumPy's running value in
    /// `dtype` (integers: the same modulo 2^bits; bool: `logical_or`/`logical_and` running).
    /// `name` names axis errors.
    fn scan_as(&self, name: &str, op: OpKind, axis: Option<i64>, dtype: DType) -> Result<Array> {
        if let Some(a) = axis {
            normalize_axis(name, a, self.ndim())?;
        }
        Ok(self.cast_to(dtype).along_axis(op, axis)?.cast_to(dtype))
    }
    /// `np.nancumsum(a, axis)`: [`Array::try_cumsum`] with NaNs counted as zero (a NaN of a
    /// complex value: either part NaN). Fused: one kernel.
    pub fn try_nancumsum(&self, axis: Option<i64>) -> Result<Array> {
        self.nan_filled(0.0)?.along_axis(OpKind::Cumsum, axis).map_err(|e| e.within("nancumsum"))
    }

    /// `np.nancumsum`. Panics where [`Array::try_nancumsum`] errs.
    #[track_caller]
    pub fn nancumsum(&self, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_nancumsum(axis))
    }

    /// `np.nancumprod(a, axis)`: [`Array::try_cumprod`] with NaNs counted as one.
    pub fn try_nancumprod(&self, axis: Option<i64>) -> Result<Array> {
        self.nan_filled(1.0)?.along_axis(OpKind::Cumprod, axis).map_err(|e| e.within("nancumprod"))
    }

    /// `np.nancumprod`. Panics where [`Array::try_nancumprod`] errs.
    #[track_caller]
    pub fn nancumprod(&self, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_nancumprod(axis))
    }

    /// `np.diff(a, n, axis)`: the `n`-th difference along `axis` (`a[1:] - a[:-1]`, `n`
    /// times; bools give `a[1:] != a[:-1]`). The axis shrinks by `n` (to 0 at least); `n = 0`
    /// returns `a`. A view arithmetic, no scan: it fuses as elementwise code.
    ///
    /// Errors: a 0-d `a` (NumPy: "diff requires input that is at least one dimensional"), or
    /// `axis` out of range.
    pub fn try_diff(&self, n: usize, axis: i64) -> Result<Array> {
        if self.ndim() == 0 {
            return Err(crate::error::value_err(
                "diff",
                "diff requires input that is at least one dimensional",
            ));
        }
        let ax = normalize_axis("diff", axis, self.ndim())?;
        let mut a = self.clone();
        for _ in 0..n.min(self.shape()[ax]) {
            let mut later = vec![SliceArg::FULL; self.ndim()];
            let mut earlier = later.clone();
            later[ax] = SliceArg::Range { start: Some(1), stop: None, step: 1 };
            earlier[ax] = SliceArg::Range { start: None, stop: Some(-1), step: 1 };
            let (l, e) = (a.try_slice(&later)?, a.try_slice(&earlier)?);
            a = if a.dtype() == DType::Bool { l.try_not_equal(&e)? } else { l.try_subtract(&e)? };
        }
        // Past the axis's length NumPy's result is empty along it, as after `len` steps.
        Ok(a)
    }

    /// `np.diff`. Panics where [`Array::try_diff`] errs.
    #[track_caller]
    pub fn diff(&self, n: usize, axis: i64) -> Array {
        crate::unwrap(self.try_diff(n, axis))
    }
}

crate::reduce::dtype_forms! {
    /// `np.cumsum(a, axis, dtype=dtype)`: `a` cast to `dtype` (unsafe casting: floats truncate
    /// toward zero, complex drops its imaginary part), summed in order in `dtype`, each step
    /// rounded (or wrapped) to `dtype`: `int8` with `dtype=int8` wraps, `float16` with
    /// `dtype=float32` runs in float32, `bool` with `dtype=bool` is a running `or`. Shape as
    /// [`Array::try_cumsum`]'s (flattened for `None`), dtype `dtype`; `dtype = None` is
    /// [`Array::try_cumsum`]. The form is that of every `dtype=` ([`Array::try_sum_dtype`]).
    /// One kernel for a float, complex, int64 or uint64 `dtype`; a narrower integer or bool
    /// `dtype` adds the narrowing cast's kernel after the scan's.
    ///
    /// Errors: `axis` out of range (named `cumsum`).
    cumsum_dtype, try_cumsum_dtype(axis: Option<i64>) => try_cumsum,
        |x, dt| x.scan_as("cumsum", OpKind::Cumsum, axis, dt);

    /// `np.cumprod(a, axis, dtype=dtype)`: running products in `dtype`, as
    /// [`Array::try_cumsum_dtype`] (`bool`: a running `and`). Errors: `axis` out of range
    /// (named `cumprod`).
    cumprod_dtype, try_cumprod_dtype(axis: Option<i64>) => try_cumprod,
        |x, dt| x.scan_as("cumprod", OpKind::Cumprod, axis, dt);

    /// `np.nancumsum(a, axis, dtype=dtype)`: NaNs replaced by zero (in `a`'s dtype, before the
    /// cast), then [`Array::try_cumsum_dtype`]; `float64` with `dtype=int64` is NaN-safe. Fused:
    /// one kernel. `None`: [`Array::try_nancumsum`].
    ///
    /// Errors: `axis` out of range (named `nancumsum`).
    nancumsum_dtype, try_nancumsum_dtype(axis: Option<i64>) => try_nancumsum,
        |x, dt| x.nan_filled(0.0)?.scan_as("nancumsum", OpKind::Cumsum, axis, dt);

    /// `np.nancumprod(a, axis, dtype=dtype)`: NaNs replaced by one, then
    /// [`Array::try_cumprod_dtype`]. `None`: [`Array::try_nancumprod`].
    ///
    /// Errors: `axis` out of range (named `nancumprod`).
    nancumprod_dtype, try_nancumprod_dtype(axis: Option<i64>) => try_nancumprod,
        |x, dt| x.nan_filled(1.0)?.scan_as("nancumprod", OpKind::Cumprod, axis, dt);
}
