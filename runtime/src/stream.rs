//! Streams and events, in the image of `cupy.cuda.Stream` and `cupy.cuda.Event`.
//!
//! - Every device has its legacy *null stream* ([`Stream::null`]), the default current stream.
//! - [`Stream::new`] makes a blocking stream (it synchronises with the null stream, CuPy's
//!   default), [`Stream::non_blocking`] one that runs concurrently with it.
//! - Each thread has a *current stream per device*; [`Stream::use_scoped`] sets it for a scope
//!   (like `with stream:`), [`Stream::current`] reads it. Kernels and copies without an explicit
//!   stream go there.
//! - [`Device::pooled_stream`]/[`Device::pooled_streams`] hand out the device's pool of
//!   non-blocking streams, round robin, for independent kernels; [`Device::pool_stream`] gives
//!   the pool's stream of a fixed index (made on first use, then reused), for a caller that
//!   decides itself which work goes where (kiln's schedules).
//! - [`Event`]: `record`, `synchronize`, `done`, [`elapsed_time`] in milliseconds.

use std::{
    cell::RefCell,
    collections::HashMap,
    marker::PhantomData,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

use cudarc::driver::{result, sys, CudaStream};

use crate::{
    device::{Device, DeviceState},
    error::{check, check_raw, CudaError, KernelError, KernelStage, Result},
    pool::StreamOrder,
    RuntimeError,
};

/// What kind of stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// The device's legacy default stream (handle 0).
    Null,
    /// A stream that synchronises with the null stream (`CU_STREAM_DEFAULT`).
    Blocking,
    /// A stream that does not synchronise with the null stream (`CU_STREAM_NON_BLOCKING`).
    NonBlocking,
}

/// A `CUstream` that may cross threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RawStream(sys::CUstream);
// SAFETY: a CUstream is an opaque handle usable from any thread.
unsafe impl Send for RawStream {}
unsafe impl Sync for RawStream {}

struct StreamInner {
    raw: RawStream,
    device: &'static DeviceState,
    id: u64,
    kind: StreamKind,
    /// The last kernel launched on the stream, to name it when a later synchronisation reports
    /// that a kernel failed.
    last_kernel: Mutex<Option<Arc<str>>>,
    /// Whether kiln made the stream (and destroys it); false for [`Stream::from_external`].
    owned: bool,
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.kind == StreamKind::Null || !self.owned {
            return;
        }
        // Pending work completes; the driver releases the stream afterwards.
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: we created the stream and destroy it once.
            let _ = unsafe { result::stream::destroy(self.raw.0) };
        }
    }
}

/// A CUDA stream (cheap to clone: shared). Dropping the last clone destroys it (after its
/// pending work completes).
#[derive(Clone)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.inner.device.id)
            .field("id", &self.inner.id)
            .field("kind", &self.inner.kind)
            .finish()
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        self.inner.device.id == other.inner.device.id && self.inner.id == other.inner.id
    }
}
impl Eq for Stream {}

/// As [`PartialEq`]: the device and the stream's id (so streams key maps and sets, as CuPy's
/// `Stream` hashes).
impl std::hash::Hash for Stream {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.inner.device.id, self.inner.id).hash(state);
    }
}

/// Identifies a stream in a device's memory pools: a unique id (0 for the null stream; never
/// reused, unlike handles) and the handle to record events on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey {
    id: u64,
    raw: usize,
}

static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

impl Stream {
    fn create(device: Device, kind: StreamKind, priority: Option<i32>) -> Result<Stream> {
        let state = device.state()?;
        let _bound = state.bind()?;
        let flags = match kind {
            StreamKind::NonBlocking => sys::CUstream_flags::CU_STREAM_NON_BLOCKING,
            _ => sys::CUstream_flags::CU_STREAM_DEFAULT,
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check_raw("cuStreamCreateWithPriority", unsafe {
            sys::cuStreamCreateWithPriority(&mut raw, flags as u32, priority.unwrap_or(0))
        })?;
        Ok(Stream {
            inner: Arc::new(StreamInner {
                raw: RawStream(raw),
                device: state,
                id: NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed),
                kind,
                last_kernel: Mutex::new(None),
                owned: true,
            }),
        })
    }

