//! Searching sorted arrays and counting into bins: `np.searchsorted`, `np.digitize`,
//! `np.histogram`, and torch's `topk`. All are compositions of kiln's ops, so they stay lazy
//! and fuse: a search counts, per value, the sorted elements before it (a comparison broadcast
//! over both and summed: O(n·m) work, meant for bins and other short sorted arrays: no binary
//! search kernel yet); a histogram computes each element's bin as NumPy does and adds ones into
//! the bins (a scatter); `topk` selects (an `argtopk` node) and gathers.

use kiln_ir::host::Data;
use kiln_ir::{Attrs, DType, OpKind};

use crate::error::{value_err, Result};
use crate::{Array, SliceArg};

/// Which end of a run of equal elements [`try_searchsorted`] returns (NumPy's `side`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The first position where the value could go (`"left"`).
    Left,
    /// The last (`"right"`).
    Right,
}

/// `np.searchsorted(sorted, v, side)`: for each element of `v`, the position in the 1-D
/// ascending `sorted` (NumPy's order: NaN last) where it would be inserted to keep the order;
/// int64 of `v`'s shape. Not checked: that `sorted` is sorted (NumPy does not check either).
///
/// Errors: `sorted` not 1-D; dtypes without a common comparison.
pub fn try_searchsorted(sorted: &Array, v: &Array, side: Side) -> Result<Array> {
    if sorted.ndim() != 1 {
        return Err(value_err(
            "searchsorted",
            format!("the sorted array must be 1-D, got shape {:?}", sorted.shape()),
        ));
    }
    if sorted.dtype().is_complex() || v.dtype().is_complex() {
        return Err(value_err("searchsorted", "complex arrays are not searched yet"));
    }
    let mut vshape: Vec<i64> = v.shape().iter().map(|&e| e as i64).collect();
    vshape.push(1);
    let vv = v.try_reshape(&vshape)?;
    // In NumPy's order NaN is above every number and equal to NaN.
    let before = match side {
        Side::Left => {
            let lt = sorted.try_less(&vv)?;
            if sorted.dtype().is_inexact() || v.dtype().is_inexact() {
                lt.try_logical_or(
                    sorted.try_isnan()?.try_logical_not()?.try_logical_and(vv.try_isnan()?)?,
                )?
            } else {
                lt
            }
        }
        Side::Right => {
            let le = sorted.try_less_equal(&vv)?;
            if v.dtype().is_inexact() {
                le.try_logical_or(vv.try_isnan()?)?
            } else {
                le
            }
        }
    };
    before.try_sum(-1i64)
}

/// [`try_searchsorted`], panicking on error.
#[track_caller]
pub fn searchsorted(sorted: &Array, v: &Array, side: Side) -> Array {
    crate::unwrap(try_searchsorted(sorted, v, side))
}

/// `np.digitize(x, bins, right)`: the index of the bin of each element for increasing `bins`
/// (`bins[i-1] <= x < bins[i]`, or `bins[i-1] < x <= bins[i]` with `right`; 0 below the first
/// edge, `len(bins)` above the last), and for decreasing `bins` NumPy's mirror of it
/// (`len(bins) - searchsorted(bins[::-1], x)`). int64 of `x`'s shape.
///
/// Bins held in host memory are checked as NumPy checks them (their values as float64): bins
/// neither increasing nor decreasing are an error, and the direction is NumPy's. Bins that are
/// lazy or held only on the device are not read back (no synchronisation): as CuPy's
/// `digitize`, their order is not checked and their direction is read from their ends
/// (increasing where `bins[0] <= bins[-1]`, or the last is NaN and the first is not), inside
/// the kernel; bins that are not monotonic give CuPy's (meaningless) counts, not an error.
///
/// Errors: `bins` not 1-D, complex `x` or `bins`, host bins not monotonic (NumPy's
/// "bins must be monotonically increasing or decreasing"), dtypes without a common comparison.
pub fn try_digitize(x: &Array, bins: &Array, right: bool) -> Result<Array> {
    digitize_of(x, bins, right).map_err(|e| e.within("digitize"))
}

