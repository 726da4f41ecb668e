//! Code generation: fused regions to MLIR, to LLVM IR, to machine code.
//!
//! Two entry points: [`lower`] (a [`Region`] and [`LowerOptions`]) and [`compile`] (a [`Kernel`],
//! a [`CodeTarget`] and a [`Tier`]).
//!
//! - [`lower`](lower::lower): a [`Region`] to a [`Kernel`]: canonical, shape-generic MLIR text
//!   (`func`, `scf`, `arith`, `math`, `llvm` pointers) and the parameters for the region's
//!   shapes. Elementwise and reduction regions; views are index math, never copies.
//! - [`host`]: kernels compiled for the host CPU (LLVM with glibc's vector math library, an
//!   object file linked by ORC; a fast tier first, then an optimised one), cached in memory and
//!   on disk (`KILN_CACHE_DIR`), run over [`HostArray`]s in parallel chunks. Vendor regions are library calls ([`crate::vendor`]), not kernels.
//!
//! The module-level docs of [`lower`] and of the private modules `types`, `scalar`, `cast`,
//! `reduce`, `fold` and `jit` give the semantics, their accuracy and the compilation tiers.
//!
//! Running the code is the executor's (crate `kiln-exec`).
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
//! (`erfc`, `erfinv`, `gammaln` and `digamma` compute in f64 as module functions with scalar libm
//! calls (`special`): the evaluator's formulas, bounded by the table's 4/1 ulps and measured by
//! the suite's `special::host_code_matches_the_evaluator`; `gcd` and `lcm` are exact.)
//!
//! (`logaddexp2`, NumPy's base-2 form, is computed as `logaddexp`: exact, checked by the suite's
//! `ufuncs23`; `fmod`, `ldexp`, `frexp` and `nextafter` are exact arithmetic on the bits.)
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
mod division;
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
mod philox;
mod polynomial;
mod reduce;
mod scalar;
mod special;
mod types;

pub use host::{
    asm_of_mlir, asm_text, compile_region, compile_region_disk, llvm_ir_of_mlir, llvm_ir_text,
    mlir_text, optimized_llvm_ir_text, CompiledRegion, Origin, Tier,
};
pub use lower::scan_gpu::GpuGrid;
pub use lower::scatter::GpuScatter;
pub use lower::sort_gpu::{
    radix_sort, row_sort, sort_take, topk, RadixSort, RowSort, SortTake, TopK, RADIX_MAX_LINES,
    ROW_SORT_MAX, SELECT_SHARED, TOPK_MAX,
};
pub use lower::{
    lower, GpuSplit, Kernel, KernelShape, LowerOptions, GPU_ENTRY, HOST_ENTRY, KERNEL,
};

use crate::fusion::{Region, RegionKind};
use crate::CompileError;

/// The kernel shape a region is lowered to on the host and on the GPU, or what runs it instead:
/// `host reduction rows; gpu gpu row groups + row cache`, `host library; gpu library`. The
/// fusion report's `code` line.
pub fn kernel_shapes(region: &Region) -> String {
    let on = |options: LowerOptions, instead: &str| match region.kind {
        RegionKind::Vendor => "library".to_string(),
        _ => lower(region, &options).map_or_else(|_| instead.to_string(), |k| k.shape.to_string()),
    };
    let host_instead = if region.kind == RegionKind::Sort { "host sort" } else { "evaluator" };
    let host = on(LowerOptions::host(), host_instead);
    let gpu_instead = match (radix_sort(region), sort_take(region), topk(region)) {
        (Ok(_), _, _) => "radix sort".to_string(),
        (_, Ok(s), _) if s.in_shared => "radix select".to_string(),
        (_, Ok(_), _) => "radix sort + pick".to_string(),
        (_, _, Ok(_)) => "radix topk".to_string(),
        (Err(_), Err(_), Err(_)) => format!("on the host ({host})"),
    };
    let gpu = on(LowerOptions::gpu(), &gpu_instead);
    format!("host {host}; gpu {gpu}")
}

/// Where [`compile`] puts a kernel's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeTarget {
    /// This machine's CPU: an object file linked in process by ORC.
    Host,
    /// PTX for a GPU.
    Ptx(crate::toolchain::ptx::PtxTarget),
}

/// What [`compile`] makes of a kernel.
#[derive(Debug)]
pub enum Code {
    /// Host machine code, ready to run over host buffers.
    Host(CompiledRegion),
    /// A PTX module, to be loaded by the CUDA driver.
    Ptx(gpu::GpuKernel),
}

impl Code {
    /// The host code, if that is what this is.
    pub fn into_host(self) -> Option<CompiledRegion> {
        match self {
            Code::Host(c) => Some(c),
            Code::Ptx(_) => None,
        }
    }

    /// The PTX, if that is what this is.
    pub fn into_ptx(self) -> Option<gpu::GpuKernel> {
        match self {
            Code::Ptx(k) => Some(k),
            Code::Host(_) => None,
        }
    }
}

/// Compiles a kernel (made by [`lower`] for the matching [`Target`]) at `tier`: code
/// generation's second entry point. Host code bypasses the caches ([`compile_region`] is the
/// cached path); PTX is cached in memory by the kernel's MLIR text, math library and tier.
///
/// Errors: a kernel lowered for the other target ([`CompileError::InvalidInput`]); the
/// toolchain's errors.
pub fn compile(kernel: Kernel, target: CodeTarget, tier: Tier) -> Result<Code, CompileError> {
    match (target, kernel.target) {
        (CodeTarget::Host, Target::Host) => Ok(Code::Host(host::compile_host(kernel, tier)?)),
        (CodeTarget::Ptx(t), Target::Gpu) => Ok(Code::Ptx(gpu::compile_ptx(kernel, t, tier)?)),
        (CodeTarget::Host, Target::Gpu) | (CodeTarget::Ptx(_), Target::Host) => {
            Err(CompileError::InvalidInput(format!(
                "a kernel lowered for the {:?} target cannot be compiled for {target:?}",
                kernel.target
            )))
        }
    }
}

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
