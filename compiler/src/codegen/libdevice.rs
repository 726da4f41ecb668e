//! libdevice (NVIDIA's `libdevice.10.bc`): where it is, and its functions optimised once per
//! process and linked into kernels after the kernels are optimised.
//!
//! A kernel is optimised (`default<O3>`) with its `__nv_*` math functions as declarations, so
//! the optimiser works on the kernel's own code only; then each function it still calls is
//! linked from a module holding that function alone, optimised (NVVMReflect, `O3`) the first
//! time a kernel asks for it and kept as bitcode for the process, and inlined
//! (`always-inline`). Optimising the inlined bodies again with the kernel, as a single `O3`
//! after linking did, cost most of the compile time (each call site is a copy of the body,
//! `__nv_sinf` ~120 instructions) and changed little: of the catalogue's 156 kernels 153 get
//! the same PTX either way; `logsumexp_rows` compares a row's f32 sum before `logf` rather
//! than its f64 source (same instruction count), the Payne-Hanek slow path of `sinf` of an
//! integer (`add_reverse_with_computed_arguments`) keeps two instructions per copy, and in
//! `shared_costly_value_two_reductions` the kernel is inlined into the entry (the inliner no
//! longer counts libdevice's bodies: vector loads, no call).
//!
//! Because the optimiser sees calls, not bodies, its cost model would unroll loops calling them
//! (a body per copy): the loops of GPU elementwise kernels' slow paths carry
//! `llvm.loop.unroll.disable` (`lower::NO_UNROLL`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::llvm_sys;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::values::BasicValue;

use crate::toolchain::ptx::{internalize, run_pipeline, set_target, PtxTarget};
use crate::CompileError;

/// Where libdevice is, if anywhere: `kiln_cache::cuda_toolkit::libdevice` (`KILN_LIBDEVICE`,
/// `nvvm/libdevice/libdevice.10.bc` under the CUDA toolkit's roots, then NVIDIA's pip wheels),
/// looked up once per process.
pub fn libdevice_path() -> Option<PathBuf> {
    kiln_cache::cuda_toolkit::libdevice().map(Path::to_path_buf)
}

/// libdevice's bytes, once read.
static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();

/// The bytes of libdevice, read once.
pub(crate) fn libdevice_bytes() -> Option<&'static [u8]> {
    BYTES
        .get_or_init(|| {
            let path = libdevice_path()?;
            match std::fs::read(&path) {
                Ok(b) => Some(b),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "libdevice unreadable");
                    None
                }
            }
        })
        .as_deref()
}

/// libdevice's size in bytes (0 where it is not found or not readable), as the disk cache's key
/// names it: the bytes' length once read, else the file's size, so a disk hit reads none of it
/// (reading it took 0.3-0.5 ms of a new process's 3 ms disk hit on an H100).
pub(crate) fn libdevice_len() -> usize {
    match BYTES.get() {
        Some(bytes) => bytes.as_deref().map_or(0, <[u8]>::len),
        None => {
            libdevice_path().and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len() as usize)
        }
    }
}

/// The libdevice functions `module` calls: its `__nv_*` declarations that have a use, sorted.
fn called(module: &Module<'_>) -> Vec<String> {
    let mut names: Vec<String> = module
        .get_functions()
        .filter(|f| {
            f.count_basic_blocks() == 0
                && f.as_global_value().as_pointer_value().get_first_use().is_some()
        })
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("__nv_"))
        .collect();
    names.sort();
    names
}

/// Links into `module` (optimised, its triple and data layout set for `target`) the libdevice
/// functions it calls, each already optimised, internal and marked `alwaysinline`; returns
/// whether there were any (then `always-inline` must run).
///
/// Errors: no libdevice; libdevice without a function called; LLVM's errors.
pub(crate) fn link(module: &Module<'_>, target: PtxTarget) -> Result<bool, CompileError> {
    let wanted = called(module);
    if wanted.is_empty() {
        return Ok(false);
    }
    let context = module.get_context();
    for name in &wanted {
        let bitcode = optimized(name, target, &wanted)?;
        let buffer = MemoryBuffer::create_from_memory_range(&bitcode, name);
        let lib = Module::parse_bitcode_from_buffer(&buffer, context)
            .map_err(|e| CompileError::Llvm(format!("libdevice {name}: {e}")))?;
        module
            .link_in_module(lib)
            .map_err(|e| CompileError::Llvm(format!("libdevice {name}: linking: {e}")))?;
    }
    let inline =
        context.create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
    for name in &wanted {
        let f = module
            .get_function(name)
            .ok_or_else(|| CompileError::Llvm(format!("libdevice: {name} not linked")))?;
        f.set_linkage(Linkage::Internal);
        f.add_attribute(AttributeLoc::Function, inline);
    }
    Ok(true)
}