/// [`try_digitize`]'s steps (errors of the ops it is made of name them).
fn digitize_of(x: &Array, bins: &Array, right: bool) -> Result<Array> {
    let op = "digitize";
    if bins.ndim() != 1 {
        return Err(value_err(op, format!("bins must be 1-D, got shape {:?}", bins.shape())));
    }
    if x.dtype().is_complex() || bins.dtype().is_complex() {
        return Err(value_err(op, "complex arrays are not binned (NumPy: x may not be complex)"));
    }
    // The arguments are swapped, so the side is too.
    let side = if right { Side::Left } else { Side::Right };
    let n = bins.size() as i64;
    let increasing = || try_searchsorted(bins, x, side);
    let decreasing = || {
        let below = try_searchsorted(&bins.try_flip(None)?, x, side)?;
        crate::elementwise::binary(OpKind::Sub, n.into(), below.into())
    };
    match bins.value().map(|h| monotonicity(h.data())) {
        Some(Monotonic::Increasing) => increasing(),
        Some(Monotonic::Decreasing) => decreasing(),
        Some(Monotonic::Neither) => {
            Err(value_err(op, "bins must be monotonically increasing or decreasing"))
        }
        None if n < 2 => increasing(),
        None => {
            // CuPy's test of the direction, on the ends of the bins.
            let end = |i| bins.try_slice(&[SliceArg::Index(i)]);
            let (first, last) = (end(0)?, end(-1)?);
            let inc = first.try_less_equal(&last)?.try_logical_or(
                &first.try_isnan()?.try_logical_not()?.try_logical_and(&last.try_isnan()?)?,
            )?;
            crate::try_where_(&inc, &increasing()?, &decreasing()?)
        }
    }
}

/// The order of a bins vector, as NumPy's `_monotonicity` finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Monotonic {
    Increasing,
    Decreasing,
    Neither,
}

/// NumPy's `check_array_monotonic` on the values as float64: leading repeats skipped (all
/// equal, or none, is increasing); then the first differing pair picks the direction (a pair
/// with NaN, whose `<` is false, picks decreasing) and no later pair may go the other way.
fn monotonicity(bins: &Data) -> Monotonic {
    let v: Vec<f64> = match bins {
        Data::Bool(v) => v.iter().map(|&x| x as u8 as f64).collect(),
        Data::Int8(v) => v.iter().map(|&x| x as f64).collect(),
        Data::Int16(v) => v.iter().map(|&x| x as f64).collect(),
        Data::Int32(v) => v.iter().map(|&x| x as f64).collect(),
        Data::Int64(v) => v.iter().map(|&x| x as f64).collect(),
        Data::UInt8(v) => v.iter().map(|&x| x as f64).collect(),
        Data::UInt16(v) => v.iter().map(|&x| x as f64).collect(),
        Data::UInt32(v) => v.iter().map(|&x| x as f64).collect(),
        Data::UInt64(v) => v.iter().map(|&x| x as f64).collect(),
        Data::Float16(v) => v.iter().map(|x| x.to_f64()).collect(),
        Data::BFloat16(v) => v.iter().map(|x| x.to_f64()).collect(),
        Data::Float32(v) => v.iter().map(|&x| x as f64).collect(),
        Data::Float64(v) => v.clone(),
        // Refused before (complex bins are not binned); NumPy drops the imaginary part.
        Data::Complex64(v) => v.iter().map(|x| x.re as f64).collect(),
        Data::Complex128(v) => v.iter().map(|x| x.re).collect(),
    };
    let Some(&first) = v.first() else { return Monotonic::Increasing };
    let Some(i) = v.iter().position(|&x| x != first) else { return Monotonic::Increasing };
    let pairs = || v[i..].windows(2);
    if first < v[i] {
        if pairs().any(|w| w[0] > w[1]) {
            return Monotonic::Neither;
        }
        Monotonic::Increasing
    } else if pairs().any(|w| w[0] < w[1]) {
        Monotonic::Neither
    } else {
        Monotonic::Decreasing
    }
}

/// [`try_digitize`], panicking on error.
#[track_caller]
pub fn digitize(x: &Array, bins: &Array, right: bool) -> Array {
    crate::unwrap(try_digitize(x, bins, right))
}