    /// A stream another library made (CuPy's `ExternalStream`): `raw` is its `CUstream` /
    /// `cudaStream_t`. kiln uses it as any stream (launches, copies, events, `use_scoped`) and
    /// never destroys it; its kind is the stream's flags (`cuStreamGetFlags`). A null `raw` is
    /// the device's null stream.
    ///
    /// # Safety
    /// `raw` must be a stream of `device`'s primary context (the one the CUDA runtime and kiln
    /// use) that stays alive as long as the returned `Stream`, its clones and the work and
    /// buffers kiln queues on it.
    pub unsafe fn from_external(device: Device, raw: usize) -> Result<Stream> {
        if raw == 0 {
            return Stream::null(device);
        }
        let state = device.state()?;
        let _bound = state.bind()?;
        let mut flags = 0u32;
        // SAFETY: the caller vouches for the stream; an out-pointer to a local.
        check_raw("cuStreamGetFlags", unsafe {
            sys::cuStreamGetFlags(raw as sys::CUstream, &mut flags)
        })?;
        let kind = if flags & sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32 != 0 {
            StreamKind::NonBlocking
        } else {
            StreamKind::Blocking
        };
        Ok(Stream {
            inner: Arc::new(StreamInner {
                raw: RawStream(raw as sys::CUstream),
                device: state,
                id: NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed),
                kind,
                last_kernel: Mutex::new(None),
                owned: false,
            }),
        })
    }

    /// Whether kiln made this stream (and destroys it with its last clone); false for a
    /// stream of [`Stream::from_external`] and the null stream.
    pub fn is_owned(&self) -> bool {
        self.inner.owned && self.inner.kind != StreamKind::Null
    }

    /// The stream's priority (`cuStreamGetPriority`; CuPy's `Stream.priority`): lower numbers
    /// are higher priority, within [`Stream::priority_range`].
    pub fn priority(&self) -> Result<i32> {
        let _bound = self.inner.device.bind()?;
        let mut priority = 0;
        // SAFETY: a live stream; an out-pointer to a local.
        check_raw("cuStreamGetPriority", unsafe {
            sys::cuStreamGetPriority(self.raw(), &mut priority)
        })?;
        Ok(priority)
    }

    /// `(least, greatest)` priorities of `device`'s streams (`cuCtxGetStreamPriorityRange`,
    /// CuPy's `runtime.deviceGetStreamPriorityRange`): `least` is the default (0), `greatest`
    /// the most urgent (a negative number).
    pub fn priority_range(device: Device) -> Result<(i32, i32)> {
        let _bound = device.state()?.bind()?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: out-pointers to locals, the device's context current.
        check_raw("cuCtxGetStreamPriorityRange", unsafe {
            sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest)
        })?;
        Ok((least, greatest))
    }

    /// Queues `f` on the stream (`cuLaunchHostFunc`; CuPy's `Stream.launch_host_func`): it runs
    /// on a driver thread once the work queued before it is done, and later work waits for it
    /// to return. `f` must not call CUDA (the driver forbids it there); a panic in `f` is caught
    /// and dropped (it cannot unwind into the driver). Errors: the driver refusing the call
    /// (`f` is then dropped without running).
    pub fn launch_host_func<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        type Callback = Box<dyn FnOnce() + Send>;
        unsafe extern "C" fn trampoline(data: *mut std::ffi::c_void) {
            // SAFETY: `data` is the `Box<Callback>` leaked below; the driver calls this once.
            let f = unsafe { Box::from_raw(data.cast::<Callback>()) };
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        }
        let data = Box::into_raw(Box::new(Box::new(f) as Callback)).cast::<std::ffi::c_void>();
        let _bound = self.inner.device.bind()?;
        // SAFETY: a live stream; `trampoline` takes back the box it is given exactly once.
        let status = unsafe { sys::cuLaunchHostFunc(self.raw(), Some(trampoline), data) };
        if let Err(e) = check_raw("cuLaunchHostFunc", status) {
            // SAFETY: the driver did not take the callback: the box is still ours, freed once.
            drop(unsafe { Box::from_raw(data.cast::<Callback>()) });
            return Err(e);
        }
        Ok(())
    }

    /// A new blocking stream on `device` (synchronises with the null stream, like
    /// `cupy.cuda.Stream()`).
    pub fn new(device: Device) -> Result<Stream> {
        Stream::create(device, StreamKind::Blocking, None)
    }

    /// A new non-blocking stream on `device` (`cupy.cuda.Stream(non_blocking=True)`).
    pub fn non_blocking(device: Device) -> Result<Stream> {
        Stream::create(device, StreamKind::NonBlocking, None)
    }

    /// A new stream with a priority (lower numbers are higher priority; see
    /// `cuCtxGetStreamPriorityRange`).
    pub fn with_priority(device: Device, non_blocking: bool, priority: i32) -> Result<Stream> {
        let kind = if non_blocking { StreamKind::NonBlocking } else { StreamKind::Blocking };
        Stream::create(device, kind, Some(priority))
    }

    /// The device's null (legacy default) stream.
    pub fn null(device: Device) -> Result<Stream> {
        Ok(DeviceStreams::of(device.state()?).null.clone())
    }

    /// The calling thread's current stream on the current device.
    pub fn current() -> Result<Stream> {
        Stream::current_on(Device::current()?)
    }

    /// The calling thread's current stream on `device` (the null stream unless set).
    pub fn current_on(device: Device) -> Result<Stream> {
        if let Some(stream) = CURRENT_STREAMS.with(|c| c.borrow().get(&device.id()).cloned()) {
            return Ok(stream);
        }
        Stream::null(device)
    }

    /// Makes this the current stream of its device on this thread until the guard is dropped
    /// (`with stream:`). Scopes nest: when a guard drops, the stream that was current when its
    /// scope began is current again, unless a scope begun after it on the device is still
    /// alive (guards dropped out of order), which then restores it when it ends.
    pub fn use_scoped(&self) -> StreamGuard {
        let device = self.inner.device.id;
        let previous = set_current_stream(device, Some(self.clone()));
        let token = NEXT_SCOPE.fetch_add(1, Ordering::Relaxed);
        SCOPES.with(|s| s.borrow_mut().push(Scope { token, device, previous }));
        StreamGuard { token, _not_send: PhantomData }
    }

    /// Makes this the current stream of its device on this thread, with no scope
    /// (`stream.use()`).
    pub fn make_current(&self) {
        set_current_stream(self.inner.device.id, Some(self.clone()));
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.inner.device.device()
    }

    pub(crate) fn state(&self) -> &'static DeviceState {
        self.inner.device
    }

    /// The raw `CUstream` (null for the null stream).
    pub fn raw(&self) -> sys::CUstream {
        self.inner.raw.0
    }

    /// The kind of stream.
    pub fn kind(&self) -> StreamKind {
        self.inner.kind
    }

    /// A process-unique id (0 for a null stream).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    pub(crate) fn key(&self) -> StreamKey {
        StreamKey { id: self.inner.id, raw: self.inner.raw.0 as usize }
    }

    pub(crate) fn set_last_kernel(&self, name: &Arc<str>) {
        let mut last = self.inner.last_kernel.lock().unwrap_or_else(|p| p.into_inner());
        if !last.as_ref().is_some_and(|l| Arc::ptr_eq(l, name)) {
            *last = Some(name.clone());
        }
    }

    /// The last kernel launched on this stream through the runtime.
    pub fn last_kernel(&self) -> Option<Arc<str>> {
        self.inner.last_kernel.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Turns an error found at a synchronisation into a kernel error naming the last kernel
    /// launched, when there is one (execution errors are reported late).
    pub(crate) fn attribute_error(&self, error: RuntimeError) -> RuntimeError {
        match (error, self.last_kernel()) {
            (RuntimeError::Cuda(cuda), Some(kernel)) if is_execution_error(&cuda) => {
                RuntimeError::Kernel(Box::new(KernelError {
                    kernel: format!("{kernel} (the last kernel launched on the stream)"),
                    stage: KernelStage::Execution,
                    cuda: Some(cuda),
                    log: String::new(),
                    dump_path: None,
                }))
            }
            (error, _) => error,
        }
    }

    /// Waits for the stream's work (`cuStreamSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        let _bound = self.inner.device.bind()?;
        // SAFETY: a live stream.
        check("cuStreamSynchronize", unsafe { result::stream::synchronize(self.raw()) })
            .map_err(|e| self.attribute_error(e))
    }

    /// Whether all the stream's work has completed (`cuStreamQuery`).
    pub fn done(&self) -> Result<bool> {
        let _bound = self.inner.device.bind()?;
        // SAFETY: a live stream.
        match unsafe { sys::cuStreamQuery(self.raw()) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(self.attribute_error(RuntimeError::Cuda(CudaError::from_driver(
                "cuStreamQuery",
                result::DriverError(other),
            )))),
        }
    }

    /// Makes later work on this stream wait for `event` (`cuStreamWaitEvent`).
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let _bound = self.inner.device.bind()?;
        // SAFETY: live stream and event.
        check("cuStreamWaitEvent", unsafe {
            result::stream::wait_event(
                self.raw(),
                event.raw(),
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        })
    }

    /// Records a new (timing) event on this stream and returns it.
    pub fn record(&self) -> Result<Event> {
        let event = Event::new(self.device())?;
        event.record(self)?;
        Ok(event)
    }

    /// Wraps this stream for cudarc (cuBLAS...).
    ///
    /// # Safety
    /// The returned wrapper does not keep this stream alive: drop it (and everything that holds
    /// it) before the last clone of this `Stream`.
    pub unsafe fn as_cudarc(&self) -> Arc<CudaStream> {
        // SAFETY: the stream belongs to the device's primary context, which cudarc wraps; the
        // caller keeps it alive.
        unsafe { self.inner.device.ctx.wrap_borrowed_stream(self.raw()) }
    }
}

