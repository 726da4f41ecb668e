//! Code generation: fused regions to MLIR, to LLVM IR, to machine code.
//!
//! - [`lower`](lower::lower): a [`Region`] to a [`Kernel`]: canonical, shape-generic MLIR text
//!   (`func`, `scf`, `arith`, `math`, `llvm` pointers) and the parameters for the region's
//!   shapes. Elementwise and reduction regions; views are index math, never copies.
//! - [`host`]: kernels compiled for the host CPU (LLVM with glibc's vector math library, an
//!   object file linked by ORC; a fast tier first, then an optimised one), cached in memory and
//!   on disk (`KILN_CACHE_DIR`), run over [`HostArray`]s in parallel chunks. Vendor regions are library calls ([`crate::vendor`]), not kernels.
//! - [`run_schedule_on_host`]: a whole [`Schedule`] on the host, each region compiled, or
//!   evaluated by the reference evaluator when code generation does not support it yet.
//!
//! The module-level docs of [`lower`] and of the private modules `types`, `scalar`, `cast`,
//! `reduce`, `fold` and `jit` give the semantics, their accuracy and the compilation tiers.
//!
//! This is kiln's default CPU path: materialisation runs schedules through
//! [`run_schedule_on_host`] (`KILN_CODEGEN=eval` runs the reference evaluator instead).
//!
//! # Accuracy
//!
//! The kernels compute what the reference evaluator computes, bit for bit, but for the
//! transcendental functions: they call glibc's libm, and in vectorised loops glibc's vector
//! functions (libmvec, within 4 ulps), in the dtype's own precision, where the evaluator
//! computes in f64 and rounds once (float64: the same scalar libm calls). Sums of float16,
//! bfloat16 and float32 differ by their rounding (see `reduce`). The largest distance from the
//! evaluator measured over each function's domain, in ulps of the evaluator's result:
//!
//! | function | float16 | bfloat16 | float32 | float64 | bound (16/bf16, 32, 64) |
//! |---|---|---|---|---|---|
//! | `sqrt` | 0 | 0 | 0 | 0 | 0, 0, 0 |
//! | `cbrt` | 0 | 0 | 2 | 2 | 1, 4, 4 |
//! | `exp` | 1 | 1 | 2 | 3 | 1, 4, 4 |
//! | `exp2` | 1 | 0 | 1 | 1 | 1, 4, 4 |
//! | `expm1` | 1 | 0 | 2 | 1 | 1, 4, 4 |
//! | `log` | 1 | 0 | 4 | 1 | 1, 4, 4 |
//! | `log2` | 0 | 0 | 2 | 2 | 1, 4, 4 |
//! | `log10` | 1 | 0 | 2 | 3 | 1, 4, 4 |
//! | `log1p` | 1 | 0 | 1 | 1 | 1, 4, 4 |
//! | `sin` | 1 | 0 | 1 | 3 | 1, 4, 4 |
//! | `cos` | 1 | 0 | 2 | 3 | 1, 4, 4 |
//! | `tan` | 1 | 0 | 3 | 3 | 1, 4, 4 |
//! | `arcsin` | 1 | 0 | 3 | 2 | 1, 4, 4 |
//! | `arccos` | 1 | 0 | 2 | 2 | 1, 4, 4 |
//! | `arctan` | 1 | 0 | 1 | 1 | 1, 4, 4 |
//! | `sinh` | 1 | 0 | 2 | 2 | 1, 4, 4 |
//! | `cosh` | 0 | 0 | 2 | 2 | 1, 4, 4 |
//! | `tanh` | 0 | 0 | 1 | 2 | 1, 4, 4 |
//! | `arcsinh` | 1 | 0 | 1 | 1 | 1, 4, 4 |
//! | `arccosh` | 1 | 0 | 1 | 2 | 1, 4, 4 |
//! | `arctanh` | 0 | 0 | 1 | 2 | 1, 4, 4 |
//! | `erf` | 1 | 0 | 3 | 1 | 1, 4, 4 |
//! | `power` | 1 | 0 | 1 | 1 | 1, 4, 4 |
//! | `arctan2` | 1 | 0 | 3 | 3 | 1, 4, 4 |
//! | `hypot` | 0 | 0 | 1 | 1 | 1, 4, 4 |
//! | `logaddexp` | 0 | 0 | 0 | 0 | 0, 0, 0 |
//!
//! Measured on an AVX-512 x86-64 machine (LLVM's host CPU `rocketlake`: libmvec's 16- and 8-lane
//! functions), glibc 2.36.
//! Samples: float16 and bfloat16 unary functions at every value of the type; otherwise 2^16
//! points per function and dtype, a quarter uniform over the domain, half log-uniform in
//! magnitude over every binade of it (subnormals included), a quarter close to its special
//! points (0, ±1, π/2, the overflow edge of `exp`, ...), and for `logaddexp` a quarter where
//! NumPy's formula cancels (results near 0). Domains: `sin`/`cos`/`tan` |x| ≤ 10^6,
//! `exp`/`expm1`/`sinh`/`cosh`/`exp2` up to their overflow, `power` |x| ≤ 10^4 with
//! |y| ≤ 40 (float32) or 300 (float64), the rest their whole domain. The bounds are what the
//! tests hold the kernels to (`tests/suite/ulps.rs`): 4 for float32 and float64 (glibc's
//! requirement for its vector functions), 1 for float16 and bfloat16 (a float32 result within 4
//! float32 ulps, rounded once more), 0 for `logaddexp` (NumPy's formula in f64 with scalar libm
//! calls, see `scalar`). The table is regenerated (and checked against the bounds) by
//! `cargo test --release --test main codegen::ulp_table -- --nocapture`.
//!
//! ## On the GPU
//!
//! With libdevice ([`MathLib::Libdevice`]) the functions are CUDA's `__nv_*`: their documented
//! bounds as transcribed from the CUDA C++ Programming Guide ("Mathematical Functions", without
//! `-use_fast_math`), not measured here. Without it ([`MathLib::Polynomial`], module
//! `polynomial`) they are MLIR's polynomial `erf` and kiln's f64 expansions, measured by
//! `cargo test --release --test main polynomial::polynomial_ulp_table -- --nocapture` on the host
//! with the samples and domains of the table above (the code is target-independent MLIR and f64
//! arithmetic: on the GPU it differs only by LLVM's FMA contraction on NVPTX, which may move the
//! float32 `erf` polynomial by a last bit). Float64 math functions have no polynomial form: a
//! [`CompileError::Unsupported`] naming the function and libdevice. `sin`, `cos`, `tan` without
//! libdevice are NaN for |x| ≥ 2^48 (measured below that; bfloat16 reaches it).
//!
//! | function | libdevice float32 (CUDA's bound) | libdevice float64 | polynomial float16 | bfloat16 | float32 | bound (16/bf16, 32) |
//! |---|---|---|---|---|---|---|
//! | `cbrt` | 1 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `exp` | 2 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `exp2` | 2 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `expm1` | 1 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `log` | 1 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `log2` | 1 | 1 | 0 | 0 | 0 | 1, 1 |
//! | `log10` | 2 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `log1p` | 1 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `sin` | 2 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `cos` | 2 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `tan` | 4 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `arcsin` | 2 | 2 | 0 | 0 | 0 | 1, 1 |
//! | `arccos` | 2 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `arctan` | 2 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `sinh` | 3 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `cosh` | 2 | 1 | 1 | 0 | 0 | 1, 1 |
//! | `tanh` | 2 | 1 | 0 | 0 | 0 | 1, 1 |
//! | `arcsinh` | 3 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `arccosh` | 4 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `arctanh` | 3 | 2 | 0 | 0 | 0 | 1, 1 |
//! | `erf` | 2 | 2 | 1 | 1 | 3 | 1, 4 |
//! | `power` | 4 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `arctan2` | 3 | 2 | 1 | 0 | 0 | 1, 1 |
//! | `hypot` | 3 | 2 | 0 | 0 | 0 | 1, 1 |
//! | `logaddexp` | (exp, log1p) | (exp, log1p) | 1 | 0 | 1 | 1, 1 |

