//! A region made ready to launch: its kernel lowered, its code from the disk kernel cache or
//! compiled (fast tier first, optimised once hot), linked to a cubin where `ptxas` is found,
//! and loaded.

use kiln_cache::config::GpuInterp;
use kiln_compiler::bytecode::Bytecode;
use kiln_compiler::codegen::gpu::ptx_is_compiled;

use super::interp::{self, Interpreted, Pending};
use super::*;

/// A region ready to launch: its kernel and the loaded function (`None`: a library call, or
/// it runs on the host).
pub(super) struct Ready {
    /// The region's loaded kernel, where it was ready at once; see [`Ready::kernel`].
    kernel: Option<Loaded>,
    /// The region interpreted until its code compiles ([`super::interp`]).
    pub(super) pending: Option<Arc<Pending>>,
    /// The library call of a vendor region the GPU executor takes (cuBLAS, cuFFT).
    pub(super) vendor: Option<kiln_compiler::vendor::VendorCall>,
    /// A kernel step as the load callback of the next step's FFT, or an FFT step's consumer
    /// (the next step) as its store callback, where it qualifies ([`super::fft_fusion::find`];
    /// set by the executor, which sees the schedule).
    pub(super) fft_site: Option<Arc<super::fft_fusion::Candidate>>,
}

impl Ready {
    fn new(kernel: Option<Loaded>, pending: Option<Arc<Pending>>) -> Ready {
        Ready { kernel, pending, vendor: None, fft_site: None }
    }

    /// The region's loaded kernel: ready at once, or compiled while it was interpreted and
    /// landed since (`None` while it is interpreted, and for library and host regions).
    pub(super) fn kernel(&self) -> Option<&Loaded> {
        self.kernel.as_ref().or_else(|| self.pending.as_ref()?.compiled())
    }
}

/// A region's loaded kernel: fast code first where [`gpu_tier`] says so, replaced by
/// optimised code once the kernel is hot ([`gpu_is_hot`]: its calls and their work, in this
/// plan or others; compiled by the thread that makes that call, others go on with the fast
/// code meanwhile).
pub(super) struct Loaded {
    pub(super) current: RwLock<Arc<(GpuKernel, Function)>>,
    /// The region lowered for optimised code, while the current code is fast and may upgrade.
    pub(super) upgrade: Mutex<Option<Kernel>>,
    /// Calls and work of the fast kernel, counted across plans ([`fast_calls`]).
    pub(super) calls: Arc<Heat>,
}

/// Calls of each fast-tier kernel in this process, by its MLIR text: a plan made again (a
/// resized one: another shape of the same structure) finds its kernel's count, so a kernel
/// called with ever new shapes is optimised as one called with one shape.
pub(super) fn fast_calls(mlir: &str) -> Arc<Heat> {
    static CALLS: OnceLock<Mutex<HashMap<String, Arc<Heat>>>> = OnceLock::new();
    let mut calls = CALLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    calls.entry(mlir.to_owned()).or_default().clone()
}

/// A fast kernel's calls and their work (element operations), summed.
#[derive(Default)]
pub(super) struct Heat {
    calls: AtomicU64,
    work: AtomicU64,
}

impl Heat {
    /// Counts a call of `work` and says whether the kernel is now hot.
    fn call(&self, work: u64) -> bool {
        let calls = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let work = self.work.fetch_add(work, Ordering::Relaxed).saturating_add(work);
        gpu_is_hot(calls, work)
    }

    /// Whether a call of `work` would make the kernel hot (without counting it).
    fn hot_with(&self, work: u64) -> bool {
        let calls = self.calls.load(Ordering::Relaxed) + 1;
        gpu_is_hot(calls, self.work.load(Ordering::Relaxed).saturating_add(work))
    }
}

/// A kernel's work per call: its work items times their cost.
fn work_of(k: &Kernel) -> u64 {
    (k.work_items as u64).saturating_mul(k.cost_per_item.max(1) as u64)
}

