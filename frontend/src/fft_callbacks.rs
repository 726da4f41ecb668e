//! `cupy.fft.config.set_cufft_callbacks(..., cb_ver="jit")`: user load and store callbacks run
//! inside cuFFT's kernels (see [`set_cufft_callbacks`]).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use kiln_runtime::fft::{CallbackKind, Callbacks, JitCallback};
use kiln_runtime::Backend;

use crate::error::{value_err, Result};
use crate::gpu::Gpu;
use crate::Array;

const OP: &str = "set_cufft_callbacks";

/// The arguments of [`set_cufft_callbacks`], CuPy's keyword arguments of the same names
/// (`..Default::default()` for the rest).
#[derive(Clone, Copy, Debug, Default)]
pub struct CufftCallbacks<'a> {
    /// CUDA C++ defining the load callback: a `__device__` function of cuFFT's JIT load
    /// prototype for the transform's input type, e.g. for complex64 input
    /// `__device__ cufftComplex f(void *dataIn, unsigned long long offset, void *callerInfo,
    /// void *sharedPtr)` (`cufftReal` input for `rfft`, `cufftDoubleComplex` for complex128...).
    pub cb_load: Option<&'a str>,
    /// CUDA C++ defining the store callback: `__device__ void f(void *dataOut, unsigned long
    /// long offset, cufftComplex element, void *callerInfo, void *sharedPtr)` (the element of
    /// the transform's output type).
    pub cb_store: Option<&'a str>,
    /// The load callback's function name; by default read from a line
    /// `d_loadCallbackPtr = name;` of the source, as CuPy does.
    pub cb_load_name: Option<&'a str>,
    /// The store callback's function name; by default from `d_storeCallbackPtr = name;`.
    pub cb_store_name: Option<&'a str>,
    /// An array whose device address the load callback gets as `callerInfo`
    /// (`cb_load_aux_arr` / `cb_load_data`); computed and kept alive by the scope.
    pub cb_load_aux_arr: Option<&'a Array>,
    /// The store callback's `callerInfo` array.
    pub cb_store_aux_arr: Option<&'a Array>,
    /// More NVRTC options (`-DNAME=1`, `--use_fast_math`...).
    pub nvrtc_options: &'a [&'a str],
}

/// The callbacks of a scope and the arrays their caller infos point into.
struct Active {
    callbacks: Arc<Callbacks>,
    _aux: Vec<Array>,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Active>>> = const { RefCell::new(None) };
}

/// A [`set_cufft_callbacks`] scope: while it lives, this thread's FFTs run with its callbacks;
/// dropping it restores the callbacks (or none) in force before it.
#[must_use = "the callbacks are in force only while the scope lives"]
pub struct CufftCallbacksScope {
    previous: Option<Arc<Active>>,
    /// A thread's scope: not sent to or dropped on another thread.
    _thread: PhantomData<*const ()>,
}

