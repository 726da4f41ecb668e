//! Profiling: NVTX ranges and marks (shown by Nsight Systems and Nsight Compute), and
//! [`profile()`], a scope that turns the CUDA profiler on (`cuProfilerStart`/`cuProfilerStop`),
//! like `cupy.cuda.profile()`; with `nsys profile --capture-range=cudaProfilerApi` only that
//! scope is recorded.
//!
//! # Where NVTX goes
//!
//! CUDA 13 ships NVTX 3 only, which is header-only: there is no `libnvToolsExt.so` to call.
//! An NVTX 3 program reaches a tool through *injection*: a profiler (nsys, ncu) sets
//! `NVTX_INJECTION64_PATH` to its library, the program loads it and calls its
//! `InitializeInjectionNvtx2`, handing it a table of function-pointer slots which the tool fills.
//! kiln implements that protocol itself (the C header's logic, in Rust), so:
//!
//! 1. `NVTX_INJECTION64_PATH` set: that library is loaded and given kiln's tables; ranges and
//!    marks go to the tool.
//! 2. Otherwise, if an NVTX 2 `libnvToolsExt.so.1` can be loaded (CUDA 12 and older), its
//!    `nvtxRangePushA`/`nvtxRangePop`/`nvtxMarkA`/`nvtxRangePushEx` are called.
//! 3. Otherwise every call is a no-op costing one atomic load: nothing is profiling.
//!
//! The choice is made once, on first use.

use std::{
    ffi::{c_char, c_int, c_uint, c_void, CString},
    marker::PhantomData,
    sync::{
        atomic::{AtomicU32, AtomicUsize, Ordering},
        OnceLock,
    },
};

use libloading::Library;

use crate::{device::Device, error::Result};

/// NVTX's callback modules (`NvtxCallbackModule`) and their number of ids (`NVTX_CBID_*_SIZE`):
/// CORE, CUDA, OPENCL, CUDART, CORE2, SYNC.
const MODULE_SIZES: [usize; 7] = [0, 16, 9, 15, 7, 16, 7];
/// Slots per module table: every index up to the size (inclusive) is a valid slot.
const SLOTS: usize = 17;
const MODULE_CORE: usize = 1;
const CBID_CORE_MARK_A: usize = 2;
const CBID_CORE_RANGE_PUSH_EX: usize = 8;
const CBID_CORE_RANGE_PUSH_A: usize = 9;
const CBID_CORE_RANGE_POP: usize = 11;
/// `NVTX_ETID_CALLBACKS`, `NVTX_ETID_VERSIONINFO`.
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;
/// `NVTX_VERSION`.
const NVTX_VERSION: u16 = 3;

/// The function-pointer slots a tool fills (`usize`-sized, written by the tool through plain
/// pointers during its initialisation, read atomically afterwards).
#[allow(clippy::declare_interior_mutable_const)]
static SLOT_TABLE: [[AtomicUsize; SLOTS]; 7] = {
    const ZERO: AtomicUsize = AtomicUsize::new(0);
    const ROW: [AtomicUsize; SLOTS] = [ZERO; SLOTS];
    [ROW; 7]
};

/// Per module, pointers to its slots (`NvtxFunctionTable`), made once.
struct Tables([[*mut usize; SLOTS]; 7]);
// SAFETY: pointers into a static of atomics.
unsafe impl Send for Tables {}
unsafe impl Sync for Tables {}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut t = [[std::ptr::null_mut(); SLOTS]; 7];
        for (m, row) in t.iter_mut().enumerate() {
            for (i, slot) in row.iter_mut().enumerate() {
                *slot = SLOT_TABLE[m][i].as_ptr();
            }
        }
        Tables(t)
    })
}

/// What an empty slot does: nothing, returning 0 (a valid result for every NVTX function).
extern "C" fn nvtx_noop() -> u64 {
    0
}

#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table:
        unsafe extern "C" fn(c_int, *mut *mut *mut usize, *mut c_uint) -> c_int,
}

#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: extern "C" fn(u32),
}

