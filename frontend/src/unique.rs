//! Distinct elements: `np.unique` and NumPy 2's `unique_values`, `unique_counts`,
//! `unique_inverse`. Their length depends on the data: the flattened array is sorted (a sort
//! region), runs of equal neighbours are marked and numbered by a cumsum, and the count of runs
//! is read back: **one device-to-host synchronisation** per call. The values are then gathered
//! at the runs' first positions (found by an int64 `add_at` of each run's start position), the
//! counts by `add_at`, the inverse by a `put` through the sort's order (on the GPU it runs on
//! the host between copies for now). Without the inverse or first occurrences, the elements
//! are sorted by `sort` (no argsort and gather); `unique` and `unique_values` then keep each
//! run's first element by one compaction kernel (`compact`, the runs' starts computed in it,
//! and the count read back).

use kiln_ir::DType;

use crate::error::{value_err, Result};
use crate::{Array, SliceArg};

/// The flattening of `x` sorted, and the sort's order (an argsort and a gather).
fn sorted_with_order(x: &Array) -> Result<(Array, Array)> {
    let flat = x.try_reshape(&[x.size() as i64])?;
    let order = flat.try_argsort(None)?;
    Ok((flat.try_take(&order, None)?, order))
}

/// The flattening of `x` sorted (its order unused).
fn sorted(x: &Array) -> Result<Array> {
    x.try_reshape(&[x.size() as i64])?.try_sort(None)
}

/// Where the runs of equal neighbours of a sorted 1-D `sorted` (not empty) start: a bool of its
/// length. NaNs are one run when `equal_nan`, else each its own (NumPy 2's `unique_*`
/// functions).
fn run_starts(sorted: &Array, equal_nan: bool) -> Result<Array> {
    let range = |start: Option<i64>, stop: Option<i64>| [SliceArg::Range { start, stop, step: 1 }];
    let (later, earlier) =
        (sorted.try_slice(&range(Some(1), None))?, sorted.try_slice(&range(None, Some(-1)))?);
    let mut differ = later.try_not_equal(&earlier)?;
    if equal_nan && sorted.dtype().is_inexact() {
        let both = later.try_isnan()?.try_logical_and(earlier.try_isnan()?)?;
        differ = differ.try_logical_and(both.try_logical_not()?)?;
    }
    crate::try_concatenate(&[&crate::full(&[1], true, DType::Bool), &differ], 0)
}

/// The runs of a sorted 1-D `sorted` (not empty): (each element's run number, the number of
/// runs, where runs start), NaNs as [`run_starts`] says.
fn runs(sorted: &Array, equal_nan: bool) -> Result<(Array, usize, Array)> {
    let n = sorted.size();
    let range = |start: Option<i64>, stop: Option<i64>| [SliceArg::Range { start, stop, step: 1 }];
    let starts = run_starts(sorted, equal_nan)?;
    let run = starts.try_cumsum(None)?.try_subtract(1i64)?;
    let last = run.try_slice(&range(Some(n as i64 - 1), None))?;
    let count = last.try_item::<i64>()? as usize + 1;
    Ok((run, count, starts))
}

/// The first value of each run, in order (as NumPy keeps it: of -0.0 and 0.0 the first): a
/// gather at each run's first position, the sum over the run of its start's position (the
/// others add 0: an integer `add_at`, on the GPU a scatter kernel).
fn run_values(sorted: &Array, run: &Array, count: usize, starts: &Array) -> Result<Array> {
    let position = crate::arange(sorted.size() as i64);
    let start = crate::try_where_(starts, &position, 0i64)?;
    let first = crate::zeros(&[count], DType::Int64).try_add_at(run, &start)?;
    sorted.try_take(&first, None)
}

/// Checks that `x` can be ordered.
fn check(op: &str, x: &Array) -> Result<()> {
    if x.dtype().is_complex() {
        return Err(value_err(
            op,
            format!("complex arrays ({}) are not made unique yet", x.dtype()),
        ));
    }
    Ok(())
}

/// The sorted distinct elements of the flattened `x` (NaNs as one when `equal_nan`): the first
/// element of each run, kept by one compaction kernel (the runs' starts computed in it).
fn distinct(op: &str, x: &Array, equal_nan: bool) -> Result<Array> {
    check(op, x)?;
    if x.size() == 0 {
        return Ok(crate::empty(&[0], x.dtype()));
    }
    let sorted = sorted(x)?;
    crate::compaction::select(&run_starts(&sorted, equal_nan)?, &sorted)
}

