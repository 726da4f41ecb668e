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
//! Running: outputs are allocated (large ones on transparent huge pages), and the work items
//! are split into chunks of roughly equal cost run by rayon.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{with_data, Attrs, HostArray};
use rayon::prelude::*;

use kiln_cache::DiskCache;

pub use super::host_cache::disk_stats;
use super::host_cache::{self, compile_and_store, load_or_compile};
use super::jit;
pub use super::jit::{libmvec_enabled, llvm_compile_count, CompileTimes, HostCode, Origin, Tier};
use super::lower::{lower, Kernel};
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
    fn for_call(&self, work: usize) -> Arc<HostCode> {
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

    fn ran(&self, t: Duration) {
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
    let kernel = lower(region).map_err(|u| u.into_error(0))?;
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
            // Another thread may have compiled it meanwhile: the first one stays.
            by_mlir()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(kernel.mlir.clone())
                .or_insert(code)
                .clone()
        }
    };
    let compiled = Arc::new(CompiledRegion { kernel, code });
    by_region().lock().unwrap_or_else(|e| e.into_inner()).insert(key, compiled.clone());
    Ok(compiled)
}

/// Compiles `region` to code of one tier, bypassing the caches (for tests and measurements).
pub fn compile_region_tier(region: &Region, tier: Tier) -> Result<CompiledRegion, CompileError> {
    compile_kernel(lower(region).map_err(|u| u.into_error(0))?, tier)
}

/// Compiles a kernel lowered for the host (by [`lower_options`](super::lower::lower_options),
/// say) to code of one tier, bypassing the caches (for tests and measurements).
/// Errors: the toolchain's.
pub fn compile_kernel(
    kernel: super::lower::Kernel,
    tier: Tier,
) -> Result<CompiledRegion, CompileError> {
    let code =
        Arc::new(KernelCode::new(kernel.mlir.clone(), jit::compile(&kernel.mlir, tier)?, None));
    Ok(CompiledRegion { kernel, code })
}

/// Lowers `region` and takes its code at `tier` (or optimised code) from the disk cache `disk`,
/// else compiles it and stores it there, bypassing the in-memory caches (for tests and
/// measurements: a warm start's path in a fresh process). Errors: as [`compile_region`].
pub fn compile_region_disk(
    region: &Region,
    tier: Tier,
    disk: &DiskCache,
) -> Result<CompiledRegion, CompileError> {
    let kernel = lower(region).map_err(|u| u.into_error(0))?;
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

/// Compiles `region` for the host with math functions computed by `math`, bypassing the caches:
/// to measure [`MathLib::Polynomial`](super::MathLib) where it is compiled, the approximations
/// being target-independent MLIR (the GPU's code differs by LLVM's FMA contraction on NVPTX).
///
/// Errors: as [`compile_region`]; [`MathLib::Libdevice`](super::MathLib) is not for the host.
pub fn compile_region_math(
    region: &Region,
    tier: Tier,
    math: super::MathLib,
) -> Result<CompiledRegion, CompileError> {
    compile_kernel(
        super::lower::lower_with(region, super::Target::Host, math).map_err(|u| u.into_error(0))?,
        tier,
    )
}

/// The canonical MLIR text of a region's kernel (what `KILN_DUMP=mlir` shows).
pub fn mlir_text(region: &Region) -> Result<String, CompileError> {
    Ok(lower(region).map_err(|u| u.into_error(0))?.mlir)
}

/// The LLVM IR of a region's kernel, translated from MLIR and not yet optimised for a CPU, so
/// that it is the same on every machine (what `KILN_DUMP=llvm` shows).
pub fn llvm_ir_text(region: &Region) -> Result<String, CompileError> {
    jit::translate(&lower(region).map_err(|u| u.into_error(0))?.mlir)
}

/// The LLVM IR of a region's kernel optimised for this machine's CPU at `tier` (vectorised
/// loops, libmvec calls): for reading, not canonical.
pub fn optimized_llvm_ir_text(region: &Region, tier: Tier) -> Result<String, CompileError> {
    jit::optimized_ir(&lower(region).map_err(|u| u.into_error(0))?.mlir, tier)
}

/// The assembly of a region's kernel, optimised ([`Tier::Optimized`]) for this machine's CPU
/// (what `KILN_DUMP=asm` shows): for reading, not canonical.
pub fn asm_text(region: &Region) -> Result<String, CompileError> {
    jit::assembly(&lower(region).map_err(|u| u.into_error(0))?.mlir, Tier::Optimized)
}

/// The buffer pointers, handed to worker threads.
#[derive(Clone, Copy)]
struct Ptrs<'a>(&'a [*mut u8]);

impl Ptrs<'_> {
    /// The array's address (a method, so that closures capture the whole `Ptrs`).
    fn as_ptr(self) -> *const *mut u8 {
        self.0.as_ptr()
    }
}
// SAFETY: the pointers are only dereferenced by the kernel, whose chunks read the inputs and
// write disjoint output elements (each work item writes only its own elements).
unsafe impl Send for Ptrs<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Ptrs<'_> {}

