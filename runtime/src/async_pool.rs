//! The stream-ordered pool: CuPy's `MemoryAsyncPool` (`cudaMallocAsync`), as a mode of kiln's
//! [`MemoryPool`] ([`PoolMode::Async`]).
//!
//! Each block is a `cuMemAllocAsync` on its stream from the device's default CUDA memory pool,
//! and its free a `cuMemFreeAsync` on the block's stream (the last stream to use it, as every
//! free of kiln's pools): the driver orders reuse itself, so nothing waits on the host, and it
//! hands freed memory to other streams when its own events show the free has run. kiln caches
//! nothing: `free_bytes` and `n_free_blocks` of kiln's own lists stay 0, and the figures are the
//! driver pool's, read with `cuMemPoolGetAttribute` (CuPy's `used_bytes()` and `total_bytes()` of
//! a `MemoryAsyncPool`): `used_bytes` is `CU_MEMPOOL_ATTR_USED_MEM_CURRENT`, `total_bytes`
//! `CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`, `free_bytes` their difference. They count every user
//! of the device's default pool in the process, as CuPy's do.
//!
//! The pool's release threshold is set to the largest value when kiln first uses it, so the
//! driver keeps freed memory for reuse instead of giving it back at every synchronisation (the
//! default threshold, 0, would make each synchronisation return everything); `free_all_blocks`
//! gives it back (`cuMemPoolTrimTo(pool, 0)` after synchronising the device). Sizes are rounded
//! up to 16 bytes ([`OFF_ALIGN`], the alignment kernels assume); the driver's addresses are
//! 256-byte aligned.
//!
//! Selecting it:
//! - `KILN_GPU_POOL=async` makes every device's default pool stream-ordered (CuPy's
//!   `cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)` at start-up);
//! - [`set_async_pool`]`(device, true)` switches one device's new buffers to its stream-ordered
//!   pool ([`Device::async_memory_pool`]) at run time, `false` back to the default pool. Buffers
//!   already made are freed into the pool they came from.
//!
//! Limits ([`MemoryPool::set_limit`]) bound the bytes this pool object has handed out and not
//! freed. Out of memory, the allocation synchronises the device, trims the driver pool and
//! retries once, then reports [`OutOfMemory`]. A device without memory pool support
//! (`CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED` = 0) is a [`RuntimeError::Library`] error naming
//! `cuMemAllocAsync`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys};

use super::{AllocError, Block, MemoryPool, PoolMode, PoolStats, RawAllocator, StreamOrder};
use crate::device::{Device, DeviceState};
use crate::error::{check, check_raw, LibraryError, OutOfMemory, Result, RuntimeError};
use crate::memory::{new_device_pool, DeviceMemories};
use crate::DeviceMemoryPool;

/// The error of a pool in [`PoolMode::Async`] over a stream order with no stream-ordered
/// allocator (the default of [`StreamOrder::alloc_async`]).
pub(crate) fn unsupported(why: &str) -> AllocError {
    AllocError::Failed(RuntimeError::Library(LibraryError {
        call: "cuMemAllocAsync",
        status: why.to_string(),
    }))
}

impl<A: RawAllocator, O: StreamOrder> MemoryPool<A, O> {
    /// A stream-ordered allocation of `size` bytes (not 0) on `stream`, within the limit; on
    /// out-of-memory the driver pool is trimmed and the allocation retried once.
    pub(crate) fn malloc_async(&self, size: usize, stream: O::Stream) -> Result<Block<O::Stream>> {
        let Some(size) = super::off::round_off(size).filter(|&s| s <= isize::MAX as usize) else {
            return Err(self.async_out_of_memory(size, None));
        };
        let mut inner = self.lock();
        if inner.limit != 0 && inner.used + size > inner.limit {
            let limit = inner.limit;
            drop(inner);
            return Err(self.async_out_of_memory(size, Some(limit)));
        }
        let ptr = match self.order.alloc_async(size, stream) {
            Ok(ptr) => ptr,
            Err(AllocError::Failed(e)) => return Err(e),
            Err(AllocError::OutOfMemory) => {
                self.order.trim_async();
                match self.order.alloc_async(size, stream) {
                    Ok(ptr) => ptr,
                    Err(AllocError::Failed(e)) => return Err(e),
                    Err(AllocError::OutOfMemory) => {
                        drop(inner);
                        return Err(self.async_out_of_memory(size, None));
                    }
                }
            }
        };
        inner.used += size;
        inner.total += size;
        inner.raw_allocs += 1;
        Ok(Block { ptr, size, stream, pool: self.id })
    }