/// `np.unique(x)`: the sorted distinct elements of the flattened `x`, NaNs as one
/// (`equal_nan=True`). 1-D, `x`'s dtype. One synchronisation (see the module docs).
///
/// Errors: complex `x`.
pub fn try_unique(x: &Array) -> Result<Array> {
    distinct("unique", x, true)
}

/// [`try_unique`], panicking on error.
#[track_caller]
pub fn unique(x: &Array) -> Array {
    crate::unwrap(try_unique(x))
}

/// NumPy 2's `np.unique_values(x)`: the sorted distinct elements, each NaN distinct.
///
/// Errors: complex `x`.
pub fn try_unique_values(x: &Array) -> Result<Array> {
    distinct("unique_values", x, false)
}

/// [`try_unique_values`], panicking on error.
#[track_caller]
pub fn unique_values(x: &Array) -> Array {
    crate::unwrap(try_unique_values(x))
}

/// NumPy 2's `np.unique_counts(x)`: the distinct elements (as `unique_values`) and how many
/// times each occurs (int64).
///
/// Errors: complex `x`.
pub fn try_unique_counts(x: &Array) -> Result<(Array, Array)> {
    check("unique_counts", x)?;
    if x.size() == 0 {
        return Ok((crate::empty(&[0], x.dtype()), crate::empty(&[0], DType::Int64)));
    }
    let sorted = sorted(x)?;
    let (run, count, starts) = runs(&sorted, false)?;
    let counts = crate::zeros(&[count], DType::Int64).try_add_at(&run, 1i64)?;
    Ok((run_values(&sorted, &run, count, &starts)?, counts))
}

/// [`try_unique_counts`], panicking on error.
#[track_caller]
pub fn unique_counts(x: &Array) -> (Array, Array) {
    crate::unwrap(try_unique_counts(x))
}

/// NumPy 2's `np.unique_inverse(x)`: the distinct elements (as `unique_values`) and, for each
/// element of `x` (its shape), the index of its value among them (int64).
///
/// Errors: complex `x`.
pub fn try_unique_inverse(x: &Array) -> Result<(Array, Array)> {
    check("unique_inverse", x)?;
    if x.size() == 0 {
        return Ok((crate::empty(&[0], x.dtype()), crate::empty(x.shape(), DType::Int64)));
    }
    let (sorted, order) = sorted_with_order(x)?;
    let (run, count, starts) = runs(&sorted, false)?;
    let shape: Vec<i64> = x.shape().iter().map(|&e| e as i64).collect();
    let inverse =
        crate::zeros(&[x.size()], DType::Int64).try_put(&order, &run)?.try_reshape(&shape)?;
    Ok((run_values(&sorted, &run, count, &starts)?, inverse))
}

/// [`try_unique_inverse`], panicking on error.
#[track_caller]
pub fn unique_inverse(x: &Array) -> (Array, Array) {
    crate::unwrap(try_unique_inverse(x))
}

/// NumPy 2's `np.unique_all(x)`: (values, indices, inverse_indices, counts): the distinct
/// elements (as [`unique_values`]: each NaN its own), the int64 position in the flattened `x`
/// of each one's first occurrence, for each element of `x` (its shape) the index of its value,
/// and how many times each occurs. One synchronisation (see the module docs).
///
/// Errors: complex `x`.
pub fn try_unique_all(x: &Array) -> Result<(Array, Array, Array, Array)> {
    check("unique_all", x)?;
    if x.size() == 0 {
        let none = crate::empty(&[0], DType::Int64);
        return Ok((
            crate::empty(&[0], x.dtype()),
            none.clone(),
            crate::empty(x.shape(), DType::Int64),
            none,
        ));
    }
    let (sorted, order) = sorted_with_order(x)?;
    let (run, count, starts) = runs(&sorted, false)?;
    let shape: Vec<i64> = x.shape().iter().map(|&e| e as i64).collect();
    let inverse =
        crate::zeros(&[x.size()], DType::Int64).try_put(&order, &run)?.try_reshape(&shape)?;
    // The sort is stable: a run's first element is its value's first occurrence.
    let first = run_values(&order, &run, count, &starts)?;
    let counts = crate::zeros(&[count], DType::Int64).try_add_at(&run, 1i64)?;
    Ok((run_values(&sorted, &run, count, &starts)?, first, inverse, counts))
}

/// [`try_unique_all`], panicking on error.
#[track_caller]
pub fn unique_all(x: &Array) -> (Array, Array, Array, Array) {
    crate::unwrap(try_unique_all(x))
}