/// `np.histogram(a, bins, range)`: the counts of `a`'s elements (flattened) in `bins` equal
/// bins over `range` (default: `a`'s minimum and maximum; equal ones widened by 0.5 each
/// way), the last bin closed; values outside the range and NaN are not counted. Returns
/// (counts int64 `(bins,)`, edges `(bins+1,)` of `a`'s float dtype, float64 for integers). Each element's bin is NumPy's: its
/// offset times `bins / (hi - lo)` in `a`'s float dtype (float64 for integers), truncated,
/// then corrected by one against the edges.
///
/// Without `range` the minimum and maximum are read back: **one device-to-host
/// synchronisation** on a GPU. Errors: `bins` 0, a range with `lo > hi` or not finite, complex
/// `a`, an empty `a` without a range (NumPy's ValueError: its range is not finite).
pub fn try_histogram(a: &Array, bins: usize, range: Option<(f64, f64)>) -> Result<(Array, Array)> {
    let op = "histogram";
    if bins == 0 {
        return Err(value_err(op, "`bins` must be positive"));
    }
    if a.dtype().is_complex() {
        return Err(value_err(op, format!("complex input ({}) is not binned", a.dtype())));
    }
    let x = a.try_reshape(&[a.size() as i64])?;
    let (mut lo, mut hi) = match range {
        Some(r) => r,
        None if a.size() == 0 => (0.0, 1.0),
        None => {
            let (mn, mx) = (
                x.cast_to(DType::Float64).try_min(None)?,
                x.cast_to(DType::Float64).try_max(None)?,
            );
            crate::materialize::try_eval_all(&[&mn, &mx])?;
            (mn.try_item::<f64>()?, mx.try_item::<f64>()?)
        }
    };
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(value_err(op, format!("autodetected range of [{lo}, {hi}] is not finite")));
    }
    if lo > hi {
        return Err(value_err(op, "max must be larger than min in range parameter."));
    }
    if lo == hi {
        (lo, hi) = (lo - 0.5, hi + 0.5);
    }
    // Edges and the scale as NumPy computes them: from a's own minimum and maximum (float
    // scalars of a's dtype) in that dtype's arithmetic, from a given range in float64; edges
    // stored in a's float dtype (float64 for integers).
    let xf = if x.dtype().is_float() { x.clone() } else { x.cast_to(DType::Float64) };
    let dt = xf.dtype();
    let in_dt = range.is_none() && dt != DType::Float64;
    let r = |v: f64| if in_dt { kiln_ir::Literal::from_f64(dt, v).to_f64() } else { v };
    // The edges are a host vector of `bins + 1` float64: refused, not allocated, where no
    // memory can hold them.
    let too_big = || kiln_ir::IrError::TooBig { op: op.into(), shape: [bins].as_slice().into() };
    let n_edges = bins.checked_add(1).ok_or_else(too_big)?;
    kiln_ir::shape::check_size(op, &[n_edges], 8)?;
    if !kiln_ir::host::can_allocate(n_edges * 8) {
        return Err(too_big().into());
    }
    let step = r(r(hi - lo) / bins as f64);
    let mut e: Vec<f64> = (0..=bins).map(|i| r(r(i as f64 * step) + lo)).collect();
    e[bins] = hi;
    let edges = Array::from_vec(e, &[bins + 1]).cast_to(dt);
    let norm = r(bins as f64 / r(hi - lo));
    let keep = xf.try_greater_equal(lo)?.try_logical_and(xf.try_less_equal(hi)?)?;
    let f = xf.try_subtract(lo)?.try_multiply(norm)?;
    let i = f.try_clip(0.0, bins as f64)?.cast_to(DType::Int64);
    let i = crate::try_where_(i.try_equal(bins as i64)?, i.try_subtract(1i64)?, &i)?;
    let down = xf.try_less(edges.try_take(&i, None)?)?;
    let i = crate::try_where_(&down, i.try_subtract(1i64)?, &i)?;
    let up = xf
        .try_greater_equal(edges.try_take(&i.try_add(1i64)?, None)?)?
        .try_logical_and(i.try_not_equal(bins as i64 - 1)?)?;
    let i = crate::try_where_(&up, i.try_add(1i64)?, &i)?;
    // Elements not counted go to an extra bin, dropped after.
    let i = crate::try_where_(&keep, &i, bins as i64)?;
    let counts = crate::zeros(&[bins + 1], DType::Int64).try_add_at(&i, 1i64)?;
    let counts = counts.try_slice(&[crate::SliceArg::Range {
        start: None,
        stop: Some(bins as i64),
        step: 1,
    }])?;
    Ok((counts, edges))
}

/// [`try_histogram`], panicking on error.
#[track_caller]
pub fn histogram(a: &Array, bins: usize, range: Option<(f64, f64)>) -> (Array, Array) {
    crate::unwrap(try_histogram(a, bins, range))
}

