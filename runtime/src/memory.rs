//! Device and pinned host memory: the CUDA allocators behind the [`MemoryPool`], the per-device
//! pools (`cupy.get_default_memory_pool()` / `get_default_pinned_memory_pool()`), buffers, and
//! host↔device copies staged through pinned memory.
//!
//! - [`DeviceBuffer`]: device memory from a pool; dropping it returns the block to the pool,
//!   ordered on the buffer's stream (see [`crate::pool`]), or to the driver with
//!   `KILN_GPU_POOL=off` ([`POOL_ENV`]).
//! - Copies from host slices go through pinned staging blocks of the device's pinned pool, so they
//!   are asynchronous for the caller: the data is copied into pinned memory at once and the DMA is
//!   queued on the stream. Large transfers are cut into pieces, a few in flight at a time.
//!   Downloads into host slices wait for the data.
//! - [`PinnedBuffer`]: pinned host memory for the caller's own asynchronous copies; host access
//!   waits for the copies queued on it.

use std::{
    collections::VecDeque,
    ffi::c_void,
    sync::{Arc, Mutex},
};

use cudarc::driver::{result, sys};

use crate::{
    device::{Device, DeviceState},
    error::{check, check_raw, Result},
    pool::{
        AllocError, Block, LimitSpec, MemoryPool, PoolMode, RawAllocator, ReusePolicy, StreamOrder,
    },
    stream::{CudaStreamOrder, PoolEvent, Stream, StreamKey},
    CudaError, RuntimeError,
};

/// Plain data that may be copied to and from the device byte for byte.
///
/// # Safety
/// Every bit pattern of `size_of::<T>()` bytes must be a valid `T`, and `T` must have no padding.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => { $(unsafe impl DeviceCopy for $t {})* };
}
device_copy!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);

/// A device address, passed to kernels as a 64-bit pointer (e.g. an offset into a buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct DevicePtr(pub u64);
// SAFETY: a u64.
unsafe impl DeviceCopy for DevicePtr {}

fn bytes_of<T: DeviceCopy>(data: &[T]) -> &[u8] {
    // SAFETY: DeviceCopy types have no padding; u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), std::mem::size_of_val(data)) }
}

fn bytes_of_mut<T: DeviceCopy>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every byte pattern is a valid T.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast(), std::mem::size_of_val(data)) }
}

/// Device memory from `cuMemAlloc`/`cuMemFree`.
pub struct CudaAllocator {
    device: &'static DeviceState,
}

impl RawAllocator for CudaAllocator {
    fn alloc(&self, bytes: usize) -> std::result::Result<u64, AllocError> {
        let _bound = self.device.bind().map_err(AllocError::Failed)?;
        if let Some(user) = crate::allocator::current(self.device.id) {
            let ptr = user.alloc(bytes)?;
            crate::allocator::track(self.device.id, ptr, user);
            return Ok(ptr);
        }
        // SAFETY: plain allocation.
        match unsafe { result::malloc_sync(bytes) } {
            Ok(ptr) => Ok(ptr),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                Err(AllocError::OutOfMemory)
            }
            Err(e) => {
                Err(AllocError::Failed(RuntimeError::Cuda(CudaError::from_driver("cuMemAlloc", e))))
            }
        }
    }

    fn free(&self, ptr: u64, bytes: usize) {
        if let Some(user) = crate::allocator::take(self.device.id, ptr) {
            if let Ok(_bound) = self.device.bind() {
                user.free(ptr, bytes);
            }
            return;
        }
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: allocated by `alloc`, freed once; the pool waited for its last use
            // (and cuMemFree synchronises anyway).
            let _ = unsafe { result::free_sync(ptr) };
        }
    }

    fn mem_info(&self) -> (usize, usize) {
        self.device.bind().ok().and_then(|_bound| result::mem_get_info().ok()).unwrap_or((0, 0))
    }
}

/// Page-locked host memory from `cuMemHostAlloc` (portable: usable from every context).
pub struct PinnedAllocator {
    device: &'static DeviceState,
}

