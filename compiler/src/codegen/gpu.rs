//! Kernels for NVIDIA GPUs: the region's MLIR (with the `@kiln_gpu` grid-stride entry) →
//! `llvm`/`nvvm` dialects → LLVM IR → `default<O3>` → libdevice's functions linked, already
//! optimised, and inlined → NVPTX → PTX text ([`ptx_of_mlir_timed`] times each stage).
//!
//! The lowering is the host's ([`super::lower`]) but for two things: math functions call
//! libdevice's `__nv_*` functions, and the module holds a `.entry` kernel that runs chunks of
//! work items in a grid-stride loop. Sizes and strides are kernel parameters, so one PTX module
//! serves every shape of a structure.
//!
//! libdevice (`libdevice.10.bc`) is found by `kiln_cache::cuda_toolkit` (`KILN_LIBDEVICE`, the
//! toolkit's roots, or the `nvidia-nvvm` Python wheel); see [`libdevice_path`]. Each function
//! a kernel calls is read from it (lazily: only that function), optimised once per process and
//! kept as bitcode (`codegen::libdevice`). A kernel that calls no math function needs none. Without it ([`gpu_math`]) math functions are MLIR's polynomial approximations and
//! kiln's f64 expansions ([`MathLib::Polynomial`]: float32 only, accuracy in `codegen`'s docs);
//! LLVM's `llvm.exp`/`llvm.log`/`llvm.pow` never reach NVPTX either way (they abort it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use kiln_cache::config::GpuMath;

use super::jit::Tier;
use super::libdevice;
pub use super::libdevice::libdevice_path;
use super::lower::{lower, Kernel, LowerOptions, GPU_ENTRY};
use super::MathLib;
use crate::fusion::Region;
use crate::toolchain::mlir::translate_to_llvm;
use crate::toolchain::ptx::{self, ms_since, PtxTarget, PtxTimes, PTX_KERNEL_CC};
use crate::CompileError;

/// A region compiled for the GPU: PTX and what it takes to launch it.
#[derive(Debug)]
pub struct GpuKernel {
    /// The lowered kernel (MLIR text, parameter values, work items, chunking).
    pub kernel: Kernel,
    /// The PTX module text; its entry is [`GPU_ENTRY`].
    pub ptx: Arc<str>,
    /// Milliseconds spent compiling it (0 when it came from the cache).
    pub compile_ms: f64,
    /// Where those milliseconds went (all 0 when it came from the cache).
    pub times: PtxTimes,
    /// How it was compiled (see [`compile_ptx`]).
    pub tier: Tier,
}

/// Calls after which a kernel compiled at [`Tier::Fast`] is compiled again, optimised, once it
/// has also done [`GPU_HOT_WORK`] in all.
pub const GPU_HOT_CALLS: u64 = 4;

/// Work (element operations: work items times their cost, summed over calls) after which a
/// fast kernel called [`GPU_HOT_CALLS`] times is compiled again, optimised: 2^26, a 2^24-element
/// float32 kernel's four calls. Smaller work waits for [`GPU_HOT_CALLS_SMALL`] calls: its
/// optimised compilation (about 50 ms of the host through `ptxas`) would cost more than the
/// fast code loses (a new process running the k-means example on the digits on an H100 spent
/// 1.4 s on the GPU, 0.4 s on the CPU, compiling most of it).
pub const GPU_HOT_WORK: u64 = 1 << 26;

/// Calls after which a fast kernel is optimised whatever its work.
pub const GPU_HOT_CALLS_SMALL: u64 = 64;

/// Whether a fast kernel called `calls` times, doing `work` in all, is hot.
pub fn gpu_is_hot(calls: u64, work: u64) -> bool {
    calls >= GPU_HOT_CALLS && (work >= GPU_HOT_WORK || calls >= GPU_HOT_CALLS_SMALL)
}

/// The tier a new GPU kernel is compiled at, and whether it is compiled again optimised once
/// it is hot ([`gpu_is_hot`]): `KILN_GPU_TIER=fast` or `=optimized` for that tier
/// only; else fast first, whatever the work. On the GPU the optimised tier's compilation (its
/// five copies of the region's code through LLVM, then ptxas: the first call of a new
/// `x * k + cos(x)` over 2^26 elements took 77 ms on an H200's host, 58–64 ms at the fast
/// tier) is worth hundreds of calls of a memory-bound kernel (ew_chain over 2^26 float32
/// elements: 0.16 ms optimised; the fast code's own time is not measured yet), so only a
/// kernel called again gets it.
pub fn gpu_tier() -> (Tier, bool) {
    Tier::of_setting(kiln_cache::config().gpu_tier)
}