/// Errors after which a kernel is the likely culprit: the sticky ones, which only a kernel's
/// fault on the device causes.
fn is_execution_error(error: &CudaError) -> bool {
    error.is_sticky()
}

thread_local! {
    static CURRENT_STREAMS: RefCell<HashMap<usize, Stream>> = RefCell::new(HashMap::new());
    /// The live stream scopes of this thread, in the order they began.
    static SCOPES: RefCell<Vec<Scope<Stream>>> = const { RefCell::new(Vec::new()) };
}

static NEXT_SCOPE: AtomicU64 = AtomicU64::new(1);

/// A live [`Stream::use_scoped`] scope: the device's stream current before it began.
struct Scope<T> {
    token: u64,
    device: usize,
    previous: Option<T>,
}

/// Ends the scope `token`: returns the device and the stream to make current, or `None` when a
/// scope begun later on the same device is still alive; that one inherits what this one would
/// have restored.
fn end_scope<T>(scopes: &mut Vec<Scope<T>>, token: u64) -> Option<(usize, Option<T>)> {
    let at = scopes.iter().position(|s| s.token == token)?;
    let ended = scopes.remove(at);
    match scopes[at..].iter_mut().find(|s| s.device == ended.device) {
        Some(later) => {
            later.previous = ended.previous;
            None
        }
        None => Some((ended.device, ended.previous)),
    }
}