/// `np.histogram(a, bins=edges)`: counts of the flattened `a` in the bins between
/// consecutive `edges` (1-D, at least 2, increasing), each `[e_i, e_{i+1})` and the last
/// closed; values outside and NaN not counted. Returns (counts int64 `(len(edges)-1,)`, the
/// edges). Each element's bin is found by [`searchsorted`] (a broadcast comparison, fused).
///
/// The edges are checked to increase on the host: **one device-to-host synchronisation** when
/// they live on a GPU. Errors: edges not 1-D, fewer than 2, not increasing (NumPy's
/// ValueError), NaN, complex `a` or edges.
pub fn try_histogram_with_edges(a: &Array, edges: &Array) -> Result<(Array, Array)> {
    let op = "histogram";
    if edges.ndim() != 1 || edges.size() < 2 {
        return Err(value_err(
            op,
            format!(
                "`bins` edges must be 1-D with at least 2 edges, got shape {:?}",
                edges.shape()
            ),
        ));
    }
    if a.dtype().is_complex() || edges.dtype().is_complex() {
        return Err(value_err(op, "complex values are not binned"));
    }
    let e = edges.cast_to(DType::Float64).try_to_vec::<f64>()?;
    if e.windows(2).any(|w| !(w[0] <= w[1])) {
        return Err(value_err(op, "`bins` must increase monotonically, when an array"));
    }
    let nbins = e.len() - 1;
    let x = a.try_reshape(&[a.size() as i64])?;
    // Each element's bin: the edges at or below it, less one; the last edge closes the last bin.
    let i = try_searchsorted(edges, &x, Side::Right)?.try_subtract(1i64)?;
    let last = x.try_equal(edges.try_take(&Array::scalar(nbins as i64), None)?)?;
    let i = crate::try_where_(&last, nbins as i64 - 1, &i)?;
    let keep = i.try_greater_equal(0i64)?.try_logical_and(i.try_less(nbins as i64)?)?;
    let i = crate::try_where_(&keep, &i, nbins as i64)?;
    let counts = crate::zeros(&[nbins + 1], DType::Int64).try_add_at(&i, 1i64)?;
    let counts = counts.try_slice(&[crate::SliceArg::Range {
        start: None,
        stop: Some(nbins as i64),
        step: 1,
    }])?;
    Ok((counts, edges.clone()))
}

/// [`try_histogram_with_edges`], panicking on error.
#[track_caller]
pub fn histogram_with_edges(a: &Array, edges: &Array) -> (Array, Array) {
    crate::unwrap(try_histogram_with_edges(a, edges))
}

/// torch's `topk(a, k, axis, largest)`: the `k` largest (or smallest) elements along `axis`,
/// largest first (smallest first), and their int64 positions; NaN counts as the largest. Both
/// of `a`'s shape with the axis `k` long; the values keep `a`'s dtype (their own bits: -0.0 and
/// NaN payloads). Equal elements are taken and listed in line order (lowest position first,
/// also for `largest`), so the result is deterministic; torch leaves their order unspecified.
/// NumPy equivalent of the positions: `np.argsort(a, axis, kind='stable')` cut to `k` for the
/// smallest, and for the largest the stable sort in descending order (NaN first) cut to `k`.
///
/// By selection, not a sort: one `argtopk` node (a sort region) finds each line's `k`-th
/// element, keeps the elements before it and sorts only those; the values are a gather of `a`
/// at the positions. On a CUDA device, lines along the last axis that fit a block's shared
/// memory with at most 1024 positions run as one radix-select kernel (a block a line); other
/// lines run on the host.
///
/// Errors: `axis` out of range (a 0-d array has none), `k` longer than the axis, complex `a`.
pub fn try_topk(a: &Array, k: usize, axis: i64, largest: bool) -> Result<(Array, Array)> {
    if a.dtype().is_complex() {
        return Err(value_err("topk", format!("complex input ({}) has no order", a.dtype())));
    }
    let ax = kiln_ir::shape::normalize_axis("topk", axis, a.ndim())?;
    let n = a.shape()[ax];
    if k > n {
        return Err(value_err("topk", format!("k ({k}) is larger than the axis ({n})")));
    }
    let pos = Array::apply(OpKind::Argtopk, Attrs::TopK { axis: ax, k, largest }, &[a])?;
    let vals = a.try_take_along_axis(&pos, ax as i64)?;
    Ok((vals, pos))
}

/// [`try_topk`], panicking on error.
#[track_caller]
pub fn topk(a: &Array, k: usize, axis: i64, largest: bool) -> (Array, Array) {
    crate::unwrap(try_topk(a, k, axis, largest))
}
