//! Devices: discovery, backend selection (`KILN_DEVICE`), and [`Device`], CuPy's
//! `cupy.cuda.Device` (properties, `synchronize`, a scoped current device).
//!
//! cudarc is built with `dynamic-loading`: `libcuda.so` is opened on first use, and cudarc
//! *panics* (rather than returning an error) when it is missing. Everything here checks for the
//! library first and, as a second guard, catches panics, so a machine without a driver simply
//! has no CUDA devices, and every call that needs one returns
//! [`RuntimeError::DeviceUnavailable`].
//!
//! Each device's primary context is retained once, on first use, for the life of the process
//! (as CuPy does). Runtime calls make it current only for their duration when another context
//! is current on the thread (push/pop), so they never change the caller's current context, except
//! on a thread that had none, where it is left current.

use std::{
    cell::Cell,
    collections::HashMap,
    marker::PhantomData,
    panic::{self, AssertUnwindSafe},
    str::FromStr,
    sync::{Arc, Mutex, Once, OnceLock},
};

use cudarc::driver::{result, sys, CudaContext};

use crate::{
    error::{check, check_raw, Result},
    RuntimeError,
};

/// The environment variable that selects the backend: `cpu`, `cuda` or `cuda:N`.
pub const DEVICE_ENV: &str = "KILN_DEVICE";

/// Where arrays live and kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The host CPU.
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(usize),
}

impl FromStr for Backend {
    type Err = RuntimeError;

    /// Parses `cpu`, `cuda` (device 0) or `cuda:N`; case-insensitive, surrounding spaces ignored.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || RuntimeError::InvalidDevice(text.to_owned());
        let spec = text.trim().to_ascii_lowercase();
        match spec.as_str() {
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda(0)),
            _ => {
                let ordinal = spec.strip_prefix("cuda:").ok_or_else(invalid)?;
                if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid());
                }
                ordinal.parse().map(Backend::Cuda).map_err(|_| invalid())
            }
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Cpu => write!(f, "cpu"),
            Backend::Cuda(ordinal) => write!(f, "cuda:{ordinal}"),
        }
    }
}

/// The outcome of [`resolve_backend`]: the backend, and why it differs from the request if it
/// does (the text of the fallback notice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The backend to use.
    pub backend: Backend,
    /// Set when falling back to the CPU: why.
    pub fallback: Option<String>,
}

/// Decides the backend from the value of `KILN_DEVICE` (`None` when unset) and the number of
/// CUDA devices. Pure: [`select_backend`] feeds it the environment and the driver.
///
/// - unset or empty: `cuda:0` if there is a device, else the CPU (with a notice);
/// - `cpu`: the CPU;
/// - `cuda` / `cuda:N`: that device if it exists, else the CPU (with a notice);
/// - anything else: treated as unset, with a notice.
pub fn resolve_backend(spec: Option<&str>, cuda_devices: usize) -> Selection {
    let cuda_or_cpu = |ordinal: usize, why: &dyn Fn() -> String| {
        if ordinal < cuda_devices {
            Selection { backend: Backend::Cuda(ordinal), fallback: None }
        } else {
            Selection { backend: Backend::Cpu, fallback: Some(why()) }
        }
    };
    let no_device = || match cuda_devices {
        0 => "no CUDA device found".to_owned(),
        n => format!("only {n} CUDA device(s) found"),
    };
    match spec.map(str::trim).filter(|s| !s.is_empty()) {
        None => cuda_or_cpu(0, &no_device),
        Some(text) => match text.parse::<Backend>() {
            Ok(Backend::Cpu) => Selection { backend: Backend::Cpu, fallback: None },
            Ok(Backend::Cuda(n)) => cuda_or_cpu(n, &|| {
                format!("{DEVICE_ENV}={text} asked for cuda:{n} but {}", no_device())
            }),
            Err(error) => {
                let mut selection = cuda_or_cpu(0, &no_device);
                let why = format!("ignoring {DEVICE_ENV}: {error}");
                selection.fallback = Some(match selection.fallback {
                    Some(more) => format!("{why}; {more}"),
                    None => why,
                });
                selection
            }
        },
    }
}