impl Loaded {
    pub(super) fn new(
        code: (GpuKernel, Function),
        upgrade: Option<Kernel>,
        calls: Arc<Heat>,
    ) -> Loaded {
        Loaded { current: RwLock::new(Arc::new(code)), upgrade: Mutex::new(upgrade), calls }
    }

    /// The code for this call: optimised first if the fast code has become hot.
    pub(super) fn for_call(&self, gpu: &Gpu) -> Arc<(GpuKernel, Function)> {
        let code = self.current.read().unwrap_or_else(|e| e.into_inner()).clone();
        if code.0.tier == Tier::Fast && self.calls.call(work_of(&code.0.kernel)) {
            let upgrade = self.upgrade.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(kernel) = upgrade {
                kiln_runtime::host_trace::point("upgrade: start");
                let optimized = load_or_compile(gpu, kernel, Tier::Optimized);
                kiln_runtime::host_trace::point("upgrade: optimised code loaded");
                match optimized {
                    Ok(optimized) => {
                        let optimized = Arc::new(optimized);
                        *self.current.write().unwrap_or_else(|e| e.into_inner()) =
                            optimized.clone();
                        return optimized;
                    }
                    // The fast code stays; it computes the same values.
                    Err(e) => tracing::warn!(error = %e, "optimising a GPU kernel failed"),
                }
            }
        }
        code
    }
}

/// The key of step `si` of `plan` on `gpu` in [`ready_cache`].
pub(super) fn ready_key(plan: &Arc<Compiled>, si: usize, gpu: &Gpu) -> (usize, usize, usize) {
    (Arc::as_ptr(plan) as usize, si, gpu.device.id())
}

/// Whether step `si`'s kernel may run interpreted while it compiles: not where the next step's
/// FFT may take it as its load callback (such a kernel compiles first).
pub(super) fn may_interpret(plan: &Compiled, si: usize) -> bool {
    super::fft_fusion::find(plan, si + 1, super::fft_fusion::Side::Load).is_none()
}

/// Regions ready to launch, by (plan, step, device ordinal): a plan kept in the plan cache is
/// reused as is, so a repeated materialisation skips lowering, the PTX cache and the module
/// lookup (a loaded function belongs to one device). The entry holds the plan, so its address
/// is not reused while the entry lives.
#[allow(clippy::type_complexity)]
pub(super) fn ready_cache(
) -> &'static Mutex<HashMap<(usize, usize, usize), (Arc<Compiled>, Arc<Ready>)>> {
    static CACHE: OnceLock<Mutex<HashMap<(usize, usize, usize), (Arc<Compiled>, Arc<Ready>)>>> =
        OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// `region` made ready on `gpu`: its kernel loaded from a cache, or interpreted while a worker
/// compiles it (where `may_interpret` and [`interp::interpreting`] allow), or compiled here.
pub(super) fn prepare(gpu: &'static Gpu, region: &Region, may_interpret: bool) -> Result<Ready> {
    let kernel = match lower(region, &LowerOptions::gpu().for_sm(gpu.target().sm)) {
        Ok(k) => k,
        Err(CompileError::Unsupported { op, reason, .. }) => {
            tracing::debug!(op = %op, reason = %reason, "no GPU code for the region; a library or the host runs it");
            let mut ready = Ready::new(None, None);
            ready.vendor = vendor::plan(region);
            return Ok(ready);
        }
        Err(e) => return Err(e.into()),
    };
    kiln_runtime::host_trace::point("prepare: lowered");
    let mode = if may_interpret { interp::interpreting() } else { GpuInterp::Off };
    if mode == GpuInterp::Always {
        if let Ok(program) = Bytecode::of(region) {
            let pending = Pending::always(Interpreted::new(gpu, program)?);
            return Ok(Ready::new(None, Some(Arc::new(pending))));
        }
    }
    let (tier, upgrades) = gpu_tier();
    // The code to load, its tier, and the optimised kernel it may upgrade to.
    let (kernel, tier, upgrade, calls) = match tier {
        Tier::Optimized => (kernel, tier, None, Arc::default()),
        Tier::Fast => {
            let fast = lower(region, &LowerOptions::gpu_tier(Tier::Fast).for_sm(gpu.target().sm))?;
            kiln_runtime::host_trace::point("prepare: lowered fast");
            let calls = fast_calls(&fast.mlir);
            if upgrades && calls.hot_with(work_of(&fast)) {
                // Hot already (under other plans): optimised at once.
                (kernel, Tier::Optimized, None, calls)
            } else {
                (fast, tier, upgrades.then_some(kernel), calls)
            }
        }
    };
    let kernel = match load_cached(gpu, kernel, tier) {
        Ok(code) => return Ok(Ready::new(Some(Loaded::new(code, upgrade, calls)), None)),
        Err(kernel) => kernel,
    };
    if mode == GpuInterp::On {
        if let Ok(program) = Bytecode::of(region) {
            let compile = {
                let (kernel, upgrade, calls) = (kernel.clone(), upgrade.clone(), calls.clone());
                move || Ok(Loaded::new(compile_and_load(gpu, kernel, tier)?, upgrade, calls))
            };
            if let Some(pending) = interp::interpret_while(gpu, program, compile) {
                kiln_runtime::host_trace::point("prepare: interpreted");
                return Ok(Ready::new(None, Some(pending)));
            }
        }
    }
    let code = compile_and_load(gpu, kernel, tier)?;
    Ok(Ready::new(Some(Loaded::new(code, upgrade, calls)), None))
}

