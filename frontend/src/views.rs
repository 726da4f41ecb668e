//! Views (reshape, transpose, broadcast, slicing, expand/squeeze, flip) and copies (concatenate,
//! stack, ascontiguousarray). Views are IR nodes that re-index their input: no data is copied
//! when they are written, and the compiler folds them into index math.

use kiln_ir::graph::SliceDim;
use kiln_ir::promote::result_type_many;
use kiln_ir::shape::{normalize_axes, normalize_axis};
use kiln_ir::{Attrs, IrError, OpKind, Shape};
use smallvec::SmallVec;

use crate::array::Array;
use crate::error::{value_err, Result};

/// One entry of a basic index: NumPy's `x[i]`, `x[a:b:c]`, `x[None]`, `x[...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceArg {
    /// An integer index (negative counts from the end); removes the axis.
    Index(i64),
    /// `start:stop:step`; `None` bounds take NumPy's defaults.
    Range { start: Option<i64>, stop: Option<i64>, step: i64 },
    /// `np.newaxis`: a new axis of extent 1.
    NewAxis,
    /// `...`: as many full slices as needed.
    Ellipsis,
}

impl SliceArg {
    /// `:` (the whole axis).
    pub const FULL: SliceArg = SliceArg::Range { start: None, stop: None, step: 1 };
}

impl From<i64> for SliceArg {
    fn from(i: i64) -> SliceArg {
        SliceArg::Index(i)
    }
}
impl From<i32> for SliceArg {
    fn from(i: i32) -> SliceArg {
        SliceArg::Index(i as i64)
    }
}
impl From<std::ops::RangeFull> for SliceArg {
    fn from(_: std::ops::RangeFull) -> SliceArg {
        SliceArg::FULL
    }
}
impl<T: Into<i64>> From<std::ops::Range<T>> for SliceArg {
    fn from(r: std::ops::Range<T>) -> SliceArg {
        SliceArg::Range { start: Some(r.start.into()), stop: Some(r.end.into()), step: 1 }
    }
}
impl<T: Into<i64>> From<std::ops::RangeFrom<T>> for SliceArg {
    fn from(r: std::ops::RangeFrom<T>) -> SliceArg {
        SliceArg::Range { start: Some(r.start.into()), stop: None, step: 1 }
    }
}
impl<T: Into<i64>> From<std::ops::RangeTo<T>> for SliceArg {
    fn from(r: std::ops::RangeTo<T>) -> SliceArg {
        SliceArg::Range { start: None, stop: Some(r.end.into()), step: 1 }
    }
}

impl SliceArg {
    /// The same range with a step (`a:b:step`); an index or new axis is returned unchanged.
    pub fn step(self, step: i64) -> SliceArg {
        match self {
            SliceArg::Range { start, stop, .. } => SliceArg::Range { start, stop, step },
            other => other,
        }
    }
}

/// Builds a basic index like NumPy's: `s![.., 1..3, ..;-1, 2]` is `x[:, 1:3, ::-1, 2]`. Entries
/// are integers, Rust ranges with an optional `;step`, `..` and [`SliceArg`]s.
#[macro_export]
macro_rules! s {
    ($($e:expr $(; $step:expr)?),* $(,)?) => {
        [$( $crate::SliceArg::from($e)$(.step($step))? ),*]
    };
}