/// Selects the backend from `KILN_DEVICE` and the devices present (see [`resolve_backend`]).
/// When it falls back to the CPU it prints one line on stderr, once per process.
pub fn select_backend() -> Backend {
    let spec = kiln_cache::config().device.clone();
    // Only query the driver when CUDA could be chosen.
    let devices = match spec.as_deref().map(str::parse::<Backend>) {
        Some(Ok(Backend::Cpu)) => 0,
        _ => device_count(),
    };
    let selection = resolve_backend(spec.as_deref(), devices);
    if let Some(why) = &selection.fallback {
        static NOTICE: Once = Once::new();
        NOTICE.call_once(|| eprintln!("kiln: {why}; using the CPU"));
    }
    selection.backend
}

/// Whether a usable CUDA driver with at least one device is present. Never panics.
pub fn cuda_available() -> bool {
    device_count() > 0
}

/// The number of CUDA devices: 0 without a driver, or if the driver fails. Never panics.
/// Probed once per process.
pub fn device_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| probe_devices().unwrap_or(0))
}

/// The CUDA driver's version, as `cuDriverGetVersion` gives it (13000 for CUDA 13.0).
///
/// Errors: [`RuntimeError::Driver`] when no driver is loaded.
pub fn driver_version() -> Result<i32, RuntimeError> {
    if device_count() == 0 {
        return Err(RuntimeError::Driver("no CUDA driver or device".into()));
    }
    let mut version: std::ffi::c_int = 0;
    // SAFETY: the driver library is loaded (device_count probed it); the call writes one int
    // through a valid pointer.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| RuntimeError::Driver(format!("cuDriverGetVersion: {e}")))?;
    Ok(version)
}

/// Asks the driver how many devices it has, if the driver library can be loaded.
fn probe_devices() -> Result<usize, RuntimeError> {
    // Kept open: cudarc's own load of libcuda then finds it mapped.
    if !crate::libs::open_kept(&["cuda", "nvcuda"]) {
        return Ok(0);
    }
    // The library exists; cudarc still panics if a symbol it needs is missing (old driver), so
    // catch that too. `AssertUnwindSafe`: nothing of ours is borrowed across the call.
    let count = panic::catch_unwind(AssertUnwindSafe(CudaContext::device_count))
        .map_err(|_| RuntimeError::Driver("cudarc panicked while loading the driver".into()))?
        .map_err(|e| RuntimeError::Driver(e.to_string()))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// A CUDA device, by ordinal: a cheap handle, like `cupy.cuda.Device(id)`.
///
/// Making one checks that the device exists; its context is created on first use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    id: usize,
}

impl Device {
    /// The device with this ordinal, if it exists.
    pub fn new(id: usize) -> Result<Device> {
        let available = device_count();
        if id < available {
            Ok(Device { id })
        } else {
            Err(RuntimeError::DeviceUnavailable { requested: id, available })
        }
    }

    /// The calling thread's current device: the one of the innermost [`Device::use_scoped`] (or
    /// [`Device::make_current`]), else `KILN_DEVICE`'s `cuda:N`, else device 0.
    pub fn current() -> Result<Device> {
        Device::new(current_id())
    }

    /// All devices.
    pub fn all() -> Vec<Device> {
        (0..device_count()).map(|id| Device { id }).collect()
    }