/// A kernel lowered for the GPU compiled to PTX for `gpu` at `tier` (cached in memory by its
/// MLIR text, math library and tier).
pub(super) fn compile_ptx(kernel: Kernel, gpu: &Gpu, tier: Tier) -> Result<GpuKernel> {
    let code = kiln_compiler::codegen::compile(kernel, CodeTarget::Ptx(gpu.target), tier)?;
    Ok(code.into_ptx().expect("a PTX target gives PTX"))
}

/// A lowered kernel's code at `tier`, loaded: from the disk cache when it holds it, else
/// compiled (and stored there, with its cubin where [`cubin_source`] makes one).
pub(super) fn load_or_compile(
    gpu: &Gpu,
    kernel: Kernel,
    tier: Tier,
) -> Result<(GpuKernel, Function)> {
    match load_cached(gpu, kernel, tier) {
        Ok(code) => Ok(code),
        Err(kernel) => compile_and_load(gpu, kernel, tier),
    }
}

/// A lowered kernel's code at `tier` where a cache holds it: the disk cache, or without one
/// this process's PTX (the module then in the device's cache, or the driver's JIT); else the
/// kernel back.
fn load_cached(
    gpu: &Gpu,
    kernel: Kernel,
    tier: Tier,
) -> std::result::Result<(GpuKernel, Function), Kernel> {
    let Some(disk) = &gpu.disk else {
        // Without a disk cache, code compiled before is this process's PTX.
        if ptx_is_compiled(&kernel, gpu.target, tier) {
            return compile_and_load(gpu, kernel.clone(), tier).map_err(|_| kernel);
        }
        return Err(kernel);
    };
    let key = code_key(&kernel, gpu, tier);
    kiln_runtime::host_trace::point("prepare: disk key");
    let lookup = disk.lookup(&key);
    kiln_runtime::host_trace::point("prepare: disk lookup");
    let Lookup::Hit(entry) = lookup else { return Err(kernel) };
    // The entry's cubin where it has one (code compiled where `ptxas` was found), unless
    // `KILN_GPU_LINK=ptx` asks for the PTX.
    let ptx = kiln_cache::config().gpu_link == Some(GpuLink::Ptx);
    let image = if entry.cubin.is_empty() || ptx {
        ModuleImage::Ptx(&entry.ptx)
    } else {
        ModuleImage::Cubin(&entry.cubin)
    };
    match load(gpu, image, tier) {
        Ok(function) => {
            kiln_runtime::host_trace::point("prepare: module loaded");
            let k = GpuKernel {
                kernel,
                ptx: entry.ptx.into(),
                compile_ms: 0.0,
                times: Default::default(),
                tier,
            };
            Ok((k, function))
        }
        Err(e) => {
            tracing::warn!(target: "kiln::cache", error = %e, "cached kernel does not load; rebuilding it");
            Err(kernel)
        }
    }
}

