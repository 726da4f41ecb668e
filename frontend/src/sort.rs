//! Sorting along an axis (`np.sort`, `np.argsort`) and what is built on it.
//!
//! A sort is an op of its own (op class `Sort`): a region reading its input from memory. NaN
//! sorts last, -0.0 equals 0.0, complex values order by real then imaginary part (NumPy's
//! rules), and equal elements keep their order: `argsort` is `np.argsort(kind='stable')`.
//! On the host the lines are sorted by Rust's stable sort in parallel; the GPU backend runs
//! the sort on the host between copies (no GPU sort kernel yet).

use kiln_ir::OpKind;

use crate::error::Result;
use crate::Array;

impl Array {
    /// `np.sort(a, axis)` (a sorted copy; NumPy's default axis is `Some(-1)`): the elements of
    /// each line along `axis` in ascending order, NaN last, complex by real then imaginary
    /// part. Same dtype and shape (flattened for `None`).
    ///
    /// Errors: `axis` out of range (a 0-d array has no axis; `None` works on it).
    pub fn try_sort(&self, axis: Option<i64>) -> Result<Array> {
        self.along_axis(OpKind::Sort, axis)
    }

    /// `np.sort`. Panics where [`Array::try_sort`] errs.
    #[track_caller]
    pub fn sort(&self, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_sort(axis))
    }

    /// `np.argsort(a, axis, kind='stable')`: int64 positions along `axis` that sort each line
    /// as [`Array::try_sort`] does, equal elements in their order. Same shape (flattened for
    /// `None`).
    ///
    /// Errors: `axis` out of range.
    pub fn try_argsort(&self, axis: Option<i64>) -> Result<Array> {
        self.along_axis(OpKind::Argsort, axis)
    }

    /// `np.argsort`. Panics where [`Array::try_argsort`] errs.
    #[track_caller]
    pub fn argsort(&self, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_argsort(axis))
    }
}
