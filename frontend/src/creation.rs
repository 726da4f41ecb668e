//! Array creation: from data, and lazily from constants and index ramps (`zeros`, `arange`, ...
//! take no memory until used).

use kiln_ir::{Attrs, DType, HostArray, HostElement, Literal, OpKind, Shape, WeakScalar};
use smallvec::SmallVec;

use crate::array::Array;
use crate::elementwise::{scalar_literal, Operand};
use crate::error::{value_err, Result};

/// Host data as the backend reads it best: on the CPU backend (`KILN_HOST_HUGE_PAGES`, on by
/// default) data of [`kiln_ir::huge_pages::LARGE`] bytes or more copied once into a buffer on
/// transparent huge pages, as NumPy places its large arrays; host kernels then read it with a
/// TLB entry per 2 MiB (a k-means iteration over 64 MiB of points: 8-10% faster on the dev
/// machine). On a CUDA device the data is uploaded as it is.
pub(crate) fn placed(h: HostArray) -> HostArray {
    if !on_huge_pages(h.len() * h.dtype().itemsize()) {
        return h;
    }
    HostArray::new(h.shape(), kiln_ir::huge_pages::copy_of(h.data())).unwrap_or(h)
}

/// Whether host data of `bytes` goes on transparent huge pages (see [`placed`]).
fn on_huge_pages(bytes: usize) -> bool {
    bytes >= kiln_ir::huge_pages::LARGE
        && kiln_cache::config().host_huge_pages
        && matches!(crate::backend(), kiln_runtime::Backend::Cpu)
}

impl Array {
    /// An array of `shape` holding `data` in C order (`np.array(data).reshape(shape)`). On the
    /// CPU backend, data of 8 MiB or more is copied into a buffer on transparent huge pages
    /// (see [`placed`]); otherwise the vector is the array's buffer.
    ///
    /// Errors: `data.len()` is not the product of `shape`.
    pub fn try_from_vec<T: HostElement>(data: Vec<T>, shape: &[usize]) -> Result<Array> {
        let h = HostArray::from_vec(shape, data)?;
        Ok(Array::from_host(placed(h)))
    }

    /// An array of `shape` holding `data` in C order. Panics if the sizes disagree.
    #[track_caller]
    pub fn from_vec<T: HostElement>(data: Vec<T>, shape: &[usize]) -> Array {
        crate::unwrap(Array::try_from_vec(data, shape))
    }

    /// A copy of `data` as an array of `shape` (one copy: on the CPU backend, data of 8 MiB or
    /// more straight onto transparent huge pages, see [`placed`]). Panics if the sizes
    /// disagree.
    #[track_caller]
    pub fn from_slice<T: HostElement>(data: &[T], shape: &[usize]) -> Array {
        if !on_huge_pages(std::mem::size_of_val(data)) {
            return Array::from_vec(data.to_vec(), shape);
        }
        let h = HostArray::from_vec(shape, kiln_ir::huge_pages::copy_slice(data));
        crate::unwrap(h.map(Array::from_host).map_err(Into::into))
    }

    /// A 1-D array of `data`.
    pub fn from_vec1<T: HostElement>(data: Vec<T>) -> Array {
        let n = data.len();
        Array::from_vec(data, &[n])
    }

    /// A copy of an `ndarray` array (any layout) with its shape.
    pub fn from_ndarray<T: HostElement, S, D>(a: &ndarray::ArrayBase<S, D>) -> Array
    where
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        let shape: Vec<usize> = a.shape().to_vec();
        Array::from_vec(a.iter().copied().collect(), &shape)
    }

    /// A rank-0 array holding a Rust scalar, with the scalar's default dtype (int64, float64,
    /// complex128, bool).
    pub fn scalar(value: impl Into<Operand>) -> Array {
        match value.into() {
            Operand::Array(a) => a,
            Operand::Scalar(s) => {
                let d = s.default_dtype();
                Array::literal(d, scalar_literal(d, s))
            }
        }
    }
}

/// `np.full(shape, value, dtype)`: lazy (a constant broadcast to `shape`).
///
/// Errors: an integer `value` out of the range of an integer `dtype` (NumPy's OverflowError).
pub fn try_full(shape: &[usize], value: impl Into<Operand>, dtype: DType) -> Result<Array> {
    kiln_ir::shape::check_size("full", shape, dtype.itemsize())?;
    let lit = match value.into() {
        Operand::Scalar(s) => {
            if let (WeakScalar::Int(_), true) = (s, dtype.is_integer()) {
                kiln_ir::result_type_weak("full", dtype, s)?;
            }
            scalar_literal(dtype, s)
        }
        Operand::Array(a) => {
            return a.astype(dtype).try_broadcast_to(shape).map_err(|e| e.within("full"))
        }
    };
    Array::literal(dtype, lit).broadcast_to_shape(shape)
}

