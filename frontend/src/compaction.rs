//! Shapes that depend on the data: `np.extract`, `np.compress`, `np.nonzero`, `np.flatnonzero`,
//! `np.argwhere`, `np.where(cond)` ([`try_where_indices`]) and boolean-mask selection
//! ([`Array::try_mask`], NumPy's `a[mask]`).
//!
//! Where the condition has as many elements as what it selects from (`x[x > 0]`,
//! `extract(cond, a)` of one size, `flatnonzero`, `nonzero`, `argwhere`), they are **one
//! kernel** ([`select`]): the IR's `compact` (the values, or the flat positions, where the
//! predicate holds, in order, then zeros, in a buffer of the input's size) and `compact_count`
//! (how many), one region with the predicate's producer computed inside. On the GPU the kernel
//! goes by tiles in one pass: each tile counts its kept elements, takes the count before it
//! from the tiles' published totals (`scan_gpu.rs`'s look-back) and writes its kept elements
//! to their slots; on the host one loop with a running count. Then **one read of the count
//! back to the host** (the one synchronisation), and the result is the buffer's first `count`
//! elements: a view of the device buffer (`DeviceArray::leading`: no copy), or a slice on the
//! host.
//!
//! Otherwise (a condition of another length, a mask of fewer axes than the array, `compress`
//! along an axis) it is the flat positions where a predicate holds, made of op classes that
//! exist on both backends:
//!
//! 1. **scan**: `cumsum` of the predicate (`cond != 0`, NaN counting as true) gives each kept
//!    element its 1-based output position; the predicate's producer (`x > 0`) is computed in the
//!    scan's kernel.
//! 2. **the count, read back**: the scan's last element (and, where the condition may be longer
//!    than what it indexes, its element at that length) is computed with the scan and read to
//!    the host: **one device-to-host synchronisation per call**, the only one. The count is the
//!    result's length; everything after it is an ordinary lazy array.
//! 3. **scatter**: `zeros(count).add_at(where(pred, pos - 1, i), where(pred, i, 0))` writes each
//!    kept element's flat index `i` to its position; a rejected element adds 0 to a slot the
//!    scatter wraps into range, so the positions are distinct and the int64 sums exact (a sum
//!    scatter: generated code on the host and on the GPU, unlike a replacing scatter, which
//!    the evaluator runs). The predicate's producer is computed again in the scatter's kernel.
//! 4. the result: the flat indices themselves (`flatnonzero`), a gather of the values at them
//!    (`extract`, `compress`, `mask`: [`Array::try_take`]'s positions fused into the gather),
//!    or the indices unravelled per axis by index arithmetic (`nonzero`, `argwhere`).
//!
//! Conditions of any dtype are truth values (`!= 0`, as NumPy's `nonzero`; a complex value with
//! either part non-zero, and NaN, are true).

use std::sync::Arc;

use kiln_ir::shape::normalize_axis;
use kiln_ir::{Attrs, DType, OpKind};

use crate::error::{value_err, Result};
use crate::views::SliceArg;
use crate::{Array, Index};

/// `x` flattened as a bool truth value (`x != 0`).
fn truth(x: &Array) -> Result<Array> {
    x.try_reshape(&[x.size() as i64]).map(|f| f.cast_to(DType::Bool))
}

/// `a[start..stop]` of a 1-D array.
fn range(a: &Array, start: i64, stop: i64) -> Result<Array> {
    a.try_slice(&[SliceArg::Range { start: Some(start), stop: Some(stop), step: 1 }])
}

/// The elements of the 1-D `x` where the 1-D bool `pred` (of `x`'s length) is true, in order:
/// shape `(N,)`, `x`'s dtype. One compaction kernel (its producers fused), then one read of the
/// count (see the [module docs](self)).
pub(crate) fn select(pred: &Array, x: &Array) -> Result<Array> {
    if pred.size() == 0 {
        return Ok(crate::empty(&[0], x.dtype()));
    }
    let kept = Array::apply(OpKind::Compact, Attrs::Axis { axis: 0 }, &[pred, x])?;
    let count = Array::apply(OpKind::CompactCount, Attrs::Axis { axis: 0 }, &[pred])?;
    crate::materialize::try_eval_all(&[&kept, &count])?;
    let count = count.try_to_vec::<i64>()?[0] as usize;
    if count == kept.size() {
        return Ok(kept);
    }
    match kept.device_value() {
        Some(d) if kept.value().is_none() => Ok(Array::from_device(Arc::new(d.leading(count)?))),
        _ => range(&kept, 0, count as i64),
    }
}

