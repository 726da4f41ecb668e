//! Object files linked into this process by LLVM's ORC JIT (LLJIT, through llvm-sys's C API):
//! how host kernels are loaded, whether just compiled or read from the disk cache.
//!
//! Why ORC and not MCJIT: MCJIT (what inkwell's `ExecutionEngine` wraps) takes LLVM IR modules
//! only through the C API, so a kernel's machine code kept on disk could not be loaded without
//! running LLVM's code generator again. LLJIT takes an object file
//! (`LLVMOrcLLJITAddObjectFileWithRT`) and links it with JITLink: sections placed and protected,
//! relocations applied, external symbols resolved; no optimisation, no code generation. The
//! kernels are compiled for the large code model (what MCJIT used), so their calls to libm and
//! libmvec are absolute addresses: no stubs, any distance.
//!
//! One LLJIT per process. Every kernel defines the same entry symbol, so each loaded object
//! gets a JITDylib of its own, which resolves what the code calls (libm, libmvec, libc) from the
//! process's symbols (libmvec is loaded with `RTLD_GLOBAL` by the host JIT before any kernel is
//! linked). Dropping a [`Loaded`] removes its code and memory (its resource tracker) and returns
//! the emptied JITDylib to a pool for the next object.

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};

use inkwell::llvm_sys::core::LLVMCreateMemoryBufferWithMemoryRangeCopy;
use inkwell::llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use inkwell::llvm_sys::orc2::lljit::{
    LLVMOrcCreateLLJIT, LLVMOrcLLJITAddObjectFileWithRT, LLVMOrcLLJITGetExecutionSession,
    LLVMOrcLLJITGetGlobalPrefix, LLVMOrcLLJITMangleAndIntern, LLVMOrcLLJITRef,
};
use inkwell::llvm_sys::orc2::{
    LLVMOrcCJITDylibSearchOrderElement, LLVMOrcCLookupSetElement, LLVMOrcCSymbolMapPairs,
    LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess,
    LLVMOrcExecutionSessionCreateBareJITDylib, LLVMOrcExecutionSessionLookup,
    LLVMOrcExecutionSessionRef, LLVMOrcJITDylibAddGenerator, LLVMOrcJITDylibCreateResourceTracker,
    LLVMOrcJITDylibLookupFlags, LLVMOrcJITDylibRef, LLVMOrcLookupKind,
    LLVMOrcReleaseResourceTracker, LLVMOrcResourceTrackerRef, LLVMOrcResourceTrackerRemove,
    LLVMOrcSymbolLookupFlags,
};
use inkwell::targets::{InitializationConfig, Target};

/// The process's LLJIT and its JITDylibs not in use.
struct Jit {
    lljit: LLVMOrcLLJITRef,
    session: LLVMOrcExecutionSessionRef,
    free: Mutex<Vec<Dylib>>,
    made: AtomicUsize,
}

/// A JITDylib of the process's LLJIT (lives as long as the LLJIT: the whole process).
#[derive(Clone, Copy)]
struct Dylib(LLVMOrcJITDylibRef);

// SAFETY: ORC's ExecutionSession is thread-safe (its state is behind its own locks); LLJIT's
// adding and looking up may be called from any thread, and the LLJIT is never disposed.
unsafe impl Send for Jit {}
// SAFETY: as for `Send`.
unsafe impl Sync for Jit {}
// SAFETY: a JITDylib is owned by the session, which is thread-safe; the pool hands each one to
// one `Loaded` at a time.
unsafe impl Send for Dylib {}

/// An LLVM error's message (consuming the error), or `Ok` for no error.
///
/// # Safety
/// `err` is null or an error not yet consumed.
unsafe fn check(err: LLVMErrorRef) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: `err` is a live error; getting its message consumes it, and the message is freed
    // once copied.
    unsafe {
        let message = LLVMGetErrorMessage(err);
        let text = CStr::from_ptr(message).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(message);
        Err(text)
    }
}

fn jit() -> Result<&'static Jit, String> {
    static JIT: OnceLock<Result<Jit, String>> = OnceLock::new();
    JIT.get_or_init(|| {
        Target::initialize_native(&InitializationConfig::default())?;
        let mut lljit: LLVMOrcLLJITRef = std::ptr::null_mut();
        // SAFETY: a null builder asks for a default LLJIT (this host's target, JITLink,
        // in-process memory); `lljit` receives it. It is never disposed: it lives as long as
        // the process, like the code it holds.
        unsafe { check(LLVMOrcCreateLLJIT(&mut lljit, std::ptr::null_mut())) }
            .map_err(|e| format!("LLJIT: {e}"))?;
        // SAFETY: `lljit` is live.
        let session = unsafe { LLVMOrcLLJITGetExecutionSession(lljit) };
        Ok(Jit { lljit, session, free: Mutex::new(Vec::new()), made: AtomicUsize::new(0) })
    })
    .as_ref()
    .map_err(Clone::clone)
}