impl Array {
    /// `np.reshape(x, shape)`; one extent may be `-1` (inferred from the others). Errors: sizes
    /// that differ ([`IrError::Reshape`]), more than one `-1`, a `-1` beside a zero extent
    /// (NumPy's "cannot reshape array of size 0 into shape (-1, 0)": any extent would fit), known
    /// extents whose product overflows.
    pub fn try_reshape(&self, shape: &[i64]) -> Result<Array> {
        let unknown = shape.iter().filter(|&&d| d == -1).count();
        if unknown > 1 || shape.iter().any(|&d| d < -1) {
            return Err(value_err("reshape", format!("invalid shape {shape:?}")));
        }
        let size = self.size();
        let known = shape
            .iter()
            .filter(|&&d| d != -1)
            .try_fold(1usize, |p, &d| p.checked_mul(d as usize))
            .filter(|&k| unknown == 0 || k != 0);
        let Some(known) = known else {
            let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
            let to = match dims.as_slice() {
                [d] => format!("({d},)"),
                _ => format!("({})", dims.join(", ")),
            };
            return Err(value_err(
                "reshape",
                format!("cannot reshape array of size {size} into shape {to}"),
            ));
        };
        // An inferred extent that does not divide is refused by the node's rule (its size).
        let new: Shape =
            shape.iter().map(|&d| if d == -1 { size / known } else { d as usize }).collect();
        if new.as_slice() == self.shape() {
            return Ok(self.clone());
        }
        Array::apply(OpKind::Reshape, Attrs::Shape { shape: new }, &[self])
    }

    /// `np.reshape`. Panics where [`Array::try_reshape`] errs.
    #[track_caller]
    pub fn reshape(&self, shape: &[i64]) -> Array {
        crate::unwrap(self.try_reshape(shape))
    }

    /// `x.ravel()` / `x.flatten()`: the elements in C order as a 1-D array.
    pub fn ravel(&self) -> Array {
        self.reshape(&[-1])
    }

    /// `np.transpose(x, axes)`: result axis `k` is input axis `axes[k]` (negative allowed).
    /// Errors: `axes` not a permutation of the array's axes.
    pub fn try_permute(&self, axes: &[i64]) -> Result<Array> {
        self.permuted(axes).map_err(|e| e.within("permute"))
    }