/// A lowered kernel compiled at `tier`, its cubin made by [`cubin_source`], loaded, and stored
/// in the disk cache.
fn compile_and_load(gpu: &Gpu, kernel: Kernel, tier: Tier) -> Result<(GpuKernel, Function)> {
    let key = gpu.disk.as_ref().map(|_| code_key(&kernel, gpu, tier));
    let k = compile_ptx(kernel, gpu, tier)?;
    kiln_runtime::host_trace::point("prepare: compiled");
    let (function, cubin) = load_new(gpu, &k, cubin_source())?;
    kiln_runtime::host_trace::point("prepare: module loaded");
    if let (Some(disk), Some(key)) = (&gpu.disk, key) {
        let entry = CachedKernel { ptx: k.ptx.to_string(), cubin };
        if let Err(e) = disk.store(&key, &entry) {
            tracing::warn!(target: "kiln::cache", dir = %disk.dir().display(), error = %e, "cannot write the disk cache");
        }
    }
    Ok((k, function))
}

/// Loads newly compiled code: its cubin from `source` (returned, for the disk cache), or its
/// PTX (an empty cubin returned). A cubin ptxas cannot make is logged and the PTX loaded.
pub(super) fn load_new(
    gpu: &Gpu,
    k: &GpuKernel,
    source: CubinSource,
) -> Result<(Function, Vec<u8>)> {
    let cubin = match source {
        CubinSource::None => None,
        CubinSource::Ptxas => {
            match ptxas_cubin("kiln_region", &k.ptx, gpu.target.sm, sass_level(k.tier)) {
                Ok(cubin) => Some(cubin),
                Err(e) => {
                    tracing::warn!(error = %e, "ptxas failed; loading the PTX");
                    None
                }
            }
        }
        CubinSource::CuLink => Some(link_ptx_to_cubin(gpu.device, "kiln_region", &k.ptx)?),
        CubinSource::NvJitLink => {
            match nvjitlink::nvjitlink_cubin("kiln_region", &k.ptx, gpu.target.sm, &[]) {
                Ok(cubin) => Some(cubin),
                Err(e) => {
                    tracing::warn!(error = %e, "nvJitLink failed; loading the PTX");
                    None
                }
            }
        }
    };
    if cubin.is_some() {
        kiln_runtime::host_trace::point("prepare: cubin made");
    }
    match cubin {
        Some(cubin) => Ok((load(gpu, ModuleImage::Cubin(&cubin), k.tier)?, cubin)),
        None => Ok((load(gpu, ModuleImage::Ptx(&k.ptx), k.tier)?, Vec::new())),
    }
}

/// Where the cubin of a new kernel comes from, for the disk cache to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CubinSource {
    /// None: the PTX is loaded (`cuModuleLoadDataEx`) and the driver compiles it; the disk
    /// cache keeps the PTX, and the driver's own cache (`~/.nv/ComputeCache`) its compilation.
    None,
    /// The CUDA toolkit's `ptxas` ([`kiln_runtime::ptxas_path`]), as a whole program: the code
    /// the driver's JIT would make. The default where a toolkit is installed.
    Ptxas,
    /// `cuLinkCreate/AddData/Complete`: relocatable code (as `ptxas -c`), slower on an H200
    /// (its loads were scheduled one after another's use): ew_chain 0.162 ms against 0.152,
    /// sum_cols 0.107 against 0.085, sum_all 0.122 against 0.081.
    CuLink,
    /// nvJitLink in the process ([`kiln_runtime::nvjitlink`]): relocatable code too.
    NvJitLink,
}

/// Whether new kernels compile through nvJitLink (`KILN_GPU_LINK=nvjitlink`), for the warm-up.
pub(super) fn links_in_process() -> bool {
    kiln_cache::config().gpu_link == Some(GpuLink::NvJitLink)
}

