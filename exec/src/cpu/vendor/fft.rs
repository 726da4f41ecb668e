//! FFTs on the host through `rustfft` (complex transforms) and `realfft` (real ones).
//!
//! The operand is gathered through its strides into a C-contiguous working array (complex64
//! data, and float16/bfloat16/float32 real data, in f32; the rest in f64). Each axis is
//! transformed in turn: lanes along the last axis are transformed in place, in parallel chunks;
//! another axis is first moved last (a transposing copy) and moved back after. The real
//! transforms do their halved axis with `realfft` (first for rfft, last for irfft) and the others
//! as complex transforms. The norm's factor is applied once at the end. Plans are made by one
//! planner per precision, which keeps them for reuse.

use std::sync::{Mutex, OnceLock};

use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{HostArray, Layout};
use num_complex::Complex;
use rayon::prelude::*;
use realfft::RealFftPlanner;
use rustfft::{FftDirection, FftNum, FftPlanner};

use super::host::in_bounds;
use crate::ExecError;
use kiln_compiler::vendor::{FftCall, FftKind};

/// About this many elements per parallel task.
const CHUNK: usize = 1 << 15;

/// A float precision the FFT libraries compute in.
trait Real: FftNum + Default {
    fn planner() -> &'static Mutex<FftPlanner<Self>>;
    fn real_planner() -> &'static Mutex<RealFftPlanner<Self>>;
    fn complex_data(v: Vec<Complex<Self>>) -> Data;
    fn real_data(v: Vec<Self>) -> Data;
    fn of_f64(x: f64) -> Self;
}

macro_rules! real {
    ($t:ty, $c:ident, $r:ident) => {
        impl Real for $t {
            fn planner() -> &'static Mutex<FftPlanner<$t>> {
                static P: OnceLock<Mutex<FftPlanner<$t>>> = OnceLock::new();
                P.get_or_init(|| Mutex::new(FftPlanner::new()))
            }
            fn real_planner() -> &'static Mutex<RealFftPlanner<$t>> {
                static P: OnceLock<Mutex<RealFftPlanner<$t>>> = OnceLock::new();
                P.get_or_init(|| Mutex::new(RealFftPlanner::new()))
            }
            fn complex_data(v: Vec<Complex<$t>>) -> Data {
                Data::$c(v)
            }
            fn real_data(v: Vec<$t>) -> Data {
                Data::$r(v)
            }
            fn of_f64(x: f64) -> $t {
                x as $t
            }
        }
    };
}
real!(f32, Complex64, Float32);
real!(f64, Complex128, Float64);

/// Computes `call` on the input `x` (the buffer its operand indexes).
pub fn fft(call: &FftCall, x: &HostArray) -> Result<HostArray, ExecError> {
    in_bounds(&call.input.layout, x.len())?;
    let l = &call.input.layout;
    let mismatch =
        || ExecError::InvalidInput(format!("{:?} of a {} operand", call.kind, x.dtype()));
    let data = match (call.kind, x.data()) {
        (FftKind::C2C { .. } | FftKind::C2R { .. }, Data::Complex64(v)) => {
            run(call, Input::Complex(gather(v, l, |z| z)))
        }
        (FftKind::C2C { .. } | FftKind::C2R { .. }, Data::Complex128(v)) => {
            run(call, Input::Complex(gather(v, l, |z| z)))
        }
        (FftKind::R2C { .. }, Data::Float16(v)) => {
            run::<f32>(call, Input::Real(gather(v, l, |h| h.to_f32())))
        }
        (FftKind::R2C { .. }, Data::BFloat16(v)) => {
            run::<f32>(call, Input::Real(gather(v, l, |h| h.to_f32())))
        }
        (FftKind::R2C { .. }, Data::Float32(v)) => run(call, Input::Real(gather(v, l, |r| r))),
        (FftKind::R2C { .. }, Data::Float64(v)) => run(call, Input::Real(gather(v, l, |r| r))),
        _ => return Err(mismatch()),
    }?;
    if data.dtype() != call.out_dtype {
        return Err(mismatch());
    }
    Ok(HostArray::new(&call.out_shape, data)?)
}

