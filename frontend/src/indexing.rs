//! Indexing by arrays: gathers (`take`, `take_along_axis`) and scatters (`add_at`,
//! `maximum_at`, `minimum_at`, `put`, `put_along_axis`, [`bincount`]).
//!
//! Gathers are one IR `take` node reading the flattened source at positions computed by
//! ordinary index arithmetic (ramps, products, a `remainder` that wraps negative indices), so
//! the positions fuse into the gather's kernel. Scatters are one IR scatter node
//! (`scatter_add`, `scatter_max`, `scatter_min`, `scatter`) combining rows of values into a copy
//! of an array along its first axis; their positions and values fuse into the scatter's kernel.
//! kiln arrays are values, so a scatter returns a new array: `b = a.add_at(&i, &v)` is NumPy's
//! `b = a.copy(); np.add.at(b, i, v)`.
//!
//! **Indices.** Integer arrays of any integer dtype (cast to int64); negative indices count from
//! the end. When the indices are held on the host (made from data, or computed and read back)
//! an index out of `[-n, n)` is an [`Error::Value`](crate::Error::Value) naming the op, raised
//! where the op is written. Indices computed lazily or held on a GPU are not checked (that
//! would need a device round trip): they wrap into range, NumPy's and CuPy's `mode="wrap"`
//! (CuPy documents the same for its device indices), or with [`Array::try_take_mode`] and
//! [`TakeMode::Clip`] clip to it (NumPy's `mode="clip"`: negative indices become 0). No index
//! ever reads or writes outside the array.

use kiln_ir::shape::normalize_axis;
use kiln_ir::{Attrs, DType, DTypeKind, OpKind, WeakScalar};

use crate::array::Array;
use crate::creation::{full, iota, zeros};
use crate::elementwise::{scalar_literal, Operand};
use crate::error::{value_err, Error, Result};

/// Whether NumPy's `same_kind` rule casts `from` to `to` (bool → int → float → complex, and
/// within a kind; signed to unsigned is not the same kind).
fn same_kind(from: DType, to: DType) -> bool {
    let rank = |d: DType| match d.kind() {
        DTypeKind::Bool => 0,
        DTypeKind::UnsignedInt => 1,
        DTypeKind::SignedInt => 2,
        DTypeKind::Float => 3,
        DTypeKind::Complex => 4,
    };
    rank(from) <= rank(to)
        && !(from.kind() == DTypeKind::SignedInt && to.kind() == DTypeKind::UnsignedInt)
}

/// The indices of `op` as int64. Errors: a dtype that is not an integer one (NumPy's
/// IndexError "arrays used as indices must be of integer type").
fn index_array(op: &str, indices: &Array) -> Result<Array> {
    if !indices.dtype().is_integer() {
        return Err(value_err(
            op,
            format!("arrays used as indices must be of integer type, got {}", indices.dtype()),
        ));
    }
    Ok(indices.cast_to(DType::Int64))
}

/// The smallest and largest value of `indices` when they are held on the host (`Some(None)`
/// when empty; unsigned values above `i64::MAX` saturate: out of range for every array), read
/// in place; `None` when they are not on the host.
fn host_bounds(indices: &Array) -> Option<Option<(i64, i64)>> {
    use kiln_ir::host::Data;
    fn bounds<T: Copy>(v: &[T], f: impl Fn(T) -> i64) -> Option<(i64, i64)> {
        v.iter().map(|&x| f(x)).fold(None, |acc, x| match acc {
            None => Some((x, x)),
            Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
        })
    }
    let h = indices.value()?;
    Some(match h.data() {
        Data::Int8(v) => bounds(v, i64::from),
        Data::Int16(v) => bounds(v, i64::from),
        Data::Int32(v) => bounds(v, i64::from),
        Data::Int64(v) => bounds(v, |x| x),
        Data::UInt8(v) => bounds(v, i64::from),
        Data::UInt16(v) => bounds(v, i64::from),
        Data::UInt32(v) => bounds(v, i64::from),
        Data::UInt64(v) => bounds(v, |x| i64::try_from(x).unwrap_or(i64::MAX)),
        Data::Bool(v) => bounds(v, i64::from),
        Data::Float16(_)
        | Data::BFloat16(_)
        | Data::Float32(_)
        | Data::Float64(_)
        | Data::Complex64(_)
        | Data::Complex128(_) => return None,
    })
}

