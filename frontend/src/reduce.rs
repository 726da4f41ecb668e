//! Reductions with NumPy's `axis` (None, int, negative, tuple) and `keepdims`.

use kiln_ir::shape::{normalize_axes, normalize_axis};
use kiln_ir::{Attrs, DType, OpKind};
use smallvec::SmallVec;

use crate::array::Array;
use crate::error::Result;

/// NumPy's `axis=` and `keepdims=` arguments of a reduction.
///
/// Built from `None` (every axis), an integer (`1`, `-1`), an array or `Vec` of integers (a tuple
/// of axes), or [`axis`]`(..)` / [`all_axes`]`()` followed by `.keepdims()`:
/// `x.sum(1)`, `x.sum(None)`, `x.sum([0, 2])`, `x.max(axis(-1).keepdims())`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AxisArg {
    /// `None`: reduce every axis.
    pub axes: Option<Vec<i64>>,
    pub keepdims: bool,
}

impl AxisArg {
    /// The same axes with `keepdims=True`.
    pub fn keepdims(mut self) -> AxisArg {
        self.keepdims = true;
        self
    }
}

/// `axis=a` for a reduction; chain `.keepdims()` for `keepdims=True`.
pub fn axis(a: impl Into<AxisArg>) -> AxisArg {
    a.into()
}

/// `axis=None` (every axis); chain `.keepdims()` for `keepdims=True`.
pub fn all_axes() -> AxisArg {
    AxisArg::default()
}

impl From<Option<i64>> for AxisArg {
    fn from(a: Option<i64>) -> AxisArg {
        AxisArg { axes: a.map(|a| vec![a]), keepdims: false }
    }
}
macro_rules! axis_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for AxisArg {
            fn from(a: $t) -> AxisArg { AxisArg { axes: Some(vec![a as i64]), keepdims: false } }
        }
        impl<const N: usize> From<[$t; N]> for AxisArg {
            fn from(a: [$t; N]) -> AxisArg { AxisArg { axes: Some(a.iter().map(|&x| x as i64).collect()), keepdims: false } }
        }
        impl From<Vec<$t>> for AxisArg {
            fn from(a: Vec<$t>) -> AxisArg { AxisArg { axes: Some(a.iter().map(|&x| x as i64).collect()), keepdims: false } }
        }
        impl From<&[$t]> for AxisArg {
            fn from(a: &[$t]) -> AxisArg { AxisArg { axes: Some(a.iter().map(|&x| x as i64).collect()), keepdims: false } }
        }
    )*};
}
axis_from_int!(i32, i64, usize);

impl Array {
    /// The sorted, normalised axes of an [`AxisArg`] for this array.
    pub(crate) fn resolve_axes(&self, op: &str, arg: &AxisArg) -> Result<SmallVec<[usize; 4]>> {
        Ok(match &arg.axes {
            None => (0..self.ndim()).collect(),
            Some(a) => normalize_axes(op, a, self.ndim())?,
        })
    }

    fn reduce(&self, op: OpKind, arg: AxisArg) -> Result<Array> {
        let axes = self.resolve_axes(op.name(), &arg)?;
        Array::apply(op, Attrs::Reduce { axes, keepdims: arg.keepdims }, &[self])
    }

    /// Number of elements each output of a reduction over `axes` combines.
    fn reduced_count(&self, axes: &[usize]) -> usize {
        axes.iter().map(|&a| self.shape()[a]).product()
    }

    /// `np.argmax`/`np.argmin`: `axis=None` works on the flattened array.
    fn arg_reduce(&self, op: OpKind, arg: AxisArg) -> Result<Array> {
        match &arg.axes {
            None => {
                let flat = self.try_reshape(&[self.size() as i64])?;
                let r = Array::apply(
                    op,
                    Attrs::Reduce { axes: smallvec::smallvec![0], keepdims: false },
                    &[&flat],
                )?;
                if arg.keepdims {
                    r.try_reshape(&vec![1; self.ndim()])
                } else {
                    Ok(r)
                }
            }
            Some(a) if a.len() == 1 => {
                let ax = normalize_axis(op.name(), a[0], self.ndim())?;
                Array::apply(
                    op,
                    Attrs::Reduce { axes: smallvec::smallvec![ax], keepdims: arg.keepdims },
                    &[self],
                )
            }
            Some(_) => {
                Err(crate::error::value_err(op.name(), "axis must be None or a single integer"))
            }
        }
    }

    /// The dtype `mean` and `var` compute in, and their result's: float64 for integers and
    /// bools, float32 inside for float16/bfloat16 (result in the input's dtype).
    pub(crate) fn mean_dtypes(&self) -> (DType, DType) {
        match self.dtype() {
            d if d.is_bool() || d.is_integer() => (DType::Float64, DType::Float64),
            DType::Float16 | DType::BFloat16 => (DType::Float32, self.dtype()),
            d => (d, d),
        }
    }