/// The elements `layout` addresses in `src`, in C order, converted by `f`.
fn gather<U: Copy, V>(src: &[U], layout: &Layout, f: impl Fn(U) -> V) -> Vec<V> {
    let n = layout.numel();
    if n == 0 {
        return Vec::new();
    }
    if layout.is_c_contiguous() {
        let start = layout.offset as usize;
        return src[start..start + n].iter().map(|&x| f(x)).collect();
    }
    let mut out = Vec::with_capacity(n);
    let rank = layout.rank();
    // Rows along the last axis, then an odometer over the others.
    let (len, step) = (layout.shape[rank - 1], layout.strides[rank - 1]);
    let mut idx = vec![0usize; rank - 1];
    let mut pos = layout.offset;
    'all: loop {
        out.extend((0..len as isize).map(|j| f(src[(pos + j * step) as usize])));
        let mut k = rank - 1;
        loop {
            if k == 0 {
                break 'all;
            }
            k -= 1;
            idx[k] += 1;
            pos += layout.strides[k];
            if idx[k] < layout.shape[k] {
                break;
            }
            pos -= layout.strides[k] * layout.shape[k] as isize;
            idx[k] = 0;
        }
    }
    out
}

enum Input<T> {
    Real(Vec<T>),
    Complex(Vec<Complex<T>>),
}

fn run<T: Real>(call: &FftCall, input: Input<T>) -> Result<Data, ExecError> {
    let mut shape: Vec<usize> = call.input.layout.shape.to_vec();
    let (last, others) = call.axes.split_last().expect("an FFT has axes");
    let lengths: usize = call.axes.iter().map(|&a| shape[a]).product();
    let out = match (call.kind, input) {
        (FftKind::C2C { inverse }, Input::Complex(mut v)) => {
            for &axis in call.axes.iter() {
                c2c_axis(&mut v, &shape, axis, inverse);
            }
            scale(&mut v, call.norm.scale(inverse, lengths));
            T::complex_data(v)
        }
        (FftKind::R2C { n }, Input::Real(v)) => {
            let (mut v, half_shape) = r2c_axis(v, &shape, *last, n)?;
            shape = half_shape;
            for &axis in others {
                c2c_axis(&mut v, &shape, axis, false);
            }
            scale(&mut v, call.norm.scale(false, lengths));
            T::complex_data(v)
        }
        (FftKind::C2R { n }, Input::Complex(mut v)) => {
            for &axis in others {
                c2c_axis(&mut v, &shape, axis, true);
            }
            let mut r = c2r_axis(v, &shape, *last, n)?;
            let len = lengths / shape[*last] * n;
            let s = call.norm.scale(true, len);
            if s != 1.0 {
                let s = T::of_f64(s);
                r.par_iter_mut().for_each(|x| *x = *x * s);
            }
            T::real_data(r)
        }
        _ => {
            return Err(ExecError::InvalidInput(format!(
                "{:?}: operand of the wrong kind",
                call.kind
            )))
        }
    };
    Ok(out)
}

fn scale<T: Real>(v: &mut [Complex<T>], s: f64) {
    if s != 1.0 {
        let s = T::of_f64(s);
        v.par_iter_mut().for_each(|z| *z = *z * s);
    }
}

/// `(outer, n, inner)`, the extents before, of and after `axis`.
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (numel(&shape[..axis]), shape[axis], numel(&shape[axis + 1..]))
}

/// Moves axis `axis` (extents `(outer, n, inner)`) to the end: `(outer, inner, n)`.
fn move_last<U: Copy + Send + Sync + Default>(
    v: &[U],
    (outer, n, inner): (usize, usize, usize),
) -> Vec<U> {
    let mut out = vec![U::default(); v.len()];
    if v.is_empty() {
        return out;
    }
    out.par_chunks_mut(n * inner).zip(v.par_chunks(n * inner)).take(outer).for_each(
        |(dst, src)| {
            for j in 0..n {
                for i in 0..inner {
                    dst[i * n + j] = src[j * inner + i];
                }
            }
        },
    );
    out
}

/// The inverse of [`move_last`]: `(outer, inner, n)` back to `(outer, n, inner)`.
fn move_back<U: Copy + Send + Sync + Default>(
    v: &[U],
    (outer, n, inner): (usize, usize, usize),
) -> Vec<U> {
    let mut out = vec![U::default(); v.len()];
    if v.is_empty() {
        return out;
    }
    out.par_chunks_mut(n * inner).zip(v.par_chunks(n * inner)).take(outer).for_each(
        |(dst, src)| {
            for i in 0..inner {
                for j in 0..n {
                    dst[j * inner + i] = src[i * n + j];
                }
            }
        },
    );
    out
}

