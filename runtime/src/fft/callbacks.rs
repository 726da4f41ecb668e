//! cuFFT's JIT callbacks (LTO callbacks, CUDA 12.6+ / 13): a load callback that cuFFT calls for
//! each element it reads of a transform's input, and a store callback for each element it
//! writes, linked into cuFFT's own kernels when the plan is made (`cufftXtSetJITCallback`
//! between `cufftCreate` and `cufftMakePlan*`; cuFFT links them with nvJitLink).
//!
//! A callback is LTO-IR (NVRTC with `-dlto`, [`crate::nvrtc::compile_lto`]) defining a
//! `__device__` function of cuFFT's documented prototype (`cufftXt.h`'s `cufftJITCallbackLoadC`
//! ...; the offset is an `unsigned long long`), named by its name as written in the source.
//! cuFFT keeps the name's address and reads it when the plan is made, so the plan owns it.
//!
//! cuFFT has no C API to unset a JIT callback, so a plan with callbacks is a plan of its own:
//! [`super::exec_with`] caches it under its layout *and* its callbacks (names, code, caller
//! info), beside the plain plans.
//!
//! The callbacks in force on a thread are set by [`with_callbacks`] (kiln's
//! `set_cufft_callbacks` scope); the executor reads them with [`active`].

use std::cell::RefCell;
use std::ffi::{c_int, c_void, CString};
use std::sync::Arc;

use cudarc::cufft::sys as ff;

use super::FftType;
use crate::error::{Result, RuntimeError};

/// Which side of a transform a callback is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallbackKind {
    /// Called for each input element cuFFT reads (`dataIn`, `offset`) and returns its value.
    Load,
    /// Called with each output element cuFFT computes (`dataOut`, `offset`, `element`).
    Store,
}

impl CallbackKind {
    /// CuPy's and kiln's name for the side: `load` / `store`.
    pub fn name(self) -> &'static str {
        match self {
            CallbackKind::Load => "load",
            CallbackKind::Store => "store",
        }
    }
}

/// One compiled callback.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JitCallback {
    /// The `__device__` function's name as written in the source.
    pub name: String,
    /// Its LTO-IR.
    pub lto_ir: Arc<[u8]>,
    /// The device address cuFFT passes as the callback's `callerInfo` (an auxiliary array; 0:
    /// none).
    pub caller_info: u64,
}

/// The load and store callbacks of a transform (either may be absent).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Callbacks {
    pub load: Option<JitCallback>,
    pub store: Option<JitCallback>,
}

impl Callbacks {
    /// Whether there is no callback at all.
    pub fn is_empty(&self) -> bool {
        self.load.is_none() && self.store.is_none()
    }
}

/// `cufftXtCallbackType` of a callback of `kind` on a transform of type `ty` (`cufftXt.h`'s
/// values: loads 0–3, stores 4–7; complex, complex double, real, real double). The load reads the
/// transform's input element type, the store writes its output element type.
pub fn callback_type(kind: CallbackKind, ty: FftType) -> c_int {
    let (complex_in, complex_out) = match ty {
        FftType::C2C | FftType::Z2Z => (true, true),
        FftType::R2C | FftType::D2Z => (false, true),
        FftType::C2R | FftType::Z2D => (true, false),
    };
    let double = matches!(ty, FftType::Z2Z | FftType::D2Z | FftType::Z2D) as c_int;
    match kind {
        CallbackKind::Load => (if complex_in { 0 } else { 2 }) + double,
        CallbackKind::Store => 4 + (if complex_out { 0 } else { 2 }) + double,
    }
}

/// The C prototype a callback of `kind` on a transform of type `ty` must have (for docs and
/// errors): `cufftComplex f(void *dataIn, unsigned long long offset, void *callerInfo, void
/// *sharedPtr)`...
pub fn prototype(kind: CallbackKind, ty: FftType, name: &str) -> String {
    let (i, o) = match ty {
        FftType::C2C => ("cufftComplex", "cufftComplex"),
        FftType::Z2Z => ("cufftDoubleComplex", "cufftDoubleComplex"),
        FftType::R2C => ("cufftReal", "cufftComplex"),
        FftType::D2Z => ("cufftDoubleReal", "cufftDoubleComplex"),
        FftType::C2R => ("cufftComplex", "cufftReal"),
        FftType::Z2D => ("cufftDoubleComplex", "cufftDoubleReal"),
    };
    match kind {
        CallbackKind::Load => format!(
            "__device__ {i} {name}(void *dataIn, unsigned long long offset, void *callerInfo, \
             void *sharedPtr)"
        ),
        CallbackKind::Store => format!(
            "__device__ void {name}(void *dataOut, unsigned long long offset, {o} element, \
             void *callerInfo, void *sharedPtr)"
        ),
    }
}

type SetJitCallback = unsafe extern "C" fn(
    ff::cufftHandle,
    *const std::ffi::c_char,
    *const c_void,
    usize,
    c_int,
    *mut *mut c_void,
) -> ff::cufftResult;

