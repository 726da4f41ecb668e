//! A caching memory pool with CuPy's semantics (`cupy.cuda.SingleDeviceMemoryPool`), generic over
//! the raw allocator and over how streams are ordered, so that its logic is tested without a GPU.
//!
//! # CuPy's rules, kept here
//!
//! - Sizes are rounded up to [`ALLOCATION_UNIT`] (512 bytes, `cudaMalloc`'s alignment): asking
//!   for 1 byte uses 512.
//! - A freed block is not given back to the device: it is cached in a *free list*, binned by
//!   size, per stream ("arena"). `used_bytes` counts blocks in use, `free_bytes` the cached ones,
//!   `total_bytes` what the pool holds from the device (always `used + free`).
//! - An allocation takes the smallest cached block that fits (best fit; the bins are exact sizes,
//!   so this is the first non-empty bin at or above the size). A larger block is *split*: the
//!   front is used, the rest stays in the free list. Only when no cached block fits is the raw
//!   allocator called, for exactly the rounded size.
//! - Freeing a block *merges* it with its neighbours from the same device allocation when they are
//!   free (so a split allocation becomes whole again once all its parts are free).
//! - `free_all_blocks` gives back to the device every cached block that is a whole allocation
//!   (never split, or merged back); parts of split allocations stay cached.
//! - When the device is out of memory, the pool frees its cached blocks and retries once; then
//!   it reports [`OutOfMemory`] with the bytes asked for and the device's free and total bytes.
//!   Live allocations are never touched.
//! - `set_limit` bounds `total_bytes` (0 or `None`: no limit). CuPy raises at once when the limit
//!   would be passed; kiln first frees the cached blocks, as for the device, then raises.
//!
//! # Stream-ordered reuse (beyond CuPy)
//!
//! CuPy reuses a block only on the stream that freed it. Here every free also records an event
//! on the freeing stream ([`StreamOrder::record`]): the block is reusable at once on that stream
//! (work queued later on a stream runs after work queued before), and on another stream as soon
//! as the event shows the freeing stream has passed the free. Allocation looks in the stream's own
//! arena first (CuPy), then for a completed block of any other stream. This is safe because a
//! block is freed on a stream ordered after every use of it (kiln's executor frees a buffer used
//! on several streams after their join; a buffer's owner moves it to its last stream), so once
//! the event completes no queued work can still touch the block, and the new owner's work is
//! queued after that. The figures (`free_bytes`, `total_bytes`...) are the pool's, over all
//! streams, as CuPy's.
//!
//! Pinned host memory is written by the CPU, which is not ordered by any stream: such a pool uses
//! [`ReusePolicy::AfterCompletion`], where a block is reused only once its event has completed,
//! even on the stream that freed it.
//!
//! # Stream-ordered (`KILN_GPU_POOL=async`, CuPy's `MemoryAsyncPool`)
//!
//! A pool made with [`PoolMode::Async`] hands out `cuMemAllocAsync` blocks of the device's CUDA
//! memory pool and frees them with `cuMemFreeAsync` on their stream; see [`async_pool`].
//!
//! # Turned off (`KILN_GPU_POOL=off`, beyond CuPy)
//!
//! A pool made with [`PoolMode::Off`] caches nothing, so that compute-sanitizer's memcheck and
//! initcheck see the bounds of every buffer: each block is a raw allocation of its own, of the
//! size asked for rounded up to [`OFF_ALIGN`] (16) bytes, and each free waits for the block's
//! stream to pass the free (an event recorded there, outside the pool's lock), then gives it
//! back to the raw allocator. `free_bytes` and `n_free_blocks` stay 0, `used_bytes` equals
//! `total_bytes` (a block being freed counts until it is given back), `free_all_blocks` has
//! nothing to do; limits, out-of-memory errors and zero-size blocks are as above.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    fmt::Debug,
    hash::Hash,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex, MutexGuard,
    },
};

use crate::error::{OutOfMemory, Result, RuntimeError};

#[path = "async_pool.rs"]
pub mod async_pool;
#[path = "pool_off.rs"]
mod off;
pub use off::{PoolMode, OFF_ALIGN};

/// Every pool size is a multiple of this (CuPy's `ALLOCATION_UNIT_SIZE`).
pub const ALLOCATION_UNIT: usize = 512;

/// Rounds a size up to the pool's unit; `None` on overflow.
pub fn round_size(size: usize) -> Option<usize> {
    size.checked_add(ALLOCATION_UNIT - 1).map(|s| s / ALLOCATION_UNIT * ALLOCATION_UNIT)
}

/// Why a raw allocation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// Not enough memory: the pool frees its cache and retries.
    OutOfMemory,
    /// Anything else: reported as is.
    Failed(RuntimeError),
}

/// Where the pool's memory comes from (`cuMemAlloc`/`cuMemFree`, `cuMemHostAlloc`, a fake).
pub trait RawAllocator: Send + Sync {
    /// Allocates `bytes` (a multiple of [`ALLOCATION_UNIT`], of [`OFF_ALIGN`] in a pool that is
    /// off; not 0); returns its address.
    fn alloc(&self, bytes: usize) -> std::result::Result<u64, AllocError>;
    /// Gives back an allocation made by `alloc` (the pool has waited for its last use).
    fn free(&self, ptr: u64, bytes: usize);
    /// `(free, total)` bytes of the memory allocated from, for error messages and limits.
    fn mem_info(&self) -> (usize, usize);
}

/// How the pool learns that a stream has passed a point: events (CUDA) or a fake.
pub trait StreamOrder: Send + Sync {
    /// Identifies a stream; blocks are kept per stream.
    type Stream: Copy + Eq + Hash + Ord + Debug + Send;
    /// A recorded point in a stream.
    type Event: Clone + Send;
    /// Records the point `stream` has reached. `None`: nothing can be pending on it (the pool
    /// then treats the block as completed at once).
    fn record(&self, stream: Self::Stream) -> Option<Self::Event>;
    /// Whether the stream has passed the event.
    fn is_done(&self, event: &Self::Event) -> bool;
    /// Blocks until the stream has passed the event.
    fn wait(&self, event: &Self::Event);
    /// A stream-ordered allocation of `bytes` on `stream` (`cuMemAllocAsync`), for a pool in
    /// [`PoolMode::Async`] ([`async_pool`]); by default there is none (a typed error).
    fn alloc_async(
        &self,
        bytes: usize,
        stream: Self::Stream,
    ) -> std::result::Result<u64, AllocError> {
        let _ = (bytes, stream);
        Err(async_pool::unsupported("no stream-ordered allocator for this pool"))
    }
    /// Frees a stream-ordered allocation on `stream` (`cuMemFreeAsync`).
    fn free_async(&self, ptr: u64, stream: Self::Stream) {
        let _ = (ptr, stream);
    }
    /// `(used, reserved)` bytes of the stream-ordered allocator's pool.
    fn async_figures(&self) -> (usize, usize) {
        (0, 0)
    }
    /// Gives the stream-ordered allocator's unused memory back, once pending frees have run.
    fn trim_async(&self) {}
}

