//! The `ir` crate's one error enum.

use thiserror::Error;

use crate::dtype::DType;
use crate::shape::{Shape, ShapeDisplay};

fn fmt_shapes(list: &[Shape]) -> String {
    list.iter().map(|s| ShapeDisplay(s).to_string()).collect::<Vec<_>>().join(" ")
}

fn fmt_dtypes(list: &[DType]) -> String {
    list.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

/// Errors of the IR: dtype and shape rules, the textual IR, the verifier and the evaluator. Each
/// names the op and its operands' shapes or dtypes; messages follow NumPy's where NumPy has one.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum IrError {
    #[error("unknown dtype {name:?}")]
    UnknownDType { name: String },

    #[error("{op}: integer scalar {value} out of bounds for {dtype}")]
    ScalarOutOfBounds { op: String, value: String, dtype: DType },

    #[error("{op}: operands could not be broadcast together with shapes {}", fmt_shapes(.shapes))]
    Broadcast { op: String, shapes: Vec<Shape> },

    #[error("{op}: axis {axis} is out of bounds for array of dimension {rank}")]
    AxisOutOfBounds { op: String, axis: i64, rank: usize },

    #[error("{op}: repeated axis {axis}")]
    RepeatedAxis { op: String, axis: i64 },

    #[error("{op}: expected {expected} operand(s), got {got}")]
    Arity { op: String, expected: String, got: usize },

    #[error("{op}: no loop for dtype(s) {}; it takes {accepted}", fmt_dtypes(.dtypes))]
    UnsupportedDType { op: String, dtypes: Vec<DType>, accepted: String },

    #[error("{op}: operands must share one dtype, got {}", fmt_dtypes(.dtypes))]
    DTypeMismatch { op: String, dtypes: Vec<DType> },

    #[error("{op}: operands must share one shape, got {}", fmt_shapes(.shapes))]
    ShapeMismatch { op: String, shapes: Vec<Shape> },

    #[error("{op}: {message} (input shape {})", ShapeDisplay(.shape))]
    InvalidShape { op: String, shape: Shape, message: String },

    #[error("{op}: invalid attributes: {message}")]
    InvalidAttrs { op: String, message: String },

    #[error("{op}: zero-size array to reduction operation {op} which has no identity (shape {}, axes {axes:?})", ShapeDisplay(.shape))]
    EmptyReduction { op: String, shape: Shape, axes: Vec<usize> },

    #[error("{op}: cannot reshape array of size {size} into shape {}", ShapeDisplay(.to))]
    Reshape { op: String, size: usize, to: Shape },

    /// `k1` is the last extent of `a`, `k2` the contracted extent of `b`.
    #[error("{op}: input operand 1 has a mismatch in its core dimension 0 (size {k2} is different from {k1}); shapes {} and {}", ShapeDisplay(.a), ShapeDisplay(.b))]
    MatMulShape { op: String, a: Shape, b: Shape, k1: usize, k2: usize },

    #[error("line {line}, column {column}: {message}")]
    Parse { line: usize, column: usize, message: String },

    #[error("verifier: node %{node} ({op}): {message}")]
    Verify { node: usize, op: String, message: String },

    #[error("evaluator: node %{node} ({op}): {message}")]
    Eval { node: usize, op: String, message: String },

    /// A matrix a linear-algebra op cannot take, found when it runs (NumPy's `LinAlgError`):
    /// "Matrix is not positive definite" (cholesky), "Singular matrix" (solve, inv). `shape`
    /// is the operand's.
    #[error("{op}: {message} (operand shape {})", ShapeDisplay(.shape))]
    LinAlg { op: String, shape: Shape, message: String },

    #[error("{op}: a value of dtype {dtype} cannot be read as {wanted}")]
    ElementType { op: String, dtype: DType, wanted: DType },

    /// An array whose byte count overflows or passes `isize::MAX` (NumPy's `ValueError`), raised
    /// where the op that would make it is written.
    #[error("{op}: array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size (shape {})", ShapeDisplay(.shape))]
    TooBig { op: String, shape: Shape },

    /// Host memory for an array that the allocator refuses (an array far beyond memory): an
    /// error where the host executor allocates a region's output, not an abort there.
    #[error("{op}: out of host memory: cannot allocate {bytes} bytes for a {dtype} array of shape {}", ShapeDisplay(.shape))]
    OutOfHostMemory { op: String, dtype: DType, shape: Shape, bytes: usize },
}

impl IrError {
    /// The op the error names, where it names one (a composite renames it to its own).
    pub fn op_mut(&mut self) -> Option<&mut String> {
        match self {
            IrError::ScalarOutOfBounds { op, .. }
            | IrError::Broadcast { op, .. }
            | IrError::AxisOutOfBounds { op, .. }
            | IrError::RepeatedAxis { op, .. }
            | IrError::Arity { op, .. }
            | IrError::UnsupportedDType { op, .. }
            | IrError::DTypeMismatch { op, .. }
            | IrError::ShapeMismatch { op, .. }
            | IrError::InvalidShape { op, .. }
            | IrError::InvalidAttrs { op, .. }
            | IrError::EmptyReduction { op, .. }
            | IrError::Reshape { op, .. }
            | IrError::MatMulShape { op, .. }
            | IrError::LinAlg { op, .. }
            | IrError::ElementType { op, .. }
            | IrError::TooBig { op, .. }
            | IrError::OutOfHostMemory { op, .. } => Some(op),
            IrError::UnknownDType { .. }
            | IrError::Parse { .. }
            | IrError::Verify { .. }
            | IrError::Eval { .. } => None,
        }
    }
}

pub type Result<T, E = IrError> = std::result::Result<T, E>;
