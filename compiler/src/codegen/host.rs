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
use std::sync::{Arc, Mutex, Once};
use std::time::Instant;

use inkwell::attributes::AttributeLoc;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::passes::PassBuilderOptions;
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

/// Machine code of one kernel, with the JIT that owns it.
pub struct HostCode {
    entry: EntryFn,
    _jit: Jit,
}

impl std::fmt::Debug for HostCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCode").field("entry", &(self.entry as usize)).finish()
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

/// Compiles kernel MLIR text to host machine code.
fn compile_mlir(text: &str) -> Result<HostCode, CompileError> {
    static SYMBOLS: Once = Once::new();
    // Let MCJIT resolve libm (and other libc) symbols from the running process.
    SYMBOLS.call_once(inkwell::support::load_visible_symbols);
    let t0 = Instant::now();
    let context: &'static inkwell::context::Context = Box::leak(Box::new(inkwell::context::Context::create()));
    // From here on `context` is owned by the `Jit` built below, or freed on error.
    let raw_context = context as *const inkwell::context::Context as *mut inkwell::context::Context;
    let free_context = || {
        // SAFETY: `raw_context` came from `Box::leak` above and nothing else references it when
        // this runs (every module and engine in it has been dropped).
        unsafe { drop(Box::from_raw(raw_context)) }
    };
    let result = (|| -> Result<(ExecutionEngine<'static>, usize), CompileError> {
        let module = MLIR.with(|mlir| -> Result<_, CompileError> {
            let m = parse_and_lower(mlir, text)?;
            translate_to_llvm(&m, context)
        })?;
        let t1 = Instant::now();
        HOST.with(|host| -> Result<(), CompileError> {
            let host = host.as_ref().map_err(|e| CompileError::Llvm(e.clone()))?;
            let cpu = context.create_string_attribute("target-cpu", &host.cpu);
            let features = context.create_string_attribute("target-features", &host.features);
            for f in module.get_functions() {
                if f.count_basic_blocks() > 0 {
                    f.add_attribute(AttributeLoc::Function, cpu);
                    f.add_attribute(AttributeLoc::Function, features);
                }
            }
            module.set_triple(&host.machine.get_triple());
            module.set_data_layout(&host.machine.get_target_data().get_data_layout());
            let options = PassBuilderOptions::create();
            options.set_loop_vectorization(true);
            options.set_loop_slp_vectorization(true);
            options.set_loop_unrolling(true);
            module.run_passes("default<O3>", &host.machine, options).map_err(|e| CompileError::Llvm(e.to_string()))
        })?;
        let t2 = Instant::now();
        let engine = module
            .create_jit_execution_engine(OptimizationLevel::Aggressive)
            .map_err(|e| CompileError::Jit(e.to_string()))?;
        let addr = engine.get_function_address(HOST_ENTRY).map_err(|e| CompileError::Jit(format!("{HOST_ENTRY}: {e}")))?;
        tracing::debug!(
            mlir_ms = (t1 - t0).as_secs_f64() * 1e3,
            opt_ms = (t2 - t1).as_secs_f64() * 1e3,
            jit_ms = t2.elapsed().as_secs_f64() * 1e3,
            "compiled a host kernel"
        );
        Ok((engine, addr))
    })();
    match result {
        Ok((engine, addr)) => {
            // SAFETY: `addr` is the address of `kiln_kernel_host`, generated from the module
            // text built by `lower`, whose signature is `(ptr, ptr, i64, i64) -> ()`, i.e.
            // `EntryFn` in the C ABI; the code stays mapped while `engine` lives (in `Jit`).
            let entry = unsafe { std::mem::transmute::<usize, EntryFn>(addr) };
            Ok(HostCode { entry, _jit: Jit { engine: ManuallyDrop::new(engine), context: raw_context } })
        }
        Err(e) => {
            free_context();
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