/// When a freed block may be handed out again on the stream that freed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReusePolicy {
    /// At once (device memory: later work on that stream runs after earlier work).
    StreamOrdered,
    /// Only once its event has completed (host memory written by the CPU).
    AfterCompletion,
}

/// Counters of a pool, all at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes in blocks handed out and not freed.
    pub used_bytes: usize,
    /// Bytes in cached free blocks.
    pub free_bytes: usize,
    /// Bytes held from the raw allocator (`used + free`).
    pub total_bytes: usize,
    /// Number of cached free blocks.
    pub n_free_blocks: usize,
    /// Calls to the raw allocator that succeeded, since the pool was made.
    pub raw_allocs: u64,
    /// Allocations given back to the raw allocator, since the pool was made.
    pub raw_frees: u64,
    /// Allocations served from the cache, since the pool was made.
    pub reuses: u64,
}

/// A block handed out by [`MemoryPool::malloc`]; give it back with [`MemoryPool::free`].
///
/// Not `Clone`, so it is freed once. Its stream is the one its free is ordered on (initially the
/// stream it was allocated on; [`Block::set_stream`] changes it, like PyTorch's `record_stream`).
#[derive(Debug, PartialEq, Eq)]
pub struct Block<S> {
    ptr: u64,
    size: usize,
    stream: S,
    pool: u64,
}

impl<S: Copy> Block<S> {
    /// The address (0 for a zero-size block).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    /// The size in bytes (rounded up to [`ALLOCATION_UNIT`], to [`OFF_ALIGN`] in a pool that is
    /// off).
    pub fn size(&self) -> usize {
        self.size
    }
    /// The stream the free will be ordered on.
    pub fn stream(&self) -> S {
        self.stream
    }
    /// Orders the free on another stream (the last one to use the block).
    pub fn set_stream(&mut self, stream: S) {
        self.stream = stream;
    }
}

enum State<E> {
    InUse,
    /// Cached; `event` marks the free on the chunk's stream (`None`: nothing pending).
    Free {
        event: Option<E>,
    },
}

/// A piece of a raw allocation. `prev`/`next` link the pieces of one allocation by address.
struct Chunk<S, E> {
    size: usize,
    stream: S,
    prev: Option<u64>,
    next: Option<u64>,
    state: State<E>,
}

impl<S, E> Chunk<S, E> {
    fn is_free(&self) -> bool {
        matches!(self.state, State::Free { .. })
    }
    fn event(&self) -> Option<&E> {
        match &self.state {
            State::Free { event } => event.as_ref(),
            State::InUse => None,
        }
    }
}

/// Free chunks of one stream: size → addresses (ordered, so choices are deterministic).
type Arena = BTreeMap<usize, BTreeSet<u64>>;

struct Inner<S, E> {
    /// Every chunk, in use or free, by address.
    chunks: HashMap<u64, Chunk<S, E>>,
    /// Free chunks, per stream.
    arenas: BTreeMap<S, Arena>,
    used: usize,
    free: usize,
    total: usize,
    n_free: usize,
    /// 0: no limit.
    limit: usize,
    raw_allocs: u64,
    raw_frees: u64,
    reuses: u64,
}

impl<S: Copy + Ord, E> Inner<S, E> {
    fn add_free(&mut self, ptr: u64, size: usize, stream: S) {
        self.arenas.entry(stream).or_default().entry(size).or_default().insert(ptr);
        self.free += size;
        self.n_free += 1;
    }

    fn remove_free(&mut self, ptr: u64, size: usize, stream: S) {
        let arena = self.arenas.get_mut(&stream).expect("free chunk's arena");
        let bin = arena.get_mut(&size).expect("free chunk's bin");
        let removed = bin.remove(&ptr);
        debug_assert!(removed, "free chunk {ptr:#x} not in its bin");
        if bin.is_empty() {
            arena.remove(&size);
            if arena.is_empty() {
                self.arenas.remove(&stream);
            }
        }
        self.free -= size;
        self.n_free -= 1;
    }
}

static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);

/// A caching allocator with CuPy's semantics (see the module docs).
pub struct MemoryPool<A: RawAllocator, O: StreamOrder> {
    allocator: A,
    order: O,
    policy: ReusePolicy,
    mode: PoolMode,
    id: u64,
    inner: Mutex<Inner<O::Stream, O::Event>>,
}

impl<A: RawAllocator, O: StreamOrder> MemoryPool<A, O> {
    /// An empty pool over `allocator`, ordering reuse with `order`.
    pub fn new(allocator: A, order: O, policy: ReusePolicy) -> Self {
        MemoryPool::with_mode(allocator, order, policy, PoolMode::Caching)
    }

    /// An empty pool that caches or is off (see the module docs).
    pub fn with_mode(allocator: A, order: O, policy: ReusePolicy, mode: PoolMode) -> Self {
        MemoryPool {
            allocator,
            order,
            policy,
            mode,
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            inner: Mutex::new(Inner {
                chunks: HashMap::new(),
                arenas: BTreeMap::new(),
                used: 0,
                free: 0,
                total: 0,
                n_free: 0,
                limit: 0,
                raw_allocs: 0,
                raw_frees: 0,
                reuses: 0,
            }),
        }
    }

    /// The raw allocator.
    pub fn allocator(&self) -> &A {
        &self.allocator
    }

    /// The stream order.
    pub fn order(&self) -> &O {
        &self.order
    }

    fn lock(&self) -> MutexGuard<'_, Inner<O::Stream, O::Event>> {
        // A panic while holding the lock leaves consistent counters (no partial updates are
        // interleaved with calls that can panic), so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocates at least `size` bytes for use on `stream`: from the cache if a block fits, else
    /// from the raw allocator (freeing the cache and retrying once when it is out of memory).
    pub fn malloc(&self, size: usize, stream: O::Stream) -> Result<Block<O::Stream>> {
        if size == 0 {
            return Ok(Block { ptr: 0, size: 0, stream, pool: self.id });
        }
        if self.mode == PoolMode::Async {
            return self.malloc_async(size, stream);
        }
        let rounded = match self.mode {
            PoolMode::Caching => round_size(size),
            PoolMode::Off | PoolMode::Async => off::round_off(size),
        };
        let Some(size) = rounded.filter(|&s| s <= isize::MAX as usize) else {
            let (free, total) = self.allocator.mem_info();
            return Err(RuntimeError::OutOfMemory(OutOfMemory {
                requested: size,
                free,
                total,
                limit: None,
                pool_total: self.total_bytes(),
            }));
        };
        let mut inner = self.lock();
        let cached = match self.mode {
            PoolMode::Caching => self.take_cached(&mut inner, size, stream),
            PoolMode::Off | PoolMode::Async => None,
        };
        let ptr = match cached {
            Some(ptr) => {
                inner.reuses += 1;
                ptr
            }
            None => {
                let ptr = self.raw_alloc(&mut inner, size)?;
                inner.chunks.insert(
                    ptr,
                    Chunk { size, stream, prev: None, next: None, state: State::InUse },
                );
                inner.total += size;
                ptr
            }
        };
        inner.used += size;
        Ok(Block { ptr, size, stream, pool: self.id })
    }