mod builder;
mod cast;
mod complex;
mod fold;
mod gather;
pub mod gpu;
pub mod host;
mod host_cache;
mod index;
mod jit;
mod libdevice;
pub mod lower;
mod moments;
mod online;
mod polynomial;
mod reduce;
mod scalar;
mod types;

use kiln_ir::HostArray;

pub use host::{
    asm_text, compile_kernel, compile_region, compile_region_disk, compile_region_math,
    compile_region_tier, llvm_ir_text, mlir_text, optimized_llvm_ir_text, run_compiled, run_region,
    CompiledRegion, Origin, Tier,
};
pub use lower::scan_gpu::GpuGrid;
pub use lower::scatter::GpuScatter;
pub use lower::{
    lower_for, lower_options, lower_with, GpuSplit, Kernel, Options, GPU_ENTRY, HOST_ENTRY, KERNEL,
};

use crate::fusion::{Region, RegionKind};
use crate::schedule::{run_steps, Schedule};
use crate::CompileError;

/// What a kernel is generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// This machine's CPU: math through libm and glibc's vector math library.
    Host,
    /// NVIDIA GPUs (NVPTX): math through libdevice, a grid-stride entry point.
    Gpu,
}

/// How a kernel computes math functions (`exp`, `sin`, `power`, ...). Part of the kernel's MLIR
/// text (a `kiln.math` module attribute when [`MathLib::Polynomial`]), hence of every cache key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathLib {
    /// The host's libm, and glibc's vector functions in vectorised loops ([`Target::Host`]).
    Libm,
    /// libdevice's `__nv_*` functions, linked into the PTX ([`Target::Gpu`]).
    Libdevice,
    /// No library: MLIR's polynomial approximations (`populateMathPolynomialApproximationPatterns`,
    /// float32) and kiln's expansions in f64 arithmetic (module `polynomial`); float64 functions
    /// are [`CompileError::Unsupported`]. For GPUs without libdevice; the host can use it too,
    /// which is how its accuracy is measured.
    Polynomial,
}