impl RawAllocator for PinnedAllocator {
    fn alloc(&self, bytes: usize) -> std::result::Result<u64, AllocError> {
        let _bound = self.device.bind().map_err(AllocError::Failed)?;
        // SAFETY: plain allocation.
        match unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE) } {
            Ok(ptr) => Ok(ptr as u64),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                Err(AllocError::OutOfMemory)
            }
            Err(e) => Err(AllocError::Failed(RuntimeError::Cuda(CudaError::from_driver(
                "cuMemHostAlloc",
                e,
            )))),
        }
    }

    fn free(&self, ptr: u64, _bytes: usize) {
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: allocated by `alloc`, freed once, its copies completed.
            let _ = unsafe { result::free_host(ptr as *mut c_void) };
        }
    }

    fn mem_info(&self) -> (usize, usize) {
        host_mem_info()
    }
}

/// `(available, total)` host memory from `/proc/meminfo`, `(0, 0)` if unreadable.
fn host_mem_info() -> (usize, usize) {
    let Ok(text) = std::fs::read_to_string("/proc/meminfo") else {
        return (0, 0);
    };
    parse_meminfo(&text)
}

fn parse_meminfo(text: &str) -> (usize, usize) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    (field("MemAvailable:"), field("MemTotal:"))
}

/// A device memory pool (`cupy.cuda.MemoryPool` for one device).
pub type DeviceMemoryPool = MemoryPool<CudaAllocator, CudaStreamOrder>;
/// A pinned host memory pool (`cupy.cuda.PinnedMemoryPool`).
pub type PinnedMemoryPool = MemoryPool<PinnedAllocator, CudaStreamOrder>;

/// The environment variable that limits each device's default pool, as CuPy's
/// `CUPY_GPU_MEMORY_LIMIT`: bytes (`"1073741824"`) or a percentage (`"50%"`).
///
/// [`POOL_ENV`] (`KILN_GPU_POOL=off`, read once per process) turns the device pools' caching
/// off, for compute-sanitizer: every [`DeviceBuffer`] is then a `cuMemAlloc` of its own, of its
/// length rounded up to 16 bytes, and its drop waits for its stream to pass the drop, then calls
/// `cuMemFree` (the pinned staging pool still caches; see [`crate::pool`]).
pub const MEMORY_LIMIT_ENV: &str = "KILN_GPU_MEMORY_LIMIT";

/// `off` turns the device pools' caching off (see [`MEMORY_LIMIT_ENV`]); `on` or unset: CuPy's
/// caching pool.
pub const POOL_ENV: &str = "KILN_GPU_POOL";

/// [`POOL_ENV`]'s setting ([`kiln_cache::config`], read once per process).
fn pool_mode() -> PoolMode {
    match kiln_cache::config().gpu_pool {
        _ if kiln_cache::config().gpu_pool_async => PoolMode::Async,
        true => PoolMode::Caching,
        false => PoolMode::Off,
    }
}

/// A device's default pools.
pub(crate) struct DeviceMemories {
    pub(crate) pool: Arc<DeviceMemoryPool>,
    pinned: Arc<PinnedMemoryPool>,
    /// The stream-ordered pool ([`crate::pool::async_pool`]), made on first use, and whether new
    /// buffers come from it ([`crate::set_async_pool`]).
    pub(crate) async_pool: std::sync::OnceLock<Arc<DeviceMemoryPool>>,
    pub(crate) use_async: std::sync::atomic::AtomicBool,
    /// Events after the device's uploads still possibly in flight, oldest first: bounds the
    /// staging memory of many asynchronous uploads queued without a synchronisation.
    uploads: Mutex<VecDeque<Arc<PoolEvent>>>,
}

impl DeviceMemories {
    pub(crate) fn of(state: &'static DeviceState) -> Result<&'static DeviceMemories> {
        if let Some(m) = state.memory.get() {
            return Ok(m);
        }
        let pool = new_device_pool(state, pool_mode());
        match kiln_cache::config().gpu_memory_limit {
            Some(LimitSpec::Bytes(n)) => pool.set_limit(Some(n)),
            Some(LimitSpec::Fraction(f)) => pool.set_limit_fraction(f)?,
            None => {}
        }
        let pinned = Arc::new(MemoryPool::new(
            PinnedAllocator { device: state },
            CudaStreamOrder::new(state),
            ReusePolicy::AfterCompletion,
        ));
        Ok(state.memory.get_or_init(|| DeviceMemories {
            pool,
            pinned,
            async_pool: Default::default(),
            use_async: Default::default(),
            uploads: Mutex::new(VecDeque::new()),
        }))
    }

    /// The pool new buffers come from.
    pub(crate) fn current(&self) -> &Arc<DeviceMemoryPool> {
        match self.async_pool.get() {
            Some(a) if self.use_async.load(std::sync::atomic::Ordering::Acquire) => a,
            _ => &self.pool,
        }
    }
}

pub(crate) fn new_device_pool(
    state: &'static DeviceState,
    mode: PoolMode,
) -> Arc<DeviceMemoryPool> {
    Arc::new(MemoryPool::with_mode(
        CudaAllocator { device: state },
        CudaStreamOrder::new(state),
        ReusePolicy::StreamOrdered,
        mode,
    ))
}

impl Device {
    /// The device's default memory pool (limited by `KILN_GPU_MEMORY_LIMIT` when set, caching
    /// nothing with `KILN_GPU_POOL=off`).
    pub fn memory_pool(&self) -> Result<Arc<DeviceMemoryPool>> {
        Ok(DeviceMemories::of(self.state()?)?.pool.clone())
    }