    fn reusable(&self, event: Option<&O::Event>, same_stream: bool) -> bool {
        (same_stream && self.policy == ReusePolicy::StreamOrdered)
            || event.is_none_or(|e| self.order.is_done(e))
    }

    /// Finds, unlinks and marks in use the best cached chunk for `size` on `stream`, splitting
    /// it if larger. Returns its address.
    fn take_cached(
        &self,
        inner: &mut Inner<O::Stream, O::Event>,
        size: usize,
        stream: O::Stream,
    ) -> Option<u64> {
        // The stream's own arena first (CuPy), then completed blocks of the other streams.
        let own = inner.arenas.get(&stream).and_then(|arena| {
            arena.range(size..).find_map(|(&chunk_size, ptrs)| {
                ptrs.iter()
                    .find(|&&ptr| self.reusable(inner.chunks[&ptr].event(), true))
                    .map(|&ptr| (chunk_size, ptr, stream))
            })
        });
        let found = own.or_else(|| {
            inner
                .arenas
                .iter()
                .filter(|(s, _)| **s != stream)
                .filter_map(|(&s, arena)| {
                    arena.range(size..).find_map(|(&chunk_size, ptrs)| {
                        ptrs.iter()
                            .find(|&&ptr| self.reusable(inner.chunks[&ptr].event(), false))
                            .map(|&ptr| (chunk_size, ptr, s))
                    })
                })
                .min_by_key(|&(chunk_size, ptr, _)| (chunk_size, ptr))
        });
        let (chunk_size, ptr, from) = found?;
        inner.remove_free(ptr, chunk_size, from);
        let chunk = inner.chunks.get_mut(&ptr).expect("cached chunk");
        let State::Free { event } = std::mem::replace(&mut chunk.state, State::InUse) else {
            unreachable!("a chunk in a free list is free")
        };
        chunk.stream = stream;
        if chunk_size > size {
            // Split: the rest stays cached where it was, with the same event.
            let rest = ptr + size as u64;
            let rest_size = chunk_size - size;
            let old_next = chunk.next.replace(rest);
            chunk.size = size;
            if let Some(next) = old_next {
                inner.chunks.get_mut(&next).expect("next chunk").prev = Some(rest);
            }
            inner.chunks.insert(
                rest,
                Chunk {
                    size: rest_size,
                    stream: from,
                    prev: Some(ptr),
                    next: old_next,
                    state: State::Free { event },
                },
            );
            inner.add_free(rest, rest_size, from);
        }
        Some(ptr)
    }

    /// Calls the raw allocator, enforcing the limit; on out-of-memory frees the cache and
    /// retries once.
    fn raw_alloc(&self, inner: &mut Inner<O::Stream, O::Event>, size: usize) -> Result<u64> {
        let over_limit = |inner: &Inner<_, _>| inner.limit != 0 && inner.total + size > inner.limit;
        if over_limit(inner) {
            self.release_cached(inner, None);
            if over_limit(inner) {
                return Err(self.out_of_memory(inner, size, Some(inner.limit)));
            }
        }
        let ptr = match self.allocator.alloc(size) {
            Ok(ptr) => ptr,
            Err(AllocError::Failed(e)) => return Err(e),
            Err(AllocError::OutOfMemory) => {
                self.release_cached(inner, None);
                match self.allocator.alloc(size) {
                    Ok(ptr) => ptr,
                    Err(AllocError::Failed(e)) => return Err(e),
                    Err(AllocError::OutOfMemory) => {
                        return Err(self.out_of_memory(inner, size, None))
                    }
                }
            }
        };
        inner.raw_allocs += 1;
        Ok(ptr)
    }

    fn out_of_memory(
        &self,
        inner: &Inner<O::Stream, O::Event>,
        size: usize,
        limit: Option<usize>,
    ) -> RuntimeError {
        let (free, total) = self.allocator.mem_info();
        RuntimeError::OutOfMemory(OutOfMemory {
            requested: size,
            free,
            total,
            limit,
            pool_total: inner.total,
        })
    }

    /// Returns a block to the cache, ordered on its stream: reusable at once on that stream (or
    /// once the stream has passed this point, for [`ReusePolicy::AfterCompletion`]), on other
    /// streams once the stream has passed this point. Merges it with free neighbours.
    ///
    /// # Panics
    /// If the block comes from another pool.
    pub fn free(&self, block: Block<O::Stream>) {
        self.free_with(block, true);
    }

    /// Returns a block that no queued work uses any more (the caller has waited for its last
    /// use): reusable at once on every stream.
    ///
    /// # Panics
    /// If the block comes from another pool.
    pub fn free_unused(&self, block: Block<O::Stream>) {
        self.free_with(block, false);
    }

    /// Files a freed block; `record`: its free is ordered on its stream (an event is recorded
    /// there), else nothing is pending on it.
    fn free_with(&self, block: Block<O::Stream>, record: bool) {
        assert_eq!(
            block.pool, self.id,
            "kiln: a memory block was freed into a pool it does not come from"
        );
        if block.size == 0 {
            return;
        }
        match self.mode {
            PoolMode::Off => return self.free_uncached(block, record),
            PoolMode::Async => return self.free_async_block(block),
            PoolMode::Caching => {}
        }
        let stream = block.stream;
        let mut inner = self.lock();
        let inner = &mut *inner;
        // Recorded under the lock, so that the frees of one stream record their events in the
        // order they are filed: the event of a later free comes after every earlier one of its
        // stream, which is what lets it stand for the neighbours it merges below.
        let event = if record { self.order.record(stream) } else { None };
        let ptr = block.ptr;
        let chunk = inner.chunks.get_mut(&ptr).expect("kiln: freeing an unknown block");
        assert!(!chunk.is_free(), "kiln: block {ptr:#x} freed twice");
        chunk.stream = stream;
        inner.used -= chunk.size;
        // A neighbour merges if it is free and either completed (nothing pending on it
        // anywhere) or pending on this stream when this free has an event there (which comes
        // after the neighbour's). A block freed without an event merges only completed
        // neighbours: taking in a pending one would mark its work done while it may still run.
        let (ptr, size) = self.absorb_neighbours(inner, ptr, stream, event.is_none());
        inner.chunks.get_mut(&ptr).expect("chunk").state = State::Free { event };
        inner.add_free(ptr, size, stream);
    }