/// The int64 positions in `pred` (1-D bool) where it is true, each below `limit` (the extent
/// `pred` indexes: a true at or past it is NumPy's IndexError, `what` naming the axis). One
/// read of the count back to the host (see the module docs).
fn compact(op: &str, pred: &Array, limit: usize, what: &str, cond: &Array) -> Result<Array> {
    let n = pred.size();
    if n == 0 {
        return Ok(crate::empty(&[0], DType::Int64));
    }
    if limit == n {
        return select(pred, &crate::arange(n as i64));
    }
    let incl = pred.try_cumsum(None)?;
    // Running counts at `limit` and at the end, computed with the scan and read at once.
    let ends = match limit {
        l if l >= n => range(&incl, n as i64 - 1, n as i64)?,
        0 => crate::try_concatenate(
            &[&crate::zeros(&[1], DType::Int64), &range(&incl, n as i64 - 1, n as i64)?],
            0,
        )?,
        l => incl.try_take(&Array::from_vec(vec![l as i64 - 1, n as i64 - 1], &[2]), None)?,
    };
    crate::materialize::try_eval_all(&[&incl, &ends])?;
    let ends = ends.try_to_vec::<i64>()?;
    let (count, total) = (ends[0], *ends.last().expect("one or two counts"));
    if total > count {
        // The first true at or past `limit`: found on this error path only (a second read).
        let past = range(pred, limit as i64, n as i64)?;
        let first = past.try_argmax(None)?.try_item::<i64>()? + limit as i64;
        return Err(value_err(
            op,
            format!(
                "condition of shape {:?} ({}): index {first} is out of bounds for {what} with size {limit}",
                cond.shape(),
                cond.dtype()
            ),
        ));
    }
    if count == 0 {
        return Ok(crate::empty(&[0], DType::Int64));
    }
    let i = crate::arange(n as i64);
    // A kept element goes to its position; a rejected one adds 0 at `i` (wrapped into range by
    // the scatter), spreading them over the slots rather than on one.
    let at = crate::try_where_(pred, &incl.try_subtract(1i64)?, &i)?;
    let value = crate::try_where_(pred, &i, 0i64)?;
    crate::zeros(&[count as usize], DType::Int64).try_add_at(&at, &value)
}

/// `np.flatnonzero(a)`: the int64 positions in the flattened `a` of its elements that are not
/// zero (NaN is not zero), in C order; shape `(N,)`. One compaction kernel and one
/// synchronisation (the count, see the [module docs](self)); the result holds its value. Works
/// on 0-d arrays (as NumPy's).
pub fn try_flatnonzero(a: &Array) -> Result<Array> {
    compact("flatnonzero", &truth(a)?, a.size(), "the flattened array", a)
}

/// [`try_flatnonzero`], panicking on error.
#[track_caller]
pub fn flatnonzero(a: &Array) -> Array {
    crate::unwrap(try_flatnonzero(a))
}

/// Unravels flat C-order positions (int64, shape `(N,)`) into an array of shape `shape`: the
/// coordinate along `axis`.
fn coordinate(flat: &Array, shape: &[usize], axis: usize) -> Result<Array> {
    let stride: usize = shape[axis + 1..].iter().product();
    let mut c = if stride > 1 { flat.try_floor_divide(stride as i64)? } else { flat.clone() };
    if axis > 0 {
        c = c.try_remainder(shape[axis].max(1) as i64)?;
    }
    Ok(c)
}

