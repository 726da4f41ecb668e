//! Kernels for NVIDIA GPUs: the region's MLIR (with the `@kiln_gpu` grid-stride entry) →
//! `llvm`/`nvvm` dialects → LLVM IR → libdevice linked lazily → NVPTX → PTX text.
//!
//! The lowering is the host's ([`super::lower`]) but for two things: math functions call
//! libdevice's `__nv_*` functions, and the module holds a `.entry` kernel that runs chunks of
//! work items in a grid-stride loop. Sizes and strides are kernel parameters, so one PTX module
//! serves every shape of a structure.
//!
//! libdevice (`libdevice.10.bc`) is found through `KILN_LIBDEVICE`, `CUDA_HOME`/`CUDA_PATH`,
//! `/usr/local/cuda`, or the `nvidia-nvvm` Python wheel; see [`libdevice_path`]. It is loaded
//! lazily (only the called functions are materialised). A kernel that calls no math function
//! needs none. Without it ([`gpu_math`]) math functions are MLIR's polynomial approximations and
//! kiln's f64 expansions ([`MathLib::Polynomial`]: float32 only, accuracy in `codegen`'s docs);
//! LLVM's `llvm.exp`/`llvm.log`/`llvm.pow` never reach NVPTX either way (they abort it).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use inkwell::llvm_sys;
use inkwell::module::Linkage;

use super::lower::{lower_for, lower_with, Kernel, GPU_ENTRY};
use super::{MathLib, Target};
use crate::fusion::Region;
use crate::toolchain::mlir::translate_to_llvm;
use crate::toolchain::ptx::{PtxTarget, PTX_KERNEL_CC};
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
}

/// Where libdevice is, if anywhere: `KILN_LIBDEVICE`, then `$CUDA_HOME`/`$CUDA_PATH`'s
/// `nvvm/libdevice/libdevice.10.bc`, `/usr/local/cuda`, then the `nvidia-nvvm` wheel in the
/// Python site-packages directories found under `/usr` and `~/.local`.
pub fn libdevice_path() -> Option<PathBuf> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("KILN_LIBDEVICE") {
            candidates.push(PathBuf::from(p));
        }
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(root) = std::env::var_os(var) {
                candidates.push(PathBuf::from(root).join("nvvm/libdevice/libdevice.10.bc"));
            }
        }
        candidates.push(PathBuf::from("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"));
        let mut roots = vec![PathBuf::from("/usr/lib"), PathBuf::from("/usr/local/lib")];
        if let Some(home) = std::env::var_os("HOME") {
            let home = PathBuf::from(home);
            roots.push(home.join(".local/lib"));
            // pyenv: ~/.pyenv/versions/<version>/lib/python3.x
            if let Ok(versions) = std::fs::read_dir(home.join(".pyenv/versions")) {
                let mut versions: Vec<PathBuf> = versions.flatten().map(|e| e.path().join("lib")).collect();
                versions.sort();
                roots.extend(versions);
            }
        }
        for root in roots {
            let Ok(entries) = std::fs::read_dir(&root) else { continue };
            let mut pythons: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            pythons.sort();
            for py in pythons {
                for site in ["site-packages", "dist-packages"] {
                    for cu in ["cu13", "cu12"] {
                        candidates.push(py.join(site).join("nvidia").join(cu).join("nvvm/libdevice/libdevice.10.bc"));
                    }
                    candidates.push(py.join(site).join("nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"));
                }
            }
        }
        candidates.into_iter().find(|p| p.is_file())
    })
    .clone()
}

/// The math library of GPU kernels, chosen once per process: `KILN_GPU_MATH` (`polynomial` or
/// `libdevice`) when set, else libdevice when [`libdevice_path`] finds it, else the polynomial
/// approximations.
pub fn gpu_math() -> MathLib {
    static MATH: OnceLock<MathLib> = OnceLock::new();
    *MATH.get_or_init(|| {
        let found = if libdevice_path().is_some() { MathLib::Libdevice } else { MathLib::Polynomial };
        match std::env::var("KILN_GPU_MATH").as_deref() {
            Ok("polynomial") => MathLib::Polynomial,
            Ok("libdevice") => MathLib::Libdevice,
            Ok(other) => {
                tracing::warn!(value = other, "KILN_GPU_MATH is neither `polynomial` nor `libdevice`; ignored");
                found
            }
            Err(_) => found,
        }
    })
}