fn set_current_stream(device: usize, stream: Option<Stream>) -> Option<Stream> {
    CURRENT_STREAMS.with(|c| {
        let mut c = c.borrow_mut();
        match stream {
            Some(s) => c.insert(device, s),
            None => c.remove(&device),
        }
    })
}

/// Restores the previous current stream of the device when dropped (see
/// [`Stream::use_scoped`]).
#[must_use = "the stream is current only while the guard lives"]
pub struct StreamGuard {
    token: u64,
    _not_send: PhantomData<*const ()>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let restore = SCOPES.with(|s| end_scope(&mut s.borrow_mut(), self.token));
        if let Some((device, previous)) = restore {
            set_current_stream(device, previous);
        }
    }
}

/// A `CUevent` that may cross threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawEvent(pub sys::CUevent);
// SAFETY: a CUevent is an opaque handle usable from any thread.
unsafe impl Send for RawEvent {}
unsafe impl Sync for RawEvent {}

/// A CUDA event (`cupy.cuda.Event`).
pub struct Event {
    raw: RawEvent,
    device: &'static DeviceState,
    timing: bool,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("device", &self.device.id)
            .field("timing", &self.timing)
            .finish()
    }
}

impl Event {
    /// A timing event on `device` (`cupy.cuda.Event()`).
    pub fn new(device: Device) -> Result<Event> {
        Event::with_flags(device, false, false)
    }

