//! Errors of the compiler.

use thiserror::Error;

/// Everything that can go wrong while building, lowering, translating or emitting code.
///
/// MLIR reports problems as diagnostics rather than return values; the variants that come from
/// MLIR carry the diagnostics captured while the failing step ran (one message per line).
#[derive(Debug, Error)]
pub enum CompileError {
    /// An IR rule was broken (an ill-typed input graph, or a stage's output the verifier rejects),
    /// or the reference evaluator failed on a region it ran.
    #[error(transparent)]
    Ir(#[from] kiln_ir::IrError),
    /// The e-graph simplification failed (a bug: its output must compute the input's values).
    #[error("simplify: {message}")]
    Simplify { message: String },
    /// A melior call failed (building an operation, parsing a pass pipeline, ...).
    #[error("MLIR: {0}")]
    Mlir(#[from] melior::Error),
    /// A module did not verify.
    #[error("MLIR module failed to verify:\n{0}")]
    Verify(String),
    /// A pass pipeline failed to parse or to run.
    #[error("pass pipeline `{pipeline}` failed:\n{diagnostics}")]
    Pipeline {
        /// The textual pipeline, e.g. `builtin.module(convert-to-llvm)`.
        pipeline: String,
        /// The MLIR diagnostics emitted while it ran.
        diagnostics: String,
    },
    /// `mlirTranslateModuleToLLVMIR` returned no module (usually an op left unlowered).
    #[error("translation of MLIR to LLVM IR failed:\n{0}")]
    Translate(String),
    /// An LLVM step failed (target lookup, optimisation, verification, code emission).
    #[error("LLVM: {0}")]
    Llvm(String),
    /// Creating or using the host JIT failed.
    #[error("host JIT: {0}")]
    Jit(String),
    /// A library call failed (plan creation, a status code): `call` names it.
    #[error("{call}: {message}")]
    Library { call: String, message: String },
    /// The caller passed inconsistent inputs.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Code generation does not handle this region yet: the caller evaluates it instead.
    #[error("region {region}: `{op}`: code generation does not support {reason} yet")]
    Unsupported {
        /// Index of the region among those given (0 when one region is compiled alone).
        region: usize,
        /// The op's IR name, or `-` when the reason is not one op.
        op: String,
        /// What is missing.
        reason: String,
    },
}