    /// Merges the chunk at `ptr` (in no free list) with its free neighbours that are completed,
    /// or (unless `only_completed`) on `stream`; they leave their free lists. Returns the merged
    /// chunk's address and size; the caller sets its state and files it.
    fn absorb_neighbours(
        &self,
        inner: &mut Inner<O::Stream, O::Event>,
        mut ptr: u64,
        stream: O::Stream,
        only_completed: bool,
    ) -> (u64, usize) {
        let mergeable = |inner: &Inner<O::Stream, O::Event>, neighbour: u64| {
            let c = &inner.chunks[&neighbour];
            c.is_free()
                && ((!only_completed && c.stream == stream)
                    || c.event().is_none_or(|e| self.order.is_done(e)))
        };
        let chunk = &inner.chunks[&ptr];
        let (mut size, prev, next) = (chunk.size, chunk.prev, chunk.next);
        if let Some(next_ptr) = next.filter(|&n| mergeable(inner, n)) {
            let next_chunk = inner.chunks.remove(&next_ptr).expect("next chunk");
            inner.remove_free(next_ptr, next_chunk.size, next_chunk.stream);
            size += next_chunk.size;
            let chunk = inner.chunks.get_mut(&ptr).expect("chunk");
            chunk.size = size;
            chunk.next = next_chunk.next;
            if let Some(after) = next_chunk.next {
                inner.chunks.get_mut(&after).expect("chunk after").prev = Some(ptr);
            }
        }
        if let Some(prev_ptr) = prev.filter(|&p| mergeable(inner, p)) {
            let this = inner.chunks.remove(&ptr).expect("chunk");
            let prev_chunk = &inner.chunks[&prev_ptr];
            let (prev_size, prev_stream) = (prev_chunk.size, prev_chunk.stream);
            inner.remove_free(prev_ptr, prev_size, prev_stream);
            size += prev_size;
            let prev_chunk = inner.chunks.get_mut(&prev_ptr).expect("prev chunk");
            prev_chunk.size = size;
            prev_chunk.next = this.next;
            prev_chunk.stream = stream;
            if let Some(after) = this.next {
                inner.chunks.get_mut(&after).expect("chunk after").prev = Some(prev_ptr);
            }
            ptr = prev_ptr;
        }
        inner.chunks.get_mut(&ptr).expect("chunk").stream = stream;
        (ptr, size)
    }

    /// Gives back to the raw allocator every cached block that is a whole allocation, of all
    /// streams or of one (CuPy's `free_all_blocks(stream=None)`); waits for pending events first.
    pub fn free_all_blocks(&self, stream: Option<O::Stream>) {
        if self.mode == PoolMode::Async {
            return self.order.trim_async();
        }
        let mut inner = self.lock();
        self.release_cached(&mut inner, stream);
    }

    fn release_cached(&self, inner: &mut Inner<O::Stream, O::Event>, stream: Option<O::Stream>) {
        let in_scope = |s: &O::Stream| stream.is_none_or(|only| only == *s);
        // 1. Wait for the pending frees in scope (giving memory back synchronises anyway), so
        //    that every cached chunk in scope is completed.
        let cached: Vec<(u64, usize, O::Stream)> = inner
            .arenas
            .iter()
            .filter(|(s, _)| in_scope(s))
            .flat_map(|(&s, arena)| {
                arena
                    .iter()
                    .flat_map(move |(&size, ptrs)| ptrs.iter().map(move |&ptr| (ptr, size, s)))
            })
            .collect();
        for &(ptr, _, _) in &cached {
            let chunk = inner.chunks.get_mut(&ptr).expect("cached chunk");
            if let State::Free { event } = &mut chunk.state {
                if let Some(e) = event.take() {
                    if !self.order.is_done(&e) {
                        self.order.wait(&e);
                    }
                }
            }
        }
        // 2. Coalesce completed neighbours, so that pieces of a split allocation freed on
        //    different streams become whole again.
        for &(ptr, _, _) in &cached {
            // Skip chunks merged into a previous one; a chunk may have grown since.
            let Some((size, s)) =
                inner.chunks.get(&ptr).filter(|c| c.is_free()).map(|c| (c.size, c.stream))
            else {
                continue;
            };
            inner.remove_free(ptr, size, s);
            let (merged, merged_size) = self.absorb_neighbours(inner, ptr, s, true);
            inner.chunks.get_mut(&merged).expect("chunk").state = State::Free { event: None };
            inner.add_free(merged, merged_size, s);
        }
        // 3. Give back the whole allocations.
        let whole: Vec<(u64, usize, O::Stream)> = inner
            .arenas
            .iter()
            .filter(|(s, _)| in_scope(s))
            .flat_map(|(&s, arena)| {
                arena
                    .iter()
                    .flat_map(move |(&size, ptrs)| ptrs.iter().map(move |&ptr| (ptr, size, s)))
            })
            .filter(|(ptr, _, _)| {
                let c = &inner.chunks[ptr];
                c.prev.is_none() && c.next.is_none() && c.event().is_none()
            })
            .collect();
        for (ptr, size, s) in whole {
            inner.remove_free(ptr, size, s);
            inner.chunks.remove(&ptr);
            self.allocator.free(ptr, size);
            inner.total -= size;
            inner.raw_frees += 1;
        }
    }

    /// Bytes in blocks handed out and not freed.
    pub fn used_bytes(&self) -> usize {
        self.stats().used_bytes
    }

    /// Bytes in cached free blocks.
    pub fn free_bytes(&self) -> usize {
        self.stats().free_bytes
    }

    /// Bytes held from the raw allocator.
    pub fn total_bytes(&self) -> usize {
        self.stats().total_bytes
    }

    /// Number of cached free blocks.
    pub fn n_free_blocks(&self) -> usize {
        self.lock().n_free
    }

    /// All counters at one instant.
    pub fn stats(&self) -> PoolStats {
        if self.mode == PoolMode::Async {
            return self.async_stats();
        }
        let inner = self.lock();
        PoolStats {
            used_bytes: inner.used,
            free_bytes: inner.free,
            total_bytes: inner.total,
            n_free_blocks: inner.n_free,
            raw_allocs: inner.raw_allocs,
            raw_frees: inner.raw_frees,
            reuses: inner.reuses,
        }
    }

    /// Bounds `total_bytes` (`None` or 0: no limit), like CuPy's `set_limit(size=...)`.
    pub fn set_limit(&self, limit: Option<usize>) {
        self.lock().limit = limit.unwrap_or(0);
    }

    /// Bounds `total_bytes` to a fraction of the memory's total (CuPy's `set_limit(fraction=)`).
    pub fn set_limit_fraction(&self, fraction: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(RuntimeError::InvalidArgument(format!(
                "memory limit fraction out of range: {fraction}"
            )));
        }
        let (_, total) = self.allocator.mem_info();
        self.set_limit(Some((fraction * total as f64) as usize));
        Ok(())
    }

    /// The limit on `total_bytes` (0: none), like CuPy's `get_limit()`.
    pub fn get_limit(&self) -> usize {
        self.lock().limit
    }
}

