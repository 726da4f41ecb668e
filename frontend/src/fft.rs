//! `kiln::fft`: NumPy's `np.fft` (CuPy's `cupy.fft`) discrete Fourier transforms, lazy.
//!
//! Every function takes the array, the transform lengths (`n` for the one-dimensional ones, `s`
//! for the others: the input is cropped or zero-padded to them along each axis), the axes, and
//! `norm`: `"backward"` (NumPy's default: no scaling forward, 1/n inverse), `"ortho"`
//! (1/sqrt(n) both ways) or `"forward"` (1/n forward), as a string or a [`FftNorm`].
//!
//! Dtypes as NumPy's: complex64 and complex128 keep their precision; float16, bfloat16 and
//! float32 give complex64; float64, integers and bools complex128. `irfft` gives the real dtype of
//! that precision (float16 and bfloat16 inputs give their own dtype back, computed in float32).
//! `rfft` of a complex array is an error.
//!
//! A transform over several axes is one IR node (`fft`, `rfft` or `irfft`): one cuFFT plan on the
//! GPU; `rustfft`/`realfft` on the host. Its consumers fuse after it as elementwise kernels.
//!
//! Errors: an axis out of bounds ([`IrError::AxisOutOfBounds`]), a repeated axis
//! ([`IrError::RepeatedAxis`]; NumPy transforms a repeated axis twice, kiln refuses), a length
//! below 1, `s` and `axes` of different lengths, an unknown norm ([`crate::Error::Value`]), and
//! `rfft` of complex input ([`IrError::UnsupportedDType`]).

use kiln_ir::shape::normalize_axis;
use kiln_ir::{Attrs, DType, IrError, OpKind};
use smallvec::SmallVec;

pub use kiln_ir::FftNorm;

use crate::array::Array;
use crate::error::{value_err, Result};
use crate::views::{try_concatenate, SliceArg};

/// The `norm` argument: a name (`"backward"`, `"ortho"`, `"forward"`) or an [`FftNorm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormArg<'a> {
    Name(&'a str),
    Norm(FftNorm),
}

impl<'a> From<&'a str> for NormArg<'a> {
    fn from(s: &'a str) -> NormArg<'a> {
        NormArg::Name(s)
    }
}

impl From<FftNorm> for NormArg<'_> {
    fn from(n: FftNorm) -> Self {
        NormArg::Norm(n)
    }
}

