//! kiln's array API: the lazy [`Array`], NumPy/CuPy's names and semantics, and materialisation.
//!
//! Operations build an expression graph; nothing runs until a result is asked for. Shape and
//! dtype errors are reported where the op is written: every fallible op has a `try_` form
//! returning [`Result`], and a panicking form (and operator overloads) with the same message.

mod array;
mod compaction;
mod creation;
mod devices;
mod dispatch;
pub mod distributed;
mod distributions;
pub mod dlpack;
pub mod dump;
mod elementwise;
mod error;
pub mod fft;
mod fft_callbacks;
mod indexing;
mod inplace;
mod io;
pub mod kernels;
mod layout;
pub mod linalg;
mod materialize;
mod nan;
mod npz;
mod operators;
mod philox;
mod print;
mod quantile;
pub mod random;
mod random_params;
mod reduce;
mod reinterpret;
mod scan;
mod search;
mod shaping;
mod sort;
pub mod special;
mod tiling;
mod ufuncs;
mod unique;
mod views;

pub use array::Array;
pub use compaction::{
    argwhere, extract, flatnonzero, nonzero, try_argwhere, try_extract, try_flatnonzero,
    try_nonzero, try_where_indices, where_indices,
};
pub use creation::{
    arange, arange_step, empty, empty_like, eye, full, full_like, geomspace, identity, linspace,
    linspace_with, logspace, ones, ones_like, try_arange_step, try_full, try_geomspace, zeros,
    zeros_like,
};
pub use dispatch::{dispatch_stats, dispatch_structure_hits};
pub use dlpack::{dlpack_stream, from_dlpack, DLPackTensor};
pub use dump::CodeStage;
pub use elementwise::{try_where_, where_, Operand};
pub use error::{Error, Result};
pub use indexing::{bincount, try_bincount, Index, TakeMode};
pub use io::load_npy;
pub use kernels::{
    fuse, CallOptions, Dim3, ElementwiseKernel, FuseOutput, Fused, RawArg, RawKernel, RawModule,
    ReductionKernel,
};
pub use kiln_compiler::fusion::{Epilogue, FusionReport, LtEpilogue, UnfusedReason};
/// The CUDA executor (crate `kiln-exec`): device arrays, the device, the streams regions ran on.
pub use kiln_exec::cuda as gpu;
pub use layout::{Flags, IntoOrder, Order};
pub use linalg::{
    dot, matmul, matmul_axes, try_dot, try_matmul, try_matmul_axes, CoreAxes, MatmulAxes,
};
pub use linalg::{
    einsum, inner, kron, outer, tensordot, try_einsum, try_inner, try_kron, try_outer,
    try_tensordot, try_vdot, try_vecdot, vdot, vecdot, TensordotAxes,
};
pub use materialize::{
    backend, current_backend, eval_all, explain, host_phase_times, kernel_code, lower,
    try_eval_all, try_explain, Explain, Lowered,
};
pub use nan::{
    allclose, array_equal, average, heaviside, isclose, try_average, try_heaviside, try_isclose,
};
pub use npz::{
    load_npz, savez, savez_compressed, savez_compressed_unnamed, savez_unnamed, NpzFile,
};
pub use print::{
    array_repr, array_str, get_printoptions, set_printoptions, with_printoptions, FloatMode,
    PrintOptions, Sign,
};
pub use reduce::{all_axes, axis, AxisArg};
pub use search::{
    digitize, histogram, histogram_with_edges, searchsorted, topk, try_digitize, try_histogram,
    try_histogram_with_edges, try_searchsorted, try_topk, Side,
};
pub use shaping::{
    tri, try_column_stack, try_diag, try_dstack, try_hstack, try_meshgrid, try_vstack, PadMode,
};
pub use sort::{lexsort, try_lexsort};
pub use tiling::{broadcast_arrays, try_broadcast_arrays};
pub use ufuncs::{divmod, gcd, lcm, power, try_divmod, try_gcd, try_lcm, try_power};
pub use unique::{
    try_unique, try_unique_all, try_unique_counts, try_unique_inverse, try_unique_values, unique,
    unique_all, unique_counts, unique_inverse, unique_values,
};
pub use views::{concatenate, stack, try_concatenate, try_stack, SliceArg};

pub use kiln_ir::{DType, HostArray};
pub use kiln_runtime::blas::{allow_tf32, set_allow_tf32};

/// Unwraps a result, panicking with the error's message at the caller's location.
#[track_caller]
pub(crate) fn unwrap<T>(r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}
