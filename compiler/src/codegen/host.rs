//! The host path: a lowered region compiled to machine code for this CPU, cached in memory, and
//! run over host arrays in parallel chunks.
//!
//! Compiling: the MLIR text is parsed, lowered by [`HOST_PIPELINE`], translated to LLVM IR,
//! optimised with `default<O3>` for the host CPU (its name and features are set on every
//! function, so the vectoriser and the code generator use AVX2/AVX-512 where the machine has
//! them) and JIT-compiled by MCJIT. Calls to libm (`sinf`, `expm1`, ...) resolve to the process's
//! libm.
//!
//! Caching: by the region's canonical text (its [`print_regions`] form) first, then by the
//! kernel's MLIR text, which is shape-generic: a region of another shape with the same structure
//! reuses the machine code and only brings new parameters. Compiled code lives as long as the
//! process (the cache is never evicted; a disk cache comes later).
//!
//! Running: outputs are allocated, and the work items are split into chunks of roughly equal
//! cost run by rayon.

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use inkwell::attributes::AttributeLoc;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine};
use inkwell::OptimizationLevel;
use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{with_data, Attrs, HostArray};
use melior::ir::Module;
use rayon::prelude::*;

use super::lower::{lower, Kernel, HOST_ENTRY};
use crate::fusion::{print_regions, Region};
use crate::toolchain::mlir::{capture_diagnostics, new_context, run_pipeline, translate_to_llvm, verify, HOST_PIPELINE};
use crate::CompileError;

/// `kiln_kernel_host(buffers, params, start, end)`.
type EntryFn = unsafe extern "C" fn(*const *mut u8, *const i64, i64, i64);

/// Where the time of one compilation went, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileTimes {
    /// MLIR: parse, verify, host pipeline, translation to LLVM IR.
    pub mlir: f64,
    /// LLVM `default<O3>` for the host CPU.
    pub optimize: f64,
    /// MCJIT: code generation and linking.
    pub jit: f64,
}

/// Machine code of one kernel, with the JIT that owns it.
pub struct HostCode {
    entry: EntryFn,
    /// How long compiling it took.
    pub times: CompileTimes,
    _jit: Jit,
}

impl std::fmt::Debug for HostCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCode").field("entry", &(self.entry as usize)).field("times", &self.times).finish()
    }
}

/// An MCJIT execution engine and the LLVM context its module lives in.
struct Jit {
    engine: ManuallyDrop<ExecutionEngine<'static>>,
    context: *mut inkwell::context::Context,
}

// SAFETY: after construction the engine and context are never used again except by `Drop`,
// which runs once, on whichever thread drops the last owner; the engine's `Rc`s have no other
// owner, and the generated code the entry point runs is plain reentrant machine code.
unsafe impl Send for Jit {}
// SAFETY: as for `Send`: `&Jit` gives access to nothing.
unsafe impl Sync for Jit {}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: the engine borrows the context, so it goes first; `context` came from
        // `Box::into_raw` in `Jit::new` and is freed exactly once, here.
        unsafe {
            ManuallyDrop::drop(&mut self.engine);
            drop(Box::from_raw(self.context));
        }
    }
}

/// A region ready to run: its kernel (parameters, sizes) and machine code.
#[derive(Debug)]
pub struct CompiledRegion {
    pub kernel: Kernel,
    pub code: Arc<HostCode>,
}

fn by_region() -> &'static Mutex<HashMap<String, Arc<CompiledRegion>>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<String, Arc<CompiledRegion>>>> = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn by_mlir() -> &'static Mutex<HashMap<String, Arc<HostCode>>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<String, Arc<HostCode>>>> = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The canonical text of one region, the cache key.
pub fn region_key(region: &Region) -> String {
    print_regions(std::slice::from_ref(region))
}

