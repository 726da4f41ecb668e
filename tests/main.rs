//! kiln's integration tests: ONE test binary (it links LLVM, so one link is all we can afford).
//!
//! The modules live in `tests/suite/` rather than as `tests/*.rs` files, because Cargo would
//! build every `tests/*.rs` as a test binary of its own.
//!
//! - `numpy_fixtures`: NumPy's outputs (`tests/fixtures/`, written by `make_fixtures.py`)
//!   against kiln's, case by case.
//! - `indexing`: gathers and scatters (take, add_at, put, bincount...) against NumPy's fixtures,
//!   their errors, the one-kernel k-means update.
//! - `scatter_epilogue`: a small elementwise kernel after a scatter (k-means' division of the
//!   sums by the counts) in the scatter's kernel: the report, its bits against the combined
//!   sums and the evaluator (`gpu_*` on a GPU), the PTX's barriers.
//! - `screen_expanded`: a GPU scatter's labels screened by expanded distances: the labels
//!   against the evaluator's (ties, cancellation, NaN; `gpu_*` on a GPU), the kernel's PTX.
//! - `label_block`: a host scatter's k-means labels 16 positions at once: the host kernel's
//!   shape, its counts, positions and sums against the evaluator (ties, NaN, argmax).
//! - `scans`: cumsum, cumprod, cummax, cummin, their NaN forms and diff against NumPy's
//!   fixtures, their errors, the scan kernel.
//! - `sorts`: sort and argsort against NumPy's fixtures, their errors, the sort region.
//! - `printing`: `Display`/`Debug` of arrays against NumPy's `str`/`repr` (fixtures), the print
//!   options.
//! - `nan_functions`: nansum, nanmean, nanvar, nanmax..., ptp, nan_to_num, isclose against
//!   NumPy's fixtures; allclose, array_equal.
//! - `reduce_dtype`: `dtype=` of sum, mean, var, cumsum... (`sum_dtype`) against NumPy 2.4.
//! - `layout_dtypes`: memory order (`copy` in C/F/A/K, `asfortranarray`, `strides`, `flags`),
//!   `view(dtype)`, `dtype=` and `matmul_axes` against NumPy 2.4; their typed errors.
//! - `ufuncs23`: deg2rad, round, fix, logaddexp2, ldexp, signbit, frexp, nextafter, modf,
//!   angle, fmod, i0, sinc, divmod, power with a scalar base and the in-place operators against
//!   NumPy's fixtures; NumPy's can_cast table; the in-place casting errors; the new ops' host
//!   code against the evaluator (float16 and bfloat16 at every value).
//! - `shaping`: moveaxis, atleast_*d, fliplr/flipud, tril/triu, roll, the stacks and splits
//!   against NumPy's fixtures.
//! - `special`: erfc, erfinv, gammaln, digamma, gcd and lcm against SciPy's and NumPy's
//!   fixtures, their host code against the evaluator, their typed errors.
//! - `compaction`: extract, compress, nonzero, flatnonzero, argwhere, where_indices and
//!   boolean masks against NumPy's fixtures, their errors, the kernels of one call.
//! - `errors`: typed errors with messages naming op, shapes and dtypes, raised by the op call.
//! - `bad_input`: a walk of the public fallible API with bad input (shapes, dtypes, axes, sizes
//!   beyond memory, kernel sources, file bytes...): every call an error naming its op, never a
//!   panic or abort, and every live array intact after.
//! - `api`: lowering and hash-consing, `eval`, `explain`/parse, `.npy` files, `ndarray`.
//! - `properties`: proptest on broadcasting; promotion against NumPy's table.
//! - `examples`: the examples run as a user runs them, against NumPy.
//! - `catalogue`: programs written with the API, each stage's text and the fusion report
//!   snapshotted (insta, `suite/snapshots/`), some with their expected number of kernels.
//! - `fused_props`: proptest on random programs: the compiled plan, run region by region in the
//!   evaluator and as compiled host code, against the reference evaluator on the unfused graph.
//! - `fuzz_corpora`: the fuzz targets' committed corpora and crash regressions (`fuzz/`),
//!   replayed through the targets' own checks.
//! - `codegen`: host code generation against the reference evaluator, and the ULP table.
//! - `polynomial`: math functions without libdevice (`MathLib::Polynomial`) measured on the
//!   host: their ULP table, float64 as a typed error, special values.
//! - `ulps`: the accuracy bounds of the compiled host code, per op (used by both).
//! - `user_kernels`: ElementwiseKernel, ReductionKernel and fuse: CuPy's guide, the traced C++
//!   subset, typed errors, fusion snapshots and host code of user kernels.
//! - `raw_kernels`: RawKernel and RawModule: CuPy's guide on a GPU (`gpu_*`, skipped on the
//!   CPU backend), NVRTC's errors, written arrays against lazy ones; the errors without a GPU.
//! - `multi_gpu`: arrays on several devices and `kiln::distributed`'s NCCL collectives
//!   (`gpu_*` on one GPU, `gpu2_*` on two; skipped without).
//! - `division`: float division by a constant (the reciprocal and an exact FMA correction)
//!   against IEEE division bit for bit, float32 and float64, on whichever backend runs the suite.
//! - `division_rows`: float32 division by a row's value in GPU row kernels (the reciprocal
//!   once a row, two FMA corrections, one range check a step) against IEEE division and the
//!   evaluator, bit for bit (`gpu_*` on one GPU), and the lowering.
//! - `complex`: complex64/complex128 elementwise kernels against the evaluator (bit for bit
//!   for arithmetic), on whichever backend runs the suite.
//! - `sorts_gpu`: `gpu_radix_*` tests of the GPU's radix sort of whole lines against the
//!   evaluator, bit for bit (every real dtype, sizes around the tiles, stability, determinism).
//! - `big_arrays`: `gpu_*` tests of arrays of more than 2^31 elements (64-bit index math).
//! - `vendor`: matmul/dot, `kiln::fft` and `kiln::random` on the host libraries, against NumPy's
//!   fixtures and the reference evaluator; library regions in the fusion report; typed errors.
//! - `random`: `kiln::random`'s lazy Philox draws against the evaluator, Kolmogorov-Smirnov
//!   tests of their distributions, dropout as one kernel, redraws reusing the plan;
//!   `random_params`: distribution parameters as arrays (broadcast, per-element moments, errors).
//! - `linalg`: `kiln::linalg`'s decompositions, solvers, lstsq, pinv, norm... against NumPy's
//!   fixtures (`tests/fixtures/linalg/`), factors by reconstruction, typed errors, one call each.
//! - `row_kernels`: GPU row reductions with several reductions per row (softmax, layer norm),
//!   and whole-array sums split across blocks (vector loads in flight): their PTX (shuffles,
//!   the row read once when cached, no spills), and their results through
//!   the active backend against the evaluator, for rows shorter and longer than the row cache.
//! - `host_cache`: host kernels in the disk cache (`KILN_CACHE_DIR`): linked from a warm cache
//!   in a new process without MLIR or LLVM, the same bits; damaged entries rebuilt; `off`.
//! - `faults`: a full disk while the kernel cache is written (a child process with a file-size
//!   limit); on a GPU, kernels that fault (sticky errors said so, in child processes), a
//!   refused launch that leaves the context usable, and (with `KILN_GPU_LINK=nvjitlink`) fast kernels cached as cubins.
//! - `streams`: the stream each region runs on: small independent kernels on pool streams,
//!   chains and large kernels on the caller's, the report's column snapshotted; on a GPU
//!   (`gpu_*`) a multi-stream schedule against the evaluator and the streams that ran; a stress
//!   test of many threads materialising at once, on either backend.
//! - `filetests`: the `.kir` files of `tests/filetests/` (as Cranelift's file tests): a program
//!   in the textual IR and the expected text of the stages its header names; `KILN_BLESS=1`
//!   rewrites the expectations.
//! - `dispatch`: the dispatch key (a repeated expression goes straight to its plan): variants
//!   that differ in one constant's bits, aliasing, a view, a dtype, sizes, held intermediates or
//!   output order, each against the evaluator; the plan cache's reason for compiling.
//! - `invariants`: properties of the sources, read as text: no `match` on ops outside `ir/`
//!   with an arm that catches every other op (`_`, a binding), so a new op is a compile error
//!   wherever an op picks a behaviour; the scanner's own tests.
//! - `interop`: `.npz` archives against NumPy's (fixtures, and NumPy reading kiln's), DLPack
//!   export and import (zero-copy, the deleter counted, typed errors; `gpu_*` device tensors).