/// Checks host-held `indices` against an axis of extent `n` (`[-n, n)`), as NumPy's
/// `mode="raise"`; lazy and device indices are not checked (they wrap).
fn check_range(op: &str, indices: &Array, n: usize, what: &str) -> Result<()> {
    if let Some(Some((lo, hi))) = host_bounds(indices) {
        let n = n as i64;
        if let Some(bad) = [lo, hi].into_iter().find(|&i| i < -n || i >= n) {
            return Err(value_err(
                op,
                format!("index {bad} is out of bounds for {what} with size {n}"),
            ));
        }
    }
    Ok(())
}

/// `idx mod n` (Python's modulo), so that -1 is the last position: the wrap of every device index.
fn wrapped(idx: &Array, n: usize) -> Result<Array> {
    idx.try_remainder(n.max(1) as i64)
}

/// What `take` does with an index outside `[-n, n)` that kiln cannot check where the op is
/// written (NumPy's and CuPy's `mode`); host indices out of range are an error in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TakeMode {
    /// `mode="wrap"`: the index modulo `n` (Python's modulo: -1 is the last). The default.
    Wrap,
    /// `mode="clip"`: the index clipped to `[0, n - 1]` (so negative indices read the first).
    Clip,
}

/// The values of a scatter into `a`, cast to `a`'s dtype under NumPy's `same_kind` rule and
/// broadcast to `shape`.
fn scatter_values(op: &str, a: &Array, values: Operand, shape: &[usize]) -> Result<Array> {
    let v = match values {
        Operand::Array(v) => {
            if !same_kind(v.dtype(), a.dtype()) {
                return Err(value_err(
                    op,
                    format!("cannot cast values from {} to the array's {} with casting rule 'same_kind'", v.dtype(), a.dtype()),
                ));
            }
            v.cast_to(a.dtype())
        }
        Operand::Scalar(s) => {
            if let (WeakScalar::Int(_), true) = (s, a.dtype().is_integer()) {
                kiln_ir::result_type_weak(op, a.dtype(), s)?;
            }
            let ok = match s {
                WeakScalar::Bool(_) => true,
                WeakScalar::Int(_) => !a.dtype().is_bool(),
                WeakScalar::Float(_) => a.dtype().is_float() || a.dtype().is_complex(),
                WeakScalar::Complex(_) => a.dtype().is_complex(),
            };
            if !ok {
                return Err(value_err(op, format!("cannot cast the scalar {s:?} to the array's {} with casting rule 'same_kind'", a.dtype())));
            }
            Array::literal(a.dtype(), scalar_literal(a.dtype(), s))
        }
    };
    v.broadcast_to_shape(shape).map_err(|_| {
        value_err(
            op,
            format!(
                "values of shape {:?} do not broadcast to the indexed shape {shape:?}",
                v.shape()
            ),
        )
    })
}

/// C-order strides of `shape`, in elements.
fn c_strides(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1] as i64;
    }
    s
}

/// The flat C-order position in an array of shape `src` of each element of a result of shape
/// `out` (same rank) whose coordinate along `axis` is `along` (int64, shape `out`, in range) and
/// along every other axis `k` is the result's own (0 where `src[k]` is 1 and `out[k]` is not).
fn flat_positions(src: &[usize], out: &[usize], axis: usize, along: &Array) -> Result<Array> {
    let strides = c_strides(src);
    let mut pos = along.try_multiply(strides[axis])?;
    for k in 0..src.len() {
        if k != axis && src[k] == out[k] && src[k] > 1 {
            pos = pos.try_add(iota(DType::Int64, out, k).try_multiply(strides[k])?)?;
        }
    }
    Ok(pos)
}

impl Array {
    /// `np.take(a, indices, axis)`: elements of `a` at `indices` along `axis` (`None`: of the
    /// flattened array). The result's shape is `a.shape[:axis] + indices.shape +
    /// a.shape[axis+1:]` (with `None`: `indices.shape`); the dtype is `a`'s. Lazy: the positions
    /// fuse into the gather's kernel.
    ///
    /// Errors: non-integer indices; an axis out of range; indices out of range when held on the
    /// host (others wrap: see the [module docs](self)); taking from an empty axis.
    pub fn try_take(&self, indices: &Array, axis: Option<i64>) -> Result<Array> {
        self.try_take_mode(indices, axis, TakeMode::Wrap)
    }

