//! MLIR context set-up, pass pipelines and translation to LLVM IR.

use std::sync::{Arc, Mutex, Once};

use melior::{
    dialect::DialectRegistry,
    ir::{operation::OperationLike, Module},
    pass::{self, PassManager},
    utility::parse_pass_pipeline,
    Context, ContextRef,
};

use crate::CompileError;

/// Lowers `func`/`arith`/`math`/`scf`/`cf`/`memref`/`index` host code to the `llvm` dialect.
pub const HOST_PIPELINE: &str =
    "builtin.module(convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)";

/// Lowers the contents of each `gpu.module` to the `llvm`/`nvvm` dialects (64-bit indices).
/// The lowered functions must be moved into a `builtin.module` before translation.
pub const GPU_PIPELINE: &str = "builtin.module(gpu.module(convert-scf-to-cf,\
     convert-gpu-to-nvvm{index-bitwidth=64},reconcile-unrealized-casts))";

extern "C" {
    /// Defined in `shim/registration.cpp`: inserts kiln's dialects, their
    /// ConvertToLLVMPatternInterface implementations and the builtin/llvm/nvvm/gpu LLVM IR
    /// translations into a registry.
    fn kiln_mlir_register(registry: mlir_sys::MlirDialectRegistry);
    /// Defined in `shim/approximate.cpp`: rewrites math ops into MLIR's polynomial
    /// approximations; 0, or non-zero with a message in `error` (the first math op left that
    /// NVPTX cannot lower by itself).
    fn kiln_math_polynomial(
        op: mlir_sys::MlirOperation,
        error: *mut std::ffi::c_char,
        error_len: usize,
    ) -> i32;
}

/// Rewrites `module`'s math functions into MLIR's polynomial approximations (float32 `exp`,
/// `expm1`, `log`, `log2`, `log1p`, `sin`, `cos`, `tanh`, `atan`, `atan2`, `asin`, `acos`, `erf`,
/// `cbrt`) and checks that no math op is left but those with an instruction (`sqrt`, `floor`,
/// `ceil`, `trunc`, `roundeven`, `absf`, `copysign`, `fma`).
///
/// Errors: [`CompileError::Unsupported`] naming the op left (`math.exp : f64`).
pub fn approximate_math(module: &Module) -> Result<(), CompileError> {
    let mut error = [0 as std::ffi::c_char; 256];
    // SAFETY: the operation is a live module owned by `module` for the whole call; `error` is a
    // writable buffer of the length passed, which the shim NUL-terminates within it.
    let status = unsafe {
        kiln_math_polynomial(module.as_operation().to_raw(), error.as_mut_ptr(), error.len())
    };
    if status == 0 {
        return Ok(());
    }
    // SAFETY: the shim wrote a NUL-terminated string into `error`.
    let message =
        unsafe { std::ffi::CStr::from_ptr(error.as_ptr()) }.to_string_lossy().into_owned();
    Err(CompileError::Unsupported {
        region: 0,
        op: message.split(' ').next().unwrap_or("-").to_string(),
        reason: format!("`{message}` without libdevice (no polynomial approximation of it)"),
    })
}

/// Creates an MLIR context with kiln's dialects loaded: arith, cf, func, gpu, index, llvm, math,
/// memref, nvvm, scf, ub (plus builtin), and the interfaces and translations they need. Passes
/// used by [`HOST_PIPELINE`] and [`GPU_PIPELINE`] are registered too.
///
/// Multithreading is off: MLIR would otherwise start a thread pool per context.
pub fn new_context() -> Context {
    register_passes();
    let registry = DialectRegistry::new();
    // SAFETY: `registry` is a live registry (destroyed only when dropped below, after the context
    // has copied it); the shim only inserts into it.
    unsafe { kiln_mlir_register(registry.to_raw()) };
    let context = Context::new_with_registry(&registry, false);
    context.load_all_available_dialects();
    context
}