impl<A: RawAllocator, O: StreamOrder> Drop for MemoryPool<A, O> {
    /// Gives the cached blocks back. Blocks still in use are leaked (they cannot be freed while
    /// someone may use them).
    fn drop(&mut self) {
        self.free_all_blocks(None);
    }
}

impl<A: RawAllocator, O: StreamOrder> Debug for MemoryPool<A, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryPool")
            .field("policy", &self.policy)
            .field("mode", &self.mode)
            .field("stats", &self.stats())
            .field("limit", &self.get_limit())
            .finish()
    }
}

/// CuPy's `CUPY_GPU_MEMORY_LIMIT` syntax (kiln reads `KILN_GPU_MEMORY_LIMIT`, through
/// [`kiln_cache::config`]): a byte count (`"1073741824"`) or a percentage of the device
/// (`"50%"`).
pub use kiln_cache::config::MemoryLimit as LimitSpec;

#[cfg(test)]
pub(crate) mod fake {
    //! A fake allocator (addresses from a bump counter, a capacity, a log) and a fake stream
    //! order (each stream a counter of completed points).

    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub struct FakeState {
        pub next: u64,
        pub live: BTreeMap<u64, usize>,
        pub used: usize,
        pub log: Vec<String>,
        /// Raw allocation calls that failed for lack of memory.
        pub oom_calls: usize,
    }

    /// Hands out addresses from 0x1000_0000 up, with a gap between allocations so that distinct
    /// allocations are never adjacent (as with a real driver, merging must not cross them).
    #[derive(Clone)]
    pub struct FakeAllocator {
        pub capacity: usize,
        /// Every raw size is a multiple of this.
        pub unit: usize,
        pub state: Arc<Mutex<FakeState>>,
    }

    impl FakeAllocator {
        pub fn new(capacity: usize) -> Self {
            FakeAllocator {
                capacity,
                unit: ALLOCATION_UNIT,
                state: Arc::new(Mutex::new(FakeState {
                    next: 0x1000_0000,
                    ..FakeState::default()
                })),
            }
        }
        pub fn with_unit(self, unit: usize) -> Self {
            FakeAllocator { unit, ..self }
        }
        pub fn used(&self) -> usize {
            self.state.lock().unwrap().used
        }
        pub fn live(&self) -> usize {
            self.state.lock().unwrap().live.len()
        }
        pub fn log(&self) -> Vec<String> {
            self.state.lock().unwrap().log.clone()
        }
    }

    impl RawAllocator for FakeAllocator {
        fn alloc(&self, bytes: usize) -> std::result::Result<u64, AllocError> {
            assert!(bytes > 0 && bytes.is_multiple_of(self.unit), "bad raw size {bytes}");
            let mut s = self.state.lock().unwrap();
            if s.used + bytes > self.capacity {
                s.oom_calls += 1;
                s.log.push(format!("alloc {bytes} OOM"));
                return Err(AllocError::OutOfMemory);
            }
            let ptr = s.next;
            s.next += bytes as u64 + 0x10_0000;
            s.used += bytes;
            s.live.insert(ptr, bytes);
            s.log.push(format!("alloc {bytes}"));
            Ok(ptr)
        }
        fn free(&self, ptr: u64, bytes: usize) {
            let mut s = self.state.lock().unwrap();
            assert_eq!(s.live.remove(&ptr), Some(bytes), "bad raw free {ptr:#x}");
            s.used -= bytes;
            s.log.push(format!("free {bytes}"));
        }
        fn mem_info(&self) -> (usize, usize) {
            (self.capacity - self.used(), self.capacity)
        }
    }

    /// Called by `record` before it records; its answers are kept in `FakeOrderState::probes`.
    pub type Probe = Box<dyn Fn() -> bool + Send>;

    /// Streams are small integers; an event is (stream, sequence number); a stream has passed
    /// an event once `complete` has been called for it after the event was recorded.
    #[derive(Clone, Default)]
    pub struct FakeOrder {
        pub state: Arc<Mutex<FakeOrderState>>,
        pub probe: Arc<Mutex<Option<Probe>>>,
    }

    #[derive(Default)]
    pub struct FakeOrderState {
        pub recorded: HashMap<u32, u64>,
        pub completed: HashMap<u32, u64>,
        pub waits: usize,
        pub probes: Vec<bool>,
    }

    impl FakeOrder {
        /// The stream catches up with everything recorded on it so far.
        pub fn complete(&self, stream: u32) {
            let mut s = self.state.lock().unwrap();
            let r = s.recorded.get(&stream).copied().unwrap_or(0);
            s.completed.insert(stream, r);
        }
        pub fn waits(&self) -> usize {
            self.state.lock().unwrap().waits
        }
    }