static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
    struct_size: std::mem::size_of::<ExportTableCallbacks>(),
    get_module_function_table,
};

static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
    struct_size: std::mem::size_of::<ExportTableVersionInfo>(),
    version: NVTX_VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// The tool's NVTX version, as it reported it.
static TOOL_VERSION: AtomicU32 = AtomicU32::new(0);

extern "C" fn set_injection_nvtx_version(version: u32) {
    TOOL_VERSION.store(version, Ordering::Relaxed);
}

/// `GetModuleFunctionTable`: hands the tool a module's table of slots and its size.
unsafe extern "C" fn get_module_function_table(
    module: c_int,
    out_table: *mut *mut *mut usize,
    out_size: *mut c_uint,
) -> c_int {
    let Some(&size) =
        usize::try_from(module).ok().filter(|&m| m > 0).and_then(|m| MODULE_SIZES.get(m))
    else {
        return 0;
    };
    let table = tables().0[module as usize].as_ptr() as *mut *mut usize;
    // SAFETY: the tool passes valid out-pointers or null.
    unsafe {
        if !out_table.is_null() {
            *out_table = table;
        }
        if !out_size.is_null() {
            *out_size = size as c_uint;
        }
    }
    1
}

/// `NvtxGetExportTableFunc_t`.
extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        ETID_CALLBACKS => &CALLBACKS as *const ExportTableCallbacks as *const c_void,
        ETID_VERSIONINFO => &VERSION_INFO as *const ExportTableVersionInfo as *const c_void,
        _ => std::ptr::null(),
    }
}

type InitializeInjection = unsafe extern "C" fn(extern "C" fn(u32) -> *const c_void) -> c_int;

/// Fills every slot with the no-op, then lets the tool's initialiser fill its own; true if it
/// accepted.
fn inject(init: InitializeInjection) -> bool {
    for row in &SLOT_TABLE {
        for slot in row {
            slot.store(nvtx_noop as extern "C" fn() -> u64 as usize, Ordering::Release);
        }
    }
    // SAFETY: the tool's documented entry point, given NVTX's export-table accessor.
    unsafe { init(get_export_table) != 0 }
}

/// `nvtxEventAttributes_t` (version 3), for colored ranges.
#[repr(C)]
struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: u64,
    message_type: i32,
    message: *const c_char,
}

const NVTX_COLOR_ARGB: i32 = 1;
const NVTX_MESSAGE_TYPE_ASCII: i32 = 1;

type PushA = unsafe extern "C" fn(*const c_char) -> c_int;
type PushEx = unsafe extern "C" fn(*const EventAttributes) -> c_int;
type Pop = unsafe extern "C" fn() -> c_int;
type MarkA = unsafe extern "C" fn(*const c_char);

/// Where NVTX calls go (see the module docs).
enum Backend {
    /// Nothing is profiling.
    None,
    /// A tool filled kiln's slots (its library stays loaded).
    Injected { _tool: Option<Library> },
    /// An NVTX 2 library.
    Library { push_a: PushA, push_ex: Option<PushEx>, pop: Pop, mark_a: MarkA, _lib: Library },
}

/// Which NVTX backend is in use: `"injection"`, `"libnvToolsExt"` or `"none"`.
pub fn nvtx_backend() -> &'static str {
    match backend() {
        Backend::None => "none",
        Backend::Injected { .. } => "injection",
        Backend::Library { .. } => "libnvToolsExt",
    }
}

/// Whether a profiler receives NVTX ranges (so callers may skip formatting range names).
pub fn nvtx_enabled() -> bool {
    !matches!(backend(), Backend::None)
}

fn backend() -> &'static Backend {
    static BACKEND: OnceLock<Backend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        if let Some(path) = std::env::var_os("NVTX_INJECTION64_PATH").filter(|p| !p.is_empty()) {
            // SAFETY: loading the profiler's injection library, as NVTX itself does.
            let Ok(tool) = (unsafe { Library::new(&path) }) else {
                return Backend::None;
            };
            // SAFETY: the symbol has NVTX's documented signature.
            let init = unsafe { tool.get::<InitializeInjection>(b"InitializeInjectionNvtx2\0") }
                .map(|f| *f);
            return match init {
                Ok(init) if inject(init) => Backend::Injected { _tool: Some(tool) },
                _ => Backend::None,
            };
        }
        load_nvtx2().unwrap_or(Backend::None)
    })
}

