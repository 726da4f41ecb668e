//! A pool turned off ([`PoolMode::Off`], the device pools with `KILN_GPU_POOL=off`): every block
//! its own raw allocation, given back at its free once its stream has passed the free (see the
//! docs of [`crate::pool`]).

use super::{Block, MemoryPool, RawAllocator, StreamOrder};
use crate::error::{Result, RuntimeError};

/// Every size of a pool that is off is a multiple of this: the alignment kernels assume of their
/// buffers (`llvm.align = 16`; 16-byte complex128 elements). `cuMemAlloc`'s addresses are
/// 256-byte aligned, so a block's start is too.
pub const OFF_ALIGN: usize = 16;

/// Whether a pool caches freed blocks, or is the driver's stream-ordered pool (`KILN_GPU_POOL`:
/// a boolean, `on`, `off`, `async`, or empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PoolMode {
    /// CuPy's caching pool (the module docs of [`crate::pool`]).
    #[default]
    Caching,
    /// Every block its own raw allocation, nothing cached (the module docs of [`crate::pool`]).
    Off,
    /// Stream-ordered allocations from the device's CUDA memory pool (`cuMemAllocAsync`, CuPy's
    /// `MemoryAsyncPool`; see [`crate::pool::async_pool`]).
    Async,
}

impl std::str::FromStr for PoolMode {
    type Err = RuntimeError;
    /// A boolean of `kiln_cache::config`'s grammar (`on`: caching), `async`, or empty (caching).
    fn from_str(text: &str) -> Result<Self> {
        if text.trim().is_empty() {
            return Ok(PoolMode::Caching);
        }
        if text.trim().eq_ignore_ascii_case("async") {
            return Ok(PoolMode::Async);
        }
        match kiln_cache::config::parse_bool(text) {
            Some(true) => Ok(PoolMode::Caching),
            Some(false) => Ok(PoolMode::Off),
            None => Err(RuntimeError::InvalidArgument(format!(
                "invalid KILN_GPU_POOL `{text}` (`on`, `off` or `async`)"
            ))),
        }
    }
}

/// Rounds a size up to [`OFF_ALIGN`]; `None` on overflow.
pub(crate) fn round_off(size: usize) -> Option<usize> {
    size.checked_add(OFF_ALIGN - 1).map(|s| s / OFF_ALIGN * OFF_ALIGN)
}

impl<A: RawAllocator, O: StreamOrder> MemoryPool<A, O> {
    /// Whether the pool caches.
    pub fn mode(&self) -> PoolMode {
        self.mode
    }

    /// Gives a block of a pool that is off back to the raw allocator; `record`: once its stream
    /// has passed this point (else the caller has waited for its last use).
    pub(crate) fn free_uncached(&self, block: Block<O::Stream>, record: bool) {
        // Unknown from here on (before the allocator may hand the address out again); still
        // counted as used until given back.
        let chunk = self.lock().chunks.remove(&block.ptr).expect("kiln: freeing an unknown block");
        debug_assert_eq!(chunk.size, block.size);
        if record {
            // `None`: nothing is pending on the stream (it has been synchronised).
            if let Some(event) = self.order.record(block.stream) {
                self.order.wait(&event);
            }
        }
        self.allocator.free(block.ptr, chunk.size);
        let mut inner = self.lock();
        inner.used -= chunk.size;
        inner.total -= chunk.size;
        inner.raw_frees += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{fake::*, ReusePolicy, ALLOCATION_UNIT};
    use super::*;
    use crate::error::OutOfMemory;

    type Pool = MemoryPool<FakeAllocator, FakeOrder>;

    fn off_pool(capacity: usize) -> (Pool, FakeAllocator, FakeOrder) {
        let alloc = FakeAllocator::new(capacity).with_unit(OFF_ALIGN);
        let order = FakeOrder::default();
        let pool = MemoryPool::with_mode(
            alloc.clone(),
            order.clone(),
            ReusePolicy::StreamOrdered,
            PoolMode::Off,
        );
        (pool, alloc, order)
    }

    #[test]
    fn parse() {
        assert_eq!("off".parse::<PoolMode>().unwrap(), PoolMode::Off);
        assert_eq!(" OFF ".parse::<PoolMode>().unwrap(), PoolMode::Off);
        assert_eq!("on".parse::<PoolMode>().unwrap(), PoolMode::Caching);
        assert_eq!("".parse::<PoolMode>().unwrap(), PoolMode::Caching);
        assert_eq!(" Async".parse::<PoolMode>().unwrap(), PoolMode::Async);
        assert!(matches!("of".parse::<PoolMode>(), Err(RuntimeError::InvalidArgument(_))));
        assert_eq!(round_off(0), Some(0));
        assert_eq!(round_off(1), Some(16));
        assert_eq!(round_off(100), Some(112));
        assert_eq!(round_off(usize::MAX), None);
        assert_eq!(ALLOCATION_UNIT % OFF_ALIGN, 0);
    }

    /// Each block is its own raw allocation of (nearly) its size; each free waits for the
    /// block's stream and gives it back; nothing is cached or reused.
    #[test]
    fn every_block_its_own_allocation() {
        let (pool, alloc, order) = off_pool(1 << 20);
        assert_eq!(pool.mode(), PoolMode::Off);
        let z = pool.malloc(0, 0).unwrap();
        assert_eq!((z.ptr(), z.size()), (0, 0));
        pool.free(z);
        let a = pool.malloc(100, 0).unwrap();
        let mut b = pool.malloc(16, 1).unwrap();
        assert_eq!((a.size(), b.size()), (112, 16));
        let a_ptr = a.ptr();
        pool.free(a);
        assert_eq!(order.waits(), 1, "the free waited for its stream");
        let c = pool.malloc(100, 0).unwrap();
        assert_ne!(c.ptr(), a_ptr, "reused");
        b.set_stream(2);
        pool.free(b);
        pool.free_unused(c);
        assert_eq!(order.waits(), 2, "free_unused does not wait");
        assert_eq!(
            alloc.log(),
            ["alloc 112", "alloc 16", "free 112", "alloc 112", "free 16", "free 112"]
        );
        let s = pool.stats();
        assert_eq!((s.used_bytes, s.free_bytes, s.total_bytes, s.n_free_blocks), (0, 0, 0, 0));
        assert_eq!((s.raw_allocs, s.raw_frees, s.reuses), (3, 3, 0));
        assert_eq!(alloc.live(), 0);
    }

    /// Counters while blocks are live, the limit, and out of memory (nothing cached to free).
    #[test]
    fn limits_and_out_of_memory() {
        let (pool, alloc, _) = off_pool(1024);
        pool.set_limit(Some(512));
        let a = pool.malloc(500, 0).unwrap();
        let s = pool.stats();
        assert_eq!((s.used_bytes, s.free_bytes, s.total_bytes), (512, 0, 512));
        let err = pool.malloc(1, 0).unwrap_err();
        assert!(
            matches!(err, RuntimeError::OutOfMemory(o) if o.limit == Some(512) && o.requested == 16),
            "{err:?}"
        );
        pool.set_limit(None);
        let b = pool.malloc(512, 0).unwrap();
        let err = pool.malloc(1, 0).unwrap_err();
        assert_eq!(
            err,
            RuntimeError::OutOfMemory(OutOfMemory {
                requested: 16,
                free: 0,
                total: 1024,
                limit: None,
                pool_total: 1024
            })
        );
        pool.free_all_blocks(None);
        assert_eq!(alloc.live(), 2, "live blocks are kept");
        pool.free(a);
        pool.free(b);
        assert_eq!(alloc.live(), 0);
    }
}
