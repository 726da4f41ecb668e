//! The lazy [`Array`]: a node of an expression DAG, computed when a result is asked for.

use std::sync::{Arc, OnceLock};

use kiln_ir::infer::infer;
use kiln_ir::shape::ShapeDisplay;
use kiln_ir::{Attrs, DType, HostArray, Literal, OpKind, Shape};
use smallvec::SmallVec;

use crate::error::Result;
use crate::gpu::DeviceArray;

mod spare;
mod structure;

pub(crate) use structure::{held_intermediate, Structure};

/// One expression: an op of the IR applied to other arrays. `value` is filled when the array is
/// materialised ([`Array::eval`]) or was created from data; later graphs then read it as an
/// input instead of recomputing it.
pub(crate) struct Expr {
    pub(crate) op: OpKind,
    pub(crate) attrs: Attrs,
    pub(crate) inputs: SmallVec<[Array; 3]>,
    pub(crate) dtype: DType,
    pub(crate) shape: Shape,
    pub(crate) value: OnceLock<Arc<HostArray>>,
    /// The value in device memory, when materialised on (or copied to) a CUDA device.
    pub(crate) device: OnceLock<Arc<DeviceArray>>,
    /// What else the value needs alive: the DLPack tensor an imported array shares memory
    /// with (its deleter runs when the last array holding this expression drops).
    pub(crate) keep: OnceLock<Keep>,
    /// The structural number as built (`structure.rs`): a repeated call finds its plan by it.
    pub(crate) structure: Structure,
}

impl Drop for Expr {
    /// Drops the operands that only this expression holds without recursion: the last handle
    /// on a chain of a million ops would otherwise overflow the stack, one frame an op.
    fn drop(&mut self) {
        if self.inputs.is_empty() {
            return;
        }
        let mut orphans: SmallVec<[Array; 8]> = SmallVec::new();
        while let Some(a) = self.inputs.pop() {
            orphans.push(a);
        }
        while let Some(mut a) = orphans.pop() {
            // (A node others hold, such as a scalar's shared splat, is only released.)
            if let Some(e) = unique(&mut a.e) {
                while let Some(b) = e.inputs.pop() {
                    orphans.push(b);
                }
                spare::keep(a);
            }
        }
        kiln_runtime::host_trace::point("expr: inputs dropped");
    }
}

/// The node of `e` to change, where `e` is its only handle: `Arc::get_mut` without its locked
/// exchange on the weak count (a tenth of building and dropping a chain of scalar ops). Sound
/// because no `Weak<Expr>` is ever made (`tests/suite/invariants.rs` checks the crate's source):
/// with one strong count, `e` is the only way to the node.
fn unique(e: &mut Arc<Expr>) -> Option<&mut Expr> {
    if Arc::strong_count(e) != 1 {
        return None;
    }
    // Synchronises with the release of the handles other threads dropped (as `Arc`'s own drop
    // and `get_mut` do), so their uses of the node happen before ours.
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    // SAFETY: `e` is the node's only strong handle and no weak handle exists (see above), so
    // nothing else can reach the node while the `&mut` borrow of `e` lasts.
    Some(unsafe { &mut *Arc::as_ptr(e).cast_mut() })
}