impl NormArg<'_> {
    fn resolve(self, op: &str) -> Result<FftNorm> {
        match self {
            NormArg::Norm(n) => Ok(n),
            NormArg::Name(s) => FftNorm::from_name(s).ok_or_else(|| {
                value_err(
                    op,
                    format!(
                        "Invalid norm value {s}; should be \"backward\",\"ortho\" or \"forward\"."
                    ),
                )
            }),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    C2C { inverse: bool },
    R2C,
    C2R,
}

/// The complex dtype a complex transform of `d` computes in (NumPy's).
fn complex_for(d: DType) -> DType {
    d.complex_dtype().unwrap_or(DType::Complex128)
}

/// `x` cropped or zero-padded to `len` along `axis`.
fn resize(op: &str, x: &Array, axis: usize, len: usize) -> Result<Array> {
    let cur = x.shape()[axis];
    if len == cur {
        return Ok(x.clone());
    }
    if len < cur {
        let mut idx = vec![SliceArg::FULL; x.ndim()];
        idx[axis] = SliceArg::Range { start: None, stop: Some(len as i64), step: 1 };
        return x.try_slice(&idx);
    }
    let mut pad: Vec<usize> = x.shape().to_vec();
    pad[axis] = len - cur;
    let zeros = crate::creation::zeros(&pad, x.dtype());
    try_concatenate(&[x, &zeros], axis as i64).map_err(|e| match e {
        crate::Error::Ir(IrError::AxisOutOfBounds { axis, rank, .. }) => {
            IrError::AxisOutOfBounds { op: op.into(), axis, rank }.into()
        }
        other => other,
    })
}

/// The transform `kind` of `a` over `axes` (NumPy's defaults when `None`) with lengths `s`.
fn transform(
    op: &str,
    a: &Array,
    s: Option<&[usize]>,
    axes: Option<&[i64]>,
    norm: NormArg,
    kind: Kind,
) -> Result<Array> {
    let rank = a.ndim() as i64;
    let axes: Vec<i64> = match (axes, s) {
        (Some(ax), _) => ax.to_vec(),
        (None, Some(s)) => (-(s.len() as i64)..0).collect(),
        (None, None) => (0..rank).collect(),
    };
    let mut norm_axes: Vec<usize> = Vec::with_capacity(axes.len());
    for &ax in &axes {
        let n = normalize_axis(op, ax, a.ndim())?;
        if norm_axes.contains(&n) {
            return Err(IrError::RepeatedAxis { op: op.into(), axis: ax }.into());
        }
        norm_axes.push(n);
    }
    let mut lengths: Vec<usize> = match s {
        Some(s) if s.len() != axes.len() => {
            return Err(value_err(op, "Shape and axes have different lengths."))
        }
        Some(s) => s.to_vec(),
        None => norm_axes.iter().map(|&ax| a.shape()[ax]).collect(),
    };
    if kind == Kind::C2R && s.is_none() {
        if let Some(last) = lengths.last_mut() {
            *last = 2 * last.saturating_sub(1);
        }
    }
    if let Some(&bad) = lengths.iter().find(|&&n| n < 1) {
        return Err(value_err(op, format!("Invalid number of FFT data points ({bad}) specified.")));
    }
    // The compute dtype.
    let dtype = match kind {
        Kind::C2C { .. } | Kind::C2R => complex_for(a.dtype()),
        Kind::R2C => match a.dtype() {
            d if d.is_complex() => {
                return Err(IrError::UnsupportedDType {
                    op: op.into(),
                    dtypes: vec![d],
                    accepted: "bool, int, uint, float".into(),
                }
                .into())
            }
            DType::Float64 => DType::Float64,
            d if d.is_float() => DType::Float32,
            _ => DType::Float64,
        },
    };
    if norm_axes.is_empty() {
        // NumPy 2: no axes, no transform: the input itself, dtype and all (`fftn(a, axes=()) is a`).
        return match kind {
            Kind::C2C { .. } => Ok(a.clone()),
            Kind::R2C | Kind::C2R => Err(value_err(op, "a real transform needs at least one axis")),
        };
    }
    // NumPy checks `norm` in the one-axis transforms: over no axes it is never looked at.
    let norm = norm.resolve(op)?;
    let mut x = a.cast_to(dtype);
    let last = norm_axes.len() - 1;
    for (i, (&ax, &len)) in norm_axes.iter().zip(&lengths).enumerate() {
        let want = if kind == Kind::C2R && i == last { len / 2 + 1 } else { len };
        x = resize(op, &x, ax, want)?;
    }
    let out = match kind {
        Kind::C2C { inverse } => {
            let mut sorted: SmallVec<[usize; 4]> = norm_axes.iter().copied().collect();
            sorted.sort_unstable();
            Array::apply(OpKind::Fft, Attrs::Fft { axes: sorted, inverse, norm }, &[&x])?
        }
        Kind::R2C | Kind::C2R => {
            let mut canon: SmallVec<[usize; 4]> = norm_axes[..last].iter().copied().collect();
            canon.sort_unstable();
            canon.push(norm_axes[last]);
            let op = if kind == Kind::R2C { OpKind::Rfft } else { OpKind::Irfft };
            Array::apply(op, Attrs::RealFft { axes: canon, n: lengths[last], norm }, &[&x])?
        }
    };
    // Inside a `set_cufft_callbacks` scope the transform runs now, with the callbacks.
    let out = match crate::fft_callbacks::current() {
        Some(callbacks) => crate::fft_callbacks::compute_with(op, &x, out, callbacks)?,
        None => out,
    };
    // irfft of float16/bfloat16 gives that dtype back, as NumPy.
    Ok(match (kind, a.dtype()) {
        (Kind::C2R, d @ (DType::Float16 | DType::BFloat16)) => out.cast_to(d),
        _ => out,
    })
}

fn one(n: Option<usize>) -> Option<[usize; 1]> {
    n.map(|n| [n])
}

macro_rules! one_dim {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $kind:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// `n`: the transform length along `axis` (the input is cropped or zero-padded to it;
        /// `None`: the input's extent). `axis` may be negative.
        pub fn $try_name<'a>(a: &Array, n: Option<usize>, axis: i64, norm: impl Into<NormArg<'a>>) -> Result<Array> {
            let s = one(n);
            transform(stringify!($name), a, s.as_ref().map(|s| &s[..]), Some(&[axis]), norm.into(), $kind)
        }

        #[doc = concat!("[`", stringify!($try_name), "`], panicking on error.")]
        #[track_caller]
        pub fn $name<'a>(a: &Array, n: Option<usize>, axis: i64, norm: impl Into<NormArg<'a>>) -> Array {
            crate::unwrap($try_name(a, n, axis, norm))
        }
    )*};
}

