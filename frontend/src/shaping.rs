//! NumPy's layout functions built from kiln's views, joins and index math: `moveaxis`,
//! `atleast_1d/2d/3d`, `fliplr`/`flipud`, `vstack`/`hstack`/`dstack`/`column_stack`,
//! `split`/`array_split` (views), `tril`/`triu` (a mask of index ramps, fused with the
//! producer) and `roll` (a join of two slices, fused with the producer).

use kiln_ir::shape::normalize_axis;
use kiln_ir::DType;

use crate::creation::iota;
use crate::error::{value_err, Result};
use crate::views::SliceArg;
use crate::Array;

impl Array {
    /// `np.moveaxis(a, source, destination)`: axis `source` moved to position `destination`,
    /// the others in order (a view). Errors: an axis out of range.
    pub fn try_moveaxis(&self, source: i64, destination: i64) -> Result<Array> {
        let src = normalize_axis("moveaxis", source, self.ndim())?;
        let dst = normalize_axis("moveaxis", destination, self.ndim())?;
        let mut order: Vec<i64> = (0..self.ndim() as i64).filter(|&a| a != src as i64).collect();
        order.insert(dst, src as i64);
        self.try_permute(&order)
    }

    /// `np.moveaxis`. Panics where [`Array::try_moveaxis`] errs.
    #[track_caller]
    pub fn moveaxis(&self, source: i64, destination: i64) -> Array {
        crate::unwrap(self.try_moveaxis(source, destination))
    }

    /// `np.atleast_1d(a)`: a 0-d array as shape `[1]`, others unchanged.
    pub fn atleast_1d(&self) -> Array {
        if self.ndim() == 0 {
            self.reshape(&[1])
        } else {
            self.clone()
        }
    }

    /// `np.atleast_2d(a)`: `[n]` as `[1, n]`, 0-d as `[1, 1]`.
    pub fn atleast_2d(&self) -> Array {
        match self.ndim() {
            0 => self.reshape(&[1, 1]),
            1 => self.reshape(&[1, self.shape()[0] as i64]),
            _ => self.clone(),
        }
    }

    /// `np.atleast_3d(a)`: `[n]` as `[1, n, 1]`, `[m, n]` as `[m, n, 1]`, 0-d as `[1, 1, 1]`.
    pub fn atleast_3d(&self) -> Array {
        let s: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        match self.ndim() {
            0 => self.reshape(&[1, 1, 1]),
            1 => self.reshape(&[1, s[0], 1]),
            2 => self.reshape(&[s[0], s[1], 1]),
            _ => self.clone(),
        }
    }

    /// `np.fliplr(a)`: axis 1 reversed (a view). Errors: fewer than 2 dimensions.
    pub fn try_fliplr(&self) -> Result<Array> {
        if self.ndim() < 2 {
            return Err(value_err(
                "fliplr",
                format!("Input must be >= 2-d (shape {:?})", self.shape()),
            ));
        }
        self.try_flip(Some(&[1]))
    }

    /// `np.flipud(a)`: axis 0 reversed (a view). Errors: a 0-d array.
    pub fn try_flipud(&self) -> Result<Array> {
        if self.ndim() < 1 {
            return Err(value_err("flipud", "Input must be >= 1-d"));
        }
        self.try_flip(Some(&[0]))
    }

    /// `np.tril(a, k)`: the elements on and below the `k`-th diagonal of the last two axes,
    /// zeros above. Errors: fewer than 2 dimensions (NumPy broadcasts 1-D; kiln asks for 2).
    pub fn try_tril(&self, k: i64) -> Result<Array> {
        self.triangle("tril", k, true)
    }

    /// `np.triu(a, k)`: on and above the `k`-th diagonal, zeros below.
    pub fn try_triu(&self, k: i64) -> Result<Array> {
        self.triangle("triu", k, false)
    }

