//! The host path: regions compiled to machine code for this CPU (module `jit`), cached in
//! memory and on disk, and run over host arrays in parallel chunks.
//!
//! Caching: in memory by the region's canonical text (its [`print_regions`] form) first, then by
//! the kernel's MLIR text, which is shape-generic: a region of another shape with the same
//! structure reuses the machine code and only brings new parameters. Compiled code lives as long
//! as the process (the cache is never evicted). On disk (`KILN_CACHE_DIR`, module `host_cache`)
//! by the kernel's MLIR text, this machine's CPU and the versions of kiln and LLVM: a kernel
//! found there is linked, neither MLIR nor LLVM run ([`Origin::DiskCache`]); a kernel compiled
//! is stored there, fast code first, optimised code when it is compiled.
//!
//! Tiers: a new kernel with little work is compiled quickly ([`Tier::Fast`]); it is compiled
//! again with full optimisation ([`Tier::Optimized`]) once it has run for [`HOT`] in all, or
//! before a call with much work ([`LARGE_WORK`] element operations), by the thread that runs
//! it (no background thread: nothing compiles while the process exits). A region with much work
//! is compiled optimised at once. `KILN_HOST_TIER=fast` or `=optimized` uses only that tier.
//! Optimised code from the disk is used at once where fast code would do.
//!
//! Running the code is the executor's (`kiln-exec`'s `cpu` module): it calls
//! [`KernelCode::for_call`], which may compile the optimised tier first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use kiln_cache::DiskCache;

pub use super::host_cache::disk_stats;
use super::host_cache::{self, compile_and_store, load_or_compile};
use super::jit;
pub use super::jit::{libmvec_enabled, llvm_compile_count, CompileTimes, HostCode, Origin, Tier};
use super::lower::{lower, Kernel, LowerOptions};
use crate::fusion::{print_regions, Region};
use crate::CompileError;

/// A kernel's current machine code: fast first, optimised once it is worth it.
#[derive(Debug)]
pub struct KernelCode {
    current: RwLock<Arc<HostCode>>,
    /// The kernel's MLIR text, to compile it again.
    mlir: String,
    /// Time spent running it, in nanoseconds.
    ran_ns: AtomicU64,
    /// Set by the thread that compiles the optimised tier.
    upgrading: AtomicBool,
    /// Where the optimised code is stored once compiled.
    disk: Option<DiskCache>,
}

/// Run time after which a fast kernel is compiled again, optimised.
pub const HOT: Duration = Duration::from_millis(20);
/// Element operations (work items times their cost) from which a call is worth optimised code.
pub const LARGE_WORK: usize = 1 << 22;

impl KernelCode {
    fn new(mlir: String, code: HostCode, disk: Option<DiskCache>) -> KernelCode {
        KernelCode {
            current: RwLock::new(Arc::new(code)),
            mlir,
            ran_ns: AtomicU64::new(0),
            upgrading: AtomicBool::new(false),
            disk,
        }
    }

    /// The code to call now (hold the `Arc` while calling it).
    pub fn get(&self) -> Arc<HostCode> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The code for a call of `work` element operations: optimised first if the kernel is fast
    /// code that has become hot, or the call is large (one thread compiles; others go on with
    /// the fast code meanwhile).
    pub fn for_call(&self, work: usize) -> Arc<HostCode> {
        let code = self.get();
        let hot = Duration::from_nanos(self.ran_ns.load(Ordering::Relaxed)) >= HOT;
        if code.tier == Tier::Fast
            && tiers().1
            && (hot || work >= LARGE_WORK)
            && !self.upgrading.swap(true, Ordering::AcqRel)
        {
            match compile_and_store(&self.mlir, Tier::Optimized, self.disk.as_ref()) {
                Ok(optimized) => {
                    let optimized = Arc::new(optimized);
                    *self.current.write().unwrap_or_else(|e| e.into_inner()) = optimized.clone();
                    return optimized;
                }
                // The fast code stays; it computes the same values.
                Err(e) => tracing::warn!(error = %e, "optimising a host kernel failed"),
            }
        }
        code
    }