/// The bytes of libdevice, read once.
fn libdevice_bytes() -> Option<&'static [u8]> {
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
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

/// Links the `__nv_*` functions `module` declares from libdevice, loading only those.
fn link_libdevice(module: &inkwell::module::Module<'_>) -> Result<(), CompileError> {
    let wanted: Vec<String> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() == 0)
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("__nv_"))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let bytes = libdevice_bytes().ok_or_else(|| {
        CompileError::Llvm(format!(
            "libdevice not found (set KILN_LIBDEVICE to libdevice.10.bc); needed for {}",
            wanted.join(", ")
        ))
    })?;
    // SAFETY: `bytes` lives for the whole process ('static), so the buffer that borrows it
    // (no copy) outlives the lazily loaded module reading from it; the module is created in
    // the destination module's context and consumed (destroyed) by `LLVMLinkModules2`; every
    // handle passed is live.
    unsafe {
        use llvm_sys::core::*;
        let buf = LLVMCreateMemoryBufferWithMemoryRange(
            bytes.as_ptr().cast(),
            bytes.len(),
            c"libdevice".as_ptr(),
            0,
        );
        let context = LLVMGetModuleContext(module.as_mut_ptr());
        let mut lib: llvm_sys::prelude::LLVMModuleRef = std::ptr::null_mut();
        let failed = llvm_sys::bit_reader::LLVMGetBitcodeModuleInContext2(context, buf, &mut lib);
        if failed != 0 || lib.is_null() {
            LLVMDisposeMemoryBuffer(buf);
            return Err(CompileError::Llvm("libdevice: not valid bitcode".into()));
        }
        // Definitions become linkonce_odr: the linker takes (and materialises) only those
        // the kernel calls.
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
        // The buffer is owned by the lazy module from here on.
        if llvm_sys::linker::LLVMLinkModules2(module.as_mut_ptr(), lib) != 0 {
            return Err(CompileError::Llvm("libdevice: linking failed".into()));
        }
    }
    Ok(())
}

/// Kernel MLIR text (lowered for [`Target::Gpu`]) to PTX for `target`.
pub fn ptx_of_mlir(text: &str, target: PtxTarget) -> Result<String, CompileError> {
    let llvm = inkwell::context::Context::create();
    let module = super::jit::with_lowered(text, |m| translate_to_llvm(m, &llvm))?;
    let entry = module
        .get_function(GPU_ENTRY)
        .ok_or_else(|| CompileError::Llvm(format!("no @{GPU_ENTRY} in the module")))?;
    entry.set_call_conventions(PTX_KERNEL_CC);
    link_libdevice(&module)?;
    // Everything but the entry is internal, so O3 inlines it and drops what is not called.
    for f in module.get_functions() {
        if f != entry && f.count_basic_blocks() > 0 {
            f.set_linkage(Linkage::Internal);
        }
    }
    for g in module.get_globals() {
        if g.get_initializer().is_some() {
            g.set_linkage(Linkage::Internal);
        }
    }
    crate::toolchain::ptx::emit_ptx(&module, target)
}

/// PTX by (MLIR text, math library, target).
type PtxCache = Mutex<HashMap<(String, MathLib, PtxTarget), Arc<str>>>;