    fn triangle(&self, op: &str, k: i64, lower: bool) -> Result<Array> {
        let n = self.ndim();
        if n < 2 {
            return Err(value_err(
                op,
                format!("the array must be at least 2-d (shape {:?})", self.shape()),
            ));
        }
        let (r, c) = (self.shape()[n - 2], self.shape()[n - 1]);
        // tril keeps col <= row + k (`tri`'s ones); triu keeps col >= row + k, tri(k - 1)'s zeros.
        let keep = if lower {
            tri(r, Some(c), k, DType::Bool)
        } else {
            tri(r, Some(c), k - 1, DType::Bool).try_logical_not()?
        };
        crate::try_where_(keep, self, crate::zeros(&[], self.dtype()))
    }

    /// `np.roll(a, shift, axis)`: elements shifted along `axis` by `shift` (wrapping round);
    /// `None` rolls the flattened array and keeps the shape. A `take` at shifted positions: one
    /// kernel reading `a` from memory (a computed `a` is materialised first).
    ///
    /// Errors: an axis out of range.
    pub fn try_roll(&self, shift: i64, axis: Option<i64>) -> Result<Array> {
        let Some(axis) = axis else {
            let flat = self.try_reshape(&[self.size() as i64])?;
            let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
            return flat.try_roll(shift, Some(0))?.try_reshape(&shape);
        };
        let ax = normalize_axis("roll", axis, self.ndim())?;
        let n = self.shape()[ax] as i64;
        let s = if n == 0 { 0 } else { shift.rem_euclid(n) };
        if s == 0 {
            return Ok(self.clone());
        }
        // out[i] = a[(i - shift) mod n]: the last s elements, then the first n - s (a join of
        // two slices, an index map that fuses with the producer).
        let part = |start: i64, stop: i64| {
            let mut idx = vec![SliceArg::FULL; self.ndim()];
            idx[ax] = SliceArg::Range { start: Some(start), stop: Some(stop), step: 1 };
            self.try_slice(&idx)
        };
        crate::views::try_concatenate(&[&part(n - s, n)?, &part(0, n - s)?], ax as i64)
    }

    /// `np.roll`. Panics where [`Array::try_roll`] errs.
    #[track_caller]
    pub fn roll(&self, shift: i64, axis: Option<i64>) -> Array {
        crate::unwrap(self.try_roll(shift, axis))
    }

    /// `np.array_split(a, sections, axis)`: `sections` views along `axis`, the first
    /// `len % sections` one element longer. Errors: `sections == 0`, an axis out of range.
    pub fn try_array_split(&self, sections: usize, axis: i64) -> Result<Vec<Array>> {
        if sections == 0 {
            return Err(value_err("array_split", "number sections must be larger than 0."));
        }
        let ax = normalize_axis("array_split", axis, self.ndim())?;
        let n = self.shape()[ax];
        let (each, extra) = (n / sections, n % sections);
        // NumPy makes `sections` arrays, empty past the axis' extent; a count no memory can
        // hold is an error here, not an allocation that aborts (or a loop that never ends).
        let mut parts = Vec::new();
        parts.try_reserve_exact(sections).map_err(|_| {
            value_err("array_split", format!("cannot allocate {sections} sub-arrays"))
        })?;
        let mut start = 0;
        for s in 0..sections {
            let len = each + usize::from(s < extra);
            let mut idx = vec![SliceArg::FULL; self.ndim()];
            idx[ax] = SliceArg::Range {
                start: Some(start as i64),
                stop: Some((start + len) as i64),
                step: 1,
            };
            start += len;
            parts.push(self.try_slice(&idx)?);
        }
        Ok(parts)
    }

    /// `np.split(a, sections, axis)`: as [`Array::try_array_split`], but the axis must divide
    /// evenly (NumPy's "array split does not result in an equal division").
    pub fn try_split(&self, sections: usize, axis: i64) -> Result<Vec<Array>> {
        let ax = normalize_axis("split", axis, self.ndim())?;
        if sections == 0 || !self.shape()[ax].is_multiple_of(sections) {
            return Err(value_err(
                "split",
                format!(
                    "array split does not result in an equal division ({} into {sections})",
                    self.shape()[ax]
                ),
            ));
        }
        self.try_array_split(sections, axis)
    }
}