/// Registers, once per process, the passes that pipelines may name. Only these can be parsed.
pub fn register_passes() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        pass::conversion::register_scf_to_control_flow();
        pass::conversion::register_to_llvm();
        pass::conversion::register_reconcile_unrealized_casts();
        pass::conversion::register_gpu_ops_to_nvvm_ops();
    });
}

/// Runs `f` while collecting the context's diagnostics instead of printing them.
pub(crate) fn capture_diagnostics<T>(context: &Context, f: impl FnOnce() -> T) -> (T, String) {
    let sink = Arc::new(Mutex::new(String::new()));
    let handler_sink = Arc::clone(&sink);
    let id = context.attach_diagnostic_handler(move |diagnostic| {
        let mut text = handler_sink.lock().unwrap_or_else(|e| e.into_inner());
        text.push_str(&format!("{}: {}\n", diagnostic.location(), diagnostic));
        true
    });
    let result = f();
    context.detach_diagnostic_handler(id);
    let text = std::mem::take(&mut *sink.lock().unwrap_or_else(|e| e.into_inner()));
    (result, text)
}

/// Runs `f` with the context behind `context_ref` (e.g. `module.context()`).
fn with_context<T>(context_ref: ContextRef<'_>, f: impl FnOnce(&Context) -> T) -> T {
    // SAFETY: `to_ref` reinterprets the `ContextRef` itself as a `Context` (same layout: one raw
    // handle), so the reference must not outlive `context_ref`, which lives until `f` returns;
    // the context it names outlives the `ContextRef`.
    f(unsafe { context_ref.to_ref() })
}

/// Verifies `module`, returning the diagnostics on failure.
pub fn verify(module: &Module) -> Result<(), CompileError> {
    let (ok, diagnostics) = with_context(module.context(), |context| {
        capture_diagnostics(context, || module.as_operation().verify())
    });
    if ok {
        Ok(())
    } else {
        Err(CompileError::Verify(diagnostics))
    }
}

/// Parses the textual `pipeline` (anchored on `builtin.module`) and runs it on `module`.
pub fn run_pipeline(module: &mut Module, pipeline: &str) -> Result<(), CompileError> {
    let (result, diagnostics) = with_context(module.context(), |context| {
        let manager = PassManager::new(context);
        capture_diagnostics(context, || {
            parse_pass_pipeline(manager.as_operation_pass_manager(), pipeline)?;
            manager.run(module)
        })
    });
    result.map_err(|error| CompileError::Pipeline {
        pipeline: pipeline.to_owned(),
        diagnostics: if diagnostics.is_empty() { error.to_string() } else { diagnostics },
    })
}

/// Translates a module in the `llvm` dialect (and `nvvm`) into LLVM IR owned by `llvm`.
///
/// No text round trip: melior/mlir-sys and inkwell/llvm-sys link the same static LLVM, so the
/// `LLVMModuleRef` MLIR returns is adopted by inkwell as is.
pub fn translate_to_llvm<'ctx>(
    module: &Module,
    llvm: &'ctx inkwell::context::Context,
) -> Result<inkwell::module::Module<'ctx>, CompileError> {
    let (raw, diagnostics) = with_context(module.context(), |context| {
        capture_diagnostics(context, || {
            // SAFETY: the operation is a live `builtin.module`; `llvm.raw()` is a live LLVMContext.
            // mlir-sys and llvm-sys bind the same C type `LLVMContextRef` separately, hence the
            // pointer cast; both refer to the one LLVM linked into this binary.
            unsafe {
                mlir_sys::mlirTranslateModuleToLLVMIR(
                    module.as_operation().to_raw(),
                    llvm.raw().cast(),
                )
            }
        })
    });
    if raw.is_null() {
        return Err(CompileError::Translate(diagnostics));
    }
    // SAFETY: `raw` is a new module created in `llvm`'s context and owned by no one else; the
    // returned inkwell module takes ownership (disposes it on drop) and cannot outlive 'ctx.
    Ok(unsafe { inkwell::module::Module::new(raw.cast()) })
}