    /// The device's pinned host memory pool (staging for copies).
    pub fn pinned_memory_pool(&self) -> Result<Arc<PinnedMemoryPool>> {
        Ok(DeviceMemories::of(self.state()?)?.pinned.clone())
    }

    /// A new, separate memory pool on the device (dropping it gives its cache back; it caches
    /// nothing with `KILN_GPU_POOL=off`).
    pub fn new_memory_pool(&self) -> Result<Arc<DeviceMemoryPool>> {
        Ok(new_device_pool(self.state()?, pool_mode()))
    }

    /// A new memory pool on the device that caches or not, whatever `KILN_GPU_POOL` says.
    pub(crate) fn new_memory_pool_with(&self, mode: PoolMode) -> Result<Arc<DeviceMemoryPool>> {
        Ok(new_device_pool(self.state()?, mode))
    }
}

/// Device memory from a pool. Dropping it returns the block to its pool, ordered on the
/// buffer's stream: work queued on that stream before the drop completes before the block is
/// reused elsewhere (with `KILN_GPU_POOL=off`, before the drop frees it). Work queued on other
/// streams must be ordered before by the caller (or the buffer moved to the last stream using it
/// with [`DeviceBuffer::set_stream`]), as in CuPy.
pub struct DeviceBuffer {
    /// The block's address (passed to kernels by reference, see [`crate::launch::KernelArg`]).
    ptr: u64,
    len: usize,
    block: Option<Block<StreamKey>>,
    pool: Arc<DeviceMemoryPool>,
    stream: Stream,
    /// For memory another library owns ([`DeviceBuffer::from_foreign`]): what keeps it alive,
    /// dropped with the buffer once its stream has finished the work queued on it.
    owner: Option<Owner>,
}

/// What keeps another library's memory alive. Only ever dropped, never read: a panic cannot
/// leave it half-updated, so it is unwind-safe whatever it holds.
struct Owner(#[allow(dead_code)] Box<dyn std::any::Any + Send + Sync>);
impl std::panic::UnwindSafe for Owner {}
impl std::panic::RefUnwindSafe for Owner {}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("device", &self.stream.device().id())
            .finish()
    }
}

impl DeviceBuffer {
    /// `bytes` of uninitialised memory on the current device, for its current stream, from its
    /// default pool (`cupy.cuda.alloc`).
    pub fn alloc(bytes: usize) -> Result<DeviceBuffer> {
        DeviceBuffer::alloc_on(&Stream::current()?, bytes)
    }

    /// `bytes` for use on `stream`, from the default pool of its device.
    pub fn alloc_on(stream: &Stream, bytes: usize) -> Result<DeviceBuffer> {
        let pool = DeviceMemories::of(stream.state())?.current().clone();
        DeviceBuffer::alloc_in(&pool, stream, bytes)
    }

    /// `bytes` for use on `stream`, from `pool` (which must be of the stream's device).
    pub fn alloc_in(
        pool: &Arc<DeviceMemoryPool>,
        stream: &Stream,
        bytes: usize,
    ) -> Result<DeviceBuffer> {
        if pool.allocator().device.id != stream.state().id {
            return Err(RuntimeError::InvalidArgument(format!(
                "a pool of cuda:{} cannot allocate for a stream of cuda:{}",
                pool.allocator().device.id,
                stream.state().id
            )));
        }
        let block = pool.malloc(bytes, stream.key())?;
        Ok(DeviceBuffer {
            ptr: block.ptr(),
            len: bytes,
            block: Some(block),
            pool: pool.clone(),
            stream: stream.clone(),
            owner: None,
        })
    }