/// The math library of GPU kernels, chosen once per process: `KILN_GPU_MATH` (`polynomial` or
/// `libdevice`) when set, else libdevice when [`libdevice_path`] finds it, else the polynomial
/// approximations.
pub fn gpu_math() -> MathLib {
    match kiln_cache::config().gpu_math {
        Some(GpuMath::Polynomial) => MathLib::Polynomial,
        Some(GpuMath::Libdevice) => MathLib::Libdevice,
        None if libdevice_path().is_some() => MathLib::Libdevice,
        None => MathLib::Polynomial,
    }
}

/// The LLVM passes of [`Tier::Fast`] GPU kernels: the region's functions inlined into the
/// entry, then SROA, InstCombine and CFG simplification on it; ptxas, in the driver,
/// optimises the PTX. On the development machine (ew_chain) 1.0–1.4 ms against 6–7.5 ms for
/// `default<O1>` and 8–13 ms for `default<O3>`.
pub const FAST_PIPELINE: &str =
    "cgscc(inline),function(sroa,instcombine<no-verify-fixpoint>,simplifycfg)";

/// Kernel MLIR text (lowered for [`Target::Gpu`]) to PTX for `target`.
pub fn ptx_of_mlir(text: &str, target: PtxTarget) -> Result<String, CompileError> {
    ptx_of_mlir_timed(text, target).map(|(ptx, _)| ptx)
}

/// [`ptx_of_mlir`], with where the time went.
pub fn ptx_of_mlir_timed(
    text: &str,
    target: PtxTarget,
) -> Result<(String, PtxTimes), CompileError> {
    ptx_of_mlir_tier(text, target, Tier::Optimized)
}

/// Kernel MLIR text to PTX for `target` at `tier`, with where the time went:
/// [`Tier::Optimized`] runs `default<O3>` and optimised NVPTX code generation;
/// [`Tier::Fast`] [`FAST_PIPELINE`] and unoptimised code generation (`-O0`), for a fifth of
/// the time (ptxas optimises the PTX either way). libdevice's functions are linked
/// and inlined alike.
pub fn ptx_of_mlir_tier(
    text: &str,
    target: PtxTarget,
    tier: Tier,
) -> Result<(String, PtxTimes), CompileError> {
    let optimized = tier == Tier::Optimized;
    let mut times = PtxTimes::default();
    // libdevice's functions this process has not optimised yet are optimised on a thread of
    // their own meanwhile (the first kernel calling `cosf` waited 6.5-10 ms for it after the
    // kernel's own stages; `link` then finds them ready).
    let unprepared = libdevice::unprepared_in_mlir(text, target);
    let llvm = inkwell::context::Context::create();
    let (module, linked) = std::thread::scope(|scope| {
        let prefetch = (!unprepared.is_empty())
            .then(|| scope.spawn(|| libdevice::prepare(&unprepared, target)));
        let mut translate = 0.0;
        let module = super::jit::with_lowered(text, &mut times, |m| {
            let t = Instant::now();
            let module = translate_to_llvm(m, &llvm);
            translate = ms_since(t);
            module
        })?;
        times.translate = translate;
        let t = Instant::now();
        let entry = module
            .get_function(GPU_ENTRY)
            .ok_or_else(|| CompileError::Llvm(format!("no @{GPU_ENTRY} in the module")))?;
        entry.set_call_conventions(PTX_KERNEL_CC);
        // Everything but the entry is internal, so O3 inlines it and drops what is not called.
        ptx::internalize(&module, GPU_ENTRY);
        ptx::set_target(&module, target)?;
        module.verify().map_err(|e| CompileError::Llvm(e.to_string()))?;
        // The kernel's own code, libdevice's functions still declarations.
        ptx::run_pipeline(&module, target, if optimized { "default<O3>" } else { FAST_PIPELINE })?;
        times.optimize = ms_since(t);
        let t = Instant::now();
        // A prefetch that panicked left its functions unmade: `link` makes them.
        let _ = prefetch.map(|p| p.join());
        let linked = libdevice::link(&module, target)?;
        times.link = ms_since(t);
        Ok::<_, CompileError>((module, linked))
    })?;
    if linked {
        let t = Instant::now();
        // Inlined where called; identical constants (libdevice's tables, linked once per
        // function) merged; what is no longer used dropped.
        ptx::run_pipeline(&module, target, "always-inline,constmerge,globaldce")?;
        times.optimize += ms_since(t);
    }
    let t = Instant::now();
    let ptx = ptx::codegen_at(&module, target, optimized)?;
    times.codegen = ms_since(t);
    Ok((ptx, times))
}