    /// [`Array::try_take`] with NumPy's `mode`: what a lazy or device index out of range reads
    /// ([`TakeMode`]). Clipping lets negative indices read the first element, as NumPy's.
    pub fn try_take_mode(
        &self,
        indices: &Array,
        axis: Option<i64>,
        mode: TakeMode,
    ) -> Result<Array> {
        let idx = index_array("take", indices)?;
        let (n_along, what) = match axis {
            None => (self.size(), "the flattened array".to_string()),
            Some(a) => {
                let ax = normalize_axis("take", a, self.ndim())?;
                (self.shape()[ax], format!("axis {ax}"))
            }
        };
        // Clipped indices are in range: nothing to check. Wrapped ones are checked when held on
        // the host (NumPy's mode="raise" there).
        let idx = match mode {
            TakeMode::Wrap => {
                check_range("take", indices, n_along, &what)?;
                idx
            }
            TakeMode::Clip => idx.try_clip(0i64, n_along.max(1) as i64 - 1)?,
        };
        let Some(axis) = axis else {
            let flat = self.try_reshape(&[self.size() as i64])?;
            return Array::apply(OpKind::Take, Attrs::None, &[&flat, &idx]);
        };
        let ax = normalize_axis("take", axis, self.ndim())?;
        let n = self.shape()[ax];
        if n == 0 && idx.size() > 0 {
            return Err(value_err(
                "take",
                format!("cannot do a non-empty take from an empty axis {ax}"),
            ));
        }
        let (before, after) = (&self.shape()[..ax], &self.shape()[ax + 1..]);
        let out: Vec<usize> = before.iter().chain(idx.shape()).chain(after).copied().collect();
        // The index array placed at axes ax..ax+idx.ndim() of the result, wrapped into range.
        let lead: Vec<i64> = before
            .iter()
            .map(|_| 1)
            .chain(idx.shape().iter().map(|&d| d as i64))
            .chain(after.iter().map(|_| 1))
            .collect();
        let along = wrapped(&idx, n)?.try_reshape(&lead)?.broadcast_to_shape(&out)?;
        // Positions: before-axes and after-axes coordinates times a's strides, plus the index's.
        let strides = c_strides(self.shape());
        let mut pos = along.try_multiply(strides[ax])?;
        for k in 0..before.len() {
            if before[k] > 1 {
                pos = pos.try_add(iota(DType::Int64, &out, k).try_multiply(strides[k])?)?;
            }
        }
        for k in 0..after.len() {
            if after[k] > 1 {
                pos = pos.try_add(
                    iota(DType::Int64, &out, ax + idx.ndim() + k)
                        .try_multiply(strides[ax + 1 + k])?,
                )?;
            }
        }
        let flat = self.try_reshape(&[self.size() as i64])?;
        Array::apply(OpKind::Take, Attrs::None, &[&flat, &pos])
    }

    /// [`Array::try_take_mode`], panicking on error.
    #[track_caller]
    pub fn take_mode(&self, indices: &Array, axis: Option<i64>, mode: TakeMode) -> Array {
        crate::unwrap(self.try_take_mode(indices, axis, mode))
    }