    /// An event with CuPy's flags: `blocking` (synchronize yields the thread instead of
    /// spinning), `disable_timing` (cheaper; no `elapsed_time`).
    pub fn with_flags(device: Device, blocking: bool, disable_timing: bool) -> Result<Event> {
        let state = device.state()?;
        let _bound = state.bind()?;
        let mut flags = 0u32;
        if blocking {
            flags |= sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;
        }
        if disable_timing {
            flags |= sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check_raw("cuEventCreate", unsafe { sys::cuEventCreate(&mut raw, flags) })?;
        Ok(Event { raw: RawEvent(raw), device: state, timing: !disable_timing })
    }

    /// The raw `CUevent`.
    pub fn raw(&self) -> sys::CUevent {
        self.raw.0
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device.device()
    }

    /// Records the event on `stream` (which must be of the same device).
    pub fn record(&self, stream: &Stream) -> Result<()> {
        if stream.state().id != self.device.id {
            return Err(RuntimeError::InvalidArgument(format!(
                "an event of cuda:{} recorded on a stream of cuda:{}",
                self.device.id,
                stream.state().id
            )));
        }
        let _bound = self.device.bind()?;
        // SAFETY: live event and stream.
        check("cuEventRecord", unsafe { result::event::record(self.raw(), stream.raw()) })
    }

    /// Makes later work on `stream`, a raw `CUstream` kiln did not make (another library's
    /// stream, or the driver's `CU_STREAM_LEGACY` = 1 or `CU_STREAM_PER_THREAD` = 2), wait for
    /// the event (`cuStreamWaitEvent`): DLPack's stream handshake.
    ///
    /// # Safety
    /// `stream` must be a live stream of the event's device (its primary context), 0, 1 or 2.
    pub unsafe fn wait_on_raw_stream(&self, stream: usize) -> Result<()> {
        let _bound = self.device.bind()?;
        // SAFETY: a live event; the caller vouches for the stream.
        check("cuStreamWaitEvent", unsafe {
            result::stream::wait_event(
                stream as sys::CUstream,
                self.raw(),
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        })
    }

    /// Records the event on the current stream of its device.
    pub fn record_current(&self) -> Result<()> {
        self.record(&Stream::current_on(self.device())?)
    }

    /// Waits until the work before the event's record has completed.
    pub fn synchronize(&self) -> Result<()> {
        let _bound = self.device.bind()?;
        // SAFETY: a live event.
        check("cuEventSynchronize", unsafe { result::event::synchronize(self.raw()) })
    }

    /// Whether the work before the event's record has completed (true if never recorded).
    pub fn done(&self) -> Result<bool> {
        let _bound = self.device.bind()?;
        // SAFETY: a live event.
        match unsafe { sys::cuEventQuery(self.raw()) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(RuntimeError::Cuda(CudaError::from_driver(
                "cuEventQuery",
                result::DriverError(other),
            ))),
        }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: we created the event; destroying a pending event is allowed.
            let _ = unsafe { result::event::destroy(self.raw()) };
        }
    }
}

/// Milliseconds between two recorded timing events (`cupy.cuda.get_elapsed_time`), with a
/// resolution of about half a microsecond.
pub fn elapsed_time(start: &Event, end: &Event) -> Result<f32> {
    if !(start.timing && end.timing) {
        return Err(RuntimeError::InvalidArgument(
            "elapsed_time needs events made without disable_timing".into(),
        ));
    }
    let _bound = start.device.bind()?;
    // SAFETY: live events.
    check("cuEventElapsedTime", unsafe { result::event::elapsed(start.raw(), end.raw()) })
}

impl Event {
    /// Milliseconds from `start` to this event.
    pub fn elapsed_since(&self, start: &Event) -> Result<f32> {
        elapsed_time(start, self)
    }
}

/// The per-device streams: the null stream and the pool.
pub(crate) struct DeviceStreams {
    null: Stream,
    pool: Mutex<Vec<Stream>>,
    next: AtomicUsize,
    pool_size: usize,
}

/// Default number of pooled streams per device (`KILN_STREAM_POOL` overrides).
pub const DEFAULT_STREAM_POOL_SIZE: usize = 8;

impl DeviceStreams {
    pub(crate) fn of(state: &'static DeviceState) -> &'static DeviceStreams {
        state.streams.get_or_init(|| DeviceStreams {
            null: Stream {
                inner: Arc::new(StreamInner {
                    raw: RawStream(std::ptr::null_mut()),
                    device: state,
                    id: 0,
                    kind: StreamKind::Null,
                    last_kernel: Mutex::new(None),
                    owned: false,
                }),
            },
            pool: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
            pool_size: kiln_cache::config().stream_pool.unwrap_or(DEFAULT_STREAM_POOL_SIZE),
        })
    }

    /// The pooled stream `index` (mod the pool size), made on first use.
    fn get(&self, device: Device, index: usize) -> Result<Stream> {
        let index = index % self.pool_size;
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        while pool.len() <= index {
            pool.push(Stream::non_blocking(device)?);
        }
        Ok(pool[index].clone())
    }
}

/// The indices `count` round-robin picks take from a pool of `size`, starting at `start`.
fn round_robin(start: usize, count: usize, size: usize) -> impl Iterator<Item = usize> {
    (0..count).map(move |i| (start + i) % size)
}

impl Device {
    /// The next stream of the device's pool of non-blocking streams (round robin).
    pub fn pooled_stream(&self) -> Result<Stream> {
        let streams = DeviceStreams::of(self.state()?);
        let index = streams.next.fetch_add(1, Ordering::Relaxed);
        streams.get(*self, index)
    }