/// PTX by (MLIR text, math library, target, tier).
type PtxCache = Mutex<HashMap<(String, MathLib, PtxTarget, Tier), Arc<str>>>;

fn cache() -> &'static PtxCache {
    static CACHE: OnceLock<PtxCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Whether this process compiled `kernel`'s PTX for `target` at `tier` already (then
/// [`compile`](super::compile) returns it at once).
pub fn ptx_is_compiled(kernel: &Kernel, target: PtxTarget, tier: Tier) -> bool {
    cache().lock().unwrap_or_else(|e| e.into_inner()).contains_key(&ptx_key(kernel, target, tier))
}

/// The key of `kernel`'s PTX in the process's cache: its MLIR text, math library, target and tier.
fn ptx_key(kernel: &Kernel, target: PtxTarget, tier: Tier) -> (String, MathLib, PtxTarget, Tier) {
    (kernel.mlir.clone(), kernel.math, target, tier)
}

/// Compiles a kernel lowered for the GPU to PTX for `target` at `tier` (see
/// [`ptx_of_mlir_tier`]), cached in memory by its MLIR text, math library and tier.
pub(crate) fn compile_ptx(
    kernel: Kernel,
    target: PtxTarget,
    tier: Tier,
) -> Result<GpuKernel, CompileError> {
    let key = ptx_key(&kernel, target, tier);
    if let Some(ptx) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(GpuKernel {
            kernel,
            ptx: ptx.clone(),
            compile_ms: 0.0,
            times: PtxTimes::default(),
            tier,
        });
    }
    let t = Instant::now();
    let (ptx, times) = ptx_of_mlir_tier(&kernel.mlir, target, tier)?;
    let ptx: Arc<str> = ptx.into();
    let compile_ms = ms_since(t);
    tracing::debug!(
        compile_ms,
        sm = target.sm,
        parse_ms = times.parse,
        passes_ms = times.passes,
        translate_ms = times.translate,
        link_ms = times.link,
        optimize_ms = times.optimize,
        codegen_ms = times.codegen,
        tier = tier.name(),
        "compiled a GPU kernel"
    );
    cache().lock().unwrap_or_else(|e| e.into_inner()).insert(key, ptx.clone());
    Ok(GpuKernel { kernel, ptx, compile_ms, times, tier })
}

/// The MLIR of a region's GPU kernel (canonical and shape-generic: what `KILN_DUMP=mlir`
/// shows on the GPU backend).
pub fn mlir_text(region: &Region) -> Result<String, CompileError> {
    Ok(lower(region, &LowerOptions::gpu())?.mlir)
}

/// The LLVM IR of a region's GPU kernel as translated from MLIR, before libdevice is linked
/// and before optimisation (canonical: what `KILN_DUMP=llvm` shows on the GPU backend).
pub fn llvm_ir_text(region: &Region) -> Result<String, CompileError> {
    super::jit::translate(&lower(region, &LowerOptions::gpu())?.mlir)
}

/// The PTX of a region's kernel for `target` (what `KILN_DUMP=ptx` shows).
pub fn ptx_text(region: &Region, target: PtxTarget) -> Result<String, CompileError> {
    let kernel = lower(region, &LowerOptions::gpu().for_sm(target.sm))?;
    Ok(compile_ptx(kernel, target, Tier::Optimized)?.ptx.to_string())
}

/// The disk-cache key of a GPU kernel: its canonical MLIR text, its math library, the PTX
/// target, and every version the generated code depends on (kiln, LLVM, the libdevice linked
/// (none under [`MathLib::Polynomial`]), the tier, and `driver`: the CUDA driver's version, since the
/// cubin kept beside the PTX comes from its JIT). Two kernels with the same key compile to the
/// same code.
pub fn disk_cache_key(kernel: &Kernel, target: PtxTarget, tier: Tier, driver: i32) -> String {
    let (major, minor, patch) = crate::toolchain::llvm_version();
    let libdevice = match kernel.math {
        MathLib::Libdevice => libdevice::libdevice_len(),
        MathLib::Libm | MathLib::Polynomial => 0,
    };
    format!(
        "kiln {}\nllvm {major}.{minor}.{patch}\nmath {}\nlibdevice {libdevice} bytes\ntarget {} {}\ntier {}\ncuda driver {driver}\n--\n{}",
        env!("CARGO_PKG_VERSION"),
        kernel.math.name(),
        target.cpu(),
        target.features(),
        tier.name(),
        kernel.mlir
    )
}