/// Elements of work per chunk handed to a thread.
const CHUNK_COST: usize = 1 << 15;
/// Below this much work the kernel runs on the calling thread in one call.
const PARALLEL_COST: usize = 1 << 17;

/// Asks the kernel to back a large fresh buffer with transparent huge pages: its first writes
/// then fault 2 MiB at a time rather than 4 KiB (a 64 MiB output takes 32 faults, not 16384).
/// Only a hint; ignored where THP is off.
fn huge_pages(ptr: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    if bytes < 4 * HUGE {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + bytes) & !(HUGE - 1);
    if end > start {
        // SAFETY: [start, end) lies inside the live allocation [ptr, ptr + bytes) and is
        // page-aligned; MADV_HUGEPAGE changes no contents, only how pages are backed.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// Whether a max/min/argmax/argmin of the body reduces an empty axis into a non-empty result
/// (an error the reference evaluator reports).
fn empty_extreme(region: &Region) -> Option<&'static str> {
    let body = &region.body;
    body.nodes().iter().find_map(|n| {
        let Attrs::Reduce { axes, .. } = &n.attrs else { return None };
        let input = &body.node(n.inputs[0]).shape;
        let empty = axes.iter().any(|&a| input[a] == 0) && numel(&n.shape) > 0;
        (empty
            && matches!(
                n.op,
                kiln_ir::OpKind::Max
                    | kiln_ir::OpKind::Min
                    | kiln_ir::OpKind::ArgMax
                    | kiln_ir::OpKind::ArgMin
            ))
        .then_some(n.op.name())
    })
}

/// Runs `region` on host arrays (`inputs[k]` for the body's `input {index=k}`) with compiled
/// code; returns its outputs, C-contiguous.
///
/// Errors: inputs of the wrong dtype or shape; [`CompileError::Unsupported`] (region 0) where the
/// caller should use the evaluator instead; compilation errors.
pub fn run_region(region: &Region, inputs: &[&HostArray]) -> Result<Vec<HostArray>, CompileError> {
    if let Some(op) = empty_extreme(region) {
        return Err(CompileError::Unsupported {
            region: 0,
            op: op.into(),
            reason: "a reduction of an empty axis, which the evaluator reports".into(),
        });
    }
    let compiled = compile_region(region)?;
    if region.kind == crate::fusion::RegionKind::Scatter {
        return run_scatter(&compiled, region, inputs);
    }
    run_compiled(&compiled, inputs)
}

/// Most private copies of a scatter's outputs (see [`run_scatter`]).
const SCATTER_COPIES: usize = 16;

/// Runs a compiled scatter region (module `lower::scatter`): its positions split into a number
/// of chunks fixed by the sizes alone (not by the threads), each accumulating into a private
/// copy of the outputs (the first starts from each scatter's initial array, the others from 0
/// for sums, from the initial array for maxima and minima, which are idempotent), run in
/// parallel; then the copies combined in chunk order by the evaluator's `add`/`maximum`/
/// `minimum`, so a result is the same bits on every run and thread count.
fn run_scatter(
    compiled: &CompiledRegion,
    region: &Region,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, CompileError> {
    let k = &compiled.kernel;
    check_inputs(k, inputs)?;
    let body = &region.body;
    // Each output's initial array: its scatter's first operand, computed by the evaluator
    // (a constant such as `zeros`, or an input).
    let mut init_graph = body.clone();
    init_graph.set_outputs(body.outputs().iter().map(|&o| body.node(o).inputs[0]).collect());
    let init = kiln_ir::eval::evaluate(&init_graph, inputs)?;
    let work = k.work_items;
    let cost = k.cost_per_item.max(1);
    let out_elems: usize = k.outputs.iter().map(|(_, s)| numel(s)).sum::<usize>().max(1);
    let copies = if work.saturating_mul(cost) < PARALLEL_COST {
        1
    } else {
        (work.saturating_mul(cost) / PARALLEL_COST)
            .clamp(1, SCATTER_COPIES)
            .min((work / out_elems).max(1))
    };
    let zeros_for = |c: usize, o: usize| c > 0 && k.scatter[o] == kiln_ir::OpKind::Add;
    let mut outs: Vec<Vec<Data>> = (0..copies)
        .map(|c| {
            init.iter()
                .enumerate()
                .map(|(o, a)| {
                    if zeros_for(c, o) {
                        Data::zeros(a.dtype(), a.len())
                    } else {
                        a.data().clone()
                    }
                })
                .collect()
        })
        .collect();
    let in_ptrs: Vec<*mut u8> = inputs
        .iter()
        .map(|a| with_data!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut()))
        .collect();
    let ptrs: Vec<Vec<*mut u8>> = outs
        .iter_mut()
        .map(|copy| {
            let mut p = in_ptrs.clone();
            p.extend(copy.iter_mut().map(|d| with_data!(d, v => v.as_mut_ptr().cast::<u8>())));
            p
        })
        .collect();
    let code = compiled.code.for_call(work.saturating_mul(cost));
    let entry = code.entry;
    let params = k.params.as_slice();
    let per = work.div_ceil(copies).max(1);
    let all: Vec<Ptrs> = ptrs.iter().map(|p| Ptrs(p)).collect();
    let all = all.as_slice();
    let run = |c: usize| {
        let (start, end) = (c * per, ((c + 1) * per).min(work));
        if start < end {
            let bufs = all[c];
            // SAFETY: `ptrs[c]` holds one pointer per input (live `HostArray`s of the dtypes and
            // shapes the kernel was lowered for, checked above, read only) then per output (copy
            // `c`'s own `Data` of the output's dtype and size, alive until after the calls, which
            // no other call writes), and `params` the parameter values the kernel reads; work
            // items `start..end` are within `0..work_items`.
            unsafe { entry(bufs.as_ptr(), params.as_ptr(), start as i64, end as i64) }
        }
    };
    let t = Instant::now();
    if copies == 1 {
        run(0);
    } else {
        (0..copies).into_par_iter().for_each(run);
    }
    compiled.code.ran(t.elapsed());
    let mut copies = outs.into_iter();
    let first = copies.next().expect("at least one copy");
    let mut result: Vec<HostArray> = k
        .outputs
        .iter()
        .zip(first)
        .map(|((_, shape), d)| HostArray::new(shape, d))
        .collect::<Result<_, _>>()?;
    for copy in copies {
        for (o, d) in copy.into_iter().enumerate() {
            let (dt, shape) = &k.outputs[o];
            let part = HostArray::new(shape, d)?;
            let mut g = kiln_ir::Graph::new();
            let (a, b) = (g.input(0, *dt, shape), g.input(1, *dt, shape));
            let c = g.add(k.scatter[o], Attrs::None, &[a, b])?;
            g.set_outputs(vec![c]);
            result[o] = kiln_ir::eval::evaluate(&g, &[&result[o], &part])?.remove(0);
        }
    }
    Ok(result)
}

/// Checks that `inputs` are of the dtypes and shapes `k` was lowered for.
fn check_inputs(k: &Kernel, inputs: &[&HostArray]) -> Result<(), CompileError> {
    if inputs.len() != k.inputs.len() {
        return Err(CompileError::InvalidInput(format!(
            "{} inputs given, the region reads {}",
            inputs.len(),
            k.inputs.len()
        )));
    }
    for (i, (a, (dt, shape))) in inputs.iter().zip(&k.inputs).enumerate() {
        if a.dtype() != *dt || a.shape() != shape.as_slice() {
            return Err(CompileError::InvalidInput(format!(
                "input {i} is {} {:?}, the region reads {} {:?}",
                a.dtype(),
                a.shape(),
                dt,
                shape
            )));
        }
    }
    Ok(())
}

/// Runs a compiled region (see [`run_region`]).
pub fn run_compiled(
    compiled: &CompiledRegion,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, CompileError> {
    let k = &compiled.kernel;
    check_inputs(k, inputs)?;
    let mut outs: Vec<Data> =
        k.outputs.iter().map(|(dt, shape)| Data::zeros(*dt, numel(shape))).collect();
    for d in outs.iter_mut() {
        let bytes = d.len() * d.dtype().itemsize();
        huge_pages(with_data!(d, v => v.as_mut_ptr().cast::<u8>()), bytes);
    }
    let mut ptrs: Vec<*mut u8> = inputs
        .iter()
        .map(|a| with_data!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut()))
        .collect();
    for d in outs.iter_mut() {
        ptrs.push(with_data!(d, v => v.as_mut_ptr().cast::<u8>()));
    }
    let work = k.work_items;
    let cost = k.cost_per_item.max(1);
    // Held for the calls: the code is not freed while it runs.
    let code = compiled.code.for_call(work.saturating_mul(cost));
    let entry = code.entry;
    let params = k.params.as_slice();
    let bufs = Ptrs(&ptrs);
    let run = |start: usize, end: usize| {
        // SAFETY: `bufs` holds one pointer per input (live `HostArray`s of the dtypes and shapes
        // the kernel was lowered for, checked above, read only) then per output (`Data` of the
        // output's dtype and size, alive until after the calls), and `params` the parameter
        // values the kernel reads; work items `start..end` are within `0..work_items`, and
        // distinct work items write distinct output elements, so concurrent chunks do not race.
        unsafe { entry(bufs.as_ptr(), params.as_ptr(), start as i64, end as i64) }
    };
    let t = Instant::now();
    if work > 0 {
        if work.saturating_mul(cost) < PARALLEL_COST || rayon::current_num_threads() == 1 {
            run(0, work);
        } else {
            let per_chunk = (CHUNK_COST / cost).max(1).next_multiple_of(k.min_chunk.max(1));
            let chunks = work.div_ceil(per_chunk);
            (0..chunks)
                .into_par_iter()
                .for_each(|c| run(c * per_chunk, ((c + 1) * per_chunk).min(work)));
        }
    }
    compiled.code.ran(t.elapsed());
    k.outputs
        .iter()
        .zip(outs)
        .map(|((_, shape), data)| HostArray::new(shape, data).map_err(CompileError::from))
        .collect()
}