/// `np.nonzero(a)`: for each axis of `a`, the int64 coordinates along it of the elements that
/// are not zero, in C order: `a.ndim()` arrays of shape `(N,)` (NaN is not zero; a complex value
/// with either part non-zero counts). One synchronisation (the count, see the
/// [module docs](self)); the coordinates are index arithmetic on the flat positions (they fuse
/// into one kernel when evaluated together).
///
/// Errors: a 0-d `a` (NumPy 2's ValueError: use `a.atleast_1d()`).
pub fn try_nonzero(a: &Array) -> Result<Vec<Array>> {
    if a.ndim() == 0 {
        return Err(value_err(
            "nonzero",
            format!(
                "calling nonzero on a 0-d array ({}) is not allowed; use atleast_1d(a) first",
                a.dtype()
            ),
        ));
    }
    let flat = compact("nonzero", &truth(a)?, a.size(), "the flattened array", a)?;
    (0..a.ndim()).map(|k| coordinate(&flat, a.shape(), k)).collect()
}

/// [`try_nonzero`], panicking on error.
#[track_caller]
pub fn nonzero(a: &Array) -> Vec<Array> {
    crate::unwrap(try_nonzero(a))
}

/// `np.where(cond)` with one argument: [`try_nonzero`] of `cond` (NumPy documents it as
/// `np.asarray(cond).nonzero()`). The three-argument form is [`crate::where_`].
///
/// Errors: a 0-d `cond`.
pub fn try_where_indices(cond: &Array) -> Result<Vec<Array>> {
    try_nonzero(cond).map_err(|e| match e {
        crate::Error::Value { message, .. } => value_err("where", message),
        other => other,
    })
}

/// [`try_where_indices`], panicking on error.
#[track_caller]
pub fn where_indices(cond: &Array) -> Vec<Array> {
    crate::unwrap(try_where_indices(cond))
}

/// `np.argwhere(a)`: the int64 coordinates of the elements that are not zero, one row per
/// element in C order: shape `(N, a.ndim())` (a 0-d `a` gives `(1, 0)` when it is not zero,
/// `(0, 0)` when it is, as NumPy). One synchronisation (the count); the coordinates are one
/// elementwise kernel over the flat positions.
pub fn try_argwhere(a: &Array) -> Result<Array> {
    let flat = compact("argwhere", &truth(a)?, a.size(), "the flattened array", a)?;
    let (n, d) = (flat.size(), a.ndim());
    if d == 0 || n == 0 {
        return Ok(crate::empty(&[n, d], DType::Int64));
    }
    let strides: Vec<i64> =
        (0..d).map(|k| a.shape()[k + 1..].iter().product::<usize>() as i64).collect();
    let extents: Vec<i64> = a.shape().iter().map(|&e| e.max(1) as i64).collect();
    let column = flat.try_reshape(&[n as i64, 1])?;
    column
        .try_floor_divide(Array::from_vec(strides, &[1, d]))?
        .try_remainder(Array::from_vec(extents, &[1, d]))
}

/// [`try_argwhere`], panicking on error.
#[track_caller]
pub fn argwhere(a: &Array) -> Array {
    crate::unwrap(try_argwhere(a))
}

/// `np.extract(cond, a)`: the elements of the flattened `a` where the flattened `cond` is not
/// zero, in C order; shape `(N,)`, `a`'s dtype. For a bool `cond` of `a`'s shape this is
/// `a[cond]` ([`Array::try_mask`]). As NumPy (`take(ravel(a), nonzero(ravel(cond))[0])`) the
/// shapes need not match: `cond` may be shorter than `a`, or longer when it is zero past
/// `a.size()`. One synchronisation (the count, see the [module docs](self)); where `cond` has
/// `a`'s size, one compaction kernel computing the predicate's producer (the result a view of
/// its buffer), else a scan and a scatter of the positions, the values gathered at them.
///
/// Errors: `cond` not zero at a flat position at or past `a.size()` (NumPy's IndexError),
/// found by the count.
pub fn try_extract(cond: &Array, a: &Array) -> Result<Array> {
    if cond.size() == a.size() {
        return select(&truth(cond)?, &a.try_reshape(&[a.size() as i64])?);
    }
    let flat = compact("extract", &truth(cond)?, a.size(), "the flattened array", cond)?;
    a.try_reshape(&[a.size() as i64])?.try_take(&flat, None)
}