    /// Frees a stream-ordered block on its stream (no wait: the driver orders the reuse).
    pub(crate) fn free_async_block(&self, block: Block<O::Stream>) {
        self.order.free_async(block.ptr(), block.stream());
        let mut inner = self.lock();
        inner.used -= block.size();
        inner.total -= block.size();
        inner.raw_frees += 1;
    }

    /// The driver pool's figures in kiln's form (see the module docs).
    pub(crate) fn async_stats(&self) -> PoolStats {
        let (used, reserved) = self.order.async_figures();
        let inner = self.lock();
        PoolStats {
            used_bytes: used,
            free_bytes: reserved.saturating_sub(used),
            total_bytes: reserved,
            n_free_blocks: 0,
            raw_allocs: inner.raw_allocs,
            raw_frees: inner.raw_frees,
            reuses: 0,
        }
    }

    fn async_out_of_memory(&self, size: usize, limit: Option<usize>) -> RuntimeError {
        let (free, total) = self.allocator().mem_info();
        RuntimeError::OutOfMemory(OutOfMemory {
            requested: size,
            free,
            total,
            limit,
            pool_total: self.order.async_figures().1,
        })
    }
}

/// The devices whose default CUDA memory pool kiln has prepared: device id → the pool's handle
/// (as an integer, so the map is `Send`), or why the device has none.
static POOLS: Mutex<Option<HashMap<usize, std::result::Result<usize, String>>>> = Mutex::new(None);

/// Device `state`'s default CUDA memory pool, its release threshold raised on first use; an
/// error when the device has no memory pools. The caller has bound the device's context.
fn device_pool(state: &DeviceState) -> std::result::Result<sys::CUmemoryPool, AllocError> {
    let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    let entry = pools
        .get_or_insert_with(HashMap::new)
        .entry(state.id)
        .or_insert_with(|| prepare(state.cu_device).map(|p| p as usize).map_err(|e| e.to_string()));
    match entry {
        Ok(pool) => Ok(*pool as sys::CUmemoryPool),
        Err(why) => Err(unsupported(why)),
    }
}

/// Checks memory pool support and raises the default pool's release threshold.
fn prepare(device: sys::CUdevice) -> Result<sys::CUmemoryPool> {
    let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
    // SAFETY: a device handle of this process.
    let supported =
        check("cuDeviceGetAttribute", unsafe { result::device::get_attribute(device, attr) })?;
    if supported == 0 {
        return Err(RuntimeError::Library(LibraryError {
            call: "cuMemAllocAsync",
            status:
                "the device has no memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)"
                    .into(),
        }));
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: writes one handle into `pool`.
    check_raw("cuDeviceGetDefaultMemPool", unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, device)
    })?;
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the attribute's value is a cuuint64_t, read from `threshold`.
    check_raw("cuMemPoolSetAttribute", unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    })?;
    Ok(pool)
}

/// `cuMemAllocAsync` of `bytes` on `stream` of device `state`.
pub(crate) fn alloc(
    state: &DeviceState,
    bytes: usize,
    stream: sys::CUstream,
) -> std::result::Result<u64, AllocError> {
    let _bound = state.bind().map_err(AllocError::Failed)?;
    device_pool(state)?;
    let mut ptr: sys::CUdeviceptr = 0;
    // SAFETY: writes one address into `ptr`; `stream` is a live stream of the bound context.
    match unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream) } {
        sys::CUresult::CUDA_SUCCESS => Ok(ptr),
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(AllocError::OutOfMemory),
        e => Err(AllocError::Failed(check_raw("cuMemAllocAsync", e).unwrap_err())),
    }
}

/// `cuMemFreeAsync` of `ptr` on `stream` (an error, a broken context, is ignored: a free cannot
/// fail).
pub(crate) fn free(state: &DeviceState, ptr: u64, stream: sys::CUstream) {
    if let Ok(_bound) = state.bind() {
        // SAFETY: `ptr` came from `cuMemAllocAsync` and is freed once, ordered after its uses
        // on `stream`.
        let _ = unsafe { sys::cuMemFreeAsync(ptr, stream) };
    }
}