    /// `len` bytes at `ptr` on `stream`'s device, memory another library owns (DLPack's
    /// import, CuPy's `UnownedMemory`): nothing returns to kiln's pool; `owner` (which keeps
    /// the memory alive, or frees it when dropped) is dropped with the buffer, after `stream`
    /// (the buffer's stream when it drops, see [`DeviceBuffer::set_stream`]) has finished the
    /// work queued on it.
    ///
    /// # Safety
    /// `ptr..ptr + len` must be device memory of `stream`'s device, readable and writable by
    /// kernels on it, for as long as `owner` lives; the memory must be ready on `stream`.
    pub unsafe fn from_foreign(
        ptr: u64,
        len: usize,
        stream: &Stream,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Result<DeviceBuffer> {
        let pool = DeviceMemories::of(stream.state())?.pool.clone();
        Ok(DeviceBuffer {
            ptr,
            len,
            block: None,
            pool,
            stream: stream.clone(),
            owner: Some(Owner(owner)),
        })
    }

    /// Whether the memory is another library's ([`DeviceBuffer::from_foreign`]).
    pub fn is_foreign(&self) -> bool {
        self.owner.is_some()
    }

    /// A buffer holding a copy of `data`, on the current device and stream.
    pub fn from_slice<T: DeviceCopy>(data: &[T]) -> Result<DeviceBuffer> {
        DeviceBuffer::from_slice_on(&Stream::current()?, data)
    }

    /// A buffer holding a copy of `data`, for `stream` (the copy is queued there).
    pub fn from_slice_on<T: DeviceCopy>(stream: &Stream, data: &[T]) -> Result<DeviceBuffer> {
        let mut buffer = DeviceBuffer::alloc_on(stream, std::mem::size_of_val(data))?;
        buffer.copy_from_host(data)?;
        Ok(buffer)
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The address field itself, for [`crate::launch::KernelArg`].
    pub(crate) fn ptr_field(&self) -> &u64 {
        &self.ptr
    }

    /// The address `offset` bytes in (checked against the length).
    pub fn ptr_at(&self, offset: usize) -> Result<DevicePtr> {
        if offset > self.len {
            return Err(RuntimeError::InvalidArgument(format!(
                "offset {offset} past the end of a {}-byte buffer",
                self.len
            )));
        }
        Ok(DevicePtr(self.ptr + offset as u64))
    }

    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes reserved (rounded up to the pool's 512-byte unit; to 16 with `KILN_GPU_POOL=off`).
    pub fn capacity(&self) -> usize {
        self.block.as_ref().map_or(0, |b| b.size())
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.stream.device()
    }

    /// The stream the buffer's free is ordered on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Orders the buffer's free on `stream` (the last stream to use it).
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        if let Some(block) = &mut self.block {
            block.set_stream(stream.key());
        }
        self.stream = stream.clone();
        Ok(())
    }

    fn check_stream(&self, stream: &Stream) -> Result<()> {
        if stream.state().id != self.stream.state().id {
            return Err(RuntimeError::InvalidArgument(format!(
                "a buffer of cuda:{} used on a stream of cuda:{}",
                self.stream.state().id,
                stream.state().id
            )));
        }
        Ok(())
    }

    fn check_len(&self, bytes: usize, what: &str) -> Result<()> {
        if bytes > self.len {
            return Err(RuntimeError::InvalidArgument(format!(
                "{what} of {bytes} bytes does not fit a {}-byte device buffer",
                self.len
            )));
        }
        Ok(())
    }

    /// Copies `src` to the start of the buffer, queued on the buffer's stream. Returns once
    /// `src` has been copied into pinned staging memory (it may be reused at once).
    pub fn copy_from_host<T: DeviceCopy>(&mut self, src: &[T]) -> Result<()> {
        let stream = self.stream.clone();
        self.copy_from_host_on(src, &stream)
    }

    /// As [`DeviceBuffer::copy_from_host`], on `stream`.
    pub fn copy_from_host_on<T: DeviceCopy>(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        let src = bytes_of(src);
        self.check_len(src.len(), "a copy")?;
        // SAFETY: the destination range lies in this buffer, borrowed mutably.
        unsafe { upload(stream, self.ptr, src) }
    }

    /// Copies the start of the buffer into `dst`, on the buffer's stream; waits for it.
    pub fn copy_to_host<T: DeviceCopy>(&self, dst: &mut [T]) -> Result<()> {
        self.copy_to_host_on(dst, &self.stream)
    }

    /// As [`DeviceBuffer::copy_to_host`], on `stream`.
    pub fn copy_to_host_on<T: DeviceCopy>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        let dst = bytes_of_mut(dst);
        self.check_len(dst.len(), "a copy")?;
        // SAFETY: the source range lies in this buffer.
        unsafe { download(stream, dst, self.ptr) }
    }

    /// The buffer's bytes as `T`s (its length must be a multiple of `T`'s size).
    pub fn to_vec<T: DeviceCopy + Default>(&self) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>().max(1);
        if self.len / size * size != self.len {
            return Err(RuntimeError::InvalidArgument(format!(
                "a {}-byte buffer is not a whole number of {size}-byte elements",
                self.len
            )));
        }
        let mut out = vec![T::default(); self.len / size];
        self.copy_to_host(&mut out)?;
        Ok(out)
    }

