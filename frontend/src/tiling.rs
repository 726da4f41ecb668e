//! NumPy's repetitions and rotations as views: `tile` and `repeat` (a broadcast view reshaped,
//! an index map that fuses with the producer and the reader), `rot90` (flips and a
//! transpose), `broadcast_arrays` (broadcast views). `repeat` with a count per element is a
//! gather at positions made on the host from the counts.

use kiln_ir::shape::{broadcast_shapes, normalize_axis};

use crate::error::{value_err, Result};
use crate::Array;

impl Array {
    /// `np.tile(a, reps)`: `a` repeated `reps[i]` times along axis `i`. When `reps` is longer
    /// than `a.ndim()`, `a` gains leading axes of length 1; when shorter, `reps` gains leading
    /// 1s (as NumPy). Result shape: `a.shape[i] * reps[i]`, `a`'s dtype. A view (`a`
    /// broadcast along new axes, then reshaped): no copy until a kernel reads it.
    pub fn try_tile(&self, reps: &[usize]) -> Result<Array> {
        let d = reps.len().max(self.ndim());
        let shape: Vec<usize> =
            std::iter::repeat_n(1, d - self.ndim()).chain(self.shape().iter().copied()).collect();
        let reps: Vec<usize> =
            std::iter::repeat_n(1, d - reps.len()).chain(reps.iter().copied()).collect();
        let a = self.try_reshape(&shape.iter().map(|&n| n as i64).collect::<Vec<_>>())?;
        // (r0, n0, r1, n1, ...): a new axis of length r before each axis, then merged.
        let inserted: Vec<i64> = (0..d).map(|k| 2 * k as i64).collect();
        let wide: Vec<usize> = reps.iter().zip(&shape).flat_map(|(&r, &n)| [r, n]).collect();
        kiln_ir::shape::check_size("tile", &wide, self.dtype().itemsize())?;
        let out: Vec<i64> = reps.iter().zip(&shape).map(|(&r, &n)| (r * n) as i64).collect();
        a.try_expand_dims(&inserted)?.try_broadcast_to(&wide)?.try_reshape(&out)
    }

    /// `np.tile`. Panics where [`Array::try_tile`] errs.
    #[track_caller]
    pub fn tile(&self, reps: &[usize]) -> Array {
        crate::unwrap(self.try_tile(reps))
    }

    /// `np.repeat(a, repeats, axis)`: each element repeated `repeats` times along `axis`
    /// (`None`: of the flattened array, a 1-D result). A view (broadcast and reshape), `a`'s
    /// dtype. Errors: an axis out of range.
    pub fn try_repeat(&self, repeats: usize, axis: Option<i64>) -> Result<Array> {
        let (a, ax) = self.repeat_axis(axis)?;
        let mut shape = a.shape().to_vec();
        shape.insert(ax + 1, repeats);
        kiln_ir::shape::check_size("repeat", &shape, a.dtype().itemsize())?;
        let mut out: Vec<i64> = a.shape().iter().map(|&n| n as i64).collect();
        out[ax] *= repeats as i64;
        a.try_expand_dims(&[ax as i64 + 1])?.try_broadcast_to(&shape)?.try_reshape(&out)
    }