/// `np.vstack(arrays)`: [`Array::atleast_2d`] of each, joined along axis 0.
pub fn try_vstack(arrays: &[&Array]) -> Result<Array> {
    let two: Vec<Array> = arrays.iter().map(|a| a.atleast_2d()).collect();
    crate::try_concatenate(&two.iter().collect::<Vec<_>>(), 0).map_err(|e| e.within("vstack"))
}

/// `np.hstack(arrays)`: joined along axis 1, or along axis 0 for 1-D arrays.
pub fn try_hstack(arrays: &[&Array]) -> Result<Array> {
    let one: Vec<Array> = arrays.iter().map(|a| a.atleast_1d()).collect();
    let axis = if one.first().is_some_and(|a| a.ndim() == 1) { 0 } else { 1 };
    crate::try_concatenate(&one.iter().collect::<Vec<_>>(), axis).map_err(|e| e.within("hstack"))
}

/// `np.dstack(arrays)`: [`Array::atleast_3d`] of each, joined along axis 2.
pub fn try_dstack(arrays: &[&Array]) -> Result<Array> {
    let three: Vec<Array> = arrays.iter().map(|a| a.atleast_3d()).collect();
    crate::try_concatenate(&three.iter().collect::<Vec<_>>(), 2).map_err(|e| e.within("dstack"))
}

/// `np.column_stack(arrays)`: 1-D arrays as columns (`[n]` → `[n, 1]`), joined along axis 1.
pub fn try_column_stack(arrays: &[&Array]) -> Result<Array> {
    let cols: Vec<Array> = arrays
        .iter()
        .map(|a| {
            if a.ndim() < 2 {
                a.atleast_1d().reshape(&[a.size() as i64, 1])
            } else {
                (*a).clone()
            }
        })
        .collect();
    crate::try_concatenate(&cols.iter().collect::<Vec<_>>(), 1)
        .map_err(|e| e.within("column_stack"))
}

/// `np.pad`'s modes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode {
    /// `mode="constant"` with `constant_values`.
    Constant(f64),
    /// `mode="edge"`: the edge element repeated.
    Edge,
    /// `mode="reflect"`: mirrored about the edge element, which is not repeated.
    Reflect,
    /// `mode="symmetric"`: mirrored with the edge element repeated.
    Symmetric,
    /// `mode="wrap"`: the other end's elements.
    Wrap,
}

/// Source positions along one axis of `n` elements for the `before + n + after` positions of
/// the padded axis (`None` for a constant's padding).
fn pad_map(n: usize, before: usize, after: usize, mode: PadMode) -> Vec<Option<i64>> {
    let n = n as i64;
    (0..before + n as usize + after)
        .map(|o| {
            let t = o as i64 - before as i64;
            match mode {
                PadMode::Constant(_) => (0..n).contains(&t).then_some(t),
                PadMode::Edge => Some(t.clamp(0, n - 1)),
                PadMode::Wrap => Some(t.rem_euclid(n)),
                PadMode::Reflect if n == 1 => Some(0),
                PadMode::Reflect => {
                    let p = t.rem_euclid(2 * (n - 1));
                    Some(if p < n { p } else { 2 * (n - 1) - p })
                }
                PadMode::Symmetric => {
                    let p = t.rem_euclid(2 * n);
                    Some(if p < n { p } else { 2 * n - 1 - p })
                }
            }
        })
        .collect()
}