impl Drop for CufftCallbacksScope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// `cupy.fft.config.set_cufft_callbacks(cb_load, cb_store, cb_ver="jit", ...)`: compiles the
/// callbacks (NVRTC, `-dlto`, kept in the disk kernel cache) and returns a scope inside which
/// every FFT this thread writes (`fft`, `ifft`, `fftn`, `rfft`, `irfft`, ...) runs on the GPU with
/// them: cuFFT calls the load callback for each element it reads of the transform's input and the
/// store callback with each element it computes, instead of reading and writing memory itself.
///
/// - An FFT written inside the scope is computed at once (its operand first, without
///   callbacks), since the callbacks belong to that call: it does not fuse with its producer or
///   its reader. Outside the scope FFTs are lazy and fuse as usual.
/// - `offset` counts elements from the start of the transform's input (load) or output
///   (store): for a C-contiguous operand it is the flat index, as CuPy's. kiln runs an n-D
///   transform as 1-D steps: the load callback runs in the step that reads the operand, the
///   store callback in the step that writes the result; a norm's scale (`"ortho"`,
///   `"forward"`) is applied after the store, as in CuPy.
/// - The callbacks' code is trusted: it must read and write only valid memory (its `dataIn` /
///   `dataOut` at the offsets cuFFT gives, its aux array).
/// - A plan with callbacks is cached under its layout and callbacks (`get_plan_cache`);
///   making one links the callbacks into cuFFT's kernels (hundreds of milliseconds).
/// - A load and a store callback may be given together (one plan links both; with cuFFT 12.0
///   of CUDA 13.0 CuPy 13's JIT form fails such a plan, kiln's does not).
///
/// Errors ([`crate::Error::Value`] naming `set_cufft_callbacks` unless said): the backend is the
/// CPU (callbacks need cuFFT); neither callback given; an aux array without its callback; a
/// name that is neither given nor found as `d_loadCallbackPtr = name;`; NVRTC's compile errors
/// with the log ([`crate::Error::Runtime`]); the aux array's evaluation. An FFT in the scope
/// fails with [`crate::Error::Runtime`] where cuFFT cannot link a callback (a wrong name or
/// prototype: the message gives the prototype cuFFT expects).
pub fn set_cufft_callbacks(cb: CufftCallbacks<'_>) -> Result<CufftCallbacksScope> {
    let Backend::Cuda(ordinal) = crate::current_backend() else {
        return Err(value_err(
            OP,
            "cuFFT callbacks need cuFFT, but the backend is the CPU (no CUDA device, or \
             KILN_DEVICE=cpu)",
        ));
    };
    if cb.cb_load.is_none() && cb.cb_store.is_none() {
        return Err(value_err(OP, "need to specify either cb_load or cb_store, or both"));
    }
    if cb.cb_load_aux_arr.is_some() && cb.cb_load.is_none() {
        return Err(value_err(OP, "load callback is not given (cb_load_aux_arr without cb_load)"));
    }
    if cb.cb_store_aux_arr.is_some() && cb.cb_store.is_none() {
        return Err(value_err(
            OP,
            "store callback is not given (cb_store_aux_arr without cb_store)",
        ));
    }
    let gpu = Gpu::get(ordinal)?;
    let mut aux = Vec::new();
    let mut one = |kind: CallbackKind,
                   source: Option<&str>,
                   name: Option<&str>,
                   arr: Option<&Array>|
     -> Result<Option<JitCallback>> {
        let Some(source) = source else { return Ok(None) };
        let name = match name {
            Some(n) => n.to_string(),
            None => infer_name(source, kind).ok_or_else(|| {
                value_err(
                    OP,
                    format!(
                        "cb_{0}_name cannot be inferred (no `d_{0}CallbackPtr = name;` in the \
                         source), please specify it explicitly",
                        kind.name()
                    ),
                )
            })?,
        };
        let lto_ir = compile_cached(gpu, kind, source, cb.nvrtc_options)?;
        let caller_info = match arr {
            Some(a) => {
                let d = a.try_to_device_array()?;
                aux.push(a.clone());
                d.buffer().ptr()
            }
            None => 0,
        };
        Ok(Some(JitCallback { name, lto_ir, caller_info }))
    };
    let load = one(CallbackKind::Load, cb.cb_load, cb.cb_load_name, cb.cb_load_aux_arr)?;
    let store = one(CallbackKind::Store, cb.cb_store, cb.cb_store_name, cb.cb_store_aux_arr)?;
    let active = Arc::new(Active { callbacks: Arc::new(Callbacks { load, store }), _aux: aux });
    let previous = CURRENT.with(|c| c.borrow_mut().replace(active));
    Ok(CufftCallbacksScope { previous, _thread: PhantomData })
}

/// The callbacks in force on this thread (a [`set_cufft_callbacks`] scope), if any.
pub(crate) fn current() -> Option<Arc<Callbacks>> {
    CURRENT.with(|c| c.borrow().as_ref().map(|a| a.callbacks.clone()))
}