fn load_nvtx2() -> Option<Backend> {
    // SAFETY: NVIDIA's NVTX 2 library; its initialisers only set up NVTX.
    let lib = ["libnvToolsExt.so.1", "libnvToolsExt.so"]
        .iter()
        .find_map(|&name| unsafe { Library::new(name) }.ok())?;
    // SAFETY: NVTX 2's documented signatures.
    unsafe {
        let push_a = *lib.get::<PushA>(b"nvtxRangePushA\0").ok()?;
        let pop = *lib.get::<Pop>(b"nvtxRangePop\0").ok()?;
        let mark_a = *lib.get::<MarkA>(b"nvtxMarkA\0").ok()?;
        let push_ex = lib.get::<PushEx>(b"nvtxRangePushEx\0").ok().map(|f| *f);
        Some(Backend::Library { push_a, push_ex, pop, mark_a, _lib: lib })
    }
}

fn slot<F: Copy>(index: usize) -> Option<F> {
    let f = SLOT_TABLE[MODULE_CORE][index].load(Ordering::Acquire);
    // SAFETY: a slot holds 0 or a function of the slot's NVTX signature (written by the tool
    // or our no-op, which ignores its arguments).
    (f != 0).then(|| unsafe { std::mem::transmute_copy::<usize, F>(&f) })
}

fn message(name: &str) -> CString {
    CString::new(name.replace('\0', " ")).expect("NULs replaced")
}

fn push(name: &str, argb: Option<u32>) {
    match backend() {
        Backend::None => {}
        Backend::Injected { .. } => push_injected(name, argb),
        Backend::Library { push_a, push_ex, .. } => {
            let text = message(name);
            // SAFETY: NUL-terminated strings that outlive the calls.
            unsafe {
                match (argb, push_ex) {
                    (Some(color), Some(push_ex)) => {
                        push_ex(&attributes(&text, color));
                    }
                    _ => {
                        push_a(text.as_ptr());
                    }
                }
            }
        }
    }
}

fn push_injected(name: &str, argb: Option<u32>) {
    let text = message(name);
    // SAFETY: slots hold functions of these signatures; the strings outlive the calls.
    unsafe {
        match argb {
            Some(color) => {
                if let Some(f) = slot::<PushEx>(CBID_CORE_RANGE_PUSH_EX) {
                    f(&attributes(&text, color));
                }
            }
            None => {
                if let Some(f) = slot::<PushA>(CBID_CORE_RANGE_PUSH_A) {
                    f(text.as_ptr());
                }
            }
        }
    }
}

fn attributes(text: &CString, argb: u32) -> EventAttributes {
    EventAttributes {
        version: NVTX_VERSION,
        size: std::mem::size_of::<EventAttributes>() as u16,
        category: 0,
        color_type: NVTX_COLOR_ARGB,
        color: argb,
        payload_type: 0,
        reserved0: 0,
        payload: 0,
        message_type: NVTX_MESSAGE_TYPE_ASCII,
        message: text.as_ptr(),
    }
}

fn pop() {
    match backend() {
        Backend::None => {}
        Backend::Injected { .. } => pop_injected(),
        // SAFETY: NVTX 2's nvtxRangePop.
        Backend::Library { pop, .. } => unsafe {
            pop();
        },
    }
}

fn pop_injected() {
    if let Some(f) = slot::<Pop>(CBID_CORE_RANGE_POP) {
        // SAFETY: the slot's signature.
        unsafe { f() };
    }
}

