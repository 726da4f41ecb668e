//! Shapes, broadcasting, axes and strided layouts.

use std::fmt;

use smallvec::SmallVec;

use crate::error::IrError;

/// An array's shape: one extent per axis, C order. Rank 0 is a scalar.
pub type Shape = SmallVec<[usize; 4]>;

/// Number of elements of a shape (1 for rank 0).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The bytes of an array of `shape` with elements of `itemsize` bytes, `None` where the count
/// overflows or passes `isize::MAX` (no allocation can hold it: NumPy's "array is too big").
pub fn checked_nbytes(shape: &[usize], itemsize: usize) -> Option<usize> {
    shape
        .iter()
        .try_fold(itemsize, |acc, &d| acc.checked_mul(d))
        .filter(|&b| b <= isize::MAX as usize)
}

/// Whether an array of `shape` and elements of `itemsize` bytes can exist: empty, or its byte
/// count within `isize::MAX` ([`check_size`]'s test, without the error).
pub fn fits(shape: &[usize], itemsize: usize) -> bool {
    shape.contains(&0) || checked_nbytes(shape, itemsize).is_some()
}

/// Errs ([`IrError::TooBig`], naming `op`) where an array of `shape` and elements of
/// `itemsize` bytes cannot exist: its byte count overflows or passes `isize::MAX`. An empty
/// array is never too big: NumPy allows `(2**62, 2**62, 0)`.
pub fn check_size(op: &str, shape: &[usize], itemsize: usize) -> Result<(), IrError> {
    if fits(shape, itemsize) {
        return Ok(());
    }
    Err(IrError::TooBig { op: op.to_string(), shape: shape.into() })
}

/// Formats a shape as NumPy does: `(2, 3)`, `(5,)`, `()`.
pub struct ShapeDisplay<'a>(pub &'a [usize]);

impl fmt::Display for ShapeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => f.write_str("()"),
            [n] => write!(f, "({n},)"),
            dims => {
                f.write_str("(")?;
                for (i, d) in dims.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// NumPy's broadcasting of two shapes (`np.broadcast_shapes`): trailing axes aligned, extents equal
/// or 1. Error: [`IrError::Broadcast`].
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Result<Shape, IrError> {
    if a == b || b.is_empty() {
        return Ok(Shape::from_slice(a));
    }
    if a.is_empty() {
        return Ok(Shape::from_slice(b));
    }
    let rank = a.len().max(b.len());
    let mut out = Shape::with_capacity(rank);
    for i in 0..rank {
        let da = if i + a.len() >= rank { a[i + a.len() - rank] } else { 1 };
        let db = if i + b.len() >= rank { b[i + b.len() - rank] } else { 1 };
        out.push(match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(IrError::Broadcast {
                    op: op.to_string(),
                    shapes: vec![a.into(), b.into()],
                })
            }
        });
    }
    Ok(out)
}

/// Whether `from` broadcasts to `to` (NumPy's `broadcast_to` rule).
pub fn can_broadcast_to(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len()
        && from.iter().rev().zip(to.iter().rev()).all(|(&f, &t)| f == t || f == 1)
}

/// Normalises a possibly negative axis against `rank` (NumPy's `normalize_axis_index`).
pub fn normalize_axis(op: &str, axis: i64, rank: usize) -> Result<usize, IrError> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(IrError::AxisOutOfBounds { op: op.to_string(), axis, rank });
    }
    Ok(if axis < 0 { (axis + r) as usize } else { axis as usize })
}

/// Normalises a list of axes, sorted, rejecting repeats (NumPy's `normalize_axis_tuple`).
pub fn normalize_axes(
    op: &str,
    axes: &[i64],
    rank: usize,
) -> Result<SmallVec<[usize; 4]>, IrError> {
    let mut out: SmallVec<[usize; 4]> = SmallVec::new();
    for &a in axes {
        let n = normalize_axis(op, a, rank)?;
        if out.contains(&n) {
            return Err(IrError::RepeatedAxis { op: op.to_string(), axis: a });
        }
        out.push(n);
    }
    out.sort_unstable();
    Ok(out)
}

/// C-order (row-major) strides, in elements.
pub fn c_strides(shape: &[usize]) -> SmallVec<[isize; 4]> {
    let mut strides: SmallVec<[isize; 4]> = SmallVec::from_elem(0, shape.len());
    let mut acc = 1isize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1) as isize;
    }
    strides
}

/// A strided view of a flat buffer: element `idx` lives at `offset + Σ idx[k]·strides[k]`.
/// Strides are in elements and may be negative (flips) or zero (broadcasts).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    pub shape: Shape,
    pub strides: SmallVec<[isize; 4]>,
    pub offset: isize,
}

impl Layout {
    /// The C-contiguous layout of `shape` at offset 0.
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout { shape: shape.into(), strides: c_strides(shape), offset: 0 }
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Whether the view is C-contiguous (NumPy's `C_CONTIGUOUS` flag: axes of extent 1 and empty
    /// arrays ignore strides).
    pub fn is_c_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expect = 1isize;
        for i in (0..self.rank()).rev() {
            if self.shape[i] != 1 {
                if self.strides[i] != expect {
                    return false;
                }
                expect *= self.shape[i] as isize;
            }
        }
        true
    }