/// Computes `out`, an FFT node of `operand`, now with `callbacks` in force: the operand first,
/// without them, so that only `out`'s transform runs with them.
pub(crate) fn compute_with(
    op: &str,
    operand: &Array,
    out: Array,
    callbacks: Arc<Callbacks>,
) -> Result<Array> {
    if !matches!(crate::backend(), Backend::Cuda(_)) {
        return Err(value_err(op, "cuFFT callbacks need cuFFT, but the backend is the CPU"));
    }
    operand.try_eval()?;
    kiln_runtime::fft::callbacks::with_callbacks(callbacks, || out.try_eval().map(|_| ()))?;
    Ok(out)
}

/// The function named by CuPy's legacy convention: `d_loadCallbackPtr = name;` (or
/// `d_storeCallbackPtr`), a C identifier.
pub(crate) fn infer_name(source: &str, kind: CallbackKind) -> Option<String> {
    let marker = match kind {
        CallbackKind::Load => "d_loadCallbackPtr",
        CallbackKind::Store => "d_storeCallbackPtr",
    };
    let mut rest = source;
    while let Some(at) = rest.find(marker) {
        let after = rest[at + marker.len()..].trim_start();
        rest = &rest[at + marker.len()..];
        let Some(value) = after.strip_prefix('=') else { continue };
        let value = value.trim_start();
        let end =
            value.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(value.len());
        let (ident, tail) = value.split_at(end);
        let starts_ok = ident.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if starts_ok && tail.trim_start().starts_with(';') {
            return Some(ident.to_string());
        }
    }
    None
}

/// NVRTC's options for a callback: the user's, C++17 and `-default-device` unless they say
/// otherwise (cufftXt.h declares host functions, which NVRTC rejects without it), and the CUDA
/// toolkit's `include` directory (for `<cufftXt.h>`).
pub(crate) fn options(user: &[&str]) -> Vec<String> {
    let mut options: Vec<String> = user.iter().map(|s| s.to_string()).collect();
    if !options.iter().any(|o| o.starts_with("-std") || o.starts_with("--std")) {
        options.push("--std=c++17".into());
    }
    if !options.iter().any(|o| o == "-default-device" || o == "--device-as-default-execution-space")
    {
        options.push("-default-device".into());
    }
    if let Some(include) = kiln_cache::cuda_toolkit::include_dir() {
        options.push(format!("--include-path={}", include.display()));
    }
    options
}

/// The callback's LTO-IR, from the disk kernel cache or compiled (and stored), as kiln's
/// generated callbacks ([`kiln_exec::cuda::compile_lto_cached`]).
fn compile_cached(
    gpu: &Gpu,
    kind: CallbackKind,
    source: &str,
    user_options: &[&str],
) -> Result<Arc<[u8]>> {
    let options = options(user_options);
    let name = format!("cufft_{}_callback.cu", kind.name());
    Ok(kiln_exec::cuda::compile_lto_cached(gpu, &name, source, &options)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_inferred_as_cupy_does() {
        let src = "__device__ cufftComplex f(void*, unsigned long long, void*, void*);\n\
                   __device__ cufftJITCallbackLoadC d_loadCallbackPtr = my_load_1 ;\n";
        assert_eq!(infer_name(src, CallbackKind::Load).as_deref(), Some("my_load_1"));
        assert_eq!(infer_name(src, CallbackKind::Store), None);
        let store = "x d_storeCallbackPtr=_st; y";
        assert_eq!(infer_name(store, CallbackKind::Store).as_deref(), Some("_st"));
        // Not an identifier, no `;`, or a later well-formed one.
        assert_eq!(infer_name("d_loadCallbackPtr = 3x;", CallbackKind::Load), None);
        assert_eq!(infer_name("d_loadCallbackPtr = f", CallbackKind::Load), None);
        assert_eq!(
            infer_name("d_loadCallbackPtr; d_loadCallbackPtr = g;", CallbackKind::Load).as_deref(),
            Some("g")
        );
    }

    #[test]
    fn options_add_cpp17_and_default_device_once() {
        let o = options(&["-DX=1"]);
        assert_eq!(&o[..3], ["-DX=1", "--std=c++17", "-default-device"]);
        let o = options(&["-std=c++20", "--device-as-default-execution-space"]);
        assert_eq!(o.iter().filter(|s| s.contains("std")).count(), 1);
        assert!(!o.iter().any(|s| s == "-default-device"));
    }
}