    /// `np.take(a, indices, axis)`. Panics where [`Array::try_take`] errs.
    #[track_caller]
    pub fn take(&self, indices: &Array, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_take(indices, axis))
    }

    /// `np.take_along_axis(a, indices, axis)`: `indices` has `a`'s rank; along `axis` it picks
    /// elements, along the other axes it broadcasts with `a`. The result's shape is that
    /// broadcast, with `indices.shape[axis]` along `axis`.
    ///
    /// Errors: non-integer indices; a rank other than `a`'s; an axis out of range; shapes that do
    /// not broadcast; host indices out of range.
    pub fn try_take_along_axis(&self, indices: &Array, axis: i64) -> Result<Array> {
        let op = "take_along_axis";
        let idx = index_array(op, indices)?;
        if idx.ndim() != self.ndim() {
            return Err(value_err(
                op,
                format!(
                    "indices of rank {} for an array of rank {}: they must match",
                    idx.ndim(),
                    self.ndim()
                ),
            ));
        }
        let ax = normalize_axis(op, axis, self.ndim())?;
        let n = self.shape()[ax];
        check_range(op, indices, n, &format!("axis {ax}"))?;
        let out = along_shape(op, self.shape(), idx.shape(), ax)?;
        if n == 0 && kiln_ir::shape::numel(&out) > 0 {
            return Err(value_err(op, format!("cannot take from an empty axis {ax}")));
        }
        let along = wrapped(&idx, n)?.broadcast_to_shape(&out)?;
        let pos = flat_positions(self.shape(), &out, ax, &along)?;
        let flat = self.try_reshape(&[self.size() as i64])?;
        Array::apply(OpKind::Take, Attrs::None, &[&flat, &pos])
    }

    /// `np.take_along_axis(a, indices, axis)`. Panics where [`Array::try_take_along_axis`] errs.
    #[track_caller]
    pub fn take_along_axis(&self, indices: &Array, axis: i64) -> Array {
        crate::unwrap(self.try_take_along_axis(indices, axis))
    }

    /// A scatter along axis 0 of `self`: `values` broadcast to `indices.shape +
    /// self.shape[1:]`, combined by `op`.
    fn scatter_rows(
        &self,
        op: OpKind,
        name: &str,
        indices: &Array,
        values: Operand,
    ) -> Result<Array> {
        let idx = index_array(name, indices)?;
        if self.ndim() == 0 {
            return Err(value_err(name, "cannot index a 0-d array"));
        }
        check_range(name, indices, self.shape()[0], "axis 0")?;
        if self.shape()[0] == 0 && idx.size() > 0 {
            return Err(value_err(name, "cannot scatter into an empty axis 0"));
        }
        let shape: Vec<usize> = idx.shape().iter().chain(&self.shape()[1..]).copied().collect();
        let v = scatter_values(name, self, values, &shape)?;
        Array::apply(op, Attrs::None, &[self, &idx, &v])
    }

    /// NumPy's `b = a.copy(); np.add.at(b, indices, values)`: row `indices[i]` of axis 0 gets
    /// `values[i]` added, duplicates accumulating (CuPy's `cupyx.scatter_add`). `values`
    /// broadcasts to `indices.shape + a.shape[1:]` and casts to `a`'s dtype under NumPy's
    /// `same_kind` rule; the result has `a`'s dtype and shape. Lazy: the indices' and values'
    /// producers fuse into the scatter's kernel (k-means' `zeros((k, d)).add_at(&labels, &x)`
    /// computes the labels there). Floating-point sums of duplicates may differ from NumPy's
    /// one-after-another order in their last bits, and are the same bits on every run.
    ///
    /// Errors: non-integer indices; a 0-d `a`; values that do not broadcast or cast; host indices
    /// out of range (others wrap: see the [module docs](self)).
    pub fn try_add_at(&self, indices: &Array, values: impl Into<Operand>) -> Result<Array> {
        self.scatter_rows(OpKind::ScatterAdd, "add_at", indices, values.into())
    }

    /// [`Array::try_add_at`], panicking on error.
    #[track_caller]
    pub fn add_at(&self, indices: &Array, values: impl Into<Operand>) -> Array {
        crate::unwrap(self.try_add_at(indices, values))
    }

    /// NumPy's `np.maximum.at` on a copy (`cupyx.scatter_max`): row `indices[i]` becomes the
    /// maximum of itself and `values[i]`, NaN propagating. Shapes, dtypes and errors as
    /// [`Array::try_add_at`].
    pub fn try_maximum_at(&self, indices: &Array, values: impl Into<Operand>) -> Result<Array> {
        self.scatter_rows(OpKind::ScatterMax, "maximum_at", indices, values.into())
    }

    /// [`Array::try_maximum_at`], panicking on error.
    #[track_caller]
    pub fn maximum_at(&self, indices: &Array, values: impl Into<Operand>) -> Array {
        crate::unwrap(self.try_maximum_at(indices, values))
    }

    /// NumPy's `np.minimum.at` on a copy (`cupyx.scatter_min`). As [`Array::try_maximum_at`].
    pub fn try_minimum_at(&self, indices: &Array, values: impl Into<Operand>) -> Result<Array> {
        self.scatter_rows(OpKind::ScatterMin, "minimum_at", indices, values.into())
    }

    /// [`Array::try_minimum_at`], panicking on error.
    #[track_caller]
    pub fn minimum_at(&self, indices: &Array, values: impl Into<Operand>) -> Array {
        crate::unwrap(self.try_minimum_at(indices, values))
    }

    /// NumPy's `b = a.copy(); np.put(b, indices, values)`: elements of the flattened array at
    /// `indices` replaced by `values`, repeated cyclically when shorter than the indices (as
    /// NumPy); where an index repeats, the last in index order wins. `values` casts to `a`'s
    /// dtype under `same_kind`.
    ///
    /// Errors: non-integer indices; values that do not cast, or are empty while indices are not;
    /// host indices out of range.
    pub fn try_put(&self, indices: &Array, values: impl Into<Operand>) -> Result<Array> {
        let op = "put";
        let idx = index_array(op, indices)?;
        check_range(op, indices, self.size(), "the flattened array")?;
        if self.size() == 0 && idx.size() > 0 {
            return Err(value_err(op, "cannot replace in an empty array"));
        }
        let m = idx.size();
        let values = match values.into() {
            Operand::Array(v) if v.size() != m && v.size() > 0 => {
                // np.put repeats values cyclically: take wraps.
                let flat = v.try_reshape(&[v.size() as i64])?;
                Operand::Array(Array::apply(
                    OpKind::Take,
                    Attrs::None,
                    &[&flat, &crate::creation::arange(m as i64)],
                )?)
            }
            Operand::Array(v) if v.size() == 0 && m > 0 => {
                return Err(value_err(op, "cannot put empty values at non-empty indices"))
            }
            Operand::Array(v) => Operand::Array(v.try_reshape(&[m as i64])?),
            s @ Operand::Scalar(_) => s,
        };
        let flat = self.try_reshape(&[self.size() as i64])?;
        let v = scatter_values(op, &flat, values, &[m])?;
        let idx = idx.try_reshape(&[m as i64])?;
        let r = Array::apply(OpKind::Scatter, Attrs::None, &[&flat, &idx, &v])?;
        r.try_reshape(&self.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())
    }

    /// [`Array::try_put`], panicking on error.
    #[track_caller]
    pub fn put(&self, indices: &Array, values: impl Into<Operand>) -> Array {
        crate::unwrap(self.try_put(indices, values))
    }

    /// NumPy's `b = a.copy(); np.put_along_axis(b, indices, values, axis)`: the positions of
    /// [`Array::try_take_along_axis`] replaced by `values` (broadcast to the indexed shape);
    /// where a position repeats, the last in C order of the indexed shape wins.
    ///
    /// Errors: as [`Array::try_take_along_axis`], and values that do not broadcast or cast.
    pub fn try_put_along_axis(
        &self,
        indices: &Array,
        values: impl Into<Operand>,
        axis: i64,
    ) -> Result<Array> {
        let op = "put_along_axis";
        let idx = index_array(op, indices)?;
        if idx.ndim() != self.ndim() {
            return Err(value_err(
                op,
                format!(
                    "indices of rank {} for an array of rank {}: they must match",
                    idx.ndim(),
                    self.ndim()
                ),
            ));
        }
        let ax = normalize_axis(op, axis, self.ndim())?;
        let n = self.shape()[ax];
        check_range(op, indices, n, &format!("axis {ax}"))?;
        let out = along_shape(op, self.shape(), idx.shape(), ax)?;
        let m = kiln_ir::shape::numel(&out);
        if n == 0 && m > 0 {
            return Err(value_err(op, format!("cannot replace along an empty axis {ax}")));
        }
        let v = scatter_values(op, self, values.into(), &out)?;
        let along = wrapped(&idx, n)?.broadcast_to_shape(&out)?;
        let pos = flat_positions(self.shape(), &out, ax, &along)?.try_reshape(&[m as i64])?;
        let flat = self.try_reshape(&[self.size() as i64])?;
        let r = Array::apply(
            OpKind::Scatter,
            Attrs::None,
            &[&flat, &pos, &v.try_reshape(&[m as i64])?],
        )?;
        r.try_reshape(&self.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())
    }

    /// [`Array::try_put_along_axis`], panicking on error.
    #[track_caller]
    pub fn put_along_axis(&self, indices: &Array, values: impl Into<Operand>, axis: i64) -> Array {
        crate::unwrap(self.try_put_along_axis(indices, values, axis))
    }
}