    /// The ordinal.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The device's runtime state (its context, created on first use).
    pub(crate) fn state(&self) -> Result<&'static DeviceState> {
        DeviceState::get(self.id)
    }

    /// The driver's handle of the device (`cuDeviceGet`): no context needed, so what is asked
    /// through it (name, attributes, memory size) does not wait for the context's creation.
    fn cu_device(&self) -> Result<sys::CUdevice> {
        let ordinal = std::ffi::c_int::try_from(self.id).map_err(|_| {
            RuntimeError::DeviceUnavailable { requested: self.id, available: device_count() }
        })?;
        // `device_count() > 0` (the handle exists): the driver is loaded and initialised.
        check("cuDeviceGet", result::device::get(ordinal))
    }

    /// The device's name (`NVIDIA H100 80GB HBM3`).
    pub fn name(&self) -> Result<String> {
        check("cuDeviceGetName", result::device::get_name(self.cu_device()?))
    }

    /// A device attribute (`cuDeviceGetAttribute`). Needs no context.
    pub fn attribute(&self, attribute: sys::CUdevice_attribute) -> Result<i32> {
        let device = self.cu_device()?;
        // SAFETY: a valid device handle.
        check("cuDeviceGetAttribute", unsafe { result::device::get_attribute(device, attribute) })
    }

    /// Whether the device's context was made (by a first use) already.
    pub fn has_context(&self) -> bool {
        DeviceState::made(self.id)
    }

    /// `(major, minor)`: `(9, 0)` for Hopper.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        use sys::CUdevice_attribute::*;
        let major = self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major as u32, minor as u32))
    }

    /// The `sm_XX` name of the architecture, for code generation (`sm_90`).
    pub fn sm_arch(&self) -> Result<String> {
        let (major, minor) = self.compute_capability()?;
        Ok(format!("sm_{major}{minor}"))
    }

    /// Number of streaming multiprocessors.
    pub fn multiprocessor_count(&self) -> Result<u32> {
        self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map(|n| n as u32)
    }

    /// Total memory in bytes (`cuDeviceTotalMem`).
    pub fn total_memory(&self) -> Result<usize> {
        let device = self.cu_device()?;
        // SAFETY: a valid device handle.
        check("cuDeviceTotalMem", unsafe { result::device::total_mem(device) })
    }

    /// `(free, total)` bytes of device memory (`cuMemGetInfo`).
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        let state = self.state()?;
        let _bound = state.bind()?;
        check("cuMemGetInfo", result::mem_get_info())
    }

    /// Waits for all work queued on the device (`cuCtxSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        let state = self.state()?;
        let _bound = state.bind()?;
        check("cuCtxSynchronize", result::ctx::synchronize())
    }

    /// Makes this the calling thread's current device until the guard is dropped (like
    /// `with cupy.cuda.Device(1):`); the guard restores the previous one. Also makes the device's
    /// context the thread's current CUDA context for the guard's life, for code that uses the
    /// current context directly.
    pub fn use_scoped(&self) -> Result<DeviceGuard> {
        let state = self.state()?;
        let previous_ctx = check("cuCtxGetCurrent", result::ctx::get_current())?;
        if previous_ctx != Some(state.ctx.cu_ctx()) {
            // SAFETY: the primary context is retained for the life of the process.
            check("cuCtxSetCurrent", unsafe { result::ctx::set_current(state.ctx.cu_ctx()) })?;
        }
        Ok(DeviceGuard {
            previous_id: set_current_id(Some(self.id)),
            // Restored on drop (null: the thread had no current context).
            previous_ctx: (previous_ctx != Some(state.ctx.cu_ctx()))
                .then(|| SendCtx(previous_ctx.unwrap_or(std::ptr::null_mut()))),
            _not_send: PhantomData,
        })
    }

    /// Makes this the calling thread's current device, with no scope (CuPy's `Device.use()`).
    pub fn make_current(&self) -> Result<()> {
        let state = self.state()?;
        check("cuCtxSetCurrent", unsafe {
            // SAFETY: the primary context is retained for the life of the process.
            result::ctx::set_current(state.ctx.cu_ctx())
        })?;
        set_current_id(Some(self.id));
        Ok(())
    }

    /// Whether this device can read and write `peer`'s memory directly
    /// (`cuDeviceCanAccessPeer`; CuPy's `runtime.deviceCanAccessPeer`). A device and itself:
    /// true.
    pub fn can_access_peer(&self, peer: Device) -> Result<bool> {
        if peer == *self {
            return Ok(true);
        }
        let (this, other) = (self.state()?, peer.state()?);
        let mut can: std::ffi::c_int = 0;
        // SAFETY: an out-pointer to a local; both handles valid.
        check_raw("cuDeviceCanAccessPeer", unsafe {
            sys::cuDeviceCanAccessPeer(&mut can, this.cu_device, other.cu_device)
        })?;
        Ok(can != 0)
    }

    /// Lets this device's kernels and copies reach `peer`'s memory directly
    /// (`cuCtxEnablePeerAccess`; CuPy enables it for every pair that can). Once per pair in the
    /// process; enabling it again is not an error. Errors: the devices cannot reach each other
    /// ([`Device::can_access_peer`]), a driver failure.
    pub fn enable_peer_access(&self, peer: Device) -> Result<()> {
        static ENABLED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
        if peer == *self {
            return Ok(());
        }
        let mut enabled = ENABLED.lock().unwrap_or_else(|p| p.into_inner());
        if enabled.contains(&(self.id, peer.id)) {
            return Ok(());
        }
        if !self.can_access_peer(peer)? {
            return Err(RuntimeError::InvalidArgument(format!(
                "{self} cannot access the memory of {peer} directly (cuDeviceCanAccessPeer)"
            )));
        }
        let (this, other) = (self.state()?, peer.state()?);
        let _bound = this.bind()?;
        // SAFETY: the peer's primary context is retained for the life of the process.
        let code = unsafe { sys::cuCtxEnablePeerAccess(other.ctx.cu_ctx(), 0) };
        if code != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            check_raw("cuCtxEnablePeerAccess", code)?;
        }
        enabled.push((self.id, peer.id));
        Ok(())
    }

    /// cudarc's context of this device (its primary context), for libraries used through
    /// cudarc (cuBLAS...). Streams can be passed to them with [`crate::Stream::as_cudarc`].
    pub fn cudarc_context(&self) -> Result<Arc<CudaContext>> {
        Ok(self.state()?.ctx.clone())
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cuda:{}", self.id)
    }
}