/// [`pad_runs`] of [`pad_map`]`(n, before, after, mode)` without the map: the map's linear
/// segments (between the mode's turning points) pushed whole, in O(runs); `None` past
/// [`PAD_JOIN_RUNS`] runs (then `pad` gathers, from the map).
fn pad_runs_of(n: usize, before: usize, after: usize, mode: PadMode) -> Option<Vec<PadRun>> {
    let (n, total) = (n as i64, (before + n as usize + after) as i64);
    let mut runs: Vec<PadRun> = Vec::new();
    let mut o = 0i64;
    while o < total {
        let (t, rest) = (o - before as i64, total - o);
        // The segment from position o: `None` for the constant, else (first source, step) and
        // its length.
        let (seg, len) = match mode {
            PadMode::Constant(_) if t < 0 => (None, -t),
            PadMode::Constant(_) if t >= n => (None, rest),
            PadMode::Edge if t < 0 => (Some((0, 0)), -t),
            PadMode::Edge if t >= n => (Some((n - 1, 0)), rest),
            PadMode::Constant(_) | PadMode::Edge => (Some((t, 1)), n - t),
            PadMode::Wrap => {
                let q = t.rem_euclid(n);
                (Some((q, 1)), n - q)
            }
            PadMode::Reflect if n == 1 => (Some((0, 0)), rest),
            PadMode::Reflect => {
                // Period 2(n - 1): up from q to n - 1, then down from 2(n - 1) - q to 1.
                let q = t.rem_euclid(2 * (n - 1));
                if q < n {
                    (Some((q, 1)), n - q)
                } else {
                    (Some((2 * (n - 1) - q, -1)), 2 * (n - 1) - q)
                }
            }
            PadMode::Symmetric => {
                // Period 2n: up from q to n - 1, then down from 2n - 1 - q to 0.
                let q = t.rem_euclid(2 * n);
                if q < n {
                    (Some((q, 1)), n - q)
                } else {
                    (Some((2 * n - 1 - q, -1)), 2 * n - q)
                }
            }
        };
        let len = len.min(rest);
        push_segment(&mut runs, seg, len as usize);
        if runs.len() > PAD_JOIN_RUNS {
            return None;
        }
        o += len;
    }
    Some(runs)
}

/// Pushes `len` map entries, the constant (`None`) or sources `start, start + step, ...`, as
/// [`pad_runs`] pushes them one at a time (a run of one takes the next entry's step when it is
/// -1, 0 or 1; a longer run extends while the step holds).
fn push_segment(runs: &mut Vec<PadRun>, seg: Option<(i64, i64)>, len: usize) {
    let Some((start, step)) = seg else {
        match runs.last_mut() {
            Some(PadRun::Constant { len: l }) => *l += len,
            _ => runs.push(PadRun::Constant { len }),
        }
        return;
    };
    for k in 0..len as i64 {
        let t = start + step * k;
        match runs.last_mut() {
            Some(PadRun::Source { start: s, step: st, len: l }) => {
                let next = t - (*s + *st * (*l as i64 - 1));
                if *l == 1 && (-1..=1).contains(&next) {
                    *st = next;
                    *l = 2;
                } else if *l > 1 && next == *st {
                    // The rest of the segment continues the run with the same step.
                    if *st == step {
                        *l += len - k as usize;
                        return;
                    }
                    *l += 1;
                } else {
                    runs.push(PadRun::Source { start: t, step: 1, len: 1 });
                }
            }
            _ => runs.push(PadRun::Source { start: t, step: 1, len: 1 }),
        }
    }
}

/// The most pieces a padded axis is joined from; beyond it `pad` gathers.
pub const PAD_JOIN_RUNS: usize = 16;

/// A piece of a padded axis: the constant, or source positions `start, start + step, ...`
/// (`step` 1, -1, or 0 for an edge element repeated).
#[derive(Clone, Copy, Debug, PartialEq)]
enum PadRun {
    Constant { len: usize },
    Source { start: i64, step: i64, len: usize },
}

/// `map` (from [`pad_map`]) as maximal runs of the constant or of positions with one step,
/// element by element: the reference [`pad_runs_of`] is tested against.
#[cfg(test)]
fn pad_runs(map: &[Option<i64>]) -> Vec<PadRun> {
    let mut runs: Vec<PadRun> = Vec::new();
    for &m in map {
        match (runs.last_mut(), m) {
            (Some(PadRun::Constant { len }), None) => *len += 1,
            (Some(PadRun::Source { start, step, len }), Some(t)) => {
                let next = t - (*start + *step * (*len as i64 - 1));
                if *len == 1 && (-1..=1).contains(&next) {
                    *step = next;
                    *len = 2;
                } else if *len > 1 && next == *step {
                    *len += 1;
                } else {
                    runs.push(PadRun::Source { start: t, step: 1, len: 1 });
                }
            }
            (_, None) => runs.push(PadRun::Constant { len: 1 }),
            (_, Some(t)) => runs.push(PadRun::Source { start: t, step: 1, len: 1 }),
        }
    }
    runs
}