/// The result shape of `take_along_axis`/`put_along_axis`: `src` and `idx` broadcast on every
/// axis but `axis`, which is `idx`'s.
fn along_shape(op: &str, src: &[usize], idx: &[usize], axis: usize) -> Result<Vec<usize>> {
    src.iter()
        .zip(idx)
        .enumerate()
        .map(|(k, (&s, &i))| match (k == axis, s, i) {
            (true, _, i) => Ok(i),
            (false, s, i) if s == i || i == 1 => Ok(s),
            (false, 1, i) => Ok(i),
            _ => Err(Error::from(kiln_ir::IrError::Broadcast {
                op: op.into(),
                shapes: vec![src.into(), idx.into()],
            })),
        })
        .collect()
}

/// An upper bound (exclusive) on the values of `x` that kiln knows without computing it: the
/// extent of the reduced axis of an `argmin`/`argmax` (through casts to wider integers).
fn known_bound(x: &Array) -> Option<usize> {
    if let (OpKind::ArgMin | OpKind::ArgMax, Attrs::Reduce { axes, .. }) = (x.e.op, &x.e.attrs) {
        if axes.len() == 1 {
            return Some(x.e.inputs[0].shape()[axes[0]]);
        }
    }
    if x.e.op == OpKind::Cast && x.dtype().is_integer() && x.dtype().itemsize() >= 8 {
        return known_bound(&x.e.inputs[0]);
    }
    None
}