    /// Copies `src` (whole) to the start of this buffer on `stream` (both of its device).
    pub fn copy_from_device(&mut self, src: &DeviceBuffer, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        src.check_stream(stream)?;
        self.check_len(src.len, "a copy")?;
        if src.len == 0 {
            return Ok(());
        }
        let _bound = stream.state().bind()?;
        // SAFETY: both ranges lie in live buffers of the stream's device.
        check("cuMemcpyDtoDAsync", unsafe {
            result::memcpy_dtod_async(self.ptr, src.ptr, src.len, stream.raw())
        })
    }

    /// Copies `src` (whole), a buffer of another device, to the start of this buffer on
    /// `stream` (of this buffer's device): `cuMemcpyPeerAsync`, direct over NVLink or PCIe
    /// where the devices can reach each other ([`Device::enable_peer_access`] is asked for
    /// first), else staged through the host by the driver. The caller orders `src`'s writer
    /// before `stream` (an event), as for any buffer of another stream.
    pub fn copy_from_peer(&mut self, src: &DeviceBuffer, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        self.check_len(src.len, "a copy")?;
        if src.len == 0 {
            return Ok(());
        }
        let (dst_state, src_state) = (stream.state(), src.stream.state());
        if dst_state.id != src_state.id {
            // Direct access where possible; the copy works either way.
            let (dst, peer) = (Device::new(dst_state.id)?, Device::new(src_state.id)?);
            if let Err(e) = dst.enable_peer_access(peer) {
                tracing::debug!(error = %e, "no peer access; the driver stages the copy");
            }
        }
        let _bound = dst_state.bind()?;
        // SAFETY: both ranges lie in live buffers of the two contexts, which are retained for
        // the process; the stream is of the destination's context.
        check_raw("cuMemcpyPeerAsync", unsafe {
            sys::cuMemcpyPeerAsync(
                self.ptr,
                dst_state.ctx.cu_ctx(),
                src.ptr,
                src_state.ctx.cu_ctx(),
                src.len,
                stream.raw(),
            )
        })
    }

    /// Sets every byte to `value`, queued on the buffer's stream (`cuMemsetD8Async`).
    pub fn memset(&mut self, value: u8) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        // A launch list being recorded on the buffer's stream keeps the memset in its place.
        if crate::replay::record_memset(&self.stream, self.ptr, self.len, value) {
            return Ok(());
        }
        self.memset_unrecorded(value)
    }

    /// [`DeviceBuffer::memset`] issued now even while this thread records a launch list on
    /// the buffer's stream: queued before the list's launches, and done whether the list is
    /// issued or dropped.
    pub fn memset_unrecorded(&mut self, value: u8) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let _bound = self.stream.state().bind()?;
        // SAFETY: the range is this buffer.
        check("cuMemsetD8Async", unsafe {
            result::memset_d8_async(self.ptr, value, self.len, self.stream.raw())
        })
    }

    /// Starts copying the buffer to pinned memory on `stream`; [`PendingDownload::wait_into`] finishes.
    pub fn download_async(&self, stream: &Stream) -> Result<PendingDownload<'_>> {
        self.check_stream(stream)?;
        let mut pending = PendingDownload {
            _buffer: self,
            staging: Staging::new(stream)?,
            pieces: VecDeque::new(),
        };
        for (offset, len) in pieces(self.len) {
            let block = pending.staging.pinned.malloc(len, stream.key())?;
            let _bound = stream.state().bind()?;
            // SAFETY: pinned block of `len` bytes; source range inside this buffer.
            let copied = check("cuMemcpyDtoHAsync", unsafe {
                sys::cuMemcpyDtoHAsync_v2(
                    block.ptr() as *mut c_void,
                    self.ptr + offset as u64,
                    len,
                    stream.raw(),
                )
                .result()
            });
            let event = pending.staging.pinned.order().record(stream.key());
            pending.pieces.push_back((block, event, offset, len));
            copied?;
        }
        Ok(pending)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // While this thread records a launch list, the block waits for the list to be issued.
        if let Some(block) = self.block.take().and_then(|b| crate::replay::hold(b, &self.pool)) {
            self.pool.free(block);
            crate::host_trace::point("buffer: freed");
        }
        if let Some(owner) = self.owner.take() {
            // Another library's memory is freed by its owner at once, not ordered on a stream:
            // the work kiln queued on it finishes first. A failed synchronisation (a kernel
            // fault already reported elsewhere) still releases the owner: a drop cannot fail.
            let _ = self.stream.synchronize();
            drop(owner);
        }
    }
}