/// `a` padded along axis `k` as the join of `runs`' pieces (views of `a` and the constant).
fn pad_axis_join(a: &Array, k: usize, runs: &[PadRun], mode: PadMode) -> Result<Array> {
    if let [PadRun::Source { start: 0, step: 1, len }] = runs {
        if *len == a.shape()[k] {
            return Ok(a.clone());
        }
    }
    let piece = |run: &PadRun| -> Result<Array> {
        let mut shape = a.shape().to_vec();
        let mut idx = vec![SliceArg::FULL; a.ndim()];
        match *run {
            PadRun::Constant { len } => {
                shape[k] = len;
                let c = if let PadMode::Constant(c) = mode { c } else { 0.0 };
                crate::try_full(&shape, c, DType::Float64).map(|f| f.astype(a.dtype()))
            }
            PadRun::Source { start, step: 0, len } => {
                shape[k] = len;
                idx[k] = SliceArg::Range { start: Some(start), stop: Some(start + 1), step: 1 };
                a.try_slice(&idx)?.try_broadcast_to(&shape)
            }
            PadRun::Source { start, step, len } => {
                let stop = start + step * len as i64;
                // A reversed run down to position 0 has no stop position (-1 counts from the end).
                let stop = (stop >= 0).then_some(stop);
                idx[k] = SliceArg::Range { start: Some(start), stop, step };
                a.try_slice(&idx)
            }
        }
    };
    let pieces = runs.iter().map(piece).collect::<Result<Vec<_>>>()?;
    crate::views::try_concatenate(&pieces.iter().collect::<Vec<_>>(), k as i64)
}

impl Array {
    /// `np.pad(a, pad_width, mode)`: `pad_width[k] = (before, after)` elements added along axis
    /// `k` (one pair for every axis). Each padded axis is a join of views of `a` (slices, reversed
    /// for `Reflect` and `Symmetric`, one element broadcast for `Edge`) and of the constant, so the
    /// padding is index math that fuses with `a`'s producer and reader (one kernel). Where an
    /// axis's padding would take more than [`PAD_JOIN_RUNS`] pieces (widths far beyond the axis's
    /// length), it is one gather of `a` at positions computed from per-axis maps instead (a
    /// computed `a` is materialised first).
    ///
    /// Errors: a `pad_width` of another length than `a`'s rank; `Edge`, `Reflect`, `Symmetric`
    /// or `Wrap` padding of an empty axis (NumPy: "can't extend empty axis").
    pub fn try_pad(&self, pad_width: &[(usize, usize)], mode: PadMode) -> Result<Array> {
        if pad_width.len() != self.ndim() {
            return Err(value_err(
                "pad",
                format!(
                    "pad_width has {} pairs for an array of shape {:?}",
                    pad_width.len(),
                    self.shape()
                ),
            ));
        }
        let shape = self.shape().to_vec();
        let too_big =
            || kiln_ir::IrError::TooBig { op: "pad".into(), shape: shape.as_slice().into() };
        let out: Vec<usize> = shape
            .iter()
            .zip(pad_width)
            .map(|(&n, &(b, a))| b.checked_add(n).and_then(|m| m.checked_add(a)))
            .collect::<Option<_>>()
            .ok_or_else(too_big)?;
        kiln_ir::shape::check_size("pad", &out, self.dtype().itemsize())?;
        if !matches!(mode, PadMode::Constant(_)) {
            if let Some(k) = (0..shape.len()).find(|&k| shape[k] == 0 && out[k] > 0) {
                return Err(value_err("pad", format!("can't extend empty axis {k} using modes other than 'constant' (shape {shape:?})")));
            }
        }
        if out.iter().product::<usize>() == 0 || shape.iter().product::<usize>() == 0 {
            let fill = if let PadMode::Constant(c) = mode { c } else { 0.0 };
            return Ok(crate::full(&out, fill, DType::Float64).astype(self.dtype()));
        }
        let runs: Option<Vec<Vec<PadRun>>> = (0..shape.len())
            .map(|k| pad_runs_of(shape[k], pad_width[k].0, pad_width[k].1, mode))
            .collect();
        if let Some(runs) = runs {
            let mut out = self.clone();
            for (k, runs) in runs.iter().enumerate() {
                out = pad_axis_join(&out, k, runs, mode)?;
            }
            return Ok(out);
        }
        // The per-axis maps are host vectors of the padded extents.
        if out.iter().any(|&o| !kiln_ir::host::can_allocate(o.saturating_mul(16))) {
            return Err(too_big().into());
        }
        let maps: Vec<Vec<Option<i64>>> = (0..shape.len())
            .map(|k| pad_map(shape[k], pad_width[k].0, pad_width[k].1, mode))
            .collect();
        self.pad_gather(&out, &maps, mode)
    }