/// `np.bincount(x, weights, minlength)`: the number of occurrences of each value of the 1-D
/// non-negative integer array `x` (int64), or with `weights` (the same shape as `x`) the sum of
/// their weights (float64, as NumPy). The length is `max(x.max() + 1, minlength)`.
///
/// The length depends on the data. kiln knows it without running anything when `x` is held on
/// the host, or is an `argmin`/`argmax` along an axis no longer than `minlength` (k-means'
/// labels: then the counts fuse into the labels' kernel); otherwise it computes `x`'s minimum
/// and maximum and reads them back: **one device-to-host synchronisation** on a GPU.
///
/// Errors: `x` not 1-D or not an integer (or bool) array; negative values (NumPy's ValueError);
/// weights of another shape, or complex.
pub fn try_bincount(x: &Array, weights: Option<&Array>, minlength: usize) -> Result<Array> {
    let op = "bincount";
    if x.ndim() != 1 {
        return Err(value_err(op, format!("x must be 1-D, got shape {:?}", x.shape())));
    }
    if !(x.dtype().is_integer() || x.dtype().is_bool()) {
        return Err(value_err(op, format!("x must be an integer array, got {}", x.dtype())));
    }
    if let Some(w) = weights {
        if w.shape() != x.shape() {
            return Err(value_err(
                op,
                format!(
                    "weights of shape {:?} for x of shape {:?}: they must match",
                    w.shape(),
                    x.shape()
                ),
            ));
        }
        if w.dtype().is_complex() {
            return Err(value_err(op, format!("weights must be real, got {}", w.dtype())));
        }
    }
    let idx = x.cast_to(DType::Int64);
    let len = match (known_bound(x), host_bounds(x)) {
        (Some(b), _) if b <= minlength.max(1) => minlength,
        (_, Some(None)) => minlength,
        (_, Some(Some((lo, hi)))) => {
            if lo < 0 {
                return Err(value_err(
                    op,
                    format!("the first argument must be non-negative (found {lo})"),
                ));
            }
            (hi as usize + 1).max(minlength)
        }
        _ if x.size() == 0 => minlength,
        _ => {
            let (lo, hi) = (idx.try_min(None)?, idx.try_max(None)?);
            crate::materialize::try_eval_all(&[&lo, &hi])?;
            let (lo, hi) = (lo.try_item::<i64>()?, hi.try_item::<i64>()?);
            if lo < 0 {
                return Err(value_err(
                    op,
                    format!("the first argument must be non-negative (found {lo})"),
                ));
            }
            (hi as usize + 1).max(minlength)
        }
    };
    // The counts are `len` int64 or float64: a length no memory can hold is an error here.
    kiln_ir::shape::check_size(op, &[len], 8)?;
    let (base, values) = match weights {
        Some(w) => (zeros(&[len], DType::Float64), w.cast_to(DType::Float64)),
        None => (zeros(&[len], DType::Int64), full(&[x.size()], 1i64, DType::Int64)),
    };
    if x.size() == 0 {
        return Ok(base);
    }
    Array::apply(OpKind::ScatterAdd, Attrs::None, &[&base, &idx, &values])
}