impl Jit {
    /// An empty JITDylib that resolves the process's symbols: one from the pool, or a new one.
    fn dylib(&self) -> Result<Dylib, String> {
        if let Some(d) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(d);
        }
        let name =
            CString::new(format!("kiln.kernel.{}", self.made.fetch_add(1, Ordering::Relaxed)))
                .expect("no NUL");
        // SAFETY: the session is live and the name is unique (a counter), as the session
        // requires; the generator made next is handed to the JITDylib, which owns it after.
        unsafe {
            let dylib = LLVMOrcExecutionSessionCreateBareJITDylib(self.session, name.as_ptr());
            let mut generator = std::ptr::null_mut();
            let prefix = LLVMOrcLLJITGetGlobalPrefix(self.lljit);
            check(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                &mut generator,
                prefix,
                None,
                std::ptr::null_mut(),
            ))
            .map_err(|e| format!("process symbols: {e}"))?;
            LLVMOrcJITDylibAddGenerator(dylib, generator);
            Ok(Dylib(dylib))
        }
    }

    /// The address of `symbol` in `dylib`, materialising (linking) its object.
    fn lookup(&self, dylib: Dylib, symbol: &str) -> Result<u64, String> {
        type Reply = mpsc::SyncSender<Result<u64, String>>;
        extern "C" fn done(
            err: LLVMErrorRef,
            result: LLVMOrcCSymbolMapPairs,
            pairs: usize,
            ctx: *mut c_void,
        ) {
            // SAFETY: `ctx` is the `Box<Reply>` leaked below for this one call, reclaimed once.
            let reply = unsafe { Box::from_raw(ctx.cast::<Reply>()) };
            // SAFETY: ORC passes an unconsumed error or null, and on success `pairs` results.
            let answer = unsafe { check(err) }.and_then(|()| {
                if pairs == 0 || result.is_null() {
                    return Err("no address".to_string());
                }
                // SAFETY: `result` holds `pairs` >= 1 entries, alive for this call.
                Ok(unsafe { (*result).Sym.Address })
            });
            let _ = reply.send(answer);
        }
        let name = CString::new(symbol).map_err(|e| e.to_string())?;
        let (tx, rx) = mpsc::sync_channel(1);
        let ctx = Box::into_raw(Box::new(tx)).cast::<c_void>();
        // SAFETY: the session and `dylib` are live; the interned name's reference is handed to
        // the lookup (which releases it), the arrays live for the call, and `done` is called
        // exactly once with `ctx`.
        unsafe {
            let mut order = [LLVMOrcCJITDylibSearchOrderElement {
                JD: dylib.0,
                JDLookupFlags:
                    LLVMOrcJITDylibLookupFlags::LLVMOrcJITDylibLookupFlagsMatchAllSymbols,
            }];
            let mut symbols = [LLVMOrcCLookupSetElement {
                Name: LLVMOrcLLJITMangleAndIntern(self.lljit, name.as_ptr()),
                LookupFlags: LLVMOrcSymbolLookupFlags::LLVMOrcSymbolLookupFlagsRequiredSymbol,
            }];
            LLVMOrcExecutionSessionLookup(
                self.session,
                LLVMOrcLookupKind::LLVMOrcLookupKindStatic,
                order.as_mut_ptr(),
                order.len(),
                symbols.as_mut_ptr(),
                symbols.len(),
                done,
                ctx,
            );
        }
        match rx.recv() {
            Ok(Ok(0)) => Err(format!("`{symbol}` at address 0")),
            Ok(answer) => answer,
            Err(_) => Err("the lookup never answered".into()),
        }
    }
}

/// An object file linked into the process: its code stays mapped until this is dropped.
pub(crate) struct Loaded {
    tracker: LLVMOrcResourceTrackerRef,
    dylib: Dylib,
}

// SAFETY: removing a resource tracker may happen on any thread (the session locks); the
// tracker is used by nothing else.
unsafe impl Send for Loaded {}
// SAFETY: `&Loaded` gives access to nothing.
unsafe impl Sync for Loaded {}

impl Drop for Loaded {
    fn drop(&mut self) {
        // SAFETY: the tracker is live and ours; removing it frees the object's memory and its
        // symbols (no one runs the code: its callers hold the owner of this `Loaded` while they
        // call it), then our reference to it is released.
        let removed = unsafe {
            let err = LLVMOrcResourceTrackerRemove(self.tracker);
            LLVMOrcReleaseResourceTracker(self.tracker);
            check(err)
        };
        match (removed, jit()) {
            (Ok(()), Ok(jit)) => {
                jit.free.lock().unwrap_or_else(|e| e.into_inner()).push(self.dylib)
            }
            // The JITDylib may still hold the symbol: not reused.
            (Err(e), _) => tracing::warn!(error = %e, "unloading a host kernel failed"),
            (_, Err(_)) => {}
        }
    }
}

/// Links `object` (an ELF object file for this CPU) into the process; returns it with the
/// address of its `symbol`. Errors: the object does not parse or link (a symbol it calls is not
/// in the process), or it does not define `symbol`.
pub(crate) fn load(object: &[u8], symbol: &str) -> Result<(Loaded, u64), String> {
    let jit = jit()?;
    let dylib = jit.dylib()?;
    // SAFETY: `dylib` is live and empty; the tracker made for it is owned by `loaded` from here,
    // which removes it (and whatever was added under it) on every path.
    let loaded =
        Loaded { tracker: unsafe { LLVMOrcJITDylibCreateResourceTracker(dylib.0) }, dylib };
    // SAFETY: the buffer is a copy of `object` (ORC takes ownership of it, even on error); the
    // LLJIT and the tracker are live.
    unsafe {
        let name: *const c_char = c"kiln host kernel".as_ptr();
        let buffer =
            LLVMCreateMemoryBufferWithMemoryRangeCopy(object.as_ptr().cast(), object.len(), name);
        check(LLVMOrcLLJITAddObjectFileWithRT(jit.lljit, loaded.tracker, buffer))?;
    }
    let address = jit.lookup(dylib, symbol)?;
    Ok((loaded, address))
}