/// Restores the previous current device when dropped (see [`Device::use_scoped`]). Not `Send`:
/// the current device is per thread.
#[must_use = "the device is current only while the guard lives"]
pub struct DeviceGuard {
    previous_id: Option<usize>,
    previous_ctx: Option<SendCtx>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        set_current_id(self.previous_id);
        if let Some(SendCtx(ctx)) = self.previous_ctx {
            // SAFETY: restoring the context that was current (or none); an error cannot be
            // reported from a destructor and leaves our context current, which is harmless.
            let _ = unsafe { sys::cuCtxSetCurrent(ctx) };
        }
    }
}

thread_local! {
    /// The device set by `use_scoped`/`make_current` on this thread.
    static CURRENT_DEVICE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Sets the thread's current device id; returns the previous setting.
fn set_current_id(id: Option<usize>) -> Option<usize> {
    CURRENT_DEVICE.with(|c| c.replace(id))
}

/// The current device id: the thread's setting, else `KILN_DEVICE`'s, else 0.
pub(crate) fn current_id() -> usize {
    CURRENT_DEVICE.with(|c| c.get()).unwrap_or_else(default_id)
}

/// `KILN_DEVICE`'s ordinal when it names a CUDA device, else 0.
fn default_id() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        match kiln_cache::config().device.as_deref().map(str::parse::<Backend>) {
            Some(Ok(Backend::Cuda(n))) => n,
            _ => 0,
        }
    })
}

/// A `CUcontext` that may cross threads (the driver's contexts are thread-safe handles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SendCtx(pub sys::CUcontext);
// SAFETY: a CUcontext is an opaque handle usable from any thread.
unsafe impl Send for SendCtx {}
unsafe impl Sync for SendCtx {}

/// Each device's state, made on first use (the lock is held while a context is made).
static STATES: Mutex<Vec<Option<&'static DeviceState>>> = Mutex::new(Vec::new());