/// The complex transform along `axis` of every lane of `v` (C order, `shape`), in place.
fn c2c_axis<T: Real>(v: &mut Vec<Complex<T>>, shape: &[usize], axis: usize, inverse: bool) {
    let dims = split(shape, axis);
    let n = dims.1;
    if n <= 1 || v.is_empty() {
        return;
    }
    let dir = if inverse { FftDirection::Inverse } else { FftDirection::Forward };
    let plan = T::planner().lock().expect("the FFT planner").plan_fft(n, dir);
    let lanes = |buf: &mut [Complex<T>]| {
        let per = (CHUNK / n).max(1) * n;
        buf.par_chunks_mut(per).for_each(|chunk| {
            let mut scratch = vec![Complex::default(); plan.get_inplace_scratch_len()];
            plan.process_with_scratch(chunk, &mut scratch);
        });
    };
    if dims.2 == 1 {
        lanes(v);
    } else {
        let mut moved = move_last(v, dims);
        lanes(&mut moved);
        *v = move_back(&moved, dims);
    }
}

fn library_err(call: &str, e: impl std::fmt::Display) -> ExecError {
    ExecError::Library { call: call.into(), message: e.to_string() }
}

/// The real-to-complex transform along `axis` (of length `n`): the complex result, whose `axis`
/// has n/2+1 terms, and its shape.
fn r2c_axis<T: Real>(
    v: Vec<T>,
    shape: &[usize],
    axis: usize,
    n: usize,
) -> Result<(Vec<Complex<T>>, Vec<usize>), ExecError> {
    let dims = split(shape, axis);
    let h = n / 2 + 1;
    let mut out_shape = shape.to_vec();
    out_shape[axis] = h;
    let lanes = dims.0 * dims.2;
    let mut real = if dims.2 == 1 { v } else { move_last(&v, dims) };
    let mut spec = vec![Complex::default(); lanes * h];
    if lanes > 0 {
        let plan = T::real_planner().lock().expect("the FFT planner").plan_fft_forward(n);
        let per = (CHUNK / n).max(1);
        real.par_chunks_mut(per * n).zip(spec.par_chunks_mut(per * h)).try_for_each(
            |(src, dst)| {
                let mut scratch = plan.make_scratch_vec();
                for (x, y) in src.chunks_mut(n).zip(dst.chunks_mut(h)) {
                    plan.process_with_scratch(x, y, &mut scratch)
                        .map_err(|e| library_err("realfft r2c", e))?;
                }
                Ok::<(), ExecError>(())
            },
        )?;
    }
    let spec = if dims.2 == 1 { spec } else { move_back(&spec, (dims.0, h, dims.2)) };
    Ok((spec, out_shape))
}

/// The complex-to-real transform along `axis` (n/2+1 terms in `shape`) giving `n` real values.
/// The imaginary parts of the terms that must be real (the first, and the last for even `n`)
/// are ignored, as NumPy does.
fn c2r_axis<T: Real>(
    v: Vec<Complex<T>>,
    shape: &[usize],
    axis: usize,
    n: usize,
) -> Result<Vec<T>, ExecError> {
    let dims = split(shape, axis);
    let h = dims.1;
    debug_assert_eq!(h, n / 2 + 1);
    let lanes = dims.0 * dims.2;
    let mut spec = if dims.2 == 1 { v } else { move_last(&v, dims) };
    let mut real = vec![T::default(); lanes * n];
    if lanes > 0 {
        let plan = T::real_planner().lock().expect("the FFT planner").plan_fft_inverse(n);
        let per = (CHUNK / n).max(1);
        spec.par_chunks_mut(per * h).zip(real.par_chunks_mut(per * n)).try_for_each(
            |(src, dst)| {
                let mut scratch = plan.make_scratch_vec();
                for (x, y) in src.chunks_mut(h).zip(dst.chunks_mut(n)) {
                    x[0].im = T::default();
                    if n.is_multiple_of(2) {
                        x[h - 1].im = T::default();
                    }
                    plan.process_with_scratch(x, y, &mut scratch)
                        .map_err(|e| library_err("realfft c2r", e))?;
                }
                Ok::<(), ExecError>(())
            },
        )?;
    }
    Ok(if dims.2 == 1 { real } else { move_back(&real, (dims.0, n, dims.2)) })
}