/// Number of kernels compiled by this process (cache misses), for tests and reports.
pub fn compiled_count() -> usize {
    by_mlir().lock().unwrap_or_else(|e| e.into_inner()).len()
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
            let code = Arc::new(compile_mlir(&kernel.mlir)?);
            by_mlir().lock().unwrap_or_else(|e| e.into_inner()).entry(kernel.mlir.clone()).or_insert(code).clone()
        }
    };
    let compiled = Arc::new(CompiledRegion { kernel, code });
    by_region().lock().unwrap_or_else(|e| e.into_inner()).insert(key, compiled.clone());
    Ok(compiled)
}

thread_local! {
    /// One MLIR context per thread (creating one loads every dialect).
    static MLIR: melior::Context = new_context();
    /// The host target machine (its CPU name and features).
    static HOST: Result<HostTarget, String> = HostTarget::new();
}

struct HostTarget {
    machine: TargetMachine,
    cpu: String,
    features: String,
}

impl HostTarget {
    fn new() -> Result<HostTarget, String> {
        Target::initialize_native(&InitializationConfig::default())?;
        let triple = TargetMachine::get_default_triple();
        let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
        let cpu = TargetMachine::get_host_cpu_name().to_string();
        let features = TargetMachine::get_host_cpu_features().to_string();
        let machine = target
            .create_target_machine(&triple, &cpu, &features, OptimizationLevel::Aggressive, RelocMode::Default, CodeModel::JITDefault)
            .ok_or_else(|| format!("no target machine for {}", triple.as_str().to_string_lossy()))?;
        Ok(HostTarget { machine, cpu, features })
    }
}

/// Parses kernel MLIR text and runs the host pipeline on it.
fn parse_and_lower<'c>(context: &'c melior::Context, text: &str) -> Result<Module<'c>, CompileError> {
    let (module, diagnostics) = capture_diagnostics(context, || Module::parse(context, text));
    let mut module = module.ok_or_else(|| CompileError::Verify(format!("{diagnostics}\n{text}")))?;
    verify(&module)?;
    run_pipeline(&mut module, HOST_PIPELINE)?;
    Ok(module)
}

/// The LLVM IR of a kernel before optimisation (canonical: no host CPU in it).
fn translate(text: &str, llvm: &inkwell::context::Context) -> Result<String, CompileError> {
    MLIR.with(|context| {
        let module = parse_and_lower(context, text)?;
        let m = translate_to_llvm(&module, llvm)?;
        Ok(m.print_to_string().to_string())
    })
}

/// The canonical MLIR text of a region's kernel (what `KILN_DUMP=mlir` shows).
pub fn mlir_text(region: &Region) -> Result<String, CompileError> {
    Ok(lower(region).map_err(|u| u.into_error(0))?.mlir)
}

/// The LLVM IR of a region's kernel, translated from MLIR and not yet optimised for a CPU, so
/// that it is the same on every machine (what `KILN_DUMP=llvm` shows).
pub fn llvm_ir_text(region: &Region) -> Result<String, CompileError> {
    let kernel = lower(region).map_err(|u| u.into_error(0))?;
    let llvm = inkwell::context::Context::create();
    translate(&kernel.mlir, &llvm)
}

/// `KilnVecFn` of `shim/optimize.cpp`: one vector variant of a scalar function.
#[repr(C)]
struct VecFn {
    scalar: *const std::ffi::c_char,
    vector: *const std::ffi::c_char,
    lanes: u32,
    abi: *const std::ffi::c_char,
}

extern "C" {
    /// Defined in `shim/optimize.cpp`: `default<O3>` for the host, the vector variants in
    /// `fns[..count]` offered to the vectorisers.
    fn kiln_llvm_optimize_host(module: *mut std::ffi::c_void, machine: *mut std::ffi::c_void, fns: *const VecFn, count: usize) -> i32;
}

/// One libmvec entry, as owned strings.
struct VecEntry {
    scalar: std::ffi::CString,
    vector: std::ffi::CString,
    lanes: u32,
    abi: std::ffi::CString,
}

