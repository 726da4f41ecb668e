//! Reductions with NumPy's `axis` (None, int, negative, tuple) and `keepdims`.
//!
//! # `dtype=`
//!
//! Every reduction to which NumPy gives a `dtype=` argument has a `_dtype` form: the plain
//! form's arguments and a trailing `dtype` (`impl Into<Option<DType>>`; `None` is NumPy's
//! default, the plain form's result), each with its `try_` twin:
//!
//! - `x.sum(axis, dtype=dt)`, `prod`, `mean`: `x.sum_dtype(axis, dt)`, `prod_dtype`,
//!   `mean_dtype`;
//! - `x.var(axis, dtype=dt, ddof=k)`, `std`: `x.var_dtype(axis, k, dt)`, `std_dtype`;
//! - `np.cumsum(x, axis, dtype=dt)`, `cumprod`: `x.cumsum_dtype(axis, dt)`, `cumprod_dtype`
//!   (`scan.rs`);
//! - `np.nansum`, `nanprod`, `nanmean`, `nanvar`, `nanstd`, `nancumsum`, `nancumprod`:
//!   `x.nansum_dtype(axis, dt)`... (`nan.rs`, `scan.rs`).
//!
//! `max`, `min`, `argmax`, `argmin`, `all`, `any` have no `dtype=` in NumPy and no `_dtype` form.
//!
//! Why a `_dtype` method rather than an options struct: the API passes NumPy's arguments
//! positionally (`axis`, `ddof`) with a `try_` twin, and `dtype` is the one extra argument these
//! functions share; a suffix keeps the plain forms' signatures (and every caller) unchanged, sits
//! beside the plain form in the docs, and is checked when compiling: `max` has no `max_dtype`,
//! where an options struct shared with `max` could only reject a `dtype` when run. (`AxisArg`
//! carries `axis` and `keepdims` for every reduction, `max` included, so `dtype` is not a field
//! of it.)
//!
//! Semantics are NumPy's: the input is cast to `dtype` (unsafe casting: floats truncate toward
//! zero, complex drops its imaginary part, integers wrap), accumulated in `dtype` and returned
//! as `dtype`: `int8.sum(dtype=int8)` wraps, `float16.sum(dtype=float32)` accumulates in
//! float32, `float64.sum(dtype=int64)` truncates each element first, `bool.sum(dtype=bool)` is
//! `any` (`prod`: `all`). The result dtype is always `dtype`, even where it is an integer for
//! `mean`, `var` or `std` (NumPy truncates the quotient and the square root). They are casts
//! around the IR's reduce and scan nodes (whose own rule widens integers to int64/uint64, the
//! same value modulo the narrower width), so the casts fuse into the reduction's kernel (a
//! scan's result fuses into nothing after it: there a narrowing cast is a kernel of its own).

use kiln_ir::shape::{normalize_axes, normalize_axis};
use kiln_ir::{Attrs, DType, IrError, OpKind};
use smallvec::SmallVec;