    /// The gather form of [`Array::try_pad`]: `flat = Σ_k map_k[o_k] · stride_k`, each map
    /// broadcast along its axis; a constant's padding reads element 0 and is replaced afterwards.
    fn pad_gather(&self, out: &[usize], maps: &[Vec<Option<i64>>], mode: PadMode) -> Result<Array> {
        let shape = self.shape().to_vec();
        let rank = shape.len();
        let mut flat: Option<Array> = None;
        let mut inside: Option<Array> = None;
        let mut stride = 1i64;
        for k in (0..rank).rev() {
            let map = &maps[k];
            let mut along = vec![1usize; rank];
            along[k] = out[k];
            let pos = Array::from_vec(
                map.iter().map(|s| s.unwrap_or(0) * stride).collect::<Vec<i64>>(),
                &along,
            );
            flat = Some(match flat {
                None => pos,
                Some(f) => f.try_add(&pos)?,
            });
            if let PadMode::Constant(_) = mode {
                let ok =
                    Array::from_vec(map.iter().map(|s| s.is_some()).collect::<Vec<bool>>(), &along);
                inside = Some(match inside {
                    None => ok,
                    Some(i) => i.try_logical_and(&ok)?,
                });
            }
            stride *= shape[k] as i64;
        }
        let flat = flat.expect("rank ≥ 1").try_broadcast_to(out)?;
        let taken = self.try_take(&flat, None)?;
        match (mode, inside) {
            (PadMode::Constant(c), Some(ok)) => crate::try_where_(
                ok,
                &taken,
                crate::full(&[], c, DType::Float64).astype(self.dtype()),
            ),
            _ => Ok(taken),
        }
    }

    /// `np.pad`. Panics where [`Array::try_pad`] errs.
    #[track_caller]
    pub fn pad(&self, pad_width: &[(usize, usize)], mode: PadMode) -> Array {
        crate::unwrap(self.try_pad(pad_width, mode))
    }
}

/// `np.tri(n, m, k, dtype)`: ones on and below the `k`-th diagonal of an `n`×`m` matrix
/// (`m` defaults to `n`), zeros above.
pub fn tri(n: usize, m: Option<usize>, k: i64, dtype: DType) -> Array {
    let m = m.unwrap_or(n);
    let rows = iota(DType::Int64, &[n, m], 0);
    let cols = iota(DType::Int64, &[n, m], 1);
    cols.less_equal(&(&rows + k)).astype(dtype)
}

impl Array {
    /// `np.diagonal(a, offset)` of a 2-D array: the elements `a[i, i + offset]` (1-D; empty when
    /// the offset is past the matrix). A gather of `a`. Errors: `a` not 2-D (NumPy's other
    /// ranks, `axis1`/`axis2`, are not offered).
    pub fn try_diagonal(&self, offset: i64) -> Result<Array> {
        if self.ndim() != 2 {
            return Err(value_err(
                "diagonal",
                format!("a 2-d array is needed (shape {:?})", self.shape()),
            ));
        }
        let (r, c) = (self.shape()[0] as i64, self.shape()[1] as i64);
        let (r0, c0) = if offset >= 0 { (0, offset) } else { (-offset, 0) };
        let len = (r - r0).min(c - c0).max(0) as usize;
        let i = iota(DType::Int64, &[len], 0);
        let flat = i.try_add(r0)?.try_multiply(c)?.try_add(&i.try_add(c0)?)?;
        if len == 0 {
            return Ok(crate::zeros(&[0], self.dtype()));
        }
        self.try_take(&flat, None)
    }