    impl StreamOrder for FakeOrder {
        type Stream = u32;
        type Event = (u32, u64);
        fn record(&self, stream: u32) -> Option<(u32, u64)> {
            let probed = self.probe.lock().unwrap().as_ref().map(|p| p());
            let mut s = self.state.lock().unwrap();
            s.probes.extend(probed);
            let seq = s.recorded.entry(stream).or_insert(0);
            *seq += 1;
            Some((stream, *seq))
        }
        fn is_done(&self, &(stream, seq): &(u32, u64)) -> bool {
            self.state.lock().unwrap().completed.get(&stream).copied().unwrap_or(0) >= seq
        }
        fn wait(&self, &(stream, seq): &(u32, u64)) {
            let mut s = self.state.lock().unwrap();
            s.waits += 1;
            let done = s.completed.entry(stream).or_insert(0);
            *done = (*done).max(seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::*;
    use super::*;

    type Pool = MemoryPool<FakeAllocator, FakeOrder>;

    const MIB: usize = 1 << 20;

    fn pool(capacity: usize) -> (Pool, FakeAllocator, FakeOrder) {
        let alloc = FakeAllocator::new(capacity);
        let order = FakeOrder::default();
        let pool = MemoryPool::new(alloc.clone(), order.clone(), ReusePolicy::StreamOrdered);
        (pool, alloc, order)
    }

    /// (used, total, n_free_blocks)
    fn counts(pool: &Pool) -> (usize, usize, usize) {
        let s = pool.stats();
        assert_eq!(s.used_bytes + s.free_bytes, s.total_bytes, "{s:?}");
        (s.used_bytes, s.total_bytes, s.n_free_blocks)
    }

    #[test]
    fn rounding() {
        assert_eq!(round_size(0), Some(0));
        assert_eq!(round_size(1), Some(512));
        assert_eq!(round_size(512), Some(512));
        assert_eq!(round_size(513), Some(1024));
        assert_eq!(round_size(usize::MAX), None);
    }

    /// CuPy: `a = cp.empty(1, cp.int8)` uses 512 bytes; `del a` caches them; a new 1-byte array
    /// reuses them; `free_all_blocks()` gives them back.
    #[test]
    fn allocate_free_reuse_free_all() {
        let (pool, alloc, _) = pool(64 * MIB);
        let a = pool.malloc(1, 0).unwrap();
        assert_eq!(a.size(), 512);
        assert_eq!(counts(&pool), (512, 512, 0));
        let a_ptr = a.ptr();
        pool.free(a);
        assert_eq!(counts(&pool), (0, 512, 1));
        assert_eq!(pool.free_bytes(), 512);
        let b = pool.malloc(100, 0).unwrap();
        assert_eq!(b.ptr(), a_ptr, "the cached block is reused");
        assert_eq!(counts(&pool), (512, 512, 0));
        assert_eq!(pool.stats().raw_allocs, 1);
        pool.free(b);
        pool.free_all_blocks(None);
        assert_eq!(counts(&pool), (0, 0, 0));
        assert_eq!(alloc.used(), 0);
        assert_eq!(alloc.log(), ["alloc 512", "free 512"]);
    }

    #[test]
    fn zero_size_uses_nothing() {
        let (pool, alloc, _) = pool(MIB);
        let z = pool.malloc(0, 0).unwrap();
        assert_eq!((z.ptr(), z.size()), (0, 0));
        pool.free(z);
        assert_eq!(counts(&pool), (0, 0, 0));
        assert!(alloc.log().is_empty());
    }

    /// CuPy's best fit with splitting: a freed 4 KiB block serves a 1 KiB request; the 3 KiB
    /// rest stays cached; a 3 KiB request then takes the rest; freeing all merges them back.
    #[test]
    fn split_and_merge() {
        let (pool, alloc, _) = pool(64 * MIB);
        let big = pool.malloc(4096, 0).unwrap();
        let base = big.ptr();
        pool.free(big);
        assert_eq!(counts(&pool), (0, 4096, 1));

        let small = pool.malloc(1000, 0).unwrap();
        assert_eq!((small.ptr(), small.size()), (base, 1024));
        assert_eq!(counts(&pool), (1024, 4096, 1));
        assert_eq!(pool.free_bytes(), 3072);

        let rest = pool.malloc(3072, 0).unwrap();
        assert_eq!(rest.ptr(), base + 1024);
        assert_eq!(counts(&pool), (4096, 4096, 0));

        // A split block is not given back by free_all_blocks while a part is in use...
        pool.free(small);
        assert_eq!(counts(&pool), (3072, 4096, 1));
        pool.free_all_blocks(None);
        assert_eq!(counts(&pool), (3072, 4096, 1));
        // ...and once all parts are free they merge into one block, which is.
        pool.free(rest);
        assert_eq!(counts(&pool), (0, 4096, 1));
        let whole = pool.malloc(4096, 0).unwrap();
        assert_eq!(whole.ptr(), base);
        pool.free(whole);
        pool.free_all_blocks(None);
        assert_eq!(counts(&pool), (0, 0, 0));
        assert_eq!(alloc.live(), 0);
        assert_eq!(pool.stats().raw_allocs, 1);
    }

    /// Best fit: the smallest cached block that fits is chosen, not the first or the largest.
    #[test]
    fn best_fit() {
        let (pool, _, _) = pool(64 * MIB);
        let blocks: Vec<_> =
            [8192, 2048, 4096, 1024].iter().map(|&n| pool.malloc(n, 0).unwrap()).collect();
        let ptrs: Vec<u64> = blocks.iter().map(|b| b.ptr()).collect();
        for b in blocks {
            pool.free(b);
        }
        assert_eq!(counts(&pool), (0, 15360, 4));
        let c = pool.malloc(1500, 0).unwrap(); // fits 2048 best
        assert_eq!((c.ptr(), c.size()), (ptrs[1], 1536));
        assert_eq!(counts(&pool), (1536, 15360, 4)); // 2048 split into 1536 + 512
        let d = pool.malloc(4000, 0).unwrap(); // 4096 exactly
        assert_eq!(d.ptr(), ptrs[2]);
        let e = pool.malloc(5000, 0).unwrap(); // only 8192 fits
        assert_eq!((e.ptr(), e.size()), (ptrs[0], 5120));
        assert_eq!(counts(&pool), (1536 + 4096 + 5120, 15360, 3)); // 512, 1024, 3072 cached
        let f = pool.malloc(9000, 0).unwrap(); // nothing fits: a new allocation
        assert_eq!(pool.stats().raw_allocs, 5);
        assert_eq!(counts(&pool), (1536 + 4096 + 5120 + 9216, 15360 + 9216, 3));
        for b in [c, d, e, f] {
            pool.free(b);
        }
        assert_eq!(counts(&pool), (0, 24576, 5));
        pool.free_all_blocks(None);
        assert_eq!(counts(&pool), (0, 0, 0));
    }

    /// Merging with both neighbours at once: free the middle part last.
    #[test]
    fn merge_both_sides() {
        let (pool, _, _) = pool(64 * MIB);
        let whole = pool.malloc(3 * 512, 0).unwrap();
        let base = whole.ptr();
        pool.free(whole);
        let a = pool.malloc(512, 0).unwrap();
        let b = pool.malloc(512, 0).unwrap();
        let c = pool.malloc(512, 0).unwrap();
        assert_eq!([a.ptr(), b.ptr(), c.ptr()], [base, base + 512, base + 1024]);
        pool.free(a);
        pool.free(c);
        assert_eq!(counts(&pool), (512, 1536, 2));
        pool.free(b);
        assert_eq!(counts(&pool), (0, 1536, 1));
        let again = pool.malloc(1536, 0).unwrap();
        assert_eq!(again.ptr(), base);
        pool.free(again);
    }

    /// Out of memory: the cache is freed and the allocation retried; live blocks stay.
    #[test]
    fn out_of_memory_frees_cache_and_retries() {
        let (pool, alloc, _) = pool(8 * MIB);
        let live = pool.malloc(2 * MIB, 0).unwrap();
        let cached = pool.malloc(4 * MIB, 0).unwrap();
        pool.free(cached);
        assert_eq!(counts(&pool), (2 * MIB, 6 * MIB, 1));
        // 5 MiB does not fit beside 6 MiB held; freeing the 4 MiB cached block makes room.
        let big = pool.malloc(5 * MIB, 0).unwrap();
        assert_eq!(counts(&pool), (7 * MIB, 7 * MIB, 0));
        assert_eq!(
            alloc.log(),
            [
                "alloc 2097152",
                "alloc 4194304",
                "alloc 5242880 OOM",
                "free 4194304",
                "alloc 5242880"
            ]
        );
        // Now nothing can be freed: a typed error, and the live blocks are untouched.
        let err = pool.malloc(2 * MIB, 0).unwrap_err();
        assert_eq!(
            err,
            RuntimeError::OutOfMemory(OutOfMemory {
                requested: 2 * MIB,
                free: MIB,
                total: 8 * MIB,
                limit: None,
                pool_total: 7 * MIB,
            })
        );
        assert_eq!(counts(&pool), (7 * MIB, 7 * MIB, 0));
        assert_eq!(alloc.live(), 2);
        // Asking for more than the device has.
        let err = pool.malloc(16 * MIB, 0).unwrap_err();
        assert!(matches!(err, RuntimeError::OutOfMemory(o) if o.requested == 16 * MIB));
        let err = pool.malloc(usize::MAX - 3, 0).unwrap_err();
        assert!(matches!(err, RuntimeError::OutOfMemory(_)), "{err:?}");
        pool.free(live);
        pool.free(big);
        assert_eq!(counts(&pool), (0, 7 * MIB, 2));
    }

    /// Split blocks survive the out-of-memory cleanup (they are not whole allocations).
    #[test]
    fn out_of_memory_keeps_split_blocks() {
        let (pool, alloc, _) = pool(4 * MIB);
        let whole = pool.malloc(2 * MIB, 0).unwrap();
        pool.free(whole);
        let part = pool.malloc(MIB, 0).unwrap(); // splits: 1 MiB cached, part of a live allocation
        assert_eq!(counts(&pool), (MIB, 2 * MIB, 1));
        let err = pool.malloc(3 * MIB, 0).unwrap_err();
        assert!(matches!(err, RuntimeError::OutOfMemory(_)));
        assert_eq!(counts(&pool), (MIB, 2 * MIB, 1));
        assert_eq!(alloc.live(), 1);
        pool.free(part);
    }

    #[test]
    fn limit() {
        let (pool, _, _) = pool(64 * MIB);
        assert_eq!(pool.get_limit(), 0);
        pool.set_limit(Some(4096));
        assert_eq!(pool.get_limit(), 4096);
        let a = pool.malloc(2048, 0).unwrap();
        let b = pool.malloc(1024, 0).unwrap();
        pool.free(b);
        // 2048 + 1024 cached + 2048 > 4096: the cache is freed first, then it fits.
        let c = pool.malloc(2048, 0).unwrap();
        assert_eq!(counts(&pool), (4096, 4096, 0));
        let err = pool.malloc(1, 0).unwrap_err();
        assert!(
            matches!(err, RuntimeError::OutOfMemory(o) if o.limit == Some(4096) && o.requested == 512),
            "{err:?}"
        );
        pool.set_limit(None);
        let d = pool.malloc(1, 0).unwrap();
        pool.set_limit_fraction(0.5).unwrap();
        assert_eq!(pool.get_limit(), 32 * MIB);
        assert!(pool.set_limit_fraction(1.5).is_err());
        for x in [a, c, d] {
            pool.free(x);
        }
    }

    #[test]
    fn limit_spec() {
        assert_eq!("1024".parse::<LimitSpec>().unwrap(), LimitSpec::Bytes(1024));
        assert_eq!("50%".parse::<LimitSpec>().unwrap(), LimitSpec::Fraction(0.5));
        assert!("150%".parse::<LimitSpec>().is_err());
        assert!("lots".parse::<LimitSpec>().is_err());
    }

    /// Stream-ordered reuse: on the freeing stream at once, on another only after the freeing
    /// stream has passed the free.
    #[test]
    fn cross_stream_reuse_waits_for_the_event() {
        let (pool, _, order) = pool(64 * MIB);
        let a = pool.malloc(1024, 1).unwrap();
        let a_ptr = a.ptr();
        pool.free(a);
        // Stream 2 cannot take it yet: stream 1 may still be using it.
        let b = pool.malloc(1024, 2).unwrap();
        assert_ne!(b.ptr(), a_ptr);
        assert_eq!(pool.stats().raw_allocs, 2);
        // Stream 1 itself can.
        let c = pool.malloc(1024, 1).unwrap();
        assert_eq!(c.ptr(), a_ptr);
        pool.free(c);
        // Once stream 1 has passed the free, stream 2 can.
        order.complete(1);
        let d = pool.malloc(512, 2).unwrap();
        assert_eq!(d.ptr(), a_ptr, "best fit across streams, split");
        assert_eq!(counts(&pool), (1024 + 512, 2048, 1));
        // The rest of the split block stays with stream 1 (its event done: anyone can take it).
        let e = pool.malloc(512, 3).unwrap();
        assert_eq!(e.ptr(), a_ptr + 512);
        assert_eq!(pool.stats().raw_allocs, 2);
        // Freed on different streams, the two halves merge only when the other is completed.
        pool.free(d); // stream 2, pending; neighbour e in use
        pool.free(e); // stream 3; neighbour d on stream 2 is pending: no merge
        assert_eq!(counts(&pool), (1024, 2048, 2));
        pool.free(b);
        order.complete(2);
        order.complete(3);
        let f = pool.malloc(1024, 4).unwrap(); // b's block (stream 2, done) fits exactly
        pool.free(f);
        assert_eq!(counts(&pool), (0, 2048, 3));
        // a's halves could not merge when freed (each was pending for the other's stream);
        // free_all_blocks coalesces completed pieces, so both allocations go back.
        pool.free_all_blocks(None);
        assert_eq!(counts(&pool), (0, 0, 0));
    }

    /// A block freed on another stream merges with a completed neighbour.
    #[test]
    fn merge_with_completed_neighbour_of_another_stream() {
        let (pool, _, order) = pool(64 * MIB);
        let whole = pool.malloc(1024, 1).unwrap();
        pool.free(whole);
        order.complete(1);
        let a = pool.malloc(512, 1).unwrap();
        let b = pool.malloc(512, 2).unwrap(); // the rest, completed, taken by stream 2
        pool.free(a); // stream 1, neighbour in use
        order.complete(1);
        pool.free(b); // stream 2: merges with a (done)
        assert_eq!(counts(&pool), (0, 1024, 1));
        pool.free_all_blocks(Some(2));
        assert_eq!(counts(&pool), (0, 0, 0));
        assert_eq!(order.waits(), 1, "b's free was still pending: waited before freeing");
    }

    /// free_all_blocks(stream) frees only that stream's cache.
    #[test]
    fn free_all_blocks_of_one_stream() {
        let (pool, _, _) = pool(64 * MIB);
        let a = pool.malloc(512, 1).unwrap();
        let b = pool.malloc(1024, 2).unwrap();
        pool.free(a);
        pool.free(b);
        pool.free_all_blocks(Some(1));
        assert_eq!(counts(&pool), (0, 1024, 1));
        pool.free_all_blocks(None);
        assert_eq!(counts(&pool), (0, 0, 0));
    }

    /// Host pools reuse only completed blocks, even on the freeing stream.
    #[test]
    fn after_completion_policy() {
        let alloc = FakeAllocator::new(MIB);
        let order = FakeOrder::default();
        let pool = MemoryPool::new(alloc, order.clone(), ReusePolicy::AfterCompletion);
        let a = pool.malloc(512, 1).unwrap();
        let a_ptr = a.ptr();
        pool.free(a);
        let b = pool.malloc(512, 1).unwrap();
        assert_ne!(b.ptr(), a_ptr);
        order.complete(1);
        let c = pool.malloc(512, 1).unwrap();
        assert_eq!(c.ptr(), a_ptr);
        pool.free(b);
        pool.free(c);
    }

    /// A block freed as unused is reusable at once everywhere, even by a host pool.
    #[test]
    fn free_unused_is_reusable_everywhere() {
        let alloc = FakeAllocator::new(MIB);
        let pool = MemoryPool::new(alloc, FakeOrder::default(), ReusePolicy::AfterCompletion);
        let a = pool.malloc(512, 1).unwrap();
        let a_ptr = a.ptr();
        pool.free_unused(a);
        let b = pool.malloc(512, 2).unwrap();
        assert_eq!(b.ptr(), a_ptr);
        pool.free_unused(b);
    }

    #[test]
    #[should_panic(expected = "does not come from")]
    fn foreign_block_panics() {
        let (p1, _, _) = pool(MIB);
        let (p2, _, _) = pool(MIB);
        let a = p1.malloc(1, 0).unwrap();
        p2.free(a);
    }

    #[test]
    fn set_stream_orders_the_free_elsewhere() {
        let (pool, _, order) = pool(MIB);
        let mut a = pool.malloc(512, 1).unwrap();
        let a_ptr = a.ptr();
        a.set_stream(2);
        pool.free(a);
        let b = pool.malloc(512, 1).unwrap();
        assert_ne!(b.ptr(), a_ptr, "freed on stream 2, pending");
        let c = pool.malloc(512, 2).unwrap();
        assert_eq!(c.ptr(), a_ptr);
        pool.free(b);
        pool.free(c);
        order.complete(1);
    }

    /// A block freed as unused beside a pending one (in the pinned staging pool, the likeliest
    /// cause of issue 5's all-zero `square_u8` under compute-sanitizer): thread A's upload
    /// queues its copy from staging block `a` on the null stream and frees `a` (pending until
    /// the copy has read it); thread B's download, whose block `b` is `a`'s neighbour, waits
    /// for its own copy (queued on the null stream before A's) and frees `b` as unused. That
    /// free merged `a` into one block marked completed, so thread C's upload could take it and
    /// write its own data over `a` while A's copy was still queued (behind slow kernels), and
    /// A's array got C's bytes. Now `a` stays pending until its stream passes its free, in
    /// either pool.
    #[test]
    fn free_unused_leaves_a_pending_neighbour_pending() {
        for policy in [ReusePolicy::AfterCompletion, ReusePolicy::StreamOrdered] {
            let order = FakeOrder::default();
            let pool = MemoryPool::new(FakeAllocator::new(MIB), order.clone(), policy);
            let whole = pool.malloc(1024, 0).unwrap();
            pool.free_unused(whole);
            let a = pool.malloc(512, 0).unwrap();
            let b = pool.malloc(512, 0).unwrap();
            let (a_ptr, b_ptr) = (a.ptr(), b.ptr());
            assert_eq!(b_ptr, a_ptr + 512);
            pool.free(a);
            pool.free_unused(b);
            assert_eq!(
                pool.stats().n_free_blocks,
                2,
                "{policy:?}: `a` pending, `b` done: not merged"
            );
            // Another stream (or, for the host pool, any stream) cannot have `a` yet; `b` is free
            // for everyone.
            let c = pool.malloc(512, 1).unwrap();
            assert_eq!(c.ptr(), b_ptr, "{policy:?}");
            let d = pool.malloc(512, 1).unwrap();
            assert_ne!(d.ptr(), a_ptr, "{policy:?}: `a` reused before its stream passed its free");
            order.complete(0);
            let e = pool.malloc(512, 1).unwrap();
            assert_eq!(e.ptr(), a_ptr, "{policy:?}");
            for x in [c, d, e] {
                pool.free(x);
            }
        }
    }

    /// A free records its event while holding the pool's lock. Recorded before it, thread A's
    /// free of `a` (event E1 on stream s) could be overtaken by thread B's free of `a`'s
    /// neighbour `b`, whose kernel on s was queued after E1 and whose event E2 follows; A's free
    /// then merged `b` into a block pending on E1 only, and another stream took it once s had
    /// passed E1, while B's kernel could still be using `b`.
    #[test]
    fn frees_record_their_events_under_the_lock() {
        let order = FakeOrder::default();
        let pool = std::sync::Arc::new(MemoryPool::new(
            FakeAllocator::new(MIB),
            order.clone(),
            ReusePolicy::StreamOrdered,
        ));
        let weak = std::sync::Arc::downgrade(&pool);
        *order.probe.lock().unwrap() =
            Some(Box::new(move || weak.upgrade().is_some_and(|p| p.inner.try_lock().is_err())));
        let a = pool.malloc(512, 0).unwrap();
        let b = pool.malloc(512, 1).unwrap();
        pool.free(a);
        pool.free(b);
        let probes = order.state.lock().unwrap().probes.clone();
        assert_eq!(probes, [true, true], "an event recorded without the pool's lock");
    }

    /// Dropping the pool gives back its cache.
    #[test]
    fn drop_frees_cache() {
        let (pool, alloc, _) = pool(MIB);
        let a = pool.malloc(512, 0).unwrap();
        pool.free(a);
        drop(pool);
        assert_eq!(alloc.live(), 0);
    }

    /// A random sequence of allocations and frees on a few streams keeps the invariants: no two
    /// live blocks overlap, counters add up, and everything goes back at the end.
    #[test]
    fn random_sequences_keep_invariants() {
        let (pool, alloc, order) = pool(256 * MIB);
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut live: Vec<Block<u32>> = Vec::new();
        for step in 0..5000 {
            let r = next();
            match r % 7 {
                0..=3 => {
                    let size = (next() % 20_000) as usize;
                    let stream = (next() % 3) as u32;
                    live.push(pool.malloc(size, stream).unwrap());
                }
                4 | 5 if !live.is_empty() => {
                    let i = (next() as usize) % live.len();
                    pool.free(live.swap_remove(i));
                }
                6 => order.complete((next() % 3) as u32),
                _ => {}
            }
            if step % 500 == 0 {
                pool.free_all_blocks(None);
            }
            let mut spans: Vec<(u64, u64)> = live
                .iter()
                .filter(|b| b.size() > 0)
                .map(|b| (b.ptr(), b.ptr() + b.size() as u64))
                .collect();
            spans.sort();
            assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "overlap at step {step}");
            let used: usize = live.iter().map(|b| b.size()).sum();
            let s = pool.stats();
            assert_eq!(s.used_bytes, used);
            assert_eq!(s.used_bytes + s.free_bytes, s.total_bytes);
            assert_eq!(s.total_bytes, alloc.used());
        }
        for b in live.drain(..) {
            pool.free(b);
        }
        for s in 0..3 {
            order.complete(s);
        }
        pool.free_all_blocks(None);
        assert_eq!(counts(&pool), (0, 0, 0));
        assert_eq!(alloc.live(), 0);
    }
}