/// glibc's vector math functions present in this process for this CPU, by scalar name (the
/// libm function and, where LLVM has one, the intrinsic): empty when libmvec.so.1 does not load
/// or `KILN_HOST_LIBMVEC=0`. AVX-512 variants (`_ZGVe`, 16 float lanes) where the CPU has
/// AVX-512F, AVX2 ones (`_ZGVd`, 8 lanes) where it has AVX2. libmvec's functions are within
/// 4 ulps (glibc's requirement for them), against 1 to 2 for the scalar ones.
fn libmvec_table() -> &'static [VecEntry] {
    static TABLE: std::sync::OnceLock<Vec<VecEntry>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        // Let MCJIT resolve libm (and other libc) symbols from the running process.
        inkwell::support::load_visible_symbols();
        if std::env::var("KILN_HOST_LIBMVEC").is_ok_and(|v| v == "0") {
            return Vec::new();
        }
        if inkwell::support::load_library_permanently(std::path::Path::new("libmvec.so.1")).is_err() {
            return Vec::new();
        }
        let features = TargetMachine::get_host_cpu_features().to_string();
        let isas: &[(char, u32)] = if features.contains("+avx512f") {
            &[('e', 512), ('d', 256)]
        } else if features.contains("+avx2") {
            &[('d', 256)]
        } else {
            &[]
        };
        // (name, arity, has an LLVM intrinsic)
        const FNS: &[(&str, usize, bool)] = &[
            ("acos", 1, true),
            ("acosh", 1, false),
            ("asin", 1, true),
            ("asinh", 1, false),
            ("atan", 1, true),
            ("atanh", 1, false),
            ("atan2", 2, true),
            ("cbrt", 1, false),
            ("cos", 1, true),
            ("cosh", 1, true),
            ("erf", 1, false),
            ("exp", 1, true),
            ("exp2", 1, true),
            ("exp10", 1, true),
            ("expm1", 1, false),
            ("hypot", 2, false),
            ("log", 1, true),
            ("log10", 1, true),
            ("log1p", 1, false),
            ("log2", 1, true),
            ("pow", 2, true),
            ("sin", 1, true),
            ("sinh", 1, true),
            ("tan", 1, true),
            ("tanh", 1, true),
        ];
        let mut table = Vec::new();
        for &(isa, bits) in isas {
            for &(name, arity, intrinsic) in FNS {
                for (suffix, elem_bits, llvm_ty) in [("f", 32, "f32"), ("", 64, "f64")] {
                    let lanes = bits / elem_bits;
                    let scalar = format!("{name}{suffix}");
                    let params = "v".repeat(arity);
                    let vector = format!("_ZGV{isa}N{lanes}{params}_{scalar}");
                    if inkwell::support::search_for_address_of_symbol(&vector).is_none() {
                        continue;
                    }
                    let abi = format!("_ZGV_LLVM_N{lanes}{params}");
                    let mut names = vec![scalar.clone()];
                    if intrinsic {
                        names.push(format!("llvm.{name}.{llvm_ty}"));
                    }
                    for s in names {
                        table.push(VecEntry {
                            scalar: std::ffi::CString::new(s).expect("no NUL"),
                            vector: std::ffi::CString::new(vector.clone()).expect("no NUL"),
                            lanes,
                            abi: std::ffi::CString::new(abi.clone()).expect("no NUL"),
                        });
                    }
                }
            }
        }
        table
    })
}

/// Whether loops may call glibc's vector math functions (libmvec), which are less accurate
/// than the scalar libm ones (within 4 ulps rather than 1 or 2).
pub fn libmvec_enabled() -> bool {
    !libmvec_table().is_empty()
}