/// Bit `k`: device `k`'s state was made (read without the lock, [`DeviceState::made`]).
static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The runtime's state of one device, created on first use and kept for the process.
pub(crate) struct DeviceState {
    pub id: usize,
    pub cu_device: sys::CUdevice,
    pub ctx: Arc<CudaContext>,
    /// Lazily made by the modules that own them.
    pub memory: OnceLock<crate::memory::DeviceMemories>,
    pub streams: OnceLock<crate::stream::DeviceStreams>,
    pub modules: Mutex<HashMap<crate::module::ModuleKey, Arc<crate::module::Module>>>,
    /// Whether the device takes 64-bit stream memory operations (`cuStreamWriteValue64`),
    /// asked once.
    pub stream_write64: OnceLock<bool>,
}

impl DeviceState {
    /// Whether device `id`'s state (its context) was made. Does not wait for one being made
    /// (devices 0-63; a later one's answer waits for the table's lock).
    pub fn made(id: usize) -> bool {
        match u32::try_from(id).ok().and_then(|i| 1u64.checked_shl(i)) {
            Some(bit) => MADE.load(std::sync::atomic::Ordering::Acquire) & bit != 0,
            None => STATES
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(id)
                .is_some_and(|s| s.is_some()),
        }
    }

    /// The state of device `id`, made on first call.
    pub fn get(id: usize) -> Result<&'static DeviceState> {
        let available = device_count();
        if id >= available {
            return Err(RuntimeError::DeviceUnavailable { requested: id, available });
        }
        let mut states = STATES.lock().unwrap_or_else(|p| p.into_inner());
        if states.len() < available {
            states.resize(available, None);
        }
        if let Some(state) = states[id] {
            return Ok(state);
        }
        // `device_count() > 0` means the library loaded and answered; cudarc may still panic on
        // a missing symbol: caught.
        let ctx = panic::catch_unwind(|| CudaContext::new(id))
            .map_err(|_| RuntimeError::Driver("cudarc panicked while creating a context".into()))?;
        let ctx = check("cuDevicePrimaryCtxRetain", ctx)?;
        let state: &'static DeviceState = Box::leak(Box::new(DeviceState {
            id,
            cu_device: ctx.cu_device(),
            ctx,
            memory: OnceLock::new(),
            streams: OnceLock::new(),
            modules: Mutex::new(HashMap::new()),
            stream_write64: OnceLock::new(),
        }));
        states[id] = Some(state);
        if let Some(bit) = u32::try_from(id).ok().and_then(|i| 1u64.checked_shl(i)) {
            MADE.fetch_or(bit, std::sync::atomic::Ordering::Release);
        }
        Ok(state)
    }

    /// Makes the device's context current for the guard's life (see the module docs).
    pub fn bind(&self) -> Result<Bound> {
        let ctx = self.ctx.cu_ctx();
        match check("cuCtxGetCurrent", result::ctx::get_current())? {
            Some(current) if current == ctx => Ok(Bound { pushed: false }),
            Some(_) => {
                // SAFETY: the primary context is retained for the life of the process.
                check_raw("cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(ctx) })?;
                Ok(Bound { pushed: true })
            }
            None => {
                // SAFETY: as above.
                check("cuCtxSetCurrent", unsafe { result::ctx::set_current(ctx) })?;
                Ok(Bound { pushed: false })
            }
        }
    }

    pub fn device(&self) -> Device {
        Device { id: self.id }
    }
}

/// Pops the context pushed by [`DeviceState::bind`], if it pushed one.
pub(crate) struct Bound {
    pushed: bool,
}

impl Drop for Bound {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped = std::ptr::null_mut();
            // SAFETY: pops what `bind` pushed on this thread.
            let _ = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_need_a_driver() {
        if cuda_available() {
            return;
        }
        assert_eq!(
            Device::new(0),
            Err(RuntimeError::DeviceUnavailable { requested: 0, available: 0 })
        );
        assert!(Device::current().is_err());
        assert!(Device::all().is_empty());
        assert!(DeviceState::get(0).is_err());
    }

    #[test]
    fn current_device_id_is_scoped_per_thread() {
        let outer = set_current_id(Some(3));
        assert_eq!(current_id(), 3);
        let inner = set_current_id(Some(5));
        assert_eq!(current_id(), 5);
        std::thread::spawn(|| assert_eq!(current_id(), default_id())).join().unwrap();
        set_current_id(inner);
        assert_eq!(current_id(), 3);
        set_current_id(outer);
        assert_eq!(current_id(), default_id());
    }

