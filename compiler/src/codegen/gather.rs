//! Gathers: `take(a, idx)` loads `a`'s element at a position computed by the kernel.
//!
//! Fusion guarantees that the gathered operand is a region input (a C-contiguous buffer), so
//! position `k` is a load at `k mod numel(a)` (Python's modulo, as the evaluator's `take`:
//! -1 is the last element). `numel(a)` is a kernel parameter like every size.

use kiln_ir::shape::numel;
use kiln_ir::DType;

use super::builder::Builder;
use super::index::extent;
use super::types::{load, Val};

/// Element `k mod numel(shape)` (`k` an int64 value) of the buffer `ptr` of `dt` elements.
pub(crate) fn take(b: &mut Builder, ptr: &str, shape: &[usize], k: &Val, dt: DType) -> Val {
    debug_assert_eq!(k.dt, DType::Int64, "take's positions are int64");
    let n = extent(b, numel(shape));
    let zero = b.i64(0);
    let r = b.op(&format!("arith.remsi {}, {n} : i64", k.ssa));
    let negative = b.op(&format!("arith.cmpi slt, {r}, {zero} : i64"));
    let wrapped = b.op(&format!("arith.addi {r}, {n} : i64"));
    let pos = b.op(&format!("arith.select {negative}, {wrapped}, {r} : i64"));
    load(b, ptr, &pos, dt)
}