/// Kernel MLIR text to an LLVM module optimised for the host CPU (in `context`).
fn optimized_module<'c>(
    text: &str,
    context: &'c inkwell::context::Context,
    times: &mut CompileTimes,
) -> Result<inkwell::module::Module<'c>, CompileError> {
    let table: Vec<VecFn> = libmvec_table()
        .iter()
        .map(|e| VecFn { scalar: e.scalar.as_ptr(), vector: e.vector.as_ptr(), lanes: e.lanes, abi: e.abi.as_ptr() })
        .collect();
    let t0 = Instant::now();
    let module = MLIR.with(|mlir| -> Result<_, CompileError> {
        let m = parse_and_lower(mlir, text)?;
        translate_to_llvm(&m, context)
    })?;
    let t1 = Instant::now();
    HOST.with(|host| -> Result<(), CompileError> {
        let host = host.as_ref().map_err(|e| CompileError::Llvm(e.clone()))?;
        let cpu = context.create_string_attribute("target-cpu", &host.cpu);
        let features = context.create_string_attribute("target-features", &host.features);
        // Full-width AVX-512 vectors where the CPU has them (LLVM's tuning stops at 256 bits on
        // most AVX-512 parts; these loops are compute-bound, which is what 512 bits are for).
        let width = if host.features.contains("+avx512f") { "512" } else { "256" };
        let width = context.create_string_attribute("prefer-vector-width", width);
        for f in module.get_functions() {
            if f.count_basic_blocks() > 0 {
                f.add_attribute(AttributeLoc::Function, cpu);
                f.add_attribute(AttributeLoc::Function, features);
                f.add_attribute(AttributeLoc::Function, width);
            }
        }
        // Only the host entry is called from outside: the kernel is inlined into it and need
        // not be compiled on its own.
        if let Some(k) = module.get_function(super::lower::KERNEL) {
            k.set_linkage(inkwell::module::Linkage::Internal);
        }
        module.set_triple(&host.machine.get_triple());
        module.set_data_layout(&host.machine.get_target_data().get_data_layout());
        // SAFETY: the module and the machine are live for the call, and the shim only runs passes
        // on the module; `table` has `table.len()` entries whose strings live in
        // `libmvec_table()` for the whole process.
        unsafe { kiln_llvm_optimize_host(module.as_mut_ptr().cast(), host.machine.as_mut_ptr().cast(), table.as_ptr(), table.len()) };
        Ok(())
    })?;
    times.mlir = (t1 - t0).as_secs_f64();
    times.optimize = t1.elapsed().as_secs_f64();
    Ok(module)
}

/// The LLVM IR of a region's kernel after optimisation for this machine's CPU (vectorised
/// loops, libmvec calls): for reading, not canonical.
pub fn optimized_llvm_ir_text(region: &Region) -> Result<String, CompileError> {
    let kernel = lower(region).map_err(|u| u.into_error(0))?;
    let llvm = inkwell::context::Context::create();
    let module = optimized_module(&kernel.mlir, &llvm, &mut CompileTimes::default())?;
    let text = module.print_to_string().to_string();
    Ok(text)
}

fn jit_level() -> OptimizationLevel {
    match std::env::var("KILN_JIT_LEVEL").as_deref() {
        Ok("0") => OptimizationLevel::None,
        Ok("1") => OptimizationLevel::Less,
        Ok("2") => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    }
}

