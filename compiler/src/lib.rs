//! kiln-compiler: from the IR graph to fused kernels.
//!
//! - [`pipeline`]: the stages as one straight function (`compile`), each verified and dumpable;
//! - [`simplify`]: e-graph simplification (egg) and DAG-aware extraction by the [`cost`] model;
//! - [`fusion`]: the graph partitioned into regions (one kernel each) with a report of what fused;
//! - [`schedule`]: regions in order, with buffer lifetimes and in-place writes;
//! - [`streams`]: which stream each region runs on (small independent kernels side by side);
//! - [`plan_cache`]: compiled plans reused by graph structure, across sizes;
//! - [`codegen`]: regions lowered to MLIR and compiled for the host CPU (the GPU path later);
//! - [`vendor`]: matmul and FFT regions as library calls (host: `gemm`, `rustfft`/`realfft`);
//! - [`warm`]: a process's one-time compile state (rules, clocks, toolkit paths) made on a
//!   thread of its own when the backend is chosen;
//! - [`toolchain`]: MLIR (melior) and LLVM (inkwell): an MLIR context with exactly the dialects,
//!   interfaces, translations and passes kiln uses; the host pipeline; translation of MLIR into an
//!   inkwell module; the host JIT; and PTX emission for `nvptx64-nvidia-cuda`.

pub mod bytecode;
pub mod codegen;
pub mod cost;
pub mod error;
pub mod expand;
pub mod fusion;
pub mod int_matmul;
pub mod pipeline;
pub mod plan_cache;
pub mod schedule;
pub mod simplify;
pub mod streams;
pub mod toolchain;
pub mod vendor;
pub mod warm;

pub use error::CompileError;