    /// `np.repeat`. Panics where [`Array::try_repeat`] errs.
    #[track_caller]
    pub fn repeat(&self, repeats: usize, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_repeat(repeats, axis))
    }

    /// `np.repeat(a, repeats, axis)` with one count per element along `axis` (`None`: of the
    /// flattened array): element `i` repeated `repeats[i]` times; a one-element `repeats`
    /// repeats every element. A gather at positions made on the host from the counts (the
    /// counts are host values: no device round trip). Errors: an axis out of range; `repeats`
    /// of another length than the axis (NumPy's broadcast error).
    pub fn try_repeat_each(&self, repeats: &[usize], axis: Option<i64>) -> Result<Array> {
        let (a, ax) = self.repeat_axis(axis)?;
        let n = a.shape()[ax];
        if repeats.len() == 1 {
            return a.try_repeat(repeats[0], Some(ax as i64));
        }
        if repeats.len() != n {
            return Err(value_err(
                "repeat",
                format!(
                    "operands could not be broadcast together with shape ({n},) ({},)",
                    repeats.len()
                ),
            ));
        }
        // The positions are a host vector of the result's extent: refused, not allocated, where
        // no memory can hold them (their count overflowing, or far beyond memory).
        let too_big = || kiln_ir::IrError::TooBig { op: "repeat".into(), shape: a.shape().into() };
        let total =
            repeats.iter().try_fold(0usize, |s, &r| s.checked_add(r)).ok_or_else(too_big)?;
        let mut out = a.shape().to_vec();
        out[ax] = total;
        kiln_ir::shape::check_size("repeat", &out, a.dtype().itemsize())?;
        if !kiln_ir::host::can_allocate(total.saturating_mul(8)) {
            return Err(too_big().into());
        }
        let positions: Vec<i64> = repeats
            .iter()
            .enumerate()
            .flat_map(|(i, &r)| std::iter::repeat_n(i as i64, r))
            .collect();
        let len = positions.len();
        a.try_take(&Array::from_vec(positions, &[len]), Some(ax as i64))
    }

    /// `np.repeat` with counts per element. Panics where [`Array::try_repeat_each`] errs.
    #[track_caller]
    pub fn repeat_each(&self, repeats: &[usize], axis: Option<i64>) -> Array {
        crate::unwrap(self.try_repeat_each(repeats, axis))
    }

    /// The array `repeat` works on (flattened for `None`) and its normalised axis.
    fn repeat_axis(&self, axis: Option<i64>) -> Result<(Array, usize)> {
        match axis {
            None => Ok((self.try_reshape(&[self.size() as i64])?, 0)),
            Some(ax) => Ok((self.clone(), normalize_axis("repeat", ax, self.ndim())?)),
        }
    }

    /// `np.rot90(m, k, axes)`: rotated by 90° `k` times (negative: clockwise) in the plane of
    /// `axes`, from the first axis toward the second. A view (flips and a transpose).
    /// Errors: fewer than 2 dimensions, equal axes, an axis out of range.
    pub fn try_rot90(&self, k: i64, axes: (i64, i64)) -> Result<Array> {
        let nd = self.ndim();
        if nd < 2 {
            return Err(value_err(
                "rot90",
                format!(
                    "len(axes) must be 2 and the array at least 2-d (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let a0 = normalize_axis("rot90", axes.0, nd)?;
        let a1 = normalize_axis("rot90", axes.1, nd)?;
        if a0 == a1 {
            return Err(value_err("rot90", format!("Axes must be different (axes {axes:?})")));
        }
        let mut swap: Vec<i64> = (0..nd as i64).collect();
        swap.swap(a0, a1);
        let (a0, a1) = (a0 as i64, a1 as i64);
        match k.rem_euclid(4) {
            0 => Ok(self.clone()),
            1 => self.try_flip(Some(&[a1]))?.try_permute(&swap),
            2 => self.try_flip(Some(&[a0, a1])),
            _ => self.try_permute(&swap)?.try_flip(Some(&[a1])),
        }
    }

    /// `np.rot90`. Panics where [`Array::try_rot90`] errs.
    #[track_caller]
    pub fn rot90(&self, k: i64, axes: (i64, i64)) -> Array {
        crate::unwrap(self.try_rot90(k, axes))
    }
}

/// `np.broadcast_arrays(*arrays)`: each array as a view broadcast to the arrays' common shape
/// (NumPy's rules), dtypes kept. Errors: shapes that do not broadcast.
pub fn try_broadcast_arrays(arrays: &[&Array]) -> Result<Vec<Array>> {
    let mut shape: Vec<usize> = Vec::new();
    for a in arrays {
        shape = broadcast_shapes("broadcast_arrays", &shape, a.shape())?.to_vec();
    }
    arrays.iter().map(|a| a.try_broadcast_to(&shape)).collect()
}

/// `np.broadcast_arrays`. Panics where [`try_broadcast_arrays`] errs.
#[track_caller]
pub fn broadcast_arrays(arrays: &[&Array]) -> Vec<Array> {
    crate::unwrap(try_broadcast_arrays(arrays))
}