    /// Whether the view is Fortran-contiguous (`F_CONTIGUOUS`).
    pub fn is_f_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expect = 1isize;
        for i in 0..self.rank() {
            if self.shape[i] != 1 {
                if self.strides[i] != expect {
                    return false;
                }
                expect *= self.shape[i] as isize;
            }
        }
        true
    }

    /// The flat buffer position of a multi-index.
    pub fn position(&self, index: &[usize]) -> isize {
        self.offset + index.iter().zip(&self.strides).map(|(&i, &s)| i as isize * s).sum::<isize>()
    }

    /// Axes reordered: new axis `k` is old axis `perm[k]` (`np.transpose`).
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// Broadcast to `shape` (leading axes added, extent-1 axes stretched with stride 0).
    pub fn broadcast_to(&self, shape: &[usize]) -> Layout {
        let pad = shape.len() - self.rank();
        let strides =
            (0..shape.len())
                .map(|i| {
                    if i < pad || self.shape[i - pad] != shape[i] {
                        0
                    } else {
                        self.strides[i - pad]
                    }
                })
                .collect();
        Layout { shape: shape.into(), strides, offset: self.offset }
    }

    /// A basic slice per axis: `(start, step, len)` with `start` already in bounds.
    pub fn slice(&self, ranges: &[(usize, isize, usize)]) -> Layout {
        let mut offset = self.offset;
        let mut shape = Shape::new();
        let mut strides = SmallVec::new();
        for (axis, &(start, step, len)) in ranges.iter().enumerate() {
            if len > 0 {
                offset += start as isize * self.strides[axis];
            }
            shape.push(len);
            strides.push(self.strides[axis] * step);
        }
        Layout { shape, strides, offset }
    }

    /// Reverses the listed axes (`np.flip`).
    pub fn flip(&self, axes: &[usize]) -> Layout {
        let mut l = self.clone();
        for &a in axes {
            if l.shape[a] > 0 {
                l.offset += (l.shape[a] as isize - 1) * l.strides[a];
            }
            l.strides[a] = -l.strides[a];
        }
        l
    }

    /// Reshape without copying when the strides allow (as `np.reshape` tries first); `None` when
    /// a copy is needed.
    pub fn reshape(&self, shape: &[usize]) -> Option<Layout> {
        if self.is_c_contiguous() {
            let mut l = Layout::contiguous(shape);
            l.offset = self.offset;
            return Some(l);
        }
        // Group old axes into runs that are contiguous among themselves, then split runs.
        let old: Vec<(usize, isize)> = self
            .shape
            .iter()
            .copied()
            .zip(self.strides.iter().copied())
            .filter(|&(n, _)| n != 1)
            .collect();
        let mut new_strides: SmallVec<[isize; 4]> = SmallVec::from_elem(0, shape.len());
        let (mut oi, mut ni) = (0usize, 0usize);
        while ni < shape.len() {
            if shape[ni] == 1 {
                new_strides[ni] = 0;
                ni += 1;
                continue;
            }
            if oi >= old.len() {
                return None;
            }
            // Take old axes until their product equals the product of new axes taken.
            let (mut op, mut np) = (old[oi].0, shape[ni]);
            let (o0, n0) = (oi, ni);
            while op != np {
                if op < np {
                    oi += 1;
                    if oi >= old.len() {
                        return None;
                    }
                    op *= old[oi].0;
                } else {
                    ni += 1;
                    if ni >= shape.len() {
                        return None;
                    }
                    np *= shape[ni];
                }
            }
            for k in o0..oi {
                if old[k].1 != old[k + 1].1 * old[k + 1].0 as isize {
                    return None;
                }
            }
            let mut stride = old[oi].1;
            for k in (n0..=ni).rev() {
                new_strides[k] = stride;
                stride *= shape[k] as isize;
            }
            oi += 1;
            ni += 1;
        }
        if oi != old.len() {
            return None;
        }
        Some(Layout { shape: shape.into(), strides: new_strides, offset: self.offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes("add", &[2, 1, 3], &[4, 1]).unwrap().as_slice(), &[2, 4, 3]);
        assert_eq!(broadcast_shapes("add", &[], &[5]).unwrap().as_slice(), &[5]);
        let e = broadcast_shapes("add", &[2, 3], &[4]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "add: operands could not be broadcast together with shapes (2, 3) (4,)"
        );
    }

    #[test]
    fn axes() {
        assert_eq!(normalize_axis("sum", -1, 3).unwrap(), 2);
        assert!(normalize_axis("sum", 3, 3).is_err());
        assert!(normalize_axes("sum", &[0, -3], 3).is_err());
        assert_eq!(normalize_axes("sum", &[2, 0], 3).unwrap().as_slice(), &[0, 2]);
    }

    #[test]
    fn layouts() {
        let l = Layout::contiguous(&[2, 3]);
        assert!(l.is_c_contiguous() && !l.is_f_contiguous());
        let t = l.permute(&[1, 0]);
        assert!(t.is_f_contiguous() && !t.is_c_contiguous());
        assert_eq!(t.position(&[2, 1]), 5);
        let f = l.flip(&[1]);
        assert_eq!(f.position(&[0, 0]), 2);
        assert_eq!(f.strides.as_slice(), &[3, -1]);
        assert!(t.reshape(&[6]).is_none());
        let r = l.reshape(&[3, 2]).unwrap();
        assert_eq!(r.strides.as_slice(), &[2, 1]);
        let b = Layout::contiguous(&[3]).broadcast_to(&[2, 3]);
        assert_eq!(b.strides.as_slice(), &[0, 1]);
        let s = Layout::contiguous(&[10]).slice(&[(9, -2, 5)]);
        assert_eq!((s.offset, s.strides[0]), (9, -2));
        // A transposed view split along a contiguous run.
        let t3 = Layout::contiguous(&[4, 6]).permute(&[1, 0]);
        let r3 = t3.reshape(&[2, 3, 4]).unwrap();
        assert_eq!(r3.strides.as_slice(), &[3, 1, 6]);
    }
}
