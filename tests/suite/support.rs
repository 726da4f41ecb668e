//! Shorthands the suite shares over code generation's two entry points
//! (`codegen::lower` and `codegen::compile`).

use kiln_compiler::codegen::gpu::GpuKernel;
use kiln_compiler::codegen::{self, CodeTarget, CompiledRegion, LowerOptions, Tier};
use kiln_compiler::fusion::Region;
use kiln_compiler::toolchain::ptx::PtxTarget;
use kiln_compiler::CompileError;

/// A region's GPU kernel at `tier`: lowered for that tier and compiled to PTX for `target`.
pub fn gpu_kernel(
    region: &Region,
    target: PtxTarget,
    tier: Tier,
) -> Result<GpuKernel, CompileError> {
    gpu_compile(codegen::lower(region, &LowerOptions::gpu_tier(tier))?, target, tier)
}

/// The optimised GPU kernel (PTX for the default target) of the one region the plan of `outs`
/// has; panics if the plan has several.
pub fn only_gpu_kernel(outs: &[&kiln::Array]) -> GpuKernel {
    let lowered = kiln::lower(outs);
    let plan = kiln_compiler::pipeline::compile(
        &lowered.graph,
        &kiln_compiler::pipeline::Options::from_env(),
    )
    .unwrap();
    assert_eq!(plan.partition.regions.len(), 1, "one region");
    gpu_kernel(&plan.partition.regions[0], PtxTarget::default(), Tier::Optimized).unwrap()
}

/// A kernel lowered for the GPU, compiled to PTX for `target` at `tier`.
pub fn gpu_compile(
    kernel: codegen::Kernel,
    target: PtxTarget,
    tier: Tier,
) -> Result<GpuKernel, CompileError> {
    Ok(codegen::compile(kernel, CodeTarget::Ptx(target), tier)?.into_ptx().expect("PTX"))
}

/// A region's host code at `tier`, bypassing the caches.
pub fn host_kernel(region: &Region, tier: Tier) -> Result<CompiledRegion, CompileError> {
    host_compile(codegen::lower(region, &LowerOptions::host())?, tier)
}

/// A kernel lowered for the host, compiled at `tier`, bypassing the caches.
pub fn host_compile(kernel: codegen::Kernel, tier: Tier) -> Result<CompiledRegion, CompileError> {
    Ok(codegen::compile(kernel, CodeTarget::Host, tier)?.into_host().expect("host code"))
}
