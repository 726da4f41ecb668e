//! kiln-compiler: lowers kiln IR to fused kernels through MLIR (melior) and LLVM (inkwell).
//!
//! For now only the toolchain skeleton exists ([`toolchain`]): an MLIR context with exactly the
//! dialects, interfaces, translations and passes kiln uses; the host pipeline; translation of
//! MLIR into an inkwell module; the host JIT; and PTX emission for `nvptx64-nvidia-cuda`.

pub mod error;
pub mod toolchain;

pub use error::CompileError;