macro_rules! n_dim {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $kind:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// `s`: the transform length along each axis of `axes` (`None`: the input's extents);
        /// `axes`: `None` is every axis, or the last `s.len()` axes when `s` is given.
        pub fn $try_name<'a>(a: &Array, s: Option<&[usize]>, axes: Option<&[i64]>, norm: impl Into<NormArg<'a>>) -> Result<Array> {
            transform(stringify!($name), a, s, axes, norm.into(), $kind)
        }

        #[doc = concat!("[`", stringify!($try_name), "`], panicking on error.")]
        #[track_caller]
        pub fn $name<'a>(a: &Array, s: Option<&[usize]>, axes: Option<&[i64]>, norm: impl Into<NormArg<'a>>) -> Array {
            crate::unwrap($try_name(a, s, axes, norm))
        }
    )*};
}

macro_rules! two_dim {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $kind:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// `s`: the transform lengths along `axes` (`None`: the input's extents); NumPy's default
        /// axes are `&[-2, -1]`.
        pub fn $try_name<'a>(a: &Array, s: Option<&[usize]>, axes: &[i64], norm: impl Into<NormArg<'a>>) -> Result<Array> {
            transform(stringify!($name), a, s, Some(axes), norm.into(), $kind)
        }

        #[doc = concat!("[`", stringify!($try_name), "`], panicking on error.")]
        #[track_caller]
        pub fn $name<'a>(a: &Array, s: Option<&[usize]>, axes: &[i64], norm: impl Into<NormArg<'a>>) -> Array {
            crate::unwrap($try_name(a, s, axes, norm))
        }
    )*};
}

one_dim! {
    /// `np.fft.fft(a, n, axis, norm)`: the one-dimensional discrete Fourier transform,
    /// `X[k] = Σ_j x[j] exp(-2πi jk/n)`.
    fft, try_fft => Kind::C2C { inverse: false };
    /// `np.fft.ifft(a, n, axis, norm)`: the inverse of [`fft`], `x[j] = 1/n Σ_k X[k] exp(2πi jk/n)`
    /// with the default norm.
    ifft, try_ifft => Kind::C2C { inverse: true };
    /// `np.fft.rfft(a, n, axis, norm)`: [`fft`] of real input, keeping the n/2+1 non-negative
    /// frequency terms (the others are their conjugates).
    rfft, try_rfft => Kind::R2C;
    /// `np.fft.irfft(a, n, axis, norm)`: the inverse of [`rfft`]: n/2+1 terms (the input cropped or
    /// padded to that) give `n` real values; `n` defaults to 2*(m-1) for m input terms.
    irfft, try_irfft => Kind::C2R;
}

two_dim! {
    /// `np.fft.fft2(a, s, axes, norm)`: [`fftn`] over two axes.
    fft2, try_fft2 => Kind::C2C { inverse: false };
    /// `np.fft.ifft2(a, s, axes, norm)`: [`ifftn`] over two axes.
    ifft2, try_ifft2 => Kind::C2C { inverse: true };
    /// `np.fft.rfft2(a, s, axes, norm)`: [`rfftn`] over two axes.
    rfft2, try_rfft2 => Kind::R2C;
    /// `np.fft.irfft2(a, s, axes, norm)`: [`irfftn`] over two axes.
    irfft2, try_irfft2 => Kind::C2R;
}

n_dim! {
    /// `np.fft.fftn(a, s, axes, norm)`: the n-dimensional transform, [`fft`] along each axis.
    fftn, try_fftn => Kind::C2C { inverse: false };
    /// `np.fft.ifftn(a, s, axes, norm)`: the inverse of [`fftn`].
    ifftn, try_ifftn => Kind::C2C { inverse: true };
    /// `np.fft.rfftn(a, s, axes, norm)`: [`rfft`] along the last of `axes`, then [`fft`] along the
    /// others.
    rfftn, try_rfftn => Kind::R2C;
    /// `np.fft.irfftn(a, s, axes, norm)`: the inverse of [`rfftn`]: [`ifft`] along all but the last
    /// of `axes`, then [`irfft`] along it (its length `s[-1]`, by default 2*(m-1)).
    irfftn, try_irfftn => Kind::C2R;
}