/// [`try_extract`], panicking on error.
#[track_caller]
pub fn extract(cond: &Array, a: &Array) -> Array {
    crate::unwrap(try_extract(cond, a))
}

impl Array {
    /// `a.nonzero()`: [`try_nonzero`] of `self` (NumPy's method form).
    pub fn try_nonzero(&self) -> Result<Vec<Array>> {
        try_nonzero(self)
    }

    /// `a.nonzero()`. Panics where [`Array::try_nonzero`] errs.
    #[track_caller]
    pub fn nonzero(&self) -> Vec<Array> {
        nonzero(self)
    }

    /// `np.compress(cond, a, axis)`: the slices of `a` along `axis` where the 1-D `cond` is not
    /// zero (`None`: elements of the flattened `a`). `cond` may be shorter than the axis (the
    /// rest is dropped, as NumPy), or longer when it is zero past the axis. The shape is `a`'s
    /// with `N` along `axis` (`(N,)` for `None`); the dtype `a`'s. One synchronisation (the
    /// count, see the [module docs](self)); then a gather along the axis.
    ///
    /// Errors: `cond` not 1-D; `axis` out of range; `cond` not zero at a position at or past
    /// the axis' extent (NumPy's IndexError).
    pub fn try_compress(&self, cond: &Array, axis: Option<i64>) -> Result<Array> {
        let op = "compress";
        if cond.ndim() != 1 {
            return Err(value_err(
                op,
                format!(
                    "condition must be a 1-d array, got shape {:?} ({}) for an array of shape {:?} ({})",
                    cond.shape(),
                    cond.dtype(),
                    self.shape(),
                    self.dtype()
                ),
            ));
        }
        let (src, ax) = match axis {
            None if cond.size() == self.size() => {
                return select(&truth(cond)?, &self.try_reshape(&[self.size() as i64])?)
            }
            None => (self.try_reshape(&[self.size() as i64])?, 0),
            Some(a) => (self.clone(), normalize_axis(op, a, self.ndim())?),
        };
        let extent = src.shape()[ax];
        let flat = compact(op, &truth(cond)?, extent, &format!("axis {ax}"), cond)?;
        src.try_take(&flat, Some(ax as i64))
    }

    /// [`Array::try_compress`], panicking on error.
    #[track_caller]
    pub fn compress(&self, cond: &Array, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_compress(cond, axis))
    }

    /// NumPy's boolean-mask selection `a[mask]`: `mask` is bool with the shape of `a`'s leading
    /// `mask.ndim()` axes; the result has shape `(N,) + a.shape[mask.ndim():]`, the sub-arrays
    /// where `mask` is true in C order, `a`'s dtype (a full-shape mask gives
    /// [`try_extract`]'s 1-D result; a 0-d mask adds an axis of length 1 or 0, as NumPy's
    /// `a[True]`). One synchronisation (the count, see the [module docs](self)); a full-shape
    /// mask is one compaction kernel, a mask of fewer axes a gather of rows after the count.
    ///
    /// Errors: a mask that is not bool (integer arrays index with [`Array::try_take`] or
    /// [`Array::try_index`]); a mask of more axes than `a`, or whose extent differs from `a`'s
    /// along an axis (NumPy's IndexError).
    pub fn try_mask(&self, mask: &Array) -> Result<Array> {
        let op = "mask";
        if mask.dtype() != DType::Bool {
            return Err(value_err(
                op,
                format!(
                    "a mask must be bool, got {} (shape {:?}); integer arrays index with take",
                    mask.dtype(),
                    mask.shape()
                ),
            ));
        }
        if mask.ndim() > self.ndim() {
            return Err(value_err(
                op,
                format!(
                    "too many indices: a mask of shape {:?} for an array of shape {:?} ({})",
                    mask.shape(),
                    self.shape(),
                    self.dtype()
                ),
            ));
        }
        if let Some(k) = (0..mask.ndim()).find(|&k| mask.shape()[k] != self.shape()[k]) {
            return Err(value_err(
                op,
                format!(
                    "boolean index did not match indexed array along axis {k}; size of axis is {} but size of corresponding boolean axis is {} (mask {:?}, array {:?} {})",
                    self.shape()[k],
                    mask.shape()[k],
                    mask.shape(),
                    self.shape(),
                    self.dtype()
                ),
            ));
        }
        if mask.ndim() == self.ndim() && mask.ndim() > 0 {
            return select(&truth(mask)?, &self.try_reshape(&[self.size() as i64])?);
        }
        let lead = mask.size();
        let flat = compact(op, &truth(mask)?, lead, "the mask", mask)?;
        let rows: Vec<i64> = std::iter::once(lead as i64)
            .chain(self.shape()[mask.ndim()..].iter().map(|&e| e as i64))
            .collect();
        let src = self.try_reshape(&rows)?;
        if flat.size() == 0 {
            // Nothing selected: an empty take along an axis that may itself be empty.
            let mut shape = src.shape().to_vec();
            shape[0] = 0;
            return Ok(crate::empty(&shape, self.dtype()));
        }
        src.try_take(&flat, Some(0))
    }

    /// [`Array::try_mask`], panicking on error.
    #[track_caller]
    pub fn mask(&self, mask: &Array) -> Array {
        crate::unwrap(self.try_mask(mask))
    }
}

