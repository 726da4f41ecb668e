//! The toolchain skeleton: proves that melior, mlir-sys and inkwell link one static LLVM 22 and
//! work together. Later work builds the code generator on these pieces.
//!
//! - [`mlir`]: a context with kiln's dialects, pass pipelines, MLIR -> inkwell translation.
//! - [`host`]: the host path (MLIR -> LLVM IR -> MCJIT), with a smoke kernel.
//! - [`ptx`]: PTX emission for `nvptx64-nvidia-cuda`, with a smoke kernel.
//! - `orc`: object files (host kernels' machine code) linked into the process by LLVM's ORC JIT.

pub mod host;
pub mod mlir;
pub(crate) mod orc;
pub mod ptx;

/// The version of the LLVM linked into this binary, as (major, minor, patch).
pub fn llvm_version() -> (u32, u32, u32) {
    inkwell::support::get_llvm_version()
}

#[cfg(test)]
mod tests {
    #[test]
    fn llvm_is_22() {
        let (major, minor, _) = super::llvm_version();
        assert_eq!((major, minor), (22, 1));
    }
}