    /// The pool's stream `index` (modulo the pool's size, [`DEFAULT_STREAM_POOL_SIZE`] or
    /// `KILN_STREAM_POOL`): a non-blocking stream made on first use and the same one for every
    /// later call with that index, on every thread.
    pub fn pool_stream(&self, index: usize) -> Result<Stream> {
        DeviceStreams::of(self.state()?).get(*self, index)
    }

    /// `count` pooled streams, distinct when `count` is at most the pool's size
    /// ([`DEFAULT_STREAM_POOL_SIZE`] or `KILN_STREAM_POOL`), for independent kernels.
    pub fn pooled_streams(&self, count: usize) -> Result<Vec<Stream>> {
        let streams = DeviceStreams::of(self.state()?);
        let start = streams.next.fetch_add(count, Ordering::Relaxed);
        round_robin(start, count, streams.pool_size).map(|i| streams.get(*self, i)).collect()
    }
}

/// Stream order for a device's memory pools: events recorded at frees, recycled.
pub struct CudaStreamOrder {
    device: &'static DeviceState,
    recycle: Arc<EventRecycler>,
}

/// Disable-timing events kept for reuse (creating events costs more than recording them).
struct EventRecycler {
    device: &'static DeviceState,
    events: Mutex<Vec<RawEvent>>,
}

impl Drop for EventRecycler {
    fn drop(&mut self) {
        let events = std::mem::take(self.events.get_mut().unwrap_or_else(|p| p.into_inner()));
        if let Ok(_bound) = self.device.bind() {
            for e in events {
                // SAFETY: events we created, destroyed once.
                let _ = unsafe { result::event::destroy(e.0) };
            }
        }
    }
}

/// An event recorded at a free; goes back to the recycler when the last clone is dropped.
pub struct PoolEvent {
    raw: RawEvent,
    recycle: Arc<EventRecycler>,
}

impl Drop for PoolEvent {
    fn drop(&mut self) {
        self.recycle.events.lock().unwrap_or_else(|p| p.into_inner()).push(self.raw);
    }
}

impl CudaStreamOrder {
    pub(crate) fn new(device: &'static DeviceState) -> Self {
        CudaStreamOrder {
            device,
            recycle: Arc::new(EventRecycler { device, events: Mutex::new(Vec::new()) }),
        }
    }

    fn try_record(&self, stream: StreamKey) -> Result<Arc<PoolEvent>> {
        let _bound = self.device.bind()?;
        let recycled = self.recycle.events.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let raw = match recycled {
            Some(raw) => raw,
            None => RawEvent(check(
                "cuEventCreate",
                result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING),
            )?),
        };
        let event = Arc::new(PoolEvent { raw, recycle: self.recycle.clone() });
        // SAFETY: a live event; the stream is kept alive by the buffer being freed.
        check("cuEventRecord", unsafe {
            result::event::record(raw.0, stream.raw as sys::CUstream)
        })?;
        Ok(event)
    }
}

impl CudaStreamOrder {
    /// Waits for a pool event, reporting a failure of the work before it.
    pub(crate) fn wait_checked(&self, event: &PoolEvent) -> Result<()> {
        let _bound = self.device.bind()?;
        // SAFETY: a live event.
        check("cuEventSynchronize", unsafe { result::event::synchronize(event.raw.0) })
    }
}

/// Whether `cuEventQuery`'s answer shows the work before the event completed: only success
/// does. An error (a broken context, an event the driver does not know) says nothing of that
/// work, so the block stays cached, unused, rather than handed out while work may still use
/// it; an allocation then asks the driver, which reports the error.
fn query_says_done(result: sys::CUresult) -> bool {
    result == sys::CUresult::CUDA_SUCCESS
}

impl StreamOrder for CudaStreamOrder {
    type Stream = StreamKey;
    type Event = Arc<PoolEvent>;

