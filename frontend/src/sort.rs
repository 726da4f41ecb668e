//! Sorting along an axis (`np.sort`, `np.argsort`) and what is built on it.
//!
//! A sort is an op of its own (op class `Sort`): a region reading its input from memory. NaN
//! sorts last, -0.0 equals 0.0, complex values order by real then imaginary part (NumPy's
//! rules), and equal elements keep their order: `argsort` is `np.argsort(kind='stable')`.
//! On the host the lines are sorted by Rust's stable sort in parallel; the GPU backend runs
//! the sort on the host between copies (no GPU sort kernel yet).

use kiln_ir::OpKind;

use crate::error::{value_err, Result};
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

    /// `np.partition(a, kth, axis)`: each line along `axis` rearranged so that the element at
    /// each position of `kth` (negative counting from the end) is the one a full sort puts
    /// there, smaller or equal elements before it and greater or equal after. NumPy leaves the
    /// order within the parts unspecified; kiln returns the fully sorted line (a sort region:
    /// a valid partition, not yet a selection), so the result equals [`Array::try_sort`]'s.
    /// Same dtype and shape (flattened for `None`).
    ///
    /// Errors: `axis` out of range, `kth` empty or out of range for the axis.
    pub fn try_partition(&self, kth: &[i64], axis: Option<i64>) -> Result<Array> {
        self.check_kth("partition", kth, axis)?;
        self.try_sort(axis)
    }

    /// `np.partition`. Panics where [`Array::try_partition`] errs.
    #[track_caller]
    pub fn partition(&self, kth: &[i64], axis: Option<i64>) -> Array {
        crate::unwrap(self.try_partition(kth, axis))
    }

    /// `np.argpartition(a, kth, axis)`: int64 positions along `axis` that partition each line
    /// as [`Array::try_partition`] does (kiln's: the stable sorting order, equal to
    /// [`Array::try_argsort`]'s).
    ///
    /// Errors: as [`Array::try_partition`].
    pub fn try_argpartition(&self, kth: &[i64], axis: Option<i64>) -> Result<Array> {
        self.check_kth("argpartition", kth, axis)?;
        self.try_argsort(axis)
    }

    /// `np.argpartition`. Panics where [`Array::try_argpartition`] errs.
    #[track_caller]
    pub fn argpartition(&self, kth: &[i64], axis: Option<i64>) -> Array {
        crate::unwrap(self.try_argpartition(kth, axis))
    }

    /// Checks `kth` against the length of the axis (NumPy's ValueError: "kth(=k) out of
    /// bounds (n)").
    fn check_kth(&self, op: &str, kth: &[i64], axis: Option<i64>) -> Result<()> {
        let n = match axis {
            None => self.size() as i64,
            Some(a) => {
                let a = kiln_ir::shape::normalize_axis(op, a, self.ndim())?;
                self.shape()[a] as i64
            }
        };
        if kth.is_empty() {
            return Err(value_err(op, "`kth` is empty"));
        }
        match kth.iter().find(|&&k| k < -n || k >= n) {
            Some(k) => Err(value_err(op, format!("kth(={k}) out of bounds ({n})"))),
            None => Ok(()),
        }
    }
}

/// `np.lexsort(keys, axis)`: int64 positions along `axis` that sort the lines by the last key,
/// ties broken by the one before it, and so on to the first (each key ordered as
/// [`Array::try_argsort`] orders it: NaN last, stable). The keys share one shape; the result has
/// it. Made of stable argsorts from the first key to the last, each of the previous key's
/// order gathered (`take_along_axis`): `keys.len()` sort regions.
///
/// Errors: no keys, keys of different shapes, `axis` out of range (a 0-d key has no axis).
pub fn try_lexsort(keys: &[&Array], axis: i64) -> Result<Array> {
    let op = "lexsort";
    let Some(first) = keys.first() else {
        return Err(value_err(op, "need at least one key"));
    };
    if let Some(k) = keys.iter().find(|k| k.shape() != first.shape()) {
        return Err(value_err(
            op,
            format!("all keys need the same shape: {:?} and {:?}", first.shape(), k.shape()),
        ));
    }
    let a = kiln_ir::shape::normalize_axis(op, axis, first.ndim())? as i64;
    let mut order = first.try_argsort(Some(a))?;
    for k in &keys[1..] {
        let by = k.try_take_along_axis(&order, a)?.try_argsort(Some(a))?;
        order = order.try_take_along_axis(&by, a)?;
    }
    Ok(order)
}

/// [`try_lexsort`], panicking on error.
#[track_caller]
pub fn lexsort(keys: &[&Array], axis: i64) -> Array {
    crate::unwrap(try_lexsort(keys, axis))
}