#[path = "suite/polynomial.rs"]
mod polynomial;

#[path = "suite/numpy_fixtures.rs"]
mod numpy_fixtures;

#[path = "suite/errors.rs"]
mod errors;

#[path = "suite/bad_input.rs"]
mod bad_input;

#[path = "suite/api.rs"]
mod api;

#[path = "suite/properties.rs"]
mod properties;

#[path = "suite/compaction.rs"]
mod compaction;
#[path = "suite/dispatch.rs"]
mod dispatch;
#[path = "suite/einsum.rs"]
mod einsum;
#[path = "suite/fuse_direct.rs"]
mod fuse_direct;
#[path = "suite/fusion.rs"]
mod fusion;
#[path = "suite/indexing.rs"]
mod indexing;
#[path = "suite/interp_gpu.rs"]
mod interp_gpu;
#[path = "suite/layout_dtypes.rs"]
mod layout_dtypes;
#[path = "suite/nan_functions.rs"]
mod nan_functions;
#[path = "suite/printing.rs"]
mod printing;
#[path = "suite/random.rs"]
mod random;
#[path = "suite/random_distributions.rs"]
mod random_distributions;

#[path = "suite/label_block.rs"]
mod label_block;
#[path = "suite/random_params.rs"]
mod random_params;
#[path = "suite/reduce_dtype.rs"]
mod reduce_dtype;
#[path = "suite/rowsort_gpu.rs"]
mod rowsort_gpu;
#[path = "suite/scan_lookahead.rs"]
mod scan_lookahead;
#[path = "suite/scans.rs"]
mod scans;
#[path = "suite/scatter_epilogue.rs"]
mod scatter_epilogue;
#[path = "suite/scatter_queue.rs"]
mod scatter_queue;
#[path = "suite/scatter_warp.rs"]
mod scatter_warp;
#[path = "suite/screen_expanded.rs"]
mod screen_expanded;
#[path = "suite/select_gpu.rs"]
mod select_gpu;
#[path = "suite/shaping.rs"]
mod shaping;
#[path = "suite/sorts.rs"]
mod sorts;
#[path = "suite/sorts_gpu.rs"]
mod sorts_gpu;
#[path = "suite/special.rs"]
mod special;
#[path = "suite/ufuncs23.rs"]
mod ufuncs23;