/// The libdevice functions a kernel's MLIR text declares (`func.func private @__nv_*`, as the
/// GPU lowering writes them) and this process has not optimised for `target` yet, sorted.
pub(crate) fn unprepared_in_mlir(text: &str, target: PtxTarget) -> Vec<String> {
    let mut names: Vec<String> = text
        .match_indices("@__nv_")
        .map(|(at, _)| {
            let rest = &text[at + 1..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            rest[..end.unwrap_or(rest.len())].to_string()
        })
        .collect();
    names.sort();
    names.dedup();
    let cache = optimized_cache().lock().unwrap_or_else(|e| e.into_inner());
    names.retain(|n| !cache.contains_key(&(n.clone(), target)));
    names
}

/// Optimises each of `names` for `target` as [`link`] will ask for it, ahead of it: run on a
/// thread beside the kernel's own stages (MLIR, translation, the kernel's optimisation), so that
/// a process's first kernel calling a function does not wait for libdevice after them. Errors
/// are left for [`link`] to meet and report.
pub(crate) fn prepare(names: &[String], target: PtxTarget) {
    for name in names {
        let _ = optimized(name, target, names);
    }
}

/// Bitcode of a module holding libdevice's `name` alone (and what it calls, internal),
/// optimised for `target`, by (name, target).
type OptimizedCache = Mutex<HashMap<(String, PtxTarget), Arc<[u8]>>>;

/// The optimised bitcode of libdevice's `name` for `target`, made the first time it is asked
/// for. (`wanted` only names the kernel's functions in the error for a missing libdevice.)
fn optimized(name: &str, target: PtxTarget, wanted: &[String]) -> Result<Arc<[u8]>, CompileError> {
    let cache = optimized_cache();
    let key = (name.to_string(), target);
    if let Some(bitcode) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(bitcode.clone());
    }
    let bytes = libdevice_bytes().ok_or_else(|| {
        CompileError::Llvm(format!(
            "libdevice not found (looked in {}; set KILN_LIBDEVICE to libdevice.10.bc); needed \
             for {}",
            kiln_cache::cuda_toolkit::LIBDEVICE_SEARCH,
            wanted.join(", ")
        ))
    })?;
    let context = inkwell::context::Context::create();
    let module = extract(bytes, name, &context)?;
    set_target(&module, target)?;
    // Only `name` is called from outside: what it calls is inlined or kept internal.
    internalize(&module, name);
    // NVVMReflect runs first (the NVPTX target adds it): `__nvvm_reflect("__CUDA_FTZ")` is 0
    // (no `nvvm-reflect-ftz` module flag), so the flush-to-zero variants are dropped.
    run_pipeline(&module, target, "default<O3>")?;
    let bitcode: Arc<[u8]> = module.write_bitcode_to_memory().as_slice().into();
    cache.lock().unwrap_or_else(|e| e.into_inner()).insert(key, bitcode.clone());
    Ok(bitcode)
}

/// The process's optimised libdevice functions.
fn optimized_cache() -> &'static OptimizedCache {
    static CACHE: OnceLock<OptimizedCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A new module in `context` holding libdevice's function `name` and what it uses, loaded
/// lazily (only those are read from the bitcode).
fn extract<'ctx>(
    bytes: &'static [u8],
    name: &str,
    context: &'ctx inkwell::context::Context,
) -> Result<Module<'ctx>, CompileError> {
    let c_name = std::ffi::CString::new(name)
        .map_err(|_| CompileError::Llvm(format!("libdevice: bad name {name:?}")))?;
    let module = context.create_module(name);
    // SAFETY: `bytes` lives for the whole process ('static), so the buffer that borrows it (no
    // copy) outlives the lazily loaded module reading from it; that module is created in
    // `context`, as is `module`, and is consumed (destroyed) by `LLVMLinkModules2`, or disposed
    // of on the error path; every handle passed is live.
    unsafe {
        use llvm_sys::core::*;
        let buf = LLVMCreateMemoryBufferWithMemoryRange(
            bytes.as_ptr().cast(),
            bytes.len(),
            c"libdevice".as_ptr(),
            0,
        );
        let mut lib: llvm_sys::prelude::LLVMModuleRef = std::ptr::null_mut();
        let failed =
            llvm_sys::bit_reader::LLVMGetBitcodeModuleInContext2(context.raw(), buf, &mut lib);
        if failed != 0 || lib.is_null() {
            LLVMDisposeMemoryBuffer(buf);
            return Err(CompileError::Llvm("libdevice: not valid bitcode".into()));
        }
        // The buffer is owned by the lazy module from here on.
        let f = LLVMGetNamedFunction(lib, c_name.as_ptr());
        if f.is_null() {
            LLVMDisposeModule(lib);
            return Err(CompileError::Llvm(format!("libdevice has no {name}")));
        }
        LLVMAddFunction(module.as_mut_ptr(), c_name.as_ptr(), LLVMGlobalGetValueType(f));
        // Definitions become linkonce_odr: the linker takes (and materialises) only those
        // `module` uses.
        let mut f = LLVMGetFirstFunction(lib);
        while !f.is_null() {
            if LLVMIsDeclaration(f) == 0 {
                LLVMSetLinkage(f, llvm_sys::LLVMLinkage::LLVMLinkOnceODRLinkage);
            }
            f = LLVMGetNextFunction(f);
        }
        let mut g = LLVMGetFirstGlobal(lib);
        while !g.is_null() {
            if LLVMIsDeclaration(g) == 0 {
                LLVMSetLinkage(g, llvm_sys::LLVMLinkage::LLVMLinkOnceODRLinkage);
            }
            g = LLVMGetNextGlobal(g);
        }
        if llvm_sys::linker::LLVMLinkModules2(module.as_mut_ptr(), lib) != 0 {
            return Err(CompileError::Llvm(format!("libdevice: linking {name} failed")));
        }
    }
    Ok(module)
}