/// `cupy.fft.config`: the cuFFT plan cache of the current CUDA device.
///
/// Each distinct transform layout (type, length, batch, strides) has a plan; plans are kept
/// per device, least recently used evicted beyond the size limit (16 by default, as CuPy).
/// Errors: the backend is the CPU ([`crate::backend`]; the host FFTs keep no such cache), a
/// driver or cuFFT failure.
pub mod config {
    pub use crate::fft_callbacks::{set_cufft_callbacks, CufftCallbacks, CufftCallbacksScope};
    /// kiln's own callbacks: an elementwise producer read only by an FFT (load), or an
    /// elementwise consumer that is the only reader of its output (store), runs inside cuFFT
    /// where measured faster (`fft_callback_decisions` lists what was measured and kept, and
    /// `kiln::explain`'s report shows each site with its decision; `set_fft_callback_mode`
    /// forces either way on this thread).
    pub use kiln_exec::cuda::{
        fft_callback_decisions, set_fft_callback_mode, FftCallbackDecision, FftCallbackMode,
        FftCallbackSide,
    };
    pub use kiln_runtime::fft::PlanCacheInfo;
    use kiln_runtime::{Backend, Device};

    use crate::error::{value_err, Result};

    fn on_device<T>(op: &str, f: impl FnOnce() -> kiln_runtime::Result<T>) -> Result<T> {
        let Backend::Cuda(ordinal) = crate::current_backend() else {
            return Err(value_err(
                op,
                "the backend is the CPU (no CUDA device, or KILN_DEVICE=cpu)",
            ));
        };
        let _current = Device::new(ordinal)?.use_scoped()?;
        Ok(f()?)
    }

    /// The plan cache's size, limit, hits and misses (`get_plan_cache()` and its `show_info`).
    pub fn get_plan_cache() -> Result<PlanCacheInfo> {
        on_device("get_plan_cache", kiln_runtime::fft::plan_cache_info)
    }

    /// Sets the most plans kept (`get_plan_cache().set_size(n)`); 0 turns caching off.
    pub fn set_plan_cache_size(limit: usize) -> Result<()> {
        on_device("set_plan_cache_size", || kiln_runtime::fft::set_plan_cache_size(limit))
    }

    /// Destroys the cached plans (`get_plan_cache().clear()`); hits and misses are kept.
    pub fn clear_plan_cache() -> Result<()> {
        on_device("clear_plan_cache", kiln_runtime::fft::clear_plan_cache)
    }
}

/// `np.fft.fftshift(x, axes)`: the zero frequency moved to the centre (a roll by `n / 2` along
/// each axis; `None`: every axis). Errors: an axis out of range.
pub fn fftshift(x: &Array, axes: Option<&[i64]>) -> Result<Array> {
    shift(x, axes, false)
}

/// `np.fft.ifftshift(x, axes)`: the inverse of [`fftshift`] (a roll by `-(n / 2)`).
pub fn ifftshift(x: &Array, axes: Option<&[i64]>) -> Result<Array> {
    shift(x, axes, true)
}

fn shift(x: &Array, axes: Option<&[i64]>, inverse: bool) -> Result<Array> {
    let all: Vec<i64> = (0..x.ndim() as i64).collect();
    let mut y = x.clone();
    for &a in axes.unwrap_or(&all) {
        let k = normalize_axis(if inverse { "ifftshift" } else { "fftshift" }, a, x.ndim())?;
        let half = (x.shape()[k] / 2) as i64;
        y = y.try_roll(if inverse { -half } else { half }, Some(k as i64))?;
    }
    Ok(y)
}

/// `np.fft.fftfreq(n, d)`: the sample frequencies of an `n`-point transform with sample
/// spacing `d` (float64: `[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d n)`).
pub fn fftfreq(n: usize, d: f64) -> Array {
    let v: Vec<f64> =
        (0..n).map(|i| if i < n.div_ceil(2) { i as f64 } else { i as f64 - n as f64 }).collect();
    &Array::from_vec(v, &[n]) * (1.0 / (d * n as f64))
}

/// `np.fft.rfftfreq(n, d)`: the non-negative frequencies `[0, 1, ..., n/2] / (d n)` of an
/// `n`-point real transform.
pub fn rfftfreq(n: usize, d: f64) -> Array {
    let v: Vec<f64> = (0..=n / 2).map(|i| i as f64).collect();
    &Array::from_vec(v, &[n / 2 + 1]) * (1.0 / (d * n as f64))
}