/// `np.full(shape, value, dtype)`. Panics where [`try_full`] errs.
#[track_caller]
pub fn full(shape: &[usize], value: impl Into<Operand>, dtype: DType) -> Array {
    crate::unwrap(try_full(shape, value, dtype))
}

/// `np.zeros(shape, dtype)`.
pub fn zeros(shape: &[usize], dtype: DType) -> Array {
    full(shape, 0i64, dtype)
}

/// `np.ones(shape, dtype)`.
pub fn ones(shape: &[usize], dtype: DType) -> Array {
    full(shape, 1i64, dtype)
}

/// `np.zeros_like(a)`.
pub fn zeros_like(a: &Array) -> Array {
    zeros(a.shape(), a.dtype())
}

/// `np.ones_like(a)`.
pub fn ones_like(a: &Array) -> Array {
    ones(a.shape(), a.dtype())
}

/// `np.full_like(a, value)`.
pub fn full_like(a: &Array, value: impl Into<Operand>) -> Array {
    full(a.shape(), value, a.dtype())
}

/// The index ramp 0, 1, ..., n-1 along `axis` of `shape`, of `dtype`.
pub(crate) fn iota(dtype: DType, shape: &[usize], axis: usize) -> Array {
    Array::node(OpKind::Iota, Attrs::Iota { axis }, SmallVec::new(), dtype, Shape::from(shape))
}

/// `np.arange(stop)`: int64 values 0, 1, ..., stop-1 (empty when stop <= 0).
pub fn arange(stop: i64) -> Array {
    iota(DType::Int64, &[stop.max(0) as usize], 0)
}

/// `np.arange(start, stop, step)`: values `start + i*step` while below `stop` (above, for a
/// negative step). The dtype is int64 when all three are integers, else float64, as NumPy's
/// default. Errors: `step == 0`.
pub fn try_arange_step(
    start: impl Into<Operand>,
    stop: impl Into<Operand>,
    step: impl Into<Operand>,
) -> Result<Array> {
    let as_weak = |o: Operand| match o {
        Operand::Scalar(s) => Ok(s),
        Operand::Array(_) => Err(value_err("arange", "start, stop and step are scalars")),
    };
    let (a, b, s) = (as_weak(start.into())?, as_weak(stop.into())?, as_weak(step.into())?);
    let num = |w: WeakScalar| match w {
        WeakScalar::Bool(v) => v as u8 as f64,
        WeakScalar::Int(v) => v as f64,
        WeakScalar::Float(v) => v,
        WeakScalar::Complex(z) => z.re,
    };
    let all_int = [a, b, s].iter().all(|w| matches!(w, WeakScalar::Int(_) | WeakScalar::Bool(_)));
    let dtype = if all_int { DType::Int64 } else { DType::Float64 };
    let (fa, fb, fs) = (num(a), num(b), num(s));
    if fs == 0.0 {
        return Err(value_err("arange", "Maximum allowed size exceeded (step is zero)"));
    }
    let len = ((fb - fa) / fs).ceil();
    if len.is_nan() {
        return Err(value_err("arange", "cannot compute length (a NaN start, stop or step)"));
    }
    if len.is_infinite() && len > 0.0 {
        return Err(value_err("arange", "Maximum allowed size exceeded (an infinite length)"));
    }
    // Saturating: a length past usize is usize::MAX, refused as too big.
    let n = len.max(0.0) as usize;
    kiln_ir::shape::check_size("arange", &[n], dtype.itemsize())?;
    let i = iota(dtype, &[n], 0);
    // NumPy fills start + i*delta with delta = (start + step) - start.
    let start_lit = scalar_literal(dtype, a);
    let delta = if all_int {
        Literal::from_f64(dtype, fs)
    } else {
        Literal::from_f64(dtype, (fa + fs) - fa)
    };
    let d = Array::literal(dtype, delta);
    let st = Array::literal(dtype, start_lit);
    i.try_multiply(&d)?.try_add(&st)
}