/// An instantaneous NVTX marker (`nvtxMarkA`).
pub fn mark(name: &str) {
    match backend() {
        Backend::None => {}
        Backend::Injected { .. } => {
            let text = message(name);
            if let Some(f) = slot::<MarkA>(CBID_CORE_MARK_A) {
                // SAFETY: the slot's signature; the string outlives the call.
                unsafe { f(text.as_ptr()) };
            }
        }
        Backend::Library { mark_a, .. } => {
            let text = message(name);
            // SAFETY: as above.
            unsafe { mark_a(text.as_ptr()) };
        }
    }
}

/// An NVTX range (`nvtxRangePushA` … `nvtxRangePop`) for the guard's life, like
/// `cupyx.profiler.time_range(name)`. Not `Send`: NVTX ranges nest per thread.
#[must_use = "the range ends when the guard is dropped"]
pub struct Range {
    _not_send: PhantomData<*const ()>,
}

/// Opens an NVTX range named `name`; it ends when the guard is dropped.
pub fn range(name: &str) -> Range {
    push(name, None);
    Range { _not_send: PhantomData }
}

/// Opens an NVTX range with an ARGB color (`0xFF00FF00` is green).
pub fn range_colored(name: &str, argb: u32) -> Range {
    push(name, Some(argb));
    Range { _not_send: PhantomData }
}

impl Drop for Range {
    fn drop(&mut self) {
        pop();
    }
}

/// Turns the CUDA profiler on for the current device's context until dropped
/// (`cuProfilerStart`/`cuProfilerStop`).
#[must_use = "profiling stops when the guard is dropped"]
pub struct ProfileGuard {
    device: Device,
}

/// Starts the CUDA profiler (`cupy.cuda.profile()`); it stops when the guard is dropped. Without
/// a profiler attached this does nothing.
pub fn profile() -> Result<ProfileGuard> {
    let device = Device::current()?;
    let state = device.state()?;
    let _bound = state.bind()?;
    // SAFETY: no arguments; needs a current context (bound).
    profiler_result("cuProfilerStart", unsafe { cudarc::driver::sys::cuProfilerStart() })?;
    Ok(ProfileGuard { device })
}

impl Drop for ProfileGuard {
    fn drop(&mut self) {
        if let Ok(state) = self.device.state() {
            if let Ok(_bound) = state.bind() {
                // SAFETY: as above.
                let _ = unsafe { cudarc::driver::sys::cuProfilerStop() };
            }
        }
    }
}

