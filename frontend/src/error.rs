//! `kiln::Error`: the frontend's one error enum.

use kiln_ir::{DType, IrError};
use thiserror::Error;

/// Every fallible operation of the array API returns this (through its `try_` form); the
/// operator overloads and non-`try_` methods panic with the same message.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A dtype, shape, axis or attribute rule of an op (the op and operands are named inside).
    #[error(transparent)]
    Ir(#[from] IrError),

    /// A value the op cannot take, such as an index out of bounds or a zero step.
    #[error("{op}: {message}")]
    Value { op: String, message: String },

    /// Reading the result as the wrong Rust element type.
    #[error("{op}: the array has dtype {dtype}, asked for {wanted}")]
    ElementType { op: String, dtype: DType, wanted: DType },

    /// A compiler stage failed (a bug in kiln when the graph verified: please report it).
    #[error("compile: {message}")]
    Compile { message: String },

    /// The device failed: out of memory (after freeing the pool's cached blocks), a driver
    /// error, a kernel that did not load or launch (named in the message).
    #[error(transparent)]
    Runtime(#[from] kiln_runtime::RuntimeError),

    /// A file could not be read or written.
    #[error("{op}: {path}: {message}")]
    Io { op: String, path: String, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn value_err(op: &str, message: impl Into<String>) -> Error {
    Error::Value { op: op.to_string(), message: message.into() }
}

impl From<kiln_compiler::CompileError> for Error {
    fn from(e: kiln_compiler::CompileError) -> Error {
        match e {
            kiln_compiler::CompileError::Ir(ir) => Error::Ir(ir),
            other => Error::Compile { message: other.to_string() },
        }
    }
}