/// NumPy's boolean arrays in an index (`x[mask, 1:]`): each bool array of `k` axes becomes the
/// `k` int64 coordinate arrays of its [`try_nonzero`] (NumPy's rule), for
/// [`Array::try_index`]. One synchronisation per mask (its count).
///
/// Errors (named `index`): a 0-d mask (use [`Array::try_mask`]), a mask past the array's axes
/// or whose extents differ from the axes it indexes (NumPy's IndexError).
pub(crate) fn expand_masks(a: &Array, index: &[Index]) -> Result<Vec<Index>> {
    let op = "index";
    let is_mask = |i: &Index| matches!(i, Index::Array(m) if m.dtype() == DType::Bool);
    let consumes = |i: &Index| match i {
        Index::Array(m) if m.dtype() == DType::Bool => m.ndim(),
        Index::Array(_) | Index::Basic(SliceArg::Index(_) | SliceArg::Range { .. }) => 1,
        Index::Basic(SliceArg::NewAxis | SliceArg::Ellipsis) => 0,
    };
    let explicit: usize = index.iter().map(consumes).sum();
    let mut axis = 0;
    let mut out = Vec::with_capacity(index.len());
    for entry in index {
        match entry {
            Index::Array(m) if is_mask(entry) => {
                if m.ndim() == 0 {
                    return Err(value_err(
                        op,
                        format!("a 0-d boolean index among others is not supported (array of shape {:?}); use mask", a.shape()),
                    ));
                }
                let dims = a.shape().get(axis..axis + m.ndim()).ok_or_else(|| {
                    value_err(
                        op,
                        format!(
                            "too many indices: a boolean index of shape {:?} at axis {axis} of an array of shape {:?} ({})",
                            m.shape(),
                            a.shape(),
                            a.dtype()
                        ),
                    )
                })?;
                if let Some(k) = (0..m.ndim()).find(|&k| dims[k] != m.shape()[k]) {
                    return Err(value_err(
                        op,
                        format!(
                            "boolean index did not match indexed array along axis {}; size of axis is {} but size of corresponding boolean axis is {} (mask {:?}, array {:?} {})",
                            axis + k,
                            dims[k],
                            m.shape()[k],
                            m.shape(),
                            a.shape(),
                            a.dtype()
                        ),
                    ));
                }
                let flat = compact(op, &truth(m)?, m.size(), "the mask", m)?;
                for k in 0..m.ndim() {
                    out.push(Index::Array(coordinate(&flat, m.shape(), k)?));
                }
                axis += m.ndim();
            }
            Index::Basic(SliceArg::Ellipsis) => {
                axis += a.ndim().saturating_sub(explicit);
                out.push(entry.clone());
            }
            other => {
                axis += consumes(other);
                out.push(other.clone());
            }
        }
    }
    Ok(out)
}