/// `(used, reserved)` bytes of device `state`'s default memory pool; `(0, 0)` when unknown.
pub(crate) fn figures(state: &DeviceState) -> (usize, usize) {
    let Ok(_bound) = state.bind() else { return (0, 0) };
    let Ok(pool) = device_pool(state) else { return (0, 0) };
    let read = |attr| {
        let mut value: u64 = 0;
        // SAFETY: both attributes are cuuint64_t values, written into `value`.
        let r = unsafe { sys::cuMemPoolGetAttribute(pool, attr, (&mut value as *mut u64).cast()) };
        if r == sys::CUresult::CUDA_SUCCESS {
            value as usize
        } else {
            0
        }
    };
    (
        read(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
        read(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT),
    )
}

/// Synchronises device `state` (so that pending frees have run) and gives its default memory
/// pool's unused memory back (`cuMemPoolTrimTo(pool, 0)`).
pub(crate) fn trim(state: &DeviceState) {
    let Ok(_bound) = state.bind() else { return };
    let Ok(pool) = device_pool(state) else { return };
    let _ = result::ctx::synchronize();
    // SAFETY: a pool handle of this device.
    let _ = unsafe { sys::cuMemPoolTrimTo(pool, 0) };
}

/// CuPy's `set_allocator(MemoryAsyncPool().malloc)` for one device: `true` makes the device's
/// new buffers come from its stream-ordered pool ([`Device::async_memory_pool`]), `false` from
/// its default pool again. Buffers already made are freed into the pool they came from. With
/// `KILN_GPU_POOL=async` the default pool is itself stream-ordered.
///
/// Errors: the device does not exist, or has no memory pools ([`RuntimeError::Library`], naming
/// `cuMemAllocAsync`).
pub fn set_async_pool(device: Device, on: bool) -> Result<()> {
    let state = device.state()?;
    if on {
        let _bound = state.bind()?;
        device_pool(state).map_err(|e| match e {
            AllocError::Failed(e) => e,
            AllocError::OutOfMemory => unreachable!("preparing a pool allocates nothing"),
        })?;
    }
    async_pool_of(state)?;
    DeviceMemories::of(state)?.use_async.store(on, std::sync::atomic::Ordering::Release);
    Ok(())
}

/// Device `state`'s stream-ordered pool: the default pool with `KILN_GPU_POOL=async`.
fn async_pool_of(state: &'static DeviceState) -> Result<Arc<DeviceMemoryPool>> {
    let m = DeviceMemories::of(state)?;
    if m.pool.mode() == PoolMode::Async {
        return Ok(m.pool.clone());
    }
    Ok(m.async_pool.get_or_init(|| new_device_pool(state, PoolMode::Async)).clone())
}

/// Whether `device`'s new buffers come from a stream-ordered pool ([`set_async_pool`], or
/// `KILN_GPU_POOL=async`).
pub fn async_pool_in_use(device: Device) -> Result<bool> {
    Ok(device.current_memory_pool()?.mode() == PoolMode::Async)
}

impl Device {
    /// The device's stream-ordered pool (CuPy's `MemoryAsyncPool`, see [`crate::async_pool`]),
    /// made on first call: its `used_bytes`/`total_bytes` are the driver pool's figures. With
    /// `KILN_GPU_POOL=async` it is the default pool ([`Device::memory_pool`]).
    pub fn async_memory_pool(&self) -> Result<Arc<DeviceMemoryPool>> {
        async_pool_of(self.state()?)
    }

    /// The pool the device's new buffers come from: [`Device::memory_pool`], or the
    /// stream-ordered pool after [`set_async_pool`].
    pub fn current_memory_pool(&self) -> Result<Arc<DeviceMemoryPool>> {
        Ok(DeviceMemories::of(self.state()?)?.current().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{fake::FakeOrder, ReusePolicy, OFF_ALIGN};
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A raw allocator that is never called by a stream-ordered pool.
    struct NoRaw;
    impl RawAllocator for NoRaw {
        fn alloc(&self, _bytes: usize) -> std::result::Result<u64, AllocError> {
            panic!("a stream-ordered pool does not call the raw allocator")
        }
        fn free(&self, _ptr: u64, _bytes: usize) {
            panic!("a stream-ordered pool does not call the raw allocator")
        }
        fn mem_info(&self) -> (usize, usize) {
            (1 << 20, 1 << 30)
        }
    }

    /// A fake driver pool: allocations by stream, `capacity` bytes, a log of frees by stream.
    #[derive(Default)]
    struct FakeAsync {
        next: AtomicU64,
        used: AtomicU64,
        capacity: u64,
        frees: Mutex<Vec<(u64, u32)>>,
        trims: AtomicU64,
    }

    impl StreamOrder for FakeAsync {
        type Stream = u32;
        type Event = ();
        fn record(&self, _stream: u32) -> Option<()> {
            panic!("a stream-ordered pool records no events")
        }
        fn is_done(&self, _event: &()) -> bool {
            true
        }
        fn wait(&self, _event: &()) {}
        fn alloc_async(&self, bytes: usize, _stream: u32) -> std::result::Result<u64, AllocError> {
            if self.used.load(Ordering::SeqCst) + bytes as u64 > self.capacity {
                return Err(AllocError::OutOfMemory);
            }
            self.used.fetch_add(bytes as u64, Ordering::SeqCst);
            Ok(0x10000 + self.next.fetch_add(bytes as u64, Ordering::SeqCst))
        }
        fn free_async(&self, ptr: u64, stream: u32) {
            self.frees.lock().unwrap().push((ptr, stream));
        }
        fn async_figures(&self) -> (usize, usize) {
            let used = self.used.load(Ordering::SeqCst) as usize;
            (used, used + 4096)
        }
        fn trim_async(&self) {
            self.trims.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn pool(capacity: u64) -> MemoryPool<NoRaw, FakeAsync> {
        let order = FakeAsync { capacity, ..Default::default() };
        MemoryPool::with_mode(NoRaw, order, ReusePolicy::StreamOrdered, PoolMode::Async)
    }

    /// Blocks are stream-ordered allocations of their size rounded to 16 bytes, freed on the
    /// stream the block was last moved to; the figures are the driver's.
    #[test]
    fn allocations_and_frees_go_to_the_driver_on_their_streams() {
        let p = pool(1 << 20);
        assert_eq!(p.mode(), PoolMode::Async);
        let z = p.malloc(0, 1).unwrap();
        assert_eq!((z.ptr(), z.size()), (0, 0));
        p.free(z);
        let a = p.malloc(100, 1).unwrap();
        let mut b = p.malloc(16, 2).unwrap();
        assert_eq!((a.size(), b.size()), (112, 16));
        assert_eq!(a.ptr() % OFF_ALIGN as u64, 0);
        assert_eq!((p.used_bytes(), p.total_bytes(), p.free_bytes()), (128, 128 + 4096, 4096));
        b.set_stream(3);
        let (a_ptr, b_ptr) = (a.ptr(), b.ptr());
        p.free(a);
        p.free(b);
        assert_eq!(*p.order().frees.lock().unwrap(), vec![(a_ptr, 1), (b_ptr, 3)]);
        let s = p.stats();
        assert_eq!((s.raw_allocs, s.raw_frees, s.n_free_blocks, s.reuses), (2, 2, 0, 0));
        p.free_all_blocks(None);
        assert_eq!(p.order().trims.load(Ordering::SeqCst), 1);
    }

    /// The limit bounds the bytes handed out; out of memory the driver pool is trimmed and the
    /// allocation retried once, then [`OutOfMemory`] is reported.
    #[test]
    fn limits_and_out_of_memory() {
        let p = pool(1000);
        p.set_limit(Some(512));
        let a = p.malloc(500, 1).unwrap();
        match p.malloc(100, 1) {
            Err(RuntimeError::OutOfMemory(e)) => {
                assert_eq!((e.requested, e.limit), (112, Some(512)))
            }
            other => panic!("{other:?}"),
        }
        p.set_limit(None);
        match p.malloc(600, 1) {
            Err(RuntimeError::OutOfMemory(e)) => assert_eq!((e.requested, e.limit), (608, None)),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.order().trims.load(Ordering::SeqCst), 1, "trimmed before the retry");
        p.free(a);
        assert!(matches!(p.malloc(usize::MAX, 1), Err(RuntimeError::OutOfMemory(_))));
    }

    /// A stream order with no stream-ordered allocator gives a typed error naming
    /// `cuMemAllocAsync`.
    #[test]
    fn no_stream_ordered_allocator_is_a_typed_error() {
        let p = MemoryPool::with_mode(
            NoRaw,
            FakeOrder::default(),
            ReusePolicy::StreamOrdered,
            PoolMode::Async,
        );
        match p.malloc(8, 0) {
            Err(RuntimeError::Library(e)) => assert_eq!(e.call, "cuMemAllocAsync"),
            other => panic!("{other:?}"),
        }
    }
}