    /// `np.mean(x, axis, keepdims)`: `sum / count`. Integers give float64; float16 accumulates
    /// in float32. An empty reduction gives NaN, as NumPy (which also warns).
    pub fn try_mean(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        let arg = arg.into();
        let axes = self.resolve_axes("mean", &arg)?;
        let (work, out) = self.mean_dtypes();
        let n = self.reduced_count(&axes);
        let s = self.cast_to(work).reduce(OpKind::Sum, arg)?;
        Ok(s.try_divide(n as f64)?.cast_to(out))
    }

    /// `np.var(x, axis, ddof, keepdims)`: `sum(|x - mean|²) / max(count - ddof, 0)`; complex
    /// gives its real dtype.
    pub fn try_var(&self, arg: impl Into<AxisArg>, ddof: usize) -> Result<Array> {
        let arg = arg.into();
        let axes = self.resolve_axes("var", &arg)?;
        let (work, out) = self.mean_dtypes();
        let n = self.reduced_count(&axes);
        let x = self.cast_to(work);
        let mean = x.try_mean(AxisArg { axes: arg.axes.clone(), keepdims: true })?;
        let d = x.try_subtract(&mean)?;
        let sq = if work.is_complex() { d.try_abs()?.try_square()? } else { d.try_square()? };
        let s = sq.reduce(OpKind::Sum, arg)?;
        let denom = n.saturating_sub(ddof) as f64;
        Ok(s.try_divide(denom)?.cast_to(out.real_dtype()))
    }

    /// `np.std(x, axis, ddof, keepdims)` = `sqrt(var)`.
    pub fn try_std(&self, arg: impl Into<AxisArg>, ddof: usize) -> Result<Array> {
        self.try_var(arg, ddof)?.try_sqrt()
    }

    /// `np.mean`. Panics where [`Array::try_mean`] errs.
    #[track_caller]
    pub fn mean(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_mean(arg))
    }

    /// `np.var`. Panics where [`Array::try_var`] errs.
    #[track_caller]
    pub fn var(&self, arg: impl Into<AxisArg>, ddof: usize) -> Array {
        crate::unwrap(self.try_var(arg, ddof))
    }

    /// `np.std`. Panics where [`Array::try_std`] errs.
    #[track_caller]
    pub fn std(&self, arg: impl Into<AxisArg>, ddof: usize) -> Array {
        crate::unwrap(self.try_std(arg, ddof))
    }
}

macro_rules! reductions {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $op:ident;)*) => {
        impl Array {$(
            $(#[$doc])*
            ///
            /// Errors: an axis out of range or repeated; for max/min, an empty reduction.
            pub fn $try_name(&self, arg: impl Into<AxisArg>) -> Result<Array> {
                self.reduce(OpKind::$op, arg.into())
            }
            $(#[$doc])*
            ///
            /// Panics where the `try_` form errs.
            #[track_caller]
            pub fn $name(&self, arg: impl Into<AxisArg>) -> Array {
                crate::unwrap(self.$try_name(arg))
            }
        )*}
    };
}

reductions! {
    /// `np.sum(x, axis, keepdims)`: bools and signed ints sum to int64, unsigned to uint64;
    /// float16/bfloat16 accumulate in float32.
    sum, try_sum => Sum;
    /// `np.prod(x, axis, keepdims)`, with `sum`'s dtypes.
    prod, try_prod => Prod;
    /// `np.max(x, axis, keepdims)`: NaN propagates.
    max, try_max => Max;
    /// `np.min(x, axis, keepdims)`: NaN propagates.
    min, try_min => Min;
    /// `np.all(x, axis, keepdims)` (bool).
    all, try_all => All;
    /// `np.any(x, axis, keepdims)` (bool).
    any, try_any => Any;
}

impl Array {
    /// `np.argmax(x, axis, keepdims)`: int64 index of the first maximum (the first NaN wins);
    /// `axis=None` indexes the flattened array. Errors: an empty axis, or several axes.
    pub fn try_argmax(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.arg_reduce(OpKind::ArgMax, arg.into())
    }

    /// `np.argmin(x, axis, keepdims)`, as [`Array::try_argmax`].
    pub fn try_argmin(&self, arg: impl Into<AxisArg>) -> Result<Array> {
        self.arg_reduce(OpKind::ArgMin, arg.into())
    }

    /// `np.argmax`. Panics where [`Array::try_argmax`] errs.
    #[track_caller]
    pub fn argmax(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_argmax(arg))
    }

    /// `np.argmin`. Panics where [`Array::try_argmin`] errs.
    #[track_caller]
    pub fn argmin(&self, arg: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_argmin(arg))
    }
}