/// A staging block in flight: the block, the event after its copy, and the transfer's range.
type Piece = (Block<StreamKey>, Option<Arc<PoolEvent>>, usize, usize);

/// A download in flight (see [`DeviceBuffer::download_async`]); the buffer stays borrowed.
pub struct PendingDownload<'a> {
    _buffer: &'a DeviceBuffer,
    staging: Staging,
    pieces: VecDeque<Piece>,
}

impl PendingDownload<'_> {
    /// Whether the copies have completed (then `wait` does not block).
    pub fn done(&self) -> bool {
        let order = self.staging.pinned.order();
        self.pieces.iter().all(|(_, e, _, _)| e.as_ref().is_none_or(|e| order.is_done(e)))
    }

    /// Waits for the copies and writes the bytes into `dst` (as long as the buffer).
    pub fn wait_into<T: DeviceCopy>(mut self, dst: &mut [T]) -> Result<()> {
        let dst = bytes_of_mut(dst);
        let total: usize = self.pieces.iter().map(|p| p.3).sum();
        if dst.len() != total {
            return Err(RuntimeError::InvalidArgument(format!(
                "a download of {total} bytes into {} bytes",
                dst.len()
            )));
        }
        while let Some((block, event, offset, len)) = self.pieces.pop_front() {
            self.staging.finish(block, event, &mut dst[offset..offset + len])?;
        }
        Ok(())
    }

    /// Waits for the copies and returns the bytes as `T`s.
    pub fn wait_vec<T: DeviceCopy + Default>(self) -> Result<Vec<T>> {
        let total: usize = self.pieces.iter().map(|p| p.3).sum();
        let size = std::mem::size_of::<T>().max(1);
        if total / size * size != total {
            return Err(RuntimeError::InvalidArgument(format!(
                "{total} bytes are not a whole number of {size}-byte elements"
            )));
        }
        let mut out = vec![T::default(); total / size];
        self.wait_into(&mut out)?;
        Ok(out)
    }
}

impl Drop for PendingDownload<'_> {
    fn drop(&mut self) {
        // Not waited for (or failed): the blocks go back ordered after their copies.
        for (mut block, _, _, _) in self.pieces.drain(..) {
            block.set_stream(self.staging.stream.key());
            self.staging.pinned.free(block);
        }
    }
}

/// Size of the pinned staging pieces of large transfers.
pub const STAGING_PIECE: usize = 8 << 20;
/// Pieces of one download, or of one upload, in flight at once.
pub const STAGING_IN_FLIGHT: usize = 4;
/// Upload pieces of a device in flight at once, all uploads together (at most 256 MiB of
/// staging): an upload waits for the oldest beyond that.
pub const STAGING_UPLOADS_IN_FLIGHT: usize = 32;

/// `(offset, len)` of the staging pieces of a transfer of `len` bytes.
fn pieces(len: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..len).step_by(STAGING_PIECE).map(move |offset| (offset, STAGING_PIECE.min(len - offset)))
}

struct Staging {
    memories: &'static DeviceMemories,
    pinned: Arc<PinnedMemoryPool>,
    stream: Stream,
}

impl Staging {
    fn new(stream: &Stream) -> Result<Staging> {
        let memories = DeviceMemories::of(stream.state())?;
        Ok(Staging { memories, pinned: memories.pinned.clone(), stream: stream.clone() })
    }