impl MathLib {
    /// The math library of `target` on this machine: libm on the host; on the GPU libdevice
    /// when [`gpu::libdevice_path`] finds it, else the polynomial approximations.
    /// `KILN_GPU_MATH=polynomial` (or `libdevice`) overrides the choice for the GPU.
    pub fn for_target(target: Target) -> MathLib {
        match target {
            Target::Host => MathLib::Libm,
            Target::Gpu => gpu::gpu_math(),
        }
    }

    /// `libm`, `libdevice` or `polynomial`.
    pub fn name(self) -> &'static str {
        match self {
            MathLib::Libm => "libm",
            MathLib::Libdevice => "libdevice",
            MathLib::Polynomial => "polynomial",
        }
    }
}

/// Something code generation does not handle yet (an op, a dtype, a region kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub op: Option<&'static str>,
    pub reason: String,
}

impl Unsupported {
    pub(crate) fn new(op: Option<&'static str>, reason: String) -> Unsupported {
        Unsupported { op, reason }
    }

    /// The error for region number `region`.
    pub fn into_error(self, region: usize) -> CompileError {
        CompileError::Unsupported {
            region,
            op: self.op.unwrap_or("-").to_string(),
            reason: self.reason,
        }
    }
}

/// Runs a region on the host: a vendor region through the host libraries ([`crate::vendor`]),
/// others compiled (cached), or, when code generation does not support them yet, by the
/// reference evaluator (logged at debug level with the reason).
pub fn run_region_or_evaluate(
    region: &Region,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, CompileError> {
    if region.kind == RegionKind::Vendor {
        return crate::vendor::run_region_on_host(region, inputs);
    }
    if region.kind == RegionKind::Sort {
        return crate::vendor::sort::run_region_on_host(region, inputs);
    }
    match run_region(region, inputs) {
        Ok(outs) => Ok(outs),
        Err(CompileError::Unsupported { op, reason, .. }) => {
            tracing::debug!(op = %op, reason = %reason, "code generation unsupported; evaluating the region");
            Ok(kiln_ir::eval::evaluate(&region.body, inputs)?)
        }
        Err(e) => Err(e),
    }
}

/// Runs a schedule on the host: each step's region compiled to machine code (cached), a vendor
/// region through the host libraries ([`crate::vendor`]), or, when code generation does not
/// support a region yet, the reference evaluator (logged at debug level with the reason).
/// `inputs[k]` is the graph's `input {index=k}`.
///
/// Errors: a missing input, an evaluation error of a region run by the evaluator, a compilation
/// failure, a library failure.
pub fn run_schedule_on_host(
    sched: &Schedule,
    regions: &[Region],
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, CompileError> {
    run_steps(sched, regions, inputs, CompileError::InvalidInput, |s, region, refs| {
        if region.kind == RegionKind::Vendor {
            return crate::vendor::run_region_on_host(region, refs);
        }
        if region.kind == RegionKind::Sort {
            return crate::vendor::sort::run_region_on_host(region, refs);
        }
        match run_region(region, refs) {
            Err(CompileError::Unsupported { op, reason, .. }) => {
                tracing::debug!(region = sched.steps[s].region, op = %op, reason = %reason, "code generation unsupported; evaluating the region");
                Ok(kiln_ir::eval::evaluate(&region.body, refs)?)
            }
            other => other,
        }
    })
}