/// What an array's memory needs alive (see [`Expr::keep`]). Only ever dropped, never read, so
/// unwind-safe whatever it holds (arrays cross `catch_unwind`).
pub(crate) struct Keep(#[allow(dead_code)] pub(crate) Box<dyn std::any::Any + Send + Sync>);
impl std::panic::UnwindSafe for Keep {}
impl std::panic::RefUnwindSafe for Keep {}

/// The result dtype of elementwise `op` without attributes on `inputs` of one dtype and one
/// shape, as [`kiln_ir::infer::uniform_elementwise_dtype`] remembers it; `None` where the
/// inputs are not uniform (or the op is not such an op: `infer` answers then).
pub(crate) fn uniform_elementwise(op: OpKind, attrs: &Attrs, inputs: &[Array]) -> Option<DType> {
    let first = inputs.first()?;
    let (d, s) = (first.dtype(), first.shape());
    let same = |a: &Array| a.dtype() == d && same_extents(a.shape(), s);
    if !matches!(attrs, Attrs::None) || !inputs[1..].iter().all(same) {
        return None;
    }
    kiln_ir::infer::uniform_elementwise_dtype(op, d, inputs.len())
}

/// Whether two shapes are equal, compared in a loop (`==` on slices calls `memcmp`, slower for
/// a few extents: this is on the path of every elementwise op built).
pub(crate) fn same_extents(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A lazy n-dimensional array, CuPy's `ndarray` with deferred evaluation.
///
/// Operations on arrays build an expression graph and return at once; shape and dtype errors are
/// reported where the op is written. The work runs when a result is needed (`to_vec`, `item`,
/// `to_ndarray`, `save_npy`, `eval`). Cloning an `Array` is cheap: it shares the expression.
#[derive(Clone)]
pub struct Array {
    pub(crate) e: Arc<Expr>,
}

impl Array {
    /// A non-leaf array: `op` applied to `inputs`, its dtype and shape inferred (and checked) by
    /// the op table's rules.
    pub(crate) fn apply(op: OpKind, attrs: Attrs, inputs: &[&Array]) -> Result<Array> {
        Array::apply_owned(op, attrs, inputs.iter().map(|&a| a.clone()).collect())
    }

    /// [`Array::apply`] taking its inputs by value: the node keeps them without another
    /// reference count taken and dropped per input (the elementwise ops' path, one per op).
    pub(crate) fn apply_owned(
        op: OpKind,
        attrs: Attrs,
        inputs: SmallVec<[Array; 3]>,
    ) -> Result<Array> {
        // (The uniform case builds its node apart: joined with `infer`'s result, the dtype and
        // shape were moved through a stack slot whose overlapping copies stalled the loads
        // after them, a sixth of a chain of scalar ops' build on the dev machine.)
        if let Some(dtype) = uniform_elementwise(op, &attrs, &inputs) {
            let shape = Shape::from_slice(inputs[0].shape());
            return Array::checked_node(op, attrs, inputs, dtype, shape);
        }
        let (dtype, shape) = {
            let types: SmallVec<[(DType, &[usize]); 3]> =
                inputs.iter().map(|a| (a.dtype(), a.shape())).collect();
            infer(op, &attrs, &types)?
        };
        Array::checked_node(op, attrs, inputs, dtype, shape)
    }

    /// The node of `op` on `inputs` of `dtype` and `shape`, after the checks of its size and
    /// of its operands' devices.
    pub(crate) fn checked_node(
        op: OpKind,
        attrs: Attrs,
        inputs: SmallVec<[Array; 3]>,
        dtype: DType,
        shape: Shape,
    ) -> Result<Array> {
        // (The op's name is looked up for an error only: a chain of scalar ops builds here.)
        if !kiln_ir::shape::fits(&shape, dtype.itemsize()) {
            kiln_ir::shape::check_size(op.name(), &shape, dtype.itemsize())?;
        }
        if inputs.iter().any(|a| a.held_device().is_some()) {
            crate::devices::check_same_device(op.name(), &inputs)?;
        }
        Ok(Array::node(op, attrs, inputs, dtype, shape))
    }

    pub(crate) fn node(
        op: OpKind,
        attrs: Attrs,
        inputs: SmallVec<[Array; 3]>,
        dtype: DType,
        shape: Shape,
    ) -> Array {
        let structure = Structure::of(op, &attrs, &inputs, dtype, &shape);
        if let Some(mut e) = spare::take() {
            let x = unique(&mut e).expect("a spare node has one handle");
            (x.op, x.attrs, x.inputs, x.dtype, x.shape) = (op, attrs, inputs, dtype, shape);
            x.structure = structure;
            return Array { e };
        }
        Array {
            e: Arc::new(Expr {
                op,
                attrs,
                inputs,
                dtype,
                shape,
                value: OnceLock::new(),
                device: OnceLock::new(),
                keep: OnceLock::new(),
                structure,
            }),
        }
    }

    /// An array holding materialised host data.
    pub fn from_host(h: HostArray) -> Array {
        Array::from_host_shared(Arc::new(h))
    }

    /// An array holding a host value shared with others (a DLPack export of kiln's).
    pub(crate) fn from_host_shared(h: Arc<HostArray>) -> Array {
        let a = Array::node(
            OpKind::Input,
            Attrs::Input { index: 0 },
            SmallVec::new(),
            h.dtype(),
            h.shape().into(),
        );
        let _ = a.e.value.set(h);
        a
    }

    /// Keeps `keep` alive as long as the array's expression (what its memory needs).
    pub(crate) fn keep_alive(&self, keep: Box<dyn std::any::Any + Send + Sync>) {
        let _ = self.e.keep.set(Keep(keep));
    }

    /// An array holding a value in device memory (its dtype and shape are the value's).
    pub(crate) fn from_device(d: Arc<DeviceArray>) -> Array {
        let a = Array::node(
            OpKind::Input,
            Attrs::Input { index: 0 },
            SmallVec::new(),
            d.dtype(),
            d.shape().into(),
        );
        let _ = a.e.device.set(d);
        a
    }

    /// A rank-0 constant. The literal must already be of `dtype`.
    pub(crate) fn literal(dtype: DType, value: Literal) -> Array {
        debug_assert!(value.fits(dtype), "{value:?} as {dtype}");
        Array::node(OpKind::Const, Attrs::Const { value }, SmallVec::new(), dtype, Shape::new())
    }

    /// The element type (`ndarray.dtype`).
    pub fn dtype(&self) -> DType {
        self.e.dtype
    }

    /// Extent of each axis (`ndarray.shape`).
    pub fn shape(&self) -> &[usize] {
        &self.e.shape
    }

    /// Number of axes (`ndarray.ndim`).
    pub fn ndim(&self) -> usize {
        self.e.shape.len()
    }

    /// Number of elements (`ndarray.size`).
    pub fn size(&self) -> usize {
        self.e.shape.iter().product()
    }

    /// Bytes of the elements (`ndarray.nbytes`); `usize::MAX` for a lazy array no memory can
    /// hold (`arange(2**62)`, 2^65 bytes of int64: reading it is an out-of-memory error).
    pub fn nbytes(&self) -> usize {
        self.size().saturating_mul(self.dtype().itemsize())
    }

    /// Whether the value has been computed and is held (after `eval`, or for data arrays).
    pub fn is_materialized(&self) -> bool {
        self.e.value.get().is_some() || self.e.device.get().is_some()
    }

    /// The identity of the held value (the host value's first, else the device value's), as
    /// materialisation tells inputs apart: two handles with one identity are one input. `None`
    /// for a lazy array.
    pub(crate) fn held_identity(&self) -> Option<*const ()> {
        match (self.value(), self.device_value()) {
            (Some(v), _) => Some(Arc::as_ptr(v).cast()),
            (None, Some(d)) => Some(Arc::as_ptr(d).cast()),
            (None, None) => None,
        }
    }

    /// The held value in host memory, if materialised there.
    pub(crate) fn value(&self) -> Option<&Arc<HostArray>> {
        self.e.value.get()
    }

    /// The held value in device memory, if materialised there.
    pub(crate) fn device_value(&self) -> Option<&Arc<DeviceArray>> {
        self.e.device.get()
    }

    /// The held value in host memory, copied from the device (and kept) if it is only there.
    /// `None` if the array is not materialised. Errors: a failed copy.
    pub(crate) fn host_value(&self) -> Result<Option<Arc<HostArray>>> {
        if let Some(v) = self.e.value.get() {
            return Ok(Some(v.clone()));
        }
        let Some(d) = self.e.device.get() else { return Ok(None) };
        let h = Arc::new(d.download()?);
        Ok(Some(self.e.value.get_or_init(|| h).clone()))
    }

    /// Whether two handles are the same expression.
    pub fn same_expr(&self, other: &Array) -> bool {
        Arc::ptr_eq(&self.e, &other.e)
    }
}

impl Array {
    /// The expression, without computing anything: `Array(uint16 (2, 3, 4), input,
    /// materialized)` (dtype, shape, the op that makes it, and whether its value is held).
    /// `{:?}` prints the values as NumPy's `repr` does (`crate::print`).
    pub fn describe(&self) -> String {
        let held = if self.is_materialized() { ", materialized" } else { "" };
        format!(
            "Array({} {}, {}{held})",
            self.dtype(),
            ShapeDisplay(self.shape()),
            self.e.op.name()
        )
    }
}