/// Compiles kernel MLIR text to host machine code.
fn compile_mlir(text: &str) -> Result<HostCode, CompileError> {
    let context: &'static inkwell::context::Context = Box::leak(Box::new(inkwell::context::Context::create()));
    // From here on `context` is owned by the `Jit` built below, or freed on error.
    let raw_context = context as *const inkwell::context::Context as *mut inkwell::context::Context;
    let mut times = CompileTimes::default();
    let result = (|| -> Result<(ExecutionEngine<'static>, usize), CompileError> {
        let module = optimized_module(text, context, &mut times)?;
        let t = Instant::now();
        let engine = module
            .create_jit_execution_engine(jit_level())
            .map_err(|e| CompileError::Jit(e.to_string()))?;
        let addr = engine.get_function_address(HOST_ENTRY).map_err(|e| CompileError::Jit(format!("{HOST_ENTRY}: {e}")))?;
        times.jit = t.elapsed().as_secs_f64();
        Ok((engine, addr))
    })();
    match result {
        Ok((engine, addr)) => {
            // SAFETY: `addr` is the address of `kiln_kernel_host`, generated from the module
            // text built by `lower`, whose signature is `(ptr, ptr, i64, i64) -> ()`, i.e.
            // `EntryFn` in the C ABI; the code stays mapped while `engine` lives (in `Jit`).
            let entry = unsafe { std::mem::transmute::<usize, EntryFn>(addr) };
            tracing::debug!(
                mlir_ms = times.mlir * 1e3,
                opt_ms = times.optimize * 1e3,
                jit_ms = times.jit * 1e3,
                "compiled a host kernel"
            );
            Ok(HostCode { entry, times, _jit: Jit { engine: ManuallyDrop::new(engine), context: raw_context } })
        }
        Err(e) => {
            // SAFETY: `raw_context` came from `Box::leak` above; every module and engine in it
            // was dropped when the closure returned its error.
            unsafe { drop(Box::from_raw(raw_context)) };
            Err(e)
        }
    }
}

/// A buffer pointer handed to worker threads.
#[derive(Clone, Copy)]
struct Ptrs<'a>(&'a [*mut u8]);
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
        (empty && matches!(n.op, kiln_ir::OpKind::Max | kiln_ir::OpKind::Min | kiln_ir::OpKind::ArgMax | kiln_ir::OpKind::ArgMin))
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
    let k = &compiled.kernel;
    if inputs.len() != k.inputs.len() {
        return Err(CompileError::InvalidInput(format!("{} inputs given, the region reads {}", inputs.len(), k.inputs.len())));
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
    let mut outs: Vec<Data> = k.outputs.iter().map(|(dt, shape)| Data::zeros(*dt, numel(shape))).collect();
    for d in outs.iter_mut() {
        let bytes = d.len() * d.dtype().itemsize();
        huge_pages(with_data!(d, v => v.as_mut_ptr() as *mut u8), bytes);
    }
    let mut ptrs: Vec<*mut u8> = inputs.iter().map(|a| with_data!(a.data(), v => v.as_ptr() as *mut u8)).collect();
    for d in outs.iter_mut() {
        ptrs.push(with_data!(d, v => v.as_mut_ptr() as *mut u8));
    }
    let entry = compiled.code.entry;
    let params = k.params.as_slice();
    let bufs = Ptrs(&ptrs);
    let run = |start: usize, end: usize| {
        let bufs = bufs;
        // SAFETY: `bufs` holds one pointer per input (live `HostArray`s of the dtypes and shapes
        // the kernel was lowered for, checked above, read only) then per output (`Data` of the
        // output's dtype and size, alive until after the calls), and `params` the parameter
        // values the kernel reads; work items `start..end` are within `0..work_items`, and
        // distinct work items write distinct output elements, so concurrent chunks do not race.
        unsafe { entry(bufs.0.as_ptr(), params.as_ptr(), start as i64, end as i64) }
    };
    let work = k.work_items;
    let cost = k.cost_per_item.max(1);
    if work > 0 {
        if work.saturating_mul(cost) < PARALLEL_COST || rayon::current_num_threads() == 1 {
            run(0, work);
        } else {
            let per_chunk = (CHUNK_COST / cost).max(1);
            let chunks = work.div_ceil(per_chunk);
            (0..chunks).into_par_iter().for_each(|c| run(c * per_chunk, ((c + 1) * per_chunk).min(work)));
        }
    }
    k.outputs
        .iter()
        .zip(outs)
        .map(|((_, shape), data)| HostArray::new(shape, data).map_err(CompileError::from))
        .collect()
}
