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
    gpu_compile(
        codegen::lower(region, &LowerOptions::gpu_tier(tier).for_sm(target.sm))?,
        target,
        tier,
    )
}

/// The optimised GPU kernel (PTX for the default target) of the one region the plan of `outs`
/// has; panics if the plan has several.
pub fn only_gpu_kernel(outs: &[&kiln::Array]) -> GpuKernel {
    only_gpu_kernel_with(outs, true)
}

/// [`only_gpu_kernel`] lowered as for an `sm_90` device without bulk copies: a GPU scatter's
/// block taking its tiles together, not consumer warps taking them from a queue (what
/// `KILN_GPU_SCATTER_QUEUE=off` runs on an H100 or H200).
pub fn only_tiled_gpu_kernel(outs: &[&kiln::Array]) -> GpuKernel {
    only_gpu_kernel_with(outs, false)
}

/// The optimised GPU kernel of the one region of `outs`' plan, with or without `sm_90`'s
/// bulk copies.
fn only_gpu_kernel_with(outs: &[&kiln::Array], bulk_copies: bool) -> GpuKernel {
    let lowered = kiln::lower(outs);
    let plan = kiln_compiler::pipeline::compile(
        &lowered.graph,
        &kiln_compiler::pipeline::Options::from_env(),
    )
    .unwrap();
    assert_eq!(plan.partition.regions.len(), 1, "one region");
    let (target, tier) = (PtxTarget::default(), Tier::Optimized);
    let options = LowerOptions::gpu_tier(tier).for_sm(target.sm);
    let options = LowerOptions { bulk_copies: options.bulk_copies && bulk_copies, ..options };
    let lowered = codegen::lower(&plan.partition.regions[0], &options).unwrap();
    gpu_compile(lowered, target, tier).unwrap()
}

/// The optimised GPU kernel (PTX for the default target) of the scatter region of `out`'s
/// plan; panics if the plan has none.
pub fn scatter_gpu_kernel(out: &kiln::Array) -> Result<GpuKernel, CompileError> {
    let lowered = kiln::lower(&[out]);
    let plan = kiln_compiler::pipeline::compile(
        &lowered.graph,
        &kiln_compiler::pipeline::Options::from_env(),
    )
    .unwrap();
    let region = plan
        .partition
        .regions
        .iter()
        .find(|r| r.kind == kiln_compiler::fusion::RegionKind::Scatter)
        .expect("a scatter region");
    gpu_kernel(region, PtxTarget::default(), Tier::Optimized)
}

/// A kernel lowered for the GPU, compiled to PTX for `target` at `tier`.
pub fn gpu_compile(
    kernel: codegen::Kernel,
    target: PtxTarget,
    tier: Tier,
) -> Result<GpuKernel, CompileError> {
    let k = codegen::compile(kernel, CodeTarget::Ptx(target), tier)?.into_ptx().expect("PTX");
    write_ptx(&k.ptx);
    Ok(k)
}

/// With `KILN_TEST_PTX_DIR` set, `ptx` written there as `TEST-N.ptx` (the test's thread name,
/// its `N`-th kernel): for comparing the PTX of every test before and after a change of code
/// generation that should keep it.
fn write_ptx(ptx: &str) {
    thread_local! {
        static COUNT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    let Some(dir) = std::env::var_os("KILN_TEST_PTX_DIR") else { return };
    let n = COUNT.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let name = std::thread::current().name().unwrap_or("main").replace("::", "-");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(std::path::Path::new(&dir).join(format!("{name}-{n}.ptx")), ptx).unwrap();
}

/// A region's host code at `tier`, bypassing the caches.
pub fn host_kernel(region: &Region, tier: Tier) -> Result<CompiledRegion, CompileError> {
    host_compile(codegen::lower(region, &LowerOptions::host())?, tier)
}

/// A kernel lowered for the host, compiled at `tier`, bypassing the caches.
pub fn host_compile(kernel: codegen::Kernel, tier: Tier) -> Result<CompiledRegion, CompileError> {
    Ok(codegen::compile(kernel, CodeTarget::Host, tier)?.into_host().expect("host code"))
}