/// [`try_bincount`], panicking on error.
#[track_caller]
pub fn bincount(x: &Array, weights: Option<&Array>, minlength: usize) -> Array {
    crate::unwrap(try_bincount(x, weights, minlength))
}

/// One entry of an index mixing integer arrays with basic indices (NumPy's "advanced"
/// indexing): `x[idx, 1:, ...]` is `x.try_index(&[(&idx).into(), (1..).into(), Index::ELLIPSIS])`.
#[derive(Clone, Debug)]
pub enum Index {
    /// An integer, a slice, a new axis or `...`.
    Basic(crate::views::SliceArg),
    /// An integer array (any integer dtype), or a bool array: a mask (see [`Array::try_index`]).
    Array(Array),
}

impl Index {
    /// `...`.
    pub const ELLIPSIS: Index = Index::Basic(crate::views::SliceArg::Ellipsis);
    /// `:`.
    pub const FULL: Index = Index::Basic(crate::views::SliceArg::FULL);
}

impl From<crate::views::SliceArg> for Index {
    fn from(s: crate::views::SliceArg) -> Index {
        Index::Basic(s)
    }
}
impl From<&Array> for Index {
    fn from(a: &Array) -> Index {
        Index::Array(a.clone())
    }
}
impl From<Array> for Index {
    fn from(a: Array) -> Index {
        Index::Array(a)
    }
}
impl From<i64> for Index {
    fn from(i: i64) -> Index {
        Index::Basic(i.into())
    }
}
impl From<std::ops::RangeFull> for Index {
    fn from(r: std::ops::RangeFull) -> Index {
        Index::Basic(r.into())
    }
}
impl<T: Into<i64>> From<std::ops::Range<T>> for Index {
    fn from(r: std::ops::Range<T>) -> Index {
        Index::Basic(r.into())
    }
}
impl<T: Into<i64>> From<std::ops::RangeFrom<T>> for Index {
    fn from(r: std::ops::RangeFrom<T>) -> Index {
        Index::Basic(r.into())
    }
}