/// `np.arange(start, stop, step)`. Panics where [`try_arange_step`] errs.
#[track_caller]
pub fn arange_step(
    start: impl Into<Operand>,
    stop: impl Into<Operand>,
    step: impl Into<Operand>,
) -> Array {
    crate::unwrap(try_arange_step(start, stop, step))
}

/// `np.linspace(start, stop, num)`: `num` evenly spaced float64 values from `start` to `stop`
/// inclusive (NumPy's formula: `start + i*step`, the last value set to `stop`).
pub fn linspace(start: f64, stop: f64, num: usize) -> Array {
    let div = num.saturating_sub(1).max(1) as f64;
    let step = (stop - start) / div;
    let i = iota(DType::Float64, &[num], 0);
    let y = &(&i * step) + start;
    if num > 1 {
        crate::elementwise::where_(i.equal((num - 1) as f64), stop, y)
    } else {
        y
    }
}

/// `np.linspace(start, stop, num, endpoint, dtype)`: with `endpoint` false the values stop one
/// step short of `stop` (step `(stop - start) / num`); computed in float64, then converted to
/// `dtype` (integers by flooring, as NumPy 2 does).
pub fn linspace_with(start: f64, stop: f64, num: usize, endpoint: bool, dtype: DType) -> Array {
    let y = if endpoint {
        linspace(start, stop, num)
    } else {
        let step = (stop - start) / num.max(1) as f64;
        &(&iota(DType::Float64, &[num], 0) * step) + start
    };
    if dtype.is_integer() {
        y.floor().astype(dtype)
    } else {
        y.astype(dtype)
    }
}

/// `np.empty(shape, dtype)`. kiln's arrays are values, never uninitialised memory: this is
/// [`zeros`] (NumPy leaves the contents arbitrary, so zeros are one of its possible results).
pub fn empty(shape: &[usize], dtype: DType) -> Array {
    zeros(shape, dtype)
}

/// `np.empty_like(a)`: [`empty`] of `a`'s shape and dtype.
pub fn empty_like(a: &Array) -> Array {
    zeros(a.shape(), a.dtype())
}

/// `np.logspace(start, stop, num, base=base)`: `base ** linspace(start, stop, num)` (float64).
pub fn logspace(start: f64, stop: f64, num: usize, base: f64) -> Array {
    crate::full(&[], base, DType::Float64).power(linspace(start, stop, num))
}

/// `np.geomspace(start, stop, num)`: `num` float64 values in geometric progression from
/// `start` to `stop` (both kept exactly, as NumPy keeps them), by `exp` of evenly spaced logs;
/// negative `start` and `stop` give the negated progression of their magnitudes.
///
/// Errors: `start` or `stop` zero, or of different signs (NumPy's "Geometric sequence cannot
/// include zero" and its complex result, which kiln does not give).
pub fn try_geomspace(start: f64, stop: f64, num: usize) -> crate::error::Result<Array> {
    if start == 0.0 || stop == 0.0 {
        return Err(crate::error::value_err("geomspace", "Geometric sequence cannot include zero"));
    }
    if start.signum() != stop.signum() {
        return Err(crate::error::value_err(
            "geomspace",
            format!("start {start} and stop {stop} of different signs (a complex sequence)"),
        ));
    }
    let sign = start.signum();
    let y = linspace(start.abs().log10(), stop.abs().log10(), num);
    let y = crate::full(&[], 10.0, DType::Float64).power(&y);
    let i = iota(DType::Float64, &[num], 0);
    let y = crate::elementwise::where_(i.equal(0.0), start.abs(), y);
    let y = if num > 1 {
        crate::elementwise::where_(i.equal((num - 1) as f64), stop.abs(), y)
    } else {
        y
    };
    Ok(&y * sign)
}

/// `np.geomspace`. Panics where [`try_geomspace`] errs.
#[track_caller]
pub fn geomspace(start: f64, stop: f64, num: usize) -> Array {
    crate::unwrap(try_geomspace(start, stop, num))
}

/// `np.eye(n, m, k, dtype)`: ones on the `k`-th diagonal of an `n`×`m` matrix.
pub fn eye(n: usize, m: Option<usize>, k: i64, dtype: DType) -> Array {
    let m = m.unwrap_or(n);
    let rows = iota(DType::Int64, &[n, m], 0);
    let cols = iota(DType::Int64, &[n, m], 1);
    (&rows + k).equal(&cols).astype(dtype)
}

/// `np.identity(n, dtype)`.
pub fn identity(n: usize, dtype: DType) -> Array {
    eye(n, None, 0, dtype)
}