/// Profiler calls succeed, or fail with deprecated "profiler disabled/not initialised/already
/// started/stopped" codes, which mean nothing is profiling: not an error.
fn profiler_result(call: &'static str, status: cudarc::driver::sys::CUresult) -> Result<()> {
    let code = status as u32;
    if (5..=8).contains(&code) {
        return Ok(());
    }
    crate::error::check(call, status.result())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{
        ffi::CStr,
        sync::{Mutex, MutexGuard},
    };

    #[test]
    fn event_attributes_layout() {
        // nvtxEventAttributes_v2 is 48 bytes with the message at offset 40.
        assert_eq!(std::mem::size_of::<EventAttributes>(), 48);
        assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
        assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
        assert_eq!(std::mem::size_of::<ExportTableCallbacks>(), 16);
        assert_eq!(std::mem::size_of::<ExportTableVersionInfo>(), 24);
    }

    /// Calls recorded by the fake tool below.
    static CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn calls() -> MutexGuard<'static, Vec<String>> {
        CALLS.lock().unwrap_or_else(|p| p.into_inner())
    }

    unsafe extern "C" fn tool_push_a(text: *const c_char) -> c_int {
        let name = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
        calls().push(format!("push {name}"));
        0
    }
    unsafe extern "C" fn tool_push_ex(attributes: *const EventAttributes) -> c_int {
        let a = unsafe { &*attributes };
        let name = unsafe { CStr::from_ptr(a.message) }.to_string_lossy().into_owned();
        calls().push(format!("push_ex {name} {:#x} v{} s{}", a.color, a.version, a.size));
        0
    }
    unsafe extern "C" fn tool_pop() -> c_int {
        calls().push("pop".into());
        0
    }
    unsafe extern "C" fn tool_mark(text: *const c_char) {
        let name = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
        calls().push(format!("mark {name}"));
    }

    /// A tool's `InitializeInjectionNvtx2` written as NVIDIA's samples do: checks the export
    /// tables and the module sizes, then writes its functions through the slot pointers.
    unsafe extern "C" fn tool_init(get: extern "C" fn(u32) -> *const c_void) -> c_int {
        unsafe {
            let version = get(ETID_VERSIONINFO) as *const ExportTableVersionInfo;
            if version.is_null() || (*version).version < 2 {
                return 0;
            }
            ((*version).set_injection_nvtx_version)(3);
            let callbacks = get(ETID_CALLBACKS) as *const ExportTableCallbacks;
            if callbacks.is_null() || (*callbacks).struct_size < 16 {
                return 0;
            }
            assert!(get(2).is_null());
            for module in 1..=6 {
                let mut table: *mut *mut usize = std::ptr::null_mut();
                let mut size: c_uint = 0;
                if ((*callbacks).get_module_function_table)(module, &mut table, &mut size) == 0 {
                    return 0;
                }
                assert_eq!(size as usize, MODULE_SIZES[module as usize]);
                // Every index up to the size is a writable slot.
                for i in 0..=size as usize {
                    assert!(!(*table.add(i)).is_null());
                }
            }
            let mut core: *mut *mut usize = std::ptr::null_mut();
            ((*callbacks).get_module_function_table)(1, &mut core, std::ptr::null_mut());
            assert_eq!(
                ((*callbacks).get_module_function_table)(7, &mut core, std::ptr::null_mut()),
                0
            );
            ((*callbacks).get_module_function_table)(1, &mut core, std::ptr::null_mut());
            *(*core.add(CBID_CORE_RANGE_PUSH_A)) =
                tool_push_a as unsafe extern "C" fn(*const c_char) -> c_int as usize;
            *(*core.add(CBID_CORE_RANGE_PUSH_EX)) =
                tool_push_ex as unsafe extern "C" fn(*const EventAttributes) -> c_int as usize;
            *(*core.add(CBID_CORE_RANGE_POP)) =
                tool_pop as unsafe extern "C" fn() -> c_int as usize;
            *(*core.add(CBID_CORE_MARK_A)) =
                tool_mark as unsafe extern "C" fn(*const c_char) as usize;
            1
        }
    }

    /// The injection protocol, end to end with a fake tool (the global backend is left alone:
    /// this drives the injected path directly).
    #[test]
    fn injection_protocol() {
        assert!(inject(tool_init));
        assert_eq!(TOOL_VERSION.load(Ordering::Relaxed), 3);
        push_injected("outer", None);
        push_injected("inner", Some(0xff00_ff00));
        pop_injected();
        pop_injected();
        // Slots the tool left alone hold the no-op (function addresses are not unique across
        // codegen units: call it rather than compare).
        let noop = SLOT_TABLE[5][4].load(Ordering::Acquire);
        assert_ne!(noop, 0);
        // SAFETY: the no-op's signature.
        assert_eq!(unsafe { std::mem::transmute::<usize, extern "C" fn() -> u64>(noop)() }, 0);
        let got = calls().clone();
        assert_eq!(got, ["push outer", "push_ex inner 0xff00ff00 v3 s48", "pop", "pop"]);
    }

    /// Without a tool or library (CI), ranges cost nothing and do nothing.
    #[test]
    fn ranges_without_a_tool() {
        if std::env::var_os("NVTX_INJECTION64_PATH").is_none() && load_nvtx2().is_none() {
            assert_eq!(nvtx_backend(), "none");
        }
        let _r = range("kiln test");
        let _c = range_colored("colored", 0xffff_0000);
        mark("a mark");
    }

    #[test]
    fn profile_needs_a_device() {
        if !crate::cuda_available() {
            assert!(profile().is_err());
        }
        assert!(
            profiler_result("cuProfilerStart", cudarc::driver::sys::CUresult::CUDA_SUCCESS).is_ok()
        );
    }
}