/// `cufftXtSetJITCallback` from the libcufft cudarc loaded (cudarc 0.19 has no binding for it).
fn set_jit_callback_fn() -> Result<SetJitCallback> {
    // SAFETY: the caller made sure libcufft loads (`ensure_loaded`); `culib` returns the library
    // cudarc opened for its own calls, and the symbol's type is cufftXt.h's (CUDA 13) prototype.
    unsafe {
        let lib = ff::culib();
        lib.get::<SetJitCallback>(b"cufftXtSetJITCallback\0").map(|f| *f).map_err(|e| {
            RuntimeError::library(
                "cufftXtSetJITCallback",
                format!("not in this libcufft (JIT callbacks need cuFFT of CUDA 12.6+): {e}"),
            )
        })
    }
}

/// The callback's name as cuFFT takes it. Errors: a NUL byte in it.
pub(super) fn c_name(kind: CallbackKind, cb: &JitCallback) -> Result<CString> {
    CString::new(cb.name.as_str()).map_err(|_| {
        RuntimeError::InvalidArgument(format!(
            "the {} callback's name {:?} contains a NUL byte",
            kind.name(),
            cb.name
        ))
    })
}

/// Associates `cb` (named `name`, [`c_name`]) with a created, not yet made, plan. `info` is the
/// caller-info array (one device address: one GPU), `[cb.caller_info]`.
///
/// # Safety
/// `plan` is a live handle of `cufftCreate` on which no `cufftMakePlan*` has run yet; `name`'s
/// bytes and `info` stay where they are as long as the plan lives (cuFFT keeps both addresses
/// and reads the name when the plan is made).
pub(super) unsafe fn attach(
    plan: ff::cufftHandle,
    kind: CallbackKind,
    ty: FftType,
    cb: &JitCallback,
    name: &CString,
    info: &mut [u64; 1],
) -> Result<()> {
    let set = set_jit_callback_fn()?;
    // SAFETY: the caller's contract; the code outlives the call (cuFFT copies it), the name and
    // the info array live with the plan.
    let r = unsafe {
        set(
            plan,
            name.as_ptr(),
            cb.lto_ir.as_ptr().cast(),
            cb.lto_ir.len(),
            callback_type(kind, ty),
            info.as_mut_ptr().cast::<*mut c_void>(),
        )
    };
    if r == ff::cufftResult::CUFFT_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::library("cufftXtSetJITCallback", r))
    }
}

thread_local! {
    static ACTIVE: RefCell<Option<Arc<Callbacks>>> = const { RefCell::new(None) };
}

/// Runs `f` with `callbacks` in force on this thread (the previous ones restored after, also on
/// a panic).
pub fn with_callbacks<T>(callbacks: Arc<Callbacks>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<Callbacks>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ACTIVE.with(|a| *a.borrow_mut() = previous);
        }
    }
    let _restore = Restore(ACTIVE.with(|a| a.borrow_mut().replace(callbacks)));
    f()
}

/// The callbacks in force on this thread, if any.
pub fn active() -> Option<Arc<Callbacks>> {
    ACTIVE.with(|a| a.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_types_follow_cufftxt_h() {
        use CallbackKind::*;
        // CUFFT_CB_LD_COMPLEX 0, _DOUBLE 1, LD_REAL 2, _DOUBLE 3, ST_COMPLEX 4, _DOUBLE 5,
        // ST_REAL 6, _DOUBLE 7.
        let cases = [
            (FftType::C2C, 0, 4),
            (FftType::Z2Z, 1, 5),
            (FftType::R2C, 2, 4),
            (FftType::D2Z, 3, 5),
            (FftType::C2R, 0, 6),
            (FftType::Z2D, 1, 7),
        ];
        for (ty, load, store) in cases {
            assert_eq!(callback_type(Load, ty), load, "{ty:?}");
            assert_eq!(callback_type(Store, ty), store, "{ty:?}");
        }
    }

    #[test]
    fn prototypes_name_the_element_types() {
        assert_eq!(
            prototype(CallbackKind::Load, FftType::D2Z, "f"),
            "__device__ cufftDoubleReal f(void *dataIn, unsigned long long offset, \
             void *callerInfo, void *sharedPtr)"
        );
        assert!(prototype(CallbackKind::Store, FftType::C2R, "g").contains("cufftReal element"));
    }

    #[test]
    fn callbacks_are_scoped_per_thread() {
        let cb = |n: &str| {
            Arc::new(Callbacks {
                load: Some(JitCallback {
                    name: n.into(),
                    lto_ir: Arc::from(&[1u8][..]),
                    caller_info: 0,
                }),
                store: None,
            })
        };
        assert_eq!(active(), None);
        with_callbacks(cb("a"), || {
            assert_eq!(active().unwrap().load.as_ref().unwrap().name, "a");
            with_callbacks(cb("b"), || {
                assert_eq!(active().unwrap().load.as_ref().unwrap().name, "b")
            });
            assert_eq!(active().unwrap().load.as_ref().unwrap().name, "a");
            std::thread::spawn(|| assert_eq!(active(), None)).join().unwrap();
        });
        assert_eq!(active(), None);
        let caught = std::panic::catch_unwind(|| with_callbacks(cb("c"), || panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(active(), None);
    }
}