    fn record(&self, stream: StreamKey) -> Option<Arc<PoolEvent>> {
        match self.try_record(stream) {
            Ok(event) => Some(event),
            Err(_) => {
                // Could not record (a broken context): wait for the stream instead, so that the
                // block is safe to reuse anywhere.
                if let Ok(_bound) = self.device.bind() {
                    // SAFETY: a live stream.
                    let _ = unsafe { result::stream::synchronize(stream.raw as sys::CUstream) };
                }
                None
            }
        }
    }

    fn alloc_async(
        &self,
        bytes: usize,
        stream: StreamKey,
    ) -> std::result::Result<u64, crate::pool::AllocError> {
        crate::pool::async_pool::alloc(self.device, bytes, stream.raw as sys::CUstream)
    }

    fn free_async(&self, ptr: u64, stream: StreamKey) {
        crate::pool::async_pool::free(self.device, ptr, stream.raw as sys::CUstream)
    }

    fn async_figures(&self) -> (usize, usize) {
        crate::pool::async_pool::figures(self.device)
    }

    fn trim_async(&self) {
        crate::pool::async_pool::trim(self.device)
    }

    fn is_done(&self, event: &Arc<PoolEvent>) -> bool {
        let Ok(_bound) = self.device.bind() else {
            return false;
        };
        // SAFETY: a live event.
        query_says_done(unsafe { sys::cuEventQuery(event.raw.0) })
    }

    fn wait(&self, event: &Arc<PoolEvent>) {
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: a live event.
            let _ = unsafe { result::event::synchronize(event.raw.0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completed_query_is_done() {
        use sys::CUresult::*;
        assert!(query_says_done(CUDA_SUCCESS));
        for r in [
            CUDA_ERROR_NOT_READY,
            CUDA_ERROR_ILLEGAL_ADDRESS,
            CUDA_ERROR_INVALID_HANDLE,
            CUDA_ERROR_INVALID_CONTEXT,
        ] {
            assert!(!query_says_done(r), "{r:?}");
        }
    }

    /// Scopes ended in order restore what each began with; one ended before a later scope of
    /// its device hands that one what it would have restored; other devices are independent.
    #[test]
    fn nested_scopes_restore_what_was_current() {
        let scope =
            |token, device, previous: Option<&'static str>| Scope { token, device, previous };
        // null -> s1 -> s2, ended in order: s1 current again, then null.
        let mut v = vec![scope(1, 0, None), scope(2, 0, Some("s1"))];
        assert_eq!(end_scope(&mut v, 2), Some((0, Some("s1"))));
        assert_eq!(end_scope(&mut v, 1), Some((0, None)));
        assert!(v.is_empty());
        // Out of order: s1's guard first leaves s2 current; s2's then restores null.
        let mut v = vec![scope(1, 0, None), scope(2, 0, Some("s1"))];
        assert_eq!(end_scope(&mut v, 1), None);
        assert_eq!(end_scope(&mut v, 2), Some((0, None)));
        // A scope of another device in between is not affected.
        let mut v = vec![scope(1, 0, None), scope(2, 1, None), scope(3, 0, Some("a"))];
        assert_eq!(end_scope(&mut v, 1), None);
        assert_eq!(end_scope(&mut v, 2), Some((1, None)));
        assert_eq!(end_scope(&mut v, 3), Some((0, None)));
        assert_eq!(end_scope(&mut v, 9), None, "an unknown scope");
    }

    #[test]
    fn round_robin_wraps() {
        assert_eq!(round_robin(6, 4, 8).collect::<Vec<_>>(), [6, 7, 0, 1]);
        assert_eq!(round_robin(0, 3, 2).collect::<Vec<_>>(), [0, 1, 0]);
        assert_eq!(round_robin(5, 0, 2).count(), 0);
    }

    #[test]
    fn streams_need_a_driver() {
        if crate::cuda_available() {
            return;
        }
        assert!(matches!(Stream::current(), Err(RuntimeError::DeviceUnavailable { .. })));
        assert!(Device::new(0).is_err());
    }
}