    /// Notes an upload piece in flight; waits for the device's oldest ones beyond
    /// [`STAGING_UPLOADS_IN_FLIGHT`] (completed ones are dropped on the way).
    fn track_upload(&self, event: Arc<PoolEvent>) {
        let order = self.pinned.order();
        let oldest = {
            let mut uploads = self.memories.uploads.lock().unwrap_or_else(|p| p.into_inner());
            while uploads.front().is_some_and(|e| order.is_done(e)) {
                uploads.pop_front();
            }
            uploads.push_back(event);
            if uploads.len() > STAGING_UPLOADS_IN_FLIGHT {
                uploads.pop_front()
            } else {
                None
            }
        };
        if let Some(e) = oldest {
            order.wait(&e);
        }
    }

    /// Waits for a downloaded piece, copies it out and returns its block.
    fn finish(
        &self,
        block: Block<StreamKey>,
        event: Option<Arc<PoolEvent>>,
        dst: &mut [u8],
    ) -> Result<()> {
        // A failed copy shows here (errors are sticky): report it rather than garbage.
        let waited = match &event {
            Some(e) => {
                self.pinned.order().wait_checked(e).map_err(|e| self.stream.attribute_error(e))
            }
            None => self.stream.synchronize(),
        };
        if let Err(e) = waited {
            self.pinned.free(block);
            return Err(e);
        }
        // SAFETY: the block holds `dst.len()` bytes written by the completed copy.
        unsafe {
            std::ptr::copy_nonoverlapping(block.ptr() as *const u8, dst.as_mut_ptr(), dst.len());
        }
        self.pinned.free_unused(block);
        Ok(())
    }
}

/// Copies `src` to device address `dst` on `stream` through pinned staging blocks.
///
/// # Safety
/// `dst..dst + src.len()` must be device memory of the stream's device that nothing else
/// writes meanwhile.
pub unsafe fn upload(stream: &Stream, dst: u64, src: &[u8]) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    // SAFETY: forwarded from the caller.
    if unsafe { small::upload(stream, dst, src)? } {
        return Ok(());
    }
    let staging = Staging::new(stream)?;
    let order = staging.pinned.order();
    let mut in_flight: VecDeque<Arc<PoolEvent>> = VecDeque::new();
    let mut pieces = pieces(src.len()).peekable();
    while let Some((offset, len)) = pieces.next() {
        if in_flight.len() >= STAGING_IN_FLIGHT {
            if let Some(e) = in_flight.pop_front() {
                order.wait(&e);
            }
        }
        let block = staging.pinned.malloc(len, stream.key())?;
        // SAFETY: the block holds at least `len` bytes of host memory no copy uses (the pool
        // hands out only completed blocks).
        unsafe {
            std::ptr::copy_nonoverlapping(src[offset..].as_ptr(), block.ptr() as *mut u8, len);
        }
        let copied = {
            let _bound = stream.state().bind()?;
            // SAFETY: pinned source of `len` bytes; destination in range by the caller.
            check("cuMemcpyHtoDAsync", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    dst + offset as u64,
                    block.ptr() as *const c_void,
                    len,
                    stream.raw(),
                )
                .result()
            })
        };
        // Ordered after the copy: reused once the copy has read it.
        staging.pinned.free(block);
        copied?;
        if let Some(e) = order.record(stream.key()) {
            if pieces.peek().is_some() {
                in_flight.push_back(e.clone());
            }
            staging.track_upload(e);
        }
    }
    Ok(())
}

/// Copies device address `src` into `dst` on `stream` through pinned staging blocks; waits.
///
/// # Safety
/// `src..src + dst.len()` must be device memory of the stream's device.
pub unsafe fn download(stream: &Stream, dst: &mut [u8], src: u64) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    let staging = Staging::new(stream)?;
    let mut in_flight: VecDeque<Piece> = VecDeque::new();
    let finish_oldest = |in_flight: &mut VecDeque<_>, dst: &mut [u8]| -> Result<()> {
        if let Some((block, event, offset, len)) = in_flight.pop_front() {
            staging.finish(block, event, &mut dst[offset..offset + len])?;
        }
        Ok(())
    };
    let result = (|| {
        for (offset, len) in pieces(dst.len()) {
            if in_flight.len() >= STAGING_IN_FLIGHT {
                finish_oldest(&mut in_flight, dst)?;
            }
            let block = staging.pinned.malloc(len, stream.key())?;
            let copied = {
                let _bound = stream.state().bind()?;
                // SAFETY: pinned destination of `len` bytes; source in range by the caller.
                check("cuMemcpyDtoHAsync", unsafe {
                    sys::cuMemcpyDtoHAsync_v2(
                        block.ptr() as *mut c_void,
                        src + offset as u64,
                        len,
                        stream.raw(),
                    )
                    .result()
                })
            };
            let event = staging.pinned.order().record(stream.key());
            in_flight.push_back((block, event, offset, len));
            copied?;
        }
        while !in_flight.is_empty() {
            finish_oldest(&mut in_flight, dst)?;
        }
        Ok(())
    })();
    // On failure, blocks still in flight go back ordered after their copies.
    for (block, _, _, _) in in_flight.drain(..) {
        staging.pinned.free(block);
    }
    result
}

