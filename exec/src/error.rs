//! `ExecError`: the executor's one error enum.

use kiln_compiler::CompileError;
use kiln_ir::{DType, IrError};
use kiln_runtime::RuntimeError;
use thiserror::Error;

/// What running a plan can fail with.
#[derive(Debug, Error)]
pub enum ExecError {
    /// Compiling a region's kernel failed (a bug in kiln when the graph verified).
    #[error(transparent)]
    Compile(#[from] CompileError),

    /// The reference evaluator, running a region code generation does not handle, reported an
    /// error (an empty axis of an argmax, say), or a result's shape did not fit its data.
    #[error(transparent)]
    Ir(#[from] IrError),

    /// The device failed: out of memory, a driver error, a kernel that did not load or launch.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),

    /// A region's input of the wrong dtype or shape: `region` is the region's index in its
    /// schedule's partition (0 for a region run on its own), `input` the body's input index.
    #[error("region {region}: input {input} is {got_dtype} {got_shape:?}, the region reads {dtype} {shape:?}")]
    InputMismatch {
        region: usize,
        input: usize,
        dtype: DType,
        shape: Vec<usize>,
        got_dtype: DType,
        got_shape: Vec<usize>,
    },

    /// A schedule that does not fit its inputs: an input not given, a buffer read before it is
    /// written (a bug in kiln when the schedule came from the compiler).
    #[error("schedule: {0}")]
    Schedule(String),

    /// An operand a library call cannot take (a strided operand reaching past its buffer, an
    /// input not given).
    #[error("{0}")]
    InvalidInput(String),

    /// A host library (the `gemm` crate, rustfft) failed, or a strided operand reached past its
    /// buffer.
    #[error("{call}: {message}")]
    Library { call: String, message: String },
}