    /// [`Array::try_permute`]'s steps (errors named `transpose`, NumPy's function).
    fn permuted(&self, axes: &[i64]) -> Result<Array> {
        if axes.len() != self.ndim() {
            return Err(IrError::InvalidAttrs {
                op: "transpose".into(),
                message: format!("axes {axes:?} don't match array of dimension {}", self.ndim()),
            }
            .into());
        }
        let perm: SmallVec<[usize; 4]> = axes
            .iter()
            .map(|&a| normalize_axis("transpose", a, self.ndim()))
            .collect::<Result<_, _>>()?;
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self.clone());
        }
        Array::apply(OpKind::Permute, Attrs::Perm { perm }, &[self])
    }

    /// `np.transpose(x, axes)`. Panics where [`Array::try_permute`] errs.
    #[track_caller]
    pub fn permute(&self, axes: &[i64]) -> Array {
        crate::unwrap(self.try_permute(axes))
    }

    /// `x.T` / `np.transpose(x)`: axes reversed.
    pub fn t(&self) -> Array {
        let axes: Vec<i64> = (0..self.ndim() as i64).rev().collect();
        self.permute(&axes)
    }

    /// `np.transpose(x)`, as [`Array::t`].
    pub fn transpose(&self) -> Array {
        self.t()
    }

    /// `np.swapaxes(x, a, b)`.
    #[track_caller]
    pub fn swapaxes(&self, a: i64, b: i64) -> Array {
        let n = self.ndim();
        let a = crate::unwrap(normalize_axis("swapaxes", a, n).map_err(Into::into));
        let b = crate::unwrap(normalize_axis("swapaxes", b, n).map_err(Into::into));
        let mut axes: Vec<i64> = (0..n as i64).collect();
        axes.swap(a, b);
        self.permute(&axes)
    }

    /// `np.broadcast_to(x, shape)`. Errors: shapes that do not broadcast.
    pub fn try_broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        self.broadcast_to_shape(shape)
    }

    /// `np.broadcast_to`. Panics where [`Array::try_broadcast_to`] errs.
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[usize]) -> Array {
        crate::unwrap(self.try_broadcast_to(shape))
    }

    /// Basic indexing, `x[idx]` (see [`s!`]): integers remove their axis, ranges slice with any
    /// non-zero step, `NewAxis` inserts an axis, `Ellipsis` stands for the remaining axes.
    /// Errors: too many indices, an index out of bounds, a zero step.
    pub fn try_slice(&self, idx: &[SliceArg]) -> Result<Array> {
        let n_ell = idx.iter().filter(|a| matches!(a, SliceArg::Ellipsis)).count();
        let consuming =
            idx.iter().filter(|a| matches!(a, SliceArg::Index(_) | SliceArg::Range { .. })).count();
        if n_ell > 1 {
            return Err(value_err("slice", "an index can only have a single ellipsis ('...')"));
        }
        if consuming > self.ndim() {
            return Err(value_err(
                "slice",
                format!("too many indices for array: array is {}-dimensional, but {consuming} were indexed", self.ndim()),
            ));
        }
        // Expand the ellipsis (or pad at the end) with full slices.
        let mut full: Vec<SliceArg> = Vec::new();
        for a in idx {
            if let SliceArg::Ellipsis = a {
                full.extend(std::iter::repeat_n(SliceArg::FULL, self.ndim() - consuming));
            } else {
                full.push(*a);
            }
        }
        if n_ell == 0 {
            full.extend(std::iter::repeat_n(SliceArg::FULL, self.ndim() - consuming));
        }
        let mut dims: SmallVec<[SliceDim; 4]> = SmallVec::new();
        let mut out_shape: Vec<i64> = Vec::new();
        let mut axis = 0;
        for a in &full {
            match *a {
                SliceArg::Index(i) => {
                    let n = self.shape()[axis] as i64;
                    if i < -n || i >= n {
                        return Err(value_err(
                            "slice",
                            format!("index {i} is out of bounds for axis {axis} with size {n}"),
                        ));
                    }
                    let i = if i < 0 { i + n } else { i } as usize;
                    dims.push(SliceDim { start: i, step: 1, len: 1 });
                    axis += 1;
                }
                SliceArg::Range { start, stop, step } => {
                    if step == 0 {
                        return Err(value_err("slice", "slice step cannot be zero"));
                    }
                    let d = SliceDim::normalize(
                        self.shape()[axis],
                        start.map(|v| v as isize),
                        stop.map(|v| v as isize),
                        step as isize,
                    );
                    out_shape.push(d.len as i64);
                    dims.push(d);
                    axis += 1;
                }
                SliceArg::NewAxis => out_shape.push(1),
                SliceArg::Ellipsis => unreachable!("expanded above"),
            }
        }
        let identity =
            dims.iter().zip(self.shape()).all(|(d, &n)| d.start == 0 && d.step == 1 && d.len == n);
        let sliced = if identity {
            self.clone()
        } else {
            Array::apply(OpKind::Slice, Attrs::Slice { dims }, &[self])?
        };
        sliced.try_reshape(&out_shape)
    }

    /// `x[idx]`. Panics where [`Array::try_slice`] errs.
    #[track_caller]
    pub fn slice(&self, idx: &[SliceArg]) -> Array {
        crate::unwrap(self.try_slice(idx))
    }

    /// `np.expand_dims(x, axis)`: new axes of extent 1 at the given positions of the result.
    pub fn try_expand_dims(&self, axes: &[i64]) -> Result<Array> {
        let ax = normalize_axes("expand_dims", axes, self.ndim() + axes.len())?;
        Array::apply(OpKind::ExpandDims, Attrs::Axes { axes: ax }, &[self])
    }

    /// `np.expand_dims`. Panics where [`Array::try_expand_dims`] errs.
    #[track_caller]
    pub fn expand_dims(&self, axes: &[i64]) -> Array {
        crate::unwrap(self.try_expand_dims(axes))
    }

    /// `np.squeeze(x, axis)`: `None` removes every axis of extent 1. Errors: a listed axis whose
    /// extent is not 1.
    pub fn try_squeeze(&self, axes: Option<&[i64]>) -> Result<Array> {
        let ax: SmallVec<[usize; 4]> = match axes {
            Some(a) => normalize_axes("squeeze", a, self.ndim())?,
            None => (0..self.ndim()).filter(|&i| self.shape()[i] == 1).collect(),
        };
        if ax.is_empty() {
            return Ok(self.clone());
        }
        Array::apply(OpKind::Squeeze, Attrs::Axes { axes: ax }, &[self])
    }

    /// `np.squeeze`. Panics where [`Array::try_squeeze`] errs.
    #[track_caller]
    pub fn squeeze(&self, axes: Option<&[i64]>) -> Array {
        crate::unwrap(self.try_squeeze(axes))
    }

    /// `np.flip(x, axis)`: `None` reverses every axis.
    pub fn try_flip(&self, axes: Option<&[i64]>) -> Result<Array> {
        let ax: SmallVec<[usize; 4]> = match axes {
            Some(a) => normalize_axes("flip", a, self.ndim())?,
            None => (0..self.ndim()).collect(),
        };
        if ax.is_empty() {
            return Ok(self.clone());
        }
        Array::apply(OpKind::Flip, Attrs::Axes { axes: ax }, &[self])
    }

    /// `np.flip`. Panics where [`Array::try_flip`] errs.
    #[track_caller]
    pub fn flip(&self, axes: Option<&[i64]>) -> Array {
        crate::unwrap(self.try_flip(axes))
    }

    /// `np.ascontiguousarray(x)`: a C-contiguous copy (a no-op for arrays already held, and for
    /// a view of a copy's buffer that is C-contiguous: [`Array::flags`]).
    pub fn ascontiguousarray(&self) -> Array {
        if self.is_materialized()
            || (crate::layout::over(self).is_some() && self.flags().c_contiguous)
        {
            return self.clone();
        }
        crate::unwrap(Array::apply(OpKind::Contiguous, Attrs::None, &[self]))
    }
}