    /// `np.diagonal`. Panics where [`Array::try_diagonal`] errs.
    #[track_caller]
    pub fn diagonal(&self, offset: i64) -> Array {
        crate::unwrap(self.try_diagonal(offset))
    }
}

/// `np.diag(v, k)`: for a 1-D `v`, the square matrix with `v` on its `k`-th diagonal (side
/// `len + |k|`, zeros elsewhere); for a 2-D `v`, its `k`-th diagonal ([`Array::try_diagonal`]).
/// Errors: another rank.
pub fn try_diag(v: &Array, k: i64) -> Result<Array> {
    match v.ndim() {
        1 => {
            let n = v.shape()[0] + k.unsigned_abs() as usize;
            let rows = iota(DType::Int64, &[n, n], 0);
            let cols = iota(DType::Int64, &[n, n], 1);
            let on = cols.try_equal(&rows.try_add(k)?)?;
            // On the diagonal, element `row` of v for k >= 0, `col` for k < 0.
            let at = if k >= 0 { &rows } else { &cols };
            let values = v.try_take_mode(at, Some(0), crate::TakeMode::Clip)?;
            crate::try_where_(on, &values, crate::zeros(&[], v.dtype()))
        }
        2 => v.try_diagonal(k),
        _ => Err(value_err("diag", format!("Input must be 1- or 2-d (shape {:?})", v.shape()))),
    }
}

/// `np.meshgrid(*xs, indexing)`: for 1-D arrays of lengths `n_0, n_1, ...`, arrays of the
/// common shape (`(n_1, n_0, n_2...)` for `indexing = "xy"`, `(n_0, n_1, ...)` for `"ij"`), the
/// `k`-th repeating `xs[k]` along its axis: broadcast views, no copies.
///
/// Errors: an `indexing` other than "xy" and "ij"; an argument that is not 1-D.
pub fn try_meshgrid(xs: &[&Array], indexing: &str) -> Result<Vec<Array>> {
    if indexing != "xy" && indexing != "ij" {
        return Err(value_err(
            "meshgrid",
            format!("Valid values for `indexing` are 'xy' and 'ij', not {indexing:?}"),
        ));
    }
    if let Some(x) = xs.iter().find(|x| x.ndim() != 1) {
        return Err(value_err(
            "meshgrid",
            format!("1-d arrays are needed (shape {:?})", x.shape()),
        ));
    }
    let nd = xs.len();
    let mut shape: Vec<usize> = xs.iter().map(|x| x.shape()[0]).collect();
    let swap = indexing == "xy" && nd >= 2;
    if swap {
        shape.swap(0, 1);
    }
    xs.iter()
        .enumerate()
        .map(|(k, x)| {
            let axis = if swap && k < 2 { 1 - k } else { k };
            let mut along = vec![1i64; nd];
            along[axis] = x.shape()[0] as i64;
            x.try_reshape(&along)?.try_broadcast_to(&shape)
        })
        .collect::<Result<_>>()
        .map_err(|e| e.within("meshgrid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs made from segments are the element-by-element runs of the map, for every mode,
    /// axis length up to 11 and widths up to 39 (`None` exactly where those exceed the limit).
    #[test]
    fn pad_runs_of_segments_match_the_map() {
        let modes = [
            PadMode::Constant(0.0),
            PadMode::Edge,
            PadMode::Reflect,
            PadMode::Symmetric,
            PadMode::Wrap,
        ];
        for n in 1..12 {
            for before in 0..40 {
                for after in 0..40 {
                    for mode in modes {
                        let want = pad_runs(&pad_map(n, before, after, mode));
                        let want = (want.len() <= PAD_JOIN_RUNS).then_some(want);
                        let got = pad_runs_of(n, before, after, mode);
                        assert_eq!(got, want, "n {n}, widths ({before}, {after}), {mode:?}");
                    }
                }
            }
        }
    }
}