use crate::array::Array;
use crate::elementwise::Operand;
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
        self.reduce_named(op.name(), op, arg)
    }

    /// [`Array::reduce`] with axis errors naming `name` (the public function: `nansum`...).
    fn reduce_named(&self, name: &str, op: OpKind, arg: AxisArg) -> Result<Array> {
        let axes = self.resolve_axes(name, &arg)?;
        Array::apply(op, Attrs::Reduce { axes, keepdims: arg.keepdims }, &[self])
    }

    /// NumPy's `ufunc.reduce(self, dtype=dtype)` for `op` (`Sum` or `Prod`): `self` cast to
    /// `dtype`, reduced, and the result cast to `dtype`. The IR's sum and product widen bools
    /// and integers to int64/uint64; the narrowing cast gives the value NumPy's accumulation in
    /// `dtype` gives (integers: the same value modulo 2^bits; bool: a nonzero count or product
    /// is `True`, NumPy's `logical_or`/`logical_and`). Both casts fuse into the reduction.
    pub(crate) fn reduce_as(
        &self,
        name: &str,
        op: OpKind,
        arg: AxisArg,
        dtype: DType,
    ) -> Result<Array> {
        Ok(self.cast_to(dtype).reduce_named(name, op, arg)?.cast_to(dtype))
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
        self.try_var(arg, ddof).and_then(|v| v.try_sqrt()).map_err(|e| e.within("std"))
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

/// NumPy's `np.true_divide(s, count, out=s, casting='unsafe')`, the last step of its `mean`,
/// `var` and `std` (and `_divide_by_count` of the nan forms) under `dtype=`: `count` is an
/// `intp` (a strong int64, not a weak scalar), so the quotient is computed in
/// `result_type(dtype, int64)` (float64 for integers, bool, float16 and float32; complex128
/// for complex64) and cast back to `dtype` (integers truncate toward zero).
pub(crate) fn divide_by_count(s: &Array, count: impl Into<Operand>, dtype: DType) -> Result<Array> {
    let wide = kiln_ir::promote::result_type(dtype, DType::Int64);
    Ok(s.cast_to(wide).try_divide(count)?.cast_to(dtype))
}

/// NumPy's squared deviations in `var` and `nanvar`: `d * d` for a float or integer input `x`
/// (complex too when `d` is, a `dtype=` complex), `re² + im²` for a complex `x` (a real array;
/// NumPy multiplies the parts of `d` viewed as floats), `d * conj(d)`'s real part for bools.
pub(crate) fn squared_deviation(x: DType, d: &Array) -> Result<Array> {
    if d.dtype().is_complex() && !(x.is_float() || x.is_integer()) {
        d.real().try_square()?.try_add(&d.imag().try_square()?)
    } else {
        d.try_square()
    }
}

/// NumPy's error for `var(dtype=bool)` of a bool array: the deviations `x - mean` would be a
/// boolean subtract, which NumPy has not.
fn bool_subtract_err(op: &str) -> crate::error::Error {
    IrError::UnsupportedDType {
        op: op.into(),
        dtypes: vec![DType::Bool, DType::Bool],
        accepted: "a dtype= other than bool for a bool array (its deviations from the mean would \
                   be a boolean subtract, which NumPy has not)"
            .into(),
    }
    .into()
}

/// NumPy's `_std` after the variance `var` (of dtype `dtype`): its square root cast back to
/// `dtype`. An integer or bool `dtype` truncates the root of a 0-d result (NumPy's
/// `dtype.type(sqrt(var))`), and is NumPy's `UFuncTypeError` for an array result (its
/// `sqrt(var, out=var)` cannot cast sqrt's float output under `same_kind`).
pub(crate) fn std_from_var(name: &str, var: &Array, dtype: DType) -> Result<Array> {
    let root = var.try_sqrt()?;
    if var.ndim() > 0 && !dtype.is_inexact() {
        return Err(IrError::UnsupportedDType {
            op: name.into(),
            dtypes: vec![dtype],
            accepted: format!(
                "a float or complex dtype= where the result is an array (NumPy: \"Cannot cast \
                 ufunc 'sqrt' output from {} to {} with casting rule 'same_kind'\"; a 0-d \
                 result, axis None, is truncated)",
                root.dtype(),
                dtype
            ),
        }
        .into());
    }
    Ok(root.cast_to(dtype))
}

impl Array {
    /// `np.mean(self, axis, dtype=dtype)`: the sum in `dtype` divided by the count.
    pub(crate) fn mean_as(&self, name: &str, arg: AxisArg, dtype: DType) -> Result<Array> {
        let axes = self.resolve_axes(name, &arg)?;
        let n = self.reduced_count(&axes);
        divide_by_count(&self.reduce_as(name, OpKind::Sum, arg, dtype)?, n as f64, dtype)
    }

    /// `np.var(self, axis, dtype=dtype, ddof=ddof)` as NumPy's `_var` computes it: the mean in
    /// `dtype` (keepdims); the deviations `self - mean` in `result_type(self, dtype)`; their
    /// squares ([`squared_deviation`]) summed in `dtype`; divided by `max(count - ddof, 0)`.
    pub(crate) fn var_as(
        &self,
        name: &str,
        arg: AxisArg,
        ddof: usize,
        dtype: DType,
    ) -> Result<Array> {
        let axes = self.resolve_axes(name, &arg)?;
        if self.dtype().is_bool() && dtype.is_bool() {
            return Err(bool_subtract_err(name));
        }
        let n = self.reduced_count(&axes);
        let mean = self.mean_as(name, AxisArg { axes: arg.axes.clone(), keepdims: true }, dtype)?;
        let sq = squared_deviation(self.dtype(), &self.try_subtract(&mean)?)?;
        let s = sq.reduce_as(name, OpKind::Sum, arg, dtype)?;
        divide_by_count(&s, n.saturating_sub(ddof) as f64, dtype)
    }
}

/// The `dtype=` forms of a reduction or scan, NumPy's `dtype=` argument as a trailing
/// `dtype: impl Into<Option<DType>>`: `try_<name>(.., dtype)` is the plain form `$plain(..)` for
/// `None`, and `|x, dt| ..` (`x` the array, `dt` the dtype) for `Some(dt)`; `<name>` panics
/// where it errs. One definition for every `_dtype` form (`reduce.rs`, `nan.rs`, `scan.rs`).
macro_rules! dtype_forms {
    ($(
        $(#[$doc:meta])*
        $name:ident, $try_name:ident($($arg:ident: $ty:ty),*) => $plain:ident,
            |$x:ident, $dt:ident| $typed:expr;
    )*) => {
        impl Array {$(
            $(#[$doc])*
            pub fn $try_name(
                &self,
                $($arg: $ty,)*
                dtype: impl Into<Option<DType>>,
            ) -> Result<Array> {
                match dtype.into() {
                    None => self.$plain($($arg),*),
                    Some($dt) => {
                        let $x = self;
                        $typed
                    }
                }
            }

            #[doc = concat!("[`Array::", stringify!($try_name), "`], panicking where it errs.")]
            #[track_caller]
            pub fn $name(&self, $($arg: $ty,)* dtype: impl Into<Option<DType>>) -> Array {
                crate::unwrap(self.$try_name($($arg,)* dtype))
            }
        )*}
    };
}
pub(crate) use dtype_forms;

dtype_forms! {
    /// `np.sum(x, axis, keepdims, dtype=dtype)`: `x` cast to `dtype` (unsafe casting: floats
    /// truncate toward zero, complex drops its imaginary part), summed in `dtype`, a result of
    /// `dtype` (integers wrap: `int8` summed as `int8` wraps at 127; `bool` is `any`;
    /// `float16` with `dtype=float32` accumulates in float32). Shape: as [`Array::try_sum`]'s.
    /// `dtype` is a [`DType`] or `None` (NumPy's default: [`Array::try_sum`]).
    ///
    /// The form of NumPy's `dtype=` for every reduction that has one: `sum`, `prod`, `mean`,
    /// `var`, `std`, `cumsum`, `cumprod` and their `nan` forms each have `<name>_dtype`, the
    /// plain form's arguments and a trailing `dtype` (`x.var_dtype(axis, ddof, dt)`,
    /// `x.cumsum_dtype(Some(0), dt)`), and its `try_` twin. A method suffix rather than an
    /// options struct: the API passes NumPy's arguments positionally (`axis`, `ddof`), and
    /// `dtype` is the one argument these share; the plain forms and their callers stay as they
    /// are; and it is checked when compiling (`max`, `min`, `argmax`, `all`, which NumPy gives
    /// no `dtype=`, have no `_dtype` form, where an options struct shared with them, as
    /// [`AxisArg`] is, could only reject a `dtype` when run). One kernel: the casts fuse into
    /// the reduction's.
    ///
    /// Errors: an axis out of range or repeated (named `sum`).
    sum_dtype, try_sum_dtype(arg: impl Into<AxisArg>) => try_sum,
        |x, dt| x.reduce_as("sum", OpKind::Sum, arg.into(), dt);

    /// `np.prod(x, axis, keepdims, dtype=dtype)`: as [`Array::try_sum_dtype`], a product
    /// (`bool`: `all`). Errors: an axis out of range or repeated (named `prod`).
    prod_dtype, try_prod_dtype(arg: impl Into<AxisArg>) => try_prod,
        |x, dt| x.reduce_as("prod", OpKind::Prod, arg.into(), dt);

    /// `np.mean(x, axis, keepdims, dtype=dtype)`: the sum in `dtype` (as
    /// [`Array::try_sum_dtype`]) divided by the count, a result of `dtype`: `int32` with
    /// `dtype=float32` computes in float32; `float16` with `dtype=float16` rounds its sum to
    /// float16 (NumPy's default sums float16 in float32); an integer `dtype` truncates the
    /// quotient (`[1, 2, 4, 10]` gives `4`). The quotient is taken in float64 (complex128 for
    /// complex64), as NumPy divides by an `intp` count. An empty reduction: NaN for floats.
    /// `None`: [`Array::try_mean`].
    ///
    /// Errors: an axis out of range or repeated (named `mean`).
    mean_dtype, try_mean_dtype(arg: impl Into<AxisArg>) => try_mean,
        |x, dt| x.mean_as("mean", arg.into(), dt);

    /// `np.var(x, axis, dtype=dtype, ddof=ddof, keepdims)`, as NumPy's `_var`: the mean in
    /// `dtype` ([`Array::try_mean_dtype`]); the deviations `x - mean` in `result_type(x.dtype,
    /// dtype)` (`int32` with `dtype=float32`: float64), squared there (`|d|²` for complex `x`);
    /// their sum in `dtype`, divided by `max(count - ddof, 0)`. The result is `dtype`, complex
    /// too for a complex `dtype` (imaginary part zero); an integer `dtype` truncates the mean
    /// and the quotient. `None`: [`Array::try_var`].
    ///
    /// Errors: an axis out of range or repeated; a bool `x` with `dtype=bool` (NumPy: "numpy
    /// boolean subtract ... is not supported"), `IrError::UnsupportedDType` naming `var`.
    var_dtype, try_var_dtype(arg: impl Into<AxisArg>, ddof: usize) => try_var,
        |x, dt| x.var_as("var", arg.into(), ddof, dt);

    /// `np.std(x, axis, dtype=dtype, ddof=ddof, keepdims)`: the square root of
    /// [`Array::try_var_dtype`], of dtype `dtype`. An integer or bool `dtype` truncates the
    /// root (computed in NumPy's float loop for it) of a 0-d result (axis `None`, or every axis,
    /// without keepdims). `None`: [`Array::try_std`].
    ///
    /// Errors: as `var_dtype`, named `std`; an integer or bool `dtype` with a result of one
    /// axis or more (NumPy: "Cannot cast ufunc 'sqrt' output from float64 to int32 with
    /// casting rule 'same_kind'", its `sqrt(var, out=var)`), `IrError::UnsupportedDType`.
    std_dtype, try_std_dtype(arg: impl Into<AxisArg>, ddof: usize) => try_std,
        |x, dt| std_from_var("std", &x.var_as("std", arg.into(), ddof, dt)?, dt);
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
