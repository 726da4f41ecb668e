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
        ["alloc 2097152", "alloc 4194304", "alloc 5242880 OOM", "free 4194304", "alloc 5242880"]
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
        assert_eq!(pool.stats().n_free_blocks, 2, "{policy:?}: `a` pending, `b` done: not merged");
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
