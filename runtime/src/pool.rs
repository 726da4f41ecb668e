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
mod tests;