/// Pinned (page-locked) host memory from the device's pinned pool, for asynchronous copies.
/// Host access ([`PinnedBuffer::as_slice`], [`PinnedBuffer::as_mut_slice`]) first waits for the
/// copies queued on it, so it is never read or written while a copy is in flight.
pub struct PinnedBuffer {
    block: Option<Block<StreamKey>>,
    len: usize,
    pool: Arc<PinnedMemoryPool>,
    /// The stream and event of the last copy queued on the buffer.
    last_use: Option<(Stream, Option<Arc<PoolEvent>>)>,
}

impl PinnedBuffer {
    /// `bytes` of pinned memory from `device`'s pinned pool.
    pub fn alloc(device: Device, bytes: usize) -> Result<PinnedBuffer> {
        let pool = device.pinned_memory_pool()?;
        let null = Stream::null(device)?;
        let block = pool.malloc(bytes, null.key())?;
        Ok(PinnedBuffer { block: Some(block), len: bytes, pool, last_use: None })
    }

    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn ptr(&self) -> u64 {
        self.block.as_ref().map_or(0, |b| b.ptr())
    }

    fn wait_last_use(&self) {
        if let Some((_, Some(event))) = &self.last_use {
            self.pool.order().wait(event);
        }
    }

    /// The bytes, after the copies queued on the buffer have completed.
    pub fn as_slice(&self) -> &[u8] {
        self.wait_last_use();
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` bytes of pinned memory owned by this buffer; no copy in flight.
        unsafe { std::slice::from_raw_parts(self.ptr() as *const u8, self.len) }
    }

    /// The bytes, writable, after the copies queued on the buffer have completed.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.wait_last_use();
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as above, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr() as *mut u8, self.len) }
    }

    fn used_on(&mut self, stream: &Stream) {
        let event = self.pool.order().record(stream.key());
        if let Some(block) = &mut self.block {
            block.set_stream(stream.key());
        }
        self.last_use = Some((stream.clone(), event));
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            match &self.last_use {
                // Reused once the last copy has completed.
                Some(_) => self.pool.free(block),
                None => self.pool.free_unused(block),
            }
        }
    }
}

impl DeviceBuffer {
    /// Queues a copy of `src` (whole) to the start of this buffer on `stream`; returns at once.
    pub fn copy_from_pinned(&mut self, src: &mut PinnedBuffer, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        self.check_len(src.len, "a copy")?;
        if src.len > 0 {
            let _bound = stream.state().bind()?;
            // SAFETY: pinned source of `len` bytes, not touched by the host until the recorded
            // event completes; destination inside this buffer.
            check("cuMemcpyHtoDAsync", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    self.ptr,
                    src.ptr() as *const c_void,
                    src.len,
                    stream.raw(),
                )
                .result()
            })?;
        }
        src.used_on(stream);
        Ok(())
    }

    /// Queues a copy of the start of this buffer into `dst` (whole) on `stream`; returns at
    /// once (reading `dst` waits for it).
    pub fn copy_to_pinned(&self, dst: &mut PinnedBuffer, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        self.check_len(dst.len, "a copy")?;
        if dst.len > 0 {
            let _bound = stream.state().bind()?;
            // SAFETY: as above, the other way.
            check("cuMemcpyDtoHAsync", unsafe {
                sys::cuMemcpyDtoHAsync_v2(dst.ptr() as *mut c_void, self.ptr, dst.len, stream.raw())
                    .result()
            })?;
        }
        dst.used_on(stream);
        Ok(())
    }
}

mod small;
pub use small::SMALL_UPLOAD;

#[cfg(test)]
mod tests;