/// Where a new kernel's cubin comes from, at either tier: `KILN_GPU_LINK`, `ptx`
/// ([`CubinSource::None`]), `ptxas`, `cubin` ([`CubinSource::CuLink`]) or `nvjitlink`; unset,
/// `ptxas` where it is found, else `ptx`. Read once per process.
///
/// Fast code went to the driver's JIT as PTX before (no `ptxas` process to start): on an H200
/// a reduction's JIT and its `ptxas` took the same ~44 ms (`benches/RESULTS.md`, session 40),
/// but two JITs in a process run one after the other where `ptxas` processes run side by side
/// ([`super::ahead`]), and only a cubin lets the disk cache spare a new process the JIT when
/// the driver's own cache is off or evicted (gmm in a new process over kiln's cache: 1.1 s
/// with PTX entries, see RESULTS).
pub(super) fn cubin_source() -> CubinSource {
    static SOURCE: OnceLock<CubinSource> = OnceLock::new();
    *SOURCE.get_or_init(|| {
        let found = if ptxas_path().is_some() { CubinSource::Ptxas } else { CubinSource::None };
        match kiln_cache::config().gpu_link {
            Some(GpuLink::Ptx) => CubinSource::None,
            Some(GpuLink::Cubin) => CubinSource::CuLink,
            Some(GpuLink::NvJitLink) => {
                if !kiln_runtime::driver_version().is_ok_and(nvjitlink::usable_with) {
                    tracing::warn!(why = %nvjitlink::describe(), "KILN_GPU_LINK=nvjitlink but nvJitLink does not load or does not match the driver; loading PTX");
                    CubinSource::None
                } else {
                    CubinSource::NvJitLink
                }
            }
            Some(GpuLink::Ptxas) => {
                if found == CubinSource::None {
                    tracing::warn!("KILN_GPU_LINK=ptxas but no ptxas is found; loading PTX");
                }
                found
            }
            None => found,
        }
    })
}

/// The driver JIT's optimisation level for fast-tier PTX unless `KILN_GPU_JIT_OPT` says
/// otherwise (`CU_JIT_OPTIMIZATION_LEVEL`; `None`: the driver's default, 4). The JIT of a new
/// expression's fast PTX is the largest stage of its first call, but levels 1-3 took no time
/// off it on an H100 (`x * k + cos(x)`: 34-36 ms against 36; level 0: 25 ms, its code 3-17×
/// slower on reductions; `benches/RESULTS.md`, sessions 22 and 25), so the default stays.
pub(super) const GPU_FAST_JIT_LEVEL: Option<u32> = None;

/// The optimisation level of `tier`'s compile from PTX to SASS where `ptxas` makes it: the
/// fast tier's `KILN_GPU_JIT_OPT` where set (the level the driver's JIT would take, 4 being
/// `ptxas`'s 3), else 3.
pub(super) fn sass_level(tier: Tier) -> u32 {
    match tier {
        Tier::Fast => kiln_cache::config().gpu_jit_opt.map_or(3, |l| l.min(3)),
        Tier::Optimized => 3,
    }
}

/// The disk cache's key of `kernel`'s code at `tier` for `gpu`: with the `ptxas` level where
/// `ptxas` makes the cubin at another level than the default ([`sass_level`]), so that code made
/// at another level is not taken for it.
pub(super) fn code_key(kernel: &Kernel, gpu: &Gpu, tier: Tier) -> String {
    let key = disk_cache_key(kernel, gpu.target, tier, gpu.driver);
    match sass_level(tier) {
        level if level != 3 && cubin_source() == CubinSource::Ptxas => {
            format!("ptxas -O{level}\n{key}")
        }
        _ => key,
    }
}

/// Loads a region's code at `tier`: fast-tier PTX at [`GPU_FAST_JIT_LEVEL`] (or
/// `KILN_GPU_JIT_OPT`), other code at the driver's default.
pub(super) fn load(gpu: &Gpu, image: ModuleImage<'_>, tier: Tier) -> Result<Function> {
    let level = match tier {
        Tier::Fast => kiln_cache::config().gpu_jit_opt.or(GPU_FAST_JIT_LEVEL),
        Tier::Optimized => None,
    };
    let module = gpu.device.load_module_jit("kiln_region", image, level)?;
    Ok(module.function(GPU_ENTRY)?)
}
