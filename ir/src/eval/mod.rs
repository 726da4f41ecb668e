//! The reference evaluator: a plain host interpreter of the graph with NumPy's semantics. It is
//! the oracle every later stage is checked against: simple and obviously correct, not fast.

use crate::error::{IrError, Result};
use crate::graph::Graph;
use crate::host::HostArray;

/// Computes the graph's outputs, in order. `inputs[k]` is the array of `input {index=k}`.
pub fn evaluate(_g: &Graph, _inputs: &[&HostArray]) -> Result<Vec<HostArray>> {
    Err(IrError::Eval { node: 0, op: "?".into(), message: "evaluator not written yet".into() })
}