    #[test]
    fn parses_device_strings() {
        assert_eq!("cpu".parse(), Ok(Backend::Cpu));
        assert_eq!(" CPU ".parse(), Ok(Backend::Cpu));
        assert_eq!("cuda".parse(), Ok(Backend::Cuda(0)));
        assert_eq!("cuda:0".parse(), Ok(Backend::Cuda(0)));
        assert_eq!("CUDA:3".parse(), Ok(Backend::Cuda(3)));
        for bad in
            ["", "gpu", "cuda:", "cuda:-1", "cuda:+1", "cuda:x", "cuda:1:2", "cuda0", "cpu:0"]
        {
            assert_eq!(
                bad.parse::<Backend>(),
                Err(RuntimeError::InvalidDevice(bad.to_owned())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn display_round_trips() {
        for backend in [Backend::Cpu, Backend::Cuda(0), Backend::Cuda(7)] {
            assert_eq!(backend.to_string().parse(), Ok(backend));
        }
    }

    #[test]
    fn default_prefers_cuda_0() {
        let pick = resolve_backend(None, 2);
        assert_eq!(pick, Selection { backend: Backend::Cuda(0), fallback: None });
        assert_eq!(resolve_backend(Some("  "), 1).backend, Backend::Cuda(0));
    }

    #[test]
    fn default_falls_back_to_cpu_with_notice() {
        let pick = resolve_backend(None, 0);
        assert_eq!(pick.backend, Backend::Cpu);
        assert!(pick.fallback.unwrap().contains("no CUDA device"));
    }

    #[test]
    fn explicit_choices() {
        assert_eq!(
            resolve_backend(Some("cpu"), 4),
            Selection { backend: Backend::Cpu, fallback: None }
        );
        assert_eq!(resolve_backend(Some("cuda"), 1).backend, Backend::Cuda(0));
        assert_eq!(resolve_backend(Some("cuda:3"), 4).backend, Backend::Cuda(3));
        let missing = resolve_backend(Some("cuda:4"), 4);
        assert_eq!(missing.backend, Backend::Cpu);
        assert!(missing.fallback.unwrap().contains("only 4 CUDA device(s)"));
        let none = resolve_backend(Some("cuda"), 0);
        assert_eq!(none.backend, Backend::Cpu);
        assert!(none.fallback.unwrap().contains("no CUDA device"));
    }

    #[test]
    fn invalid_value_is_ignored_with_notice() {
        let pick = resolve_backend(Some("tpu"), 1);
        assert_eq!(pick.backend, Backend::Cuda(0));
        assert!(pick.fallback.unwrap().contains("ignoring KILN_DEVICE"));
        let pick = resolve_backend(Some("tpu"), 0);
        assert_eq!(pick.backend, Backend::Cpu);
        let why = pick.fallback.unwrap();
        assert!(why.contains("ignoring KILN_DEVICE") && why.contains("no CUDA device"), "{why}");
    }

    /// Runs on every machine: must not panic; on the development/CI machine (no driver) it is
    /// also checked to report nothing. `KILN_EXPECT_GPU=1` / `=0` state the expectation.
    #[test]
    fn cuda_probe_never_panics() {
        let available = cuda_available();
        assert_eq!(available, device_count() > 0);
        match std::env::var("KILN_EXPECT_GPU").as_deref() {
            Ok("1") => assert!(available, "KILN_EXPECT_GPU=1 but no CUDA device found"),
            Ok("0") => assert!(!available),
            // No kernel driver at all: certainly no device (the development and CI machines).
            _ if !["/proc/driver/nvidia", "/dev/nvidiactl"]
                .iter()
                .any(|p| std::path::Path::new(p).exists()) =>
            {
                assert!(!available);
                assert_eq!(device_count(), 0);
            }
            _ => {}
        }
    }

    #[test]
    fn select_backend_never_panics() {
        let backend = select_backend();
        if !cuda_available() {
            assert_eq!(backend, Backend::Cpu);
        }
    }
}