fn cache() -> &'static PtxCache {
    static CACHE: OnceLock<PtxCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Lowers `region` for the GPU and compiles it to PTX for `target` (cached in memory by the
/// kernel's MLIR text: a new shape of a known structure compiles nothing).
///
/// Errors: [`CompileError::Unsupported`] for what code generation cannot do yet; the
/// toolchain's errors (no libdevice for a kernel calling math functions, ...).
pub fn compile_region_gpu(region: &Region, target: PtxTarget) -> Result<GpuKernel, CompileError> {
    compile_kernel_gpu(lower_region_gpu(region)?, target)
}

/// Lowers `region` for the GPU (MLIR text and launch parameters; nothing compiled yet).
///
/// Errors: [`CompileError::Unsupported`] for what code generation cannot do yet.
pub fn lower_region_gpu(region: &Region) -> Result<Kernel, CompileError> {
    lower_for(region, Target::Gpu).map_err(|u| u.into_error(0))
}

/// Lowers `region` for the GPU with math functions computed by `math` (e.g. to check the
/// polynomial approximations where libdevice is installed).
///
/// Errors: as [`lower_region_gpu`]; [`MathLib::Libm`]; under [`MathLib::Polynomial`] a
/// float64 math function ([`CompileError::Unsupported`] naming it).
pub fn lower_region_gpu_with(region: &Region, math: MathLib) -> Result<Kernel, CompileError> {
    lower_with(region, Target::Gpu, math).map_err(|u| u.into_error(0))
}

/// Compiles a lowered kernel to PTX for `target`, cached in memory by its MLIR text and math
/// library.
pub fn compile_kernel_gpu(kernel: Kernel, target: PtxTarget) -> Result<GpuKernel, CompileError> {
    let key = (kernel.mlir.clone(), kernel.math, target);
    if let Some(ptx) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(GpuKernel { kernel, ptx: ptx.clone(), compile_ms: 0.0 });
    }
    let t = Instant::now();
    let ptx: Arc<str> = ptx_of_mlir(&kernel.mlir, target)?.into();
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    tracing::debug!(compile_ms, sm = target.sm, "compiled a GPU kernel");
    cache().lock().unwrap_or_else(|e| e.into_inner()).insert(key, ptx.clone());
    Ok(GpuKernel { kernel, ptx, compile_ms })
}

/// The MLIR of a region's GPU kernel (canonical and shape-generic: what `KILN_DUMP=mlir`
/// shows on the GPU backend).
pub fn mlir_text(region: &Region) -> Result<String, CompileError> {
    Ok(lower_region_gpu(region)?.mlir)
}

/// The LLVM IR of a region's GPU kernel as translated from MLIR, before libdevice is linked
/// and before optimisation (canonical: what `KILN_DUMP=llvm` shows on the GPU backend).
pub fn llvm_ir_text(region: &Region) -> Result<String, CompileError> {
    super::jit::translate(&lower_region_gpu(region)?.mlir)
}

/// The PTX of a region's kernel for `target` (what `KILN_DUMP=ptx` shows).
pub fn ptx_text(region: &Region, target: PtxTarget) -> Result<String, CompileError> {
    Ok(compile_region_gpu(region, target)?.ptx.to_string())
}

/// The disk-cache key of a GPU kernel: its canonical MLIR text, its math library, the PTX
/// target, and every version the generated code depends on (kiln, LLVM, the libdevice linked
/// (none under [`MathLib::Polynomial`]), and `driver`: the CUDA driver's version, since the
/// cubin kept beside the PTX comes from its JIT). Two kernels with the same key compile to the
/// same code.
pub fn disk_cache_key(kernel: &Kernel, target: PtxTarget, driver: i32) -> String {
    let (major, minor, patch) = crate::toolchain::llvm_version();
    let libdevice = match kernel.math {
        MathLib::Libdevice => libdevice_bytes().map_or(0, <[u8]>::len),
        MathLib::Libm | MathLib::Polynomial => 0,
    };
    format!(
        "kiln {}\nllvm {major}.{minor}.{patch}\nmath {}\nlibdevice {libdevice} bytes\ntarget {} {}\ncuda driver {driver}\n--\n{}",
        env!("CARGO_PKG_VERSION"),
        kernel.math.name(),
        target.cpu(),
        target.features(),
        kernel.mlir
    )
}