fn join(op: OpKind, arrays: &[&Array], axis: i64) -> Result<Array> {
    let name = op.name();
    if arrays.is_empty() {
        return Err(value_err(name, "need at least one array to concatenate"));
    }
    let rank = arrays[0].ndim() + (op == OpKind::Stack) as usize;
    if op == OpKind::Concatenate && rank == 0 {
        return Err(value_err(name, "zero-dimensional arrays cannot be concatenated"));
    }
    let axis = normalize_axis(name, axis, rank)?;
    let dtypes: Vec<_> = arrays.iter().map(|a| a.dtype()).collect();
    let dtype = result_type_many(&dtypes).expect("non-empty");
    let cast: Vec<Array> = arrays.iter().map(|a| a.cast_to(dtype)).collect();
    let refs: Vec<&Array> = cast.iter().collect();
    Array::apply(op, Attrs::Axis { axis }, &refs)
}

/// `np.concatenate(arrays, axis)`: dtypes promote. Errors: no arrays, ranks or extents (off
/// `axis`) that differ, a bad axis.
pub fn try_concatenate(arrays: &[&Array], axis: i64) -> Result<Array> {
    join(OpKind::Concatenate, arrays, axis)
}

/// `np.concatenate`. Panics where [`try_concatenate`] errs.
#[track_caller]
pub fn concatenate(arrays: &[&Array], axis: i64) -> Array {
    crate::unwrap(try_concatenate(arrays, axis))
}

/// `np.stack(arrays, axis)`: joined along a new axis; shapes must be equal.
pub fn try_stack(arrays: &[&Array], axis: i64) -> Result<Array> {
    join(OpKind::Stack, arrays, axis)
}

/// `np.stack`. Panics where [`try_stack`] errs.
#[track_caller]
pub fn stack(arrays: &[&Array], axis: i64) -> Array {
    crate::unwrap(try_stack(arrays, axis))
}