impl Array {
    /// NumPy's indexing with integer arrays mixed with basic indices: `x[i, 1:, j]`. The
    /// arrays (and, when any array is present, the integers) broadcast together to a shape `B`;
    /// if they index adjacent axes, `B` takes their place in the result, else it comes first
    /// (NumPy's rule), the sliced axes following in order. Without arrays this is
    /// [`Array::try_slice`]. One gather, its positions fused with the slicing. A bool array is
    /// a mask over the axes it spans (`x[mask, 1:]`): NumPy's rule, its `nonzero()` coordinate
    /// arrays in its place, found with one synchronisation per mask (the count read back, see
    /// [`crate::nonzero`]); [`Array::try_mask`] is `x[mask]` alone.
    ///
    /// Errors: non-integer, non-bool index arrays; a mask whose extents differ from the axes it
    /// indexes, or a 0-d one among other entries; index arrays that do not broadcast; too many indices or
    /// two ellipses; host indices out of range (lazy and device ones wrap, see the
    /// [module docs](self)).
    pub fn try_index(&self, index: &[Index]) -> Result<Array> {
        use crate::views::SliceArg;
        let op = "index";
        // Boolean arrays are masks: NumPy indexes with their nonzero() coordinates instead.
        if let [Index::Array(m)] = index {
            if m.dtype() == DType::Bool {
                return self.try_mask(m);
            }
        }
        if index.iter().any(|i| matches!(i, Index::Array(a) if a.dtype() == DType::Bool)) {
            return self.try_index(&crate::compaction::expand_masks(self, index)?);
        }
        if !index.iter().any(|i| matches!(i, Index::Array(_))) {
            let basic: Vec<SliceArg> = index
                .iter()
                .map(|i| if let Index::Basic(s) = i { *s } else { unreachable!() })
                .collect();
            return self.try_slice(&basic);
        }
        // Integers among arrays are advanced indices (0-d arrays); arrays keep their axis in
        // the basic slicing, which leaves the other entries' effect on the shape.
        let mut basic = Vec::with_capacity(index.len());
        let mut arrays: Vec<(usize, Array)> = Vec::new(); // (entry number, int64 indices)
        for (e, entry) in index.iter().enumerate() {
            match entry {
                Index::Array(a) => {
                    arrays.push((e, index_array(op, a)?));
                    basic.push(SliceArg::FULL);
                }
                Index::Basic(SliceArg::Index(i)) => {
                    arrays.push((e, Array::from_vec(vec![*i], &[])));
                    basic.push(SliceArg::FULL);
                }
                Index::Basic(s) => basic.push(*s),
            }
        }
        let v = self.try_slice(&basic)?;
        // The axis of `v` each entry's array indexes: count the axes entries before it make.
        let consuming = basic
            .iter()
            .filter(|s| matches!(s, SliceArg::Index(_) | SliceArg::Range { .. }))
            .count();
        let ellipsis_axes = self.ndim().saturating_sub(consuming);
        let axis_of = |e: usize| -> usize {
            let mut axis = 0;
            for s in &basic[..e] {
                axis += match s {
                    SliceArg::Ellipsis => ellipsis_axes,
                    SliceArg::Index(_) => 0,
                    SliceArg::Range { .. } | SliceArg::NewAxis => 1,
                };
            }
            axis
        };
        let adv: Vec<usize> = arrays.iter().map(|(e, _)| axis_of(*e)).collect();
        for ((_, a), (&k, original)) in
            arrays.iter().zip(adv.iter().zip(index.iter().filter_map(|i| match i {
                Index::Array(a) => Some(Some(a)),
                Index::Basic(SliceArg::Index(_)) => Some(None),
                Index::Basic(_) => None,
            })))
        {
            let n = v.shape()[k];
            match original {
                Some(orig) => check_range(op, orig, n, &format!("axis {k}"))?,
                None => check_range(op, a, n, &format!("axis {k}"))?,
            }
        }
        let mut b_shape: Vec<usize> = Vec::new();
        for (_, a) in &arrays {
            b_shape = kiln_ir::shape::broadcast_shapes(op, &b_shape, a.shape())?.to_vec();
        }
        let adjacent = adv.windows(2).all(|w| w[1] == w[0] + 1);
        let rest: Vec<usize> = (0..v.ndim()).filter(|k| !adv.contains(k)).collect();
        let b_at = if adjacent { adv[0] } else { 0 };
        let mut out: Vec<usize> = Vec::new();
        let mut rest_at = vec![0usize; v.ndim()];
        for (j, &k) in rest.iter().enumerate() {
            rest_at[k] = if adjacent && k < adv[0] {
                k
            } else if adjacent {
                k - adv.len() + b_shape.len()
            } else {
                b_shape.len() + j
            };
        }
        for pos in 0..v.ndim() - adv.len() + b_shape.len() {
            out.push(match rest.iter().find(|&&k| rest_at[k] == pos) {
                Some(&k) => v.shape()[k],
                None => b_shape[pos - b_at],
            });
        }
        if kiln_ir::shape::numel(&out) > 0 && adv.iter().any(|&k| v.shape()[k] == 0) {
            return Err(value_err(op, "cannot index into an empty axis"));
        }
        let strides = c_strides(v.shape());
        let lead: Vec<i64> =
            (0..out.len())
                .map(|p| {
                    if p >= b_at && p < b_at + b_shape.len() {
                        b_shape[p - b_at] as i64
                    } else {
                        1
                    }
                })
                .collect();
        let mut pos = crate::creation::zeros(&out, DType::Int64);
        for ((_, a), &k) in arrays.iter().zip(&adv) {
            let a = a.broadcast_to_shape(&b_shape)?;
            let along = wrapped(&a, v.shape()[k])?.try_reshape(&lead)?.broadcast_to_shape(&out)?;
            pos = pos.try_add(along.try_multiply(strides[k])?)?;
        }
        for &k in &rest {
            if v.shape()[k] > 1 {
                pos =
                    pos.try_add(iota(DType::Int64, &out, rest_at[k]).try_multiply(strides[k])?)?;
            }
        }
        let flat = v.try_reshape(&[v.size() as i64])?;
        Array::apply(OpKind::Take, Attrs::None, &[&flat, &pos])
    }

    /// [`Array::try_index`], panicking on error.
    #[track_caller]
    pub fn index(&self, index: &[Index]) -> Array {
        crate::unwrap(self.try_index(index))
    }
}
