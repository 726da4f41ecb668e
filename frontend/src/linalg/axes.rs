//! `np.matmul(a, b, axes=[...])`: [`try_matmul_axes`] and its axes argument, [`MatmulAxes`].

use kiln_ir::shape::normalize_axis;
use kiln_ir::IrError;

use super::{rank0, try_matmul};
use crate::array::Array;
use crate::error::Result;

/// One entry of NumPy's `axes=` list: the core axes of one operand or of the result.
///
/// matmul's gufunc signature is `(n?,k),(k,m?)->(n?,m?)`: a 1-D operand has one core axis (`k`),
/// any other two; the result has one core axis per operand that is not 1-D (none when both are).
/// NumPy writes an entry as a tuple, or an integer for one axis; here `(r, c)` is two axes,
/// an `i64` or `(k,)` one, and `()` none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreAxes {
    /// `()`: no core axis (the result of two 1-D operands).
    None,
    /// `(k,)` or `k`: the one core axis of a 1-D operand, or the result's one matrix axis when
    /// one operand is 1-D.
    One(i64),
    /// `(r, c)`: the two matrix axes.
    Two(i64, i64),
}

impl CoreAxes {
    fn axes(self) -> Vec<i64> {
        match self {
            CoreAxes::None => vec![],
            CoreAxes::One(k) => vec![k],
            CoreAxes::Two(r, c) => vec![r, c],
        }
    }
}

impl From<()> for CoreAxes {
    fn from((): ()) -> Self {
        CoreAxes::None
    }
}

impl From<i64> for CoreAxes {
    fn from(k: i64) -> Self {
        CoreAxes::One(k)
    }
}

impl From<(i64,)> for CoreAxes {
    fn from((k,): (i64,)) -> Self {
        CoreAxes::One(k)
    }
}

impl From<(i64, i64)> for CoreAxes {
    fn from((r, c): (i64, i64)) -> Self {
        CoreAxes::Two(r, c)
    }
}

/// NumPy's `axes=[a_axes, b_axes, out_axes]` for [`try_matmul_axes`]: made from
/// `[(ar, ac), (br, bc), (or, oc)]` (three pairs, every operand at least 2-D) or from a triple of
/// entries that each convert to [`CoreAxes`] (`((0, 2), 0, 1)` for a 1-D `b`; `(0, 0, ())` for
/// two 1-D operands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulAxes(pub [CoreAxes; 3]);

impl From<[(i64, i64); 3]> for MatmulAxes {
    fn from(axes: [(i64, i64); 3]) -> Self {
        MatmulAxes(axes.map(CoreAxes::from))
    }
}

impl From<[CoreAxes; 3]> for MatmulAxes {
    fn from(axes: [CoreAxes; 3]) -> Self {
        MatmulAxes(axes)
    }
}

impl<A: Into<CoreAxes>, B: Into<CoreAxes>, C: Into<CoreAxes>> From<(A, B, C)> for MatmulAxes {
    fn from((a, b, c): (A, B, C)) -> Self {
        MatmulAxes([a.into(), b.into(), c.into()])
    }
}

/// `np.matmul(a, b, axes=[a_axes, b_axes, out_axes])`: [`try_matmul`] with the core axes of `a`,
/// of `b` and of the result named (negative axes count from the end); the other axes are batch
/// axes, broadcast as `matmul`'s, in their order.
///
/// - Both at least 2-D, `[(ar, ac), (br, bc), (or, oc)]`: `a`'s axes `ar`, `ac` are `(m, k)`,
///   `b`'s `br`, `bc` are `(k, n)`; the result has `(m, n)` at `or`, `oc` and the batch axes
///   elsewhere.
/// - A 1-D operand has one core axis, its entry one axis (`0` or `(0,)`, or `-1`); it is a row
///   (`a`) or a column (`b`) whose axis is removed from the result, as in `matmul`. The result's
///   entry is then the one axis of the other operand's free extent: `((0, 2), 0, 1)` for a
///   1-D `b`; and empty, `()`, when both are 1-D (their inner product, rank 0).
///
/// Views around one `matmul` node (strides, no copies). Dtypes as [`try_matmul`].
///
/// Errors, as NumPy's: an entry whose number of axes is not its operand's number of core axes
/// ([`IrError::InvalidAttrs`], NumPy's `AxisError` "operand 0 has 1 core dimensions, but 2
/// dimensions are specified by axes tuple"); an axis out of range ([`IrError::AxisOutOfBounds`])
/// or named twice for one operand ([`IrError::RepeatedAxis`]); a rank-0 operand
/// ([`IrError::InvalidShape`]); then `matmul`'s (inner extents that differ,
/// [`IrError::MatMulShape`]; batch axes that do not broadcast, [`IrError::Broadcast`]).
pub fn try_matmul_axes(a: &Array, b: &Array, axes: impl Into<MatmulAxes>) -> Result<Array> {
    let MatmulAxes([axes_a, axes_b, axes_out]) = axes.into();
    for (operand, x) in [a, b].into_iter().enumerate() {
        if x.ndim() == 0 {
            return Err(rank0("matmul", operand, x.shape()).into());
        }
    }
    let core = |x: &Array| if x.ndim() == 1 { 1 } else { 2 };
    let out_core = usize::from(a.ndim() > 1) + usize::from(b.ndim() > 1);
    let batch_rank = [a, b].iter().map(|x| x.ndim() - core(x)).max().unwrap_or(0);
    let entries = [(axes_a, core(a)), (axes_b, core(b)), (axes_out, out_core)];
    for (operand, (entry, cores)) in entries.iter().enumerate() {
        let given = entry.axes().len();
        if given != *cores {
            return Err(IrError::InvalidAttrs {
                op: "matmul".into(),
                message: format!(
                    "operand {operand} has {cores} core dimensions, but {given} dimensions are \
                     specified by axes tuple"
                ),
            }
            .into());
        }
    }
    let product = try_matmul(&core_last(a, axes_a)?, &core_last(b, axes_b)?)?;
    let nd = product.ndim();
    debug_assert_eq!(nd, batch_rank + out_core);
    let out = normalized(axes_out, nd)?;
    let mut batch = 0i64..;
    let perm: Vec<i64> = (0..nd)
        .map(|k| match out.iter().position(|&o| o == k) {
            Some(j) => (batch_rank + j) as i64,
            None => batch.next().expect("an endless range"),
        })
        .collect();
    product.try_permute(&perm)
}

/// [`try_matmul_axes`], panicking on error.
#[track_caller]
pub fn matmul_axes(a: &Array, b: &Array, axes: impl Into<MatmulAxes>) -> Array {
    crate::unwrap(try_matmul_axes(a, b, axes))
}

/// `entry`'s axes normalised against `rank`, a repeat refused.
fn normalized(entry: CoreAxes, rank: usize) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for axis in entry.axes() {
        let k = normalize_axis("matmul", axis, rank)?;
        if out.contains(&k) {
            return Err(IrError::RepeatedAxis { op: "matmul".into(), axis }.into());
        }
        out.push(k);
    }
    Ok(out)
}

/// `x` with the core axes `entry` moved last, in the entry's order (a 1-D operand is itself,
/// once its axis is checked).
fn core_last(x: &Array, entry: CoreAxes) -> Result<Array> {
    let core = normalized(entry, x.ndim())?;
    let mut perm: Vec<i64> =
        (0..x.ndim()).filter(|k| !core.contains(k)).map(|k| k as i64).collect();
    perm.extend(core.iter().map(|&k| k as i64));
    x.try_permute(&perm)
}
