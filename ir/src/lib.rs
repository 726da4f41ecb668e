//! kiln's intermediate representation: dtypes and promotion, shapes and layouts, the op table,
//! the hash-consed expression graph, its textual form, the verifier and the reference evaluator.
//!
//! Invariant: this crate depends on no GPU, MLIR or LLVM crate.

pub mod dtype;
pub mod error;
pub mod eval;
pub mod graph;
pub mod host;
pub mod huge_pages;
pub mod infer;
pub mod ops;
pub mod promote;
pub mod shape;
pub mod strided;
pub mod text;
pub mod verify;

pub use dtype::{DType, DTypeKind, Element};
pub use error::{IrError, Result};
pub use graph::{Attrs, FftNorm, Graph, Literal, Node, NodeId, SliceDim};
pub use host::{Data, HostArray, HostElement};
pub use ops::{OpClass, OpKind};
pub use promote::{result_type, result_type_weak, WeakScalar};
pub use shape::{Layout, Shape};
