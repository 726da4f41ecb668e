//! Code generation: fused regions to MLIR, to LLVM IR, to machine code.
//!
//! - [`lower`](lower::lower): a [`Region`] to a [`Kernel`]: canonical, shape-generic MLIR text
//!   (`func`, `scf`, `arith`, `math`, `llvm` pointers) and the parameters for the region's
//!   shapes. Elementwise and reduction regions; views are index math, never copies.
//! - [`host`]: kernels compiled for the host CPU (LLVM with glibc's vector math library, MCJIT;
//!   a fast tier first, then an optimised one), cached in memory, run over [`HostArray`]s in
//!   parallel chunks. Vendor regions are library calls ([`crate::vendor`]), not kernels.
//! - [`run_schedule_on_host`]: a whole [`Schedule`] on the host, each region compiled, or
//!   evaluated by the reference evaluator when code generation does not support it yet.
//!
//! The module-level docs of [`lower`] and of the private modules `types`, `scalar`, `cast`,
//! `reduce` and `jit` give the semantics, their accuracy and the compilation tiers.

mod builder;
mod cast;
mod gather;
pub mod gpu;
pub mod host;
mod index;
mod jit;
pub mod lower;
mod reduce;
mod scalar;
mod types;

use kiln_ir::HostArray;

pub use host::{
    compile_region, compile_region_tier, llvm_ir_text, mlir_text, optimized_llvm_ir_text, run_compiled, run_region,
    CompiledRegion, Tier,
};
pub use lower::{lower_for, Kernel, GPU_ENTRY, HOST_ENTRY, KERNEL};

use crate::fusion::{Region, RegionKind};
use crate::schedule::{run_steps, Schedule};
use crate::CompileError;

/// What a kernel is generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// This machine's CPU (MCJIT): math through libm and glibc's vector math library.
    Host,
    /// NVIDIA GPUs (NVPTX): math through libdevice, a grid-stride entry point.
    Gpu,
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
        CompileError::Unsupported { region, op: self.op.unwrap_or("-").to_string(), reason: self.reason }
    }
}

/// Runs a region on the host: a vendor region through the host libraries ([`crate::vendor`]),
/// others compiled (cached), or, when code generation does not support them yet, by the
/// reference evaluator (logged at debug level with the reason).
pub fn run_region_or_evaluate(region: &Region, inputs: &[&HostArray]) -> Result<Vec<HostArray>, CompileError> {
    if region.kind == RegionKind::Vendor {
        return crate::vendor::run_region_on_host(region, inputs);
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
        match run_region(region, refs) {
            Err(CompileError::Unsupported { op, reason, .. }) => {
                tracing::debug!(region = sched.steps[s].region, op = %op, reason = %reason, "code generation unsupported; evaluating the region");
                Ok(kiln_ir::eval::evaluate(&region.body, refs)?)
            }
            other => other,
        }
    })
}
