//! The compiler's error type.

use kiln_ir::IrError;
use thiserror::Error;

/// Errors of the compiler's stages.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CompileError {
    /// An IR rule was broken (an ill-typed input graph, or a stage's output the verifier rejects).
    #[error(transparent)]
    Ir(#[from] IrError),

    /// The e-graph simplification failed (a bug: its output must compute the input's values).
    #[error("simplify: {message}")]
    Simplify { message: String },
}