    /// Adds `t` to the time the kernel has run (which makes fast code hot).
    pub fn ran(&self, t: Duration) {
        self.ran_ns.fetch_add(t.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }
}

/// A region ready to run: its kernel (parameters, sizes) and machine code.
#[derive(Debug)]
pub struct CompiledRegion {
    pub kernel: Kernel,
    pub code: Arc<KernelCode>,
}

fn by_region() -> &'static Mutex<HashMap<String, Arc<CompiledRegion>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<CompiledRegion>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn by_mlir() -> &'static Mutex<HashMap<String, Arc<KernelCode>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<KernelCode>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Most host kernels kept in memory ([`compile_region`]'s caches); past it they are all
/// forgotten at once and compiled again (or read from the disk cache) when next needed.
pub const KEPT_KERNELS: usize = 4096;

static KEPT_KERNELS_NOW: AtomicU64 = AtomicU64::new(KEPT_KERNELS as u64);

fn kept_kernels() -> usize {
    KEPT_KERNELS_NOW.load(Ordering::Relaxed) as usize
}

/// Sets how many host kernels are kept in memory (default [`KEPT_KERNELS`]), for tests of the
/// eviction. Correct results whatever the number; a small one only costs compilations.
#[doc(hidden)]
pub fn set_kept_kernels(n: usize) {
    KEPT_KERNELS_NOW.store(n.max(1) as u64, Ordering::Relaxed);
}

/// The canonical text of one region, the cache key.
pub fn region_key(region: &Region) -> String {
    print_regions(std::slice::from_ref(region))
}

/// Number of kernels this process compiled or read from the disk cache (misses of the in-memory
/// cache), for tests and reports; [`llvm_compile_count`] counts those compiled.
pub fn compiled_count() -> usize {
    by_mlir().lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// `KILN_HOST_TIER`: `fast` or `optimized` for that tier only (`(tier, false)`), unset for
/// fast code first and optimised code when worth it (`(Tier::Fast, true)`).
fn tiers() -> (Tier, bool) {
    Tier::of_setting(kiln_cache::config().host_tier)
}

/// Lowers and compiles `region` for the host, or returns it from the cache.
/// Errors: [`CompileError::Unsupported`] (region 0) for what code generation cannot do yet; the
/// toolchain's errors otherwise.
pub fn compile_region(region: &Region) -> Result<Arc<CompiledRegion>, CompileError> {
    let key = region_key(region);
    if let Some(c) = by_region().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(c.clone());
    }
    let kernel = lower(region, &LowerOptions::host())?;
    let cached = by_mlir().lock().unwrap_or_else(|e| e.into_inner()).get(&kernel.mlir).cloned();
    let code = match cached {
        Some(code) => code,
        None => {
            let (tier, upgrades) = match tiers() {
                (_, true)
                    if kernel.work_items.saturating_mul(kernel.cost_per_item) >= LARGE_WORK =>
                {
                    (Tier::Optimized, true)
                }
                tiers => tiers,
            };
            let disk = host_cache::disk();
            let code = load_or_compile(&kernel.mlir, tier, upgrades, disk)?;
            let code = Arc::new(KernelCode::new(kernel.mlir.clone(), code, disk.cloned()));
            let mut kept = by_mlir().lock().unwrap_or_else(|e| e.into_inner());
            if kept.len() >= kept_kernels() {
                // Forget every kernel (a running one lives on in its caller's `Arc`; its code is
                // unlinked when the last one goes): linked code is mapped memory, and a process
                // that compiled ~32,700 kernels ran out of mappings (found by fuzzing).
                kept.clear();
                by_region().lock().unwrap_or_else(|e| e.into_inner()).clear();
            }
            // Another thread may have compiled it meanwhile: the first one stays.
            kept.entry(kernel.mlir.clone()).or_insert(code).clone()
        }
    };
    let compiled = Arc::new(CompiledRegion { kernel, code });
    by_region().lock().unwrap_or_else(|e| e.into_inner()).insert(key, compiled.clone());
    Ok(compiled)
}

/// Lowers `region` and takes its code at `tier` (or optimised code) from the disk cache `disk`,
/// else compiles it and stores it there, bypassing the in-memory caches (for tests and
/// measurements: a warm start's path in a fresh process). Errors: as [`compile_region`].
pub fn compile_region_disk(
    region: &Region,
    tier: Tier,
    disk: &DiskCache,
) -> Result<CompiledRegion, CompileError> {
    let kernel = lower(region, &LowerOptions::host())?;
    let code = load_or_compile(&kernel.mlir, tier, true, Some(disk))?;
    Ok(CompiledRegion {
        code: Arc::new(KernelCode::new(kernel.mlir.clone(), code, Some(disk.clone()))),
        kernel,
    })
}

/// The key of a host kernel in the disk cache: its MLIR text, this machine's target triple, CPU
/// and features, the vector math functions offered, the versions of kiln and LLVM, and a
/// fingerprint of kiln's host code generation.
pub fn disk_cache_key(kernel: &Kernel) -> String {
    host_cache::disk_cache_key(&kernel.mlir)
}

/// The LLVM IR translated from a kernel's MLIR text, before optimisation (canonical).
pub fn llvm_ir_of_mlir(mlir: &str) -> Result<String, CompileError> {
    jit::translate(mlir)
}

/// This CPU's assembly of a host kernel's MLIR text compiled at `tier` (for reading).
pub fn asm_of_mlir(mlir: &str, tier: Tier) -> Result<String, CompileError> {
    jit::assembly(mlir, tier)
}

/// The canonical MLIR text of a region's kernel (what `KILN_DUMP=mlir` shows).
pub fn mlir_text(region: &Region) -> Result<String, CompileError> {
    Ok(lower(region, &LowerOptions::host())?.mlir)
}

/// The LLVM IR of a region's kernel, translated from MLIR and not yet optimised for a CPU, so
/// that it is the same on every machine (what `KILN_DUMP=llvm` shows).
pub fn llvm_ir_text(region: &Region) -> Result<String, CompileError> {
    jit::translate(&lower(region, &LowerOptions::host())?.mlir)
}

/// The LLVM IR of a region's kernel optimised for this machine's CPU at `tier` (vectorised
/// loops, libmvec calls): for reading, not canonical.
pub fn optimized_llvm_ir_text(region: &Region, tier: Tier) -> Result<String, CompileError> {
    jit::optimized_ir(&lower(region, &LowerOptions::host())?.mlir, tier)
}

/// The assembly of a region's kernel, optimised ([`Tier::Optimized`]) for this machine's CPU
/// (what `KILN_DUMP=asm` shows): for reading, not canonical.
pub fn asm_text(region: &Region) -> Result<String, CompileError> {
    jit::assembly(&lower(region, &LowerOptions::host())?.mlir, Tier::Optimized)
}

/// Compiles a kernel lowered for the host to code of one tier, bypassing the caches.
pub(crate) fn compile_host(kernel: Kernel, tier: Tier) -> Result<CompiledRegion, CompileError> {
    let code =
        Arc::new(KernelCode::new(kernel.mlir.clone(), jit::compile(&kernel.mlir, tier)?, None));
    Ok(CompiledRegion { kernel, code })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A region computing `x * k` over 16 float32s (`k` makes each kernel new).
    fn region(k: u32) -> Region {
        let text = format!(
            "kiln.graph v1\n%0 = input {{index=0}} : f32[16]\n%1 = const {{value={k}.5}} : f32[]\n\
             %2 = broadcast_to(%1) {{shape=[16]}} : f32[16]\n%3 = multiply(%0, %2) : f32[16]\nreturn %3\n"
        );
        let g = kiln_ir::text::parse(&text).unwrap();
        crate::fusion::partition(&g).regions.remove(0)
    }

    /// Past the number of kernels kept, every kernel is forgotten at once and compiled again
    /// when next asked for; a kernel still held keeps working.
    #[test]
    fn kept_kernels_are_bounded() {
        set_kept_kernels(3);
        let held = compile_region(&region(1000)).unwrap();
        for k in 0..7 {
            compile_region(&region(1001 + k)).unwrap();
            assert!(compiled_count() <= 3, "{} kernels kept", compiled_count());
        }
        let again = compile_region(&region(1000)).unwrap();
        assert!(!Arc::ptr_eq(&held, &again), "forgotten, compiled again");
        // The held code is still linked: call it on 16 elements.
        let x = [2.0f32; 16];
        let mut y = [0.0f32; 16];
        let bufs = [x.as_ptr() as *mut u8, y.as_mut_ptr() as *mut u8];
        let (params, items) = (&held.kernel.params, held.kernel.work_items as i64);
        let code = held.code.get();
        // SAFETY: the kernel reads 16 float32s from the first buffer and writes 16 to the
        // second; both live across the call, and `params` are the kernel's own.
        unsafe { (code.entry)(bufs.as_ptr(), params.as_ptr(), 0, items) };
        assert_eq!(y, [2.0 * 1000.5; 16]);
        set_kept_kernels(KEPT_KERNELS);
    }
}