#[path = "suite/examples.rs"]
mod examples;

#[path = "suite/catalogue.rs"]
mod catalogue;

#[path = "suite/filetests.rs"]
mod filetests;

#[path = "suite/support.rs"]
mod support;

#[path = "suite/fused_props.rs"]
mod fused_props;

#[path = "suite/fuzz_corpora.rs"]
mod fuzz_corpora;

#[path = "suite/codegen.rs"]
mod codegen;

#[path = "suite/user_kernels.rs"]
mod user_kernels;

#[path = "suite/user_kernels_cupy.rs"]
mod user_kernels_cupy;

#[path = "suite/raw_kernels.rs"]
mod raw_kernels;

#[path = "suite/relocatable_async_pool.rs"]
mod relocatable_async_pool;

#[path = "suite/interop.rs"]
mod interop;

/// NVIDIA's `ptxas`, if installed: where the GPU backend finds it
/// ([`kiln_runtime::ptxas_path`]: `KILN_PTXAS`, the CUDA toolkit, the `PATH`). Tests that
/// assemble PTX skip that step without it (CI installs it: `.ci/run`).
pub fn ptxas() -> Option<std::path::PathBuf> {
    kiln_runtime::ptxas_path().map(std::path::Path::to_path_buf)
}

/// The repository's root: `KILN_REPO` where set (the GPU machine runs this binary from a copy
/// of the working tree elsewhere), else the directory it was built in.
pub fn repo_root() -> std::path::PathBuf {
    match std::env::var_os("KILN_REPO") {
        Some(p) => p.into(),
        None => env!("CARGO_MANIFEST_DIR").into(),
    }
}

/// The shared data sets (`digits_x.npy`, ...): `KILN_DATA` where set, else `../shared/data`
/// beside the repository.
pub fn shared_data() -> std::path::PathBuf {
    match std::env::var_os("KILN_DATA") {
        Some(p) => p.into(),
        None => repo_root().join("..").join("shared").join("data"),
    }
}
#[path = "suite/big_arrays.rs"]
mod big_arrays;
#[path = "suite/complex.rs"]
mod complex;
#[path = "suite/division.rs"]
mod division;
#[path = "suite/division_rows.rs"]
mod division_rows;
#[path = "suite/faults.rs"]
mod faults;
#[path = "suite/fft_callbacks.rs"]
mod fft_callbacks;
#[path = "suite/fft_callbacks_generated.rs"]
mod fft_callbacks_generated;
#[path = "suite/host_cache.rs"]
mod host_cache;
#[path = "suite/huge_pages.rs"]
mod huge_pages;
#[path = "suite/invariants.rs"]
mod invariants;
#[path = "suite/linalg.rs"]
mod linalg;
#[path = "suite/multi_gpu.rs"]
mod multi_gpu;
#[path = "suite/replay.rs"]
mod replay;
#[path = "suite/row_kernels.rs"]
mod row_kernels;
#[path = "suite/streams.rs"]
mod streams;
#[path = "suite/ulps.rs"]
mod ulps;
#[path = "suite/vendor.rs"]
mod vendor;
#[path = "suite/vendor_gpu.rs"]
mod vendor_gpu;
