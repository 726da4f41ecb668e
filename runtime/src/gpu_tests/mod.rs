//! Tests that need a GPU, as a library module so that one GPU test binary (kiln's, or
//! `kiln-gpu-selftest`) runs them all: each test is a function returning a [`TestResult`];
//! [`run_all`] runs them, prints one line per test and the summary line
//! `N passed, N failed, N skipped`, and returns the counts. Without a CUDA device every test is
//! skipped.
//!
//! `KILN_GPU_SANITIZER=1` (set by `scripts/gpu/run.sh --sanitize`) skips the tests that measure
//! time or fill the device's memory, which compute-sanitizer distorts.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::Arc,
    time::Instant,
};

use crate::{
    cuda_available, elapsed_time,
    launch::LaunchConfig,
    memory::{DevicePtr, STAGING_IN_FLIGHT, STAGING_PIECE, STAGING_UPLOADS_IN_FLIGHT},
    module::{link_ptx_to_cubin, Function, ModuleImage},
    pool::{round_size, PoolMode},
    profile, Device, DeviceBuffer, Event, KernelStage, PinnedBuffer, RuntimeError, Stream,
};

/// The hand-written PTX of the test kernels (`vadd`, `spin`, `fill_u32`).
pub const TEST_PTX: &str = include_str!("kernels.ptx");

/// Why a test did not pass.
#[derive(Debug)]
pub enum Failure {
    /// It could not run here (no GPU, a single GPU, under a sanitizer...).
    Skip(String),
    /// It failed.
    Fail(String),
}

impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Self {
        Failure::Fail(e.to_string())
    }
}

/// A test's result.
pub type TestResult = Result<(), Failure>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if $cond {
        } else {
            return Err(Failure::Fail(format!($($fmt)+)));
        }
    };
}

fn skip(why: impl Into<String>) -> TestResult {
    Err(Failure::Skip(why.into()))
}

mod async_pool;
mod solver;
mod streams;
mod uploads;

/// A GPU test.
pub struct GpuTest {
    /// Its name.
    pub name: &'static str,
    /// The test.
    pub run: fn() -> TestResult,
}

/// All GPU tests, in the order they run.
pub fn tests() -> Vec<GpuTest> {
    macro_rules! list {
        ($($name:ident),* $(,)?) => { vec![$(GpuTest { name: stringify!($name), run: $name }),*] };
    }
    list![
        device_properties,
        current_device_scoped,
        current_stream_scoped,
        pool_allocate_free_reuse,
        pool_split_and_merge_on_device,
        pool_device_memory_returns,
        pool_out_of_memory,
        pool_limit,
        pool_oom_retry_frees_cache,
        pool_stream_ordered_reuse,
        pool_off_frees_to_the_driver,
        libraries_wait_for_their_last_stream,
        copies_through_pinned_pool,
        pinned_buffers,
        events,
        streams_hash,
        vector_add_ptx,
        module_cache_and_errors,
        malformed_cubins_are_errors,
        link_to_cubin,
        disk_cache_cubin,
        grid_stride_fill,
        streams_overlap,
        elapsed_time_matches_host,
        profile_and_nvtx,
    ]
    .into_iter()
    .chain(solver::tests())
    .chain(streams::tests())
    .chain(async_pool::tests())
    .chain(uploads::tests())
    .collect()
}

/// Counts of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Tests that passed.
    pub passed: usize,
    /// Tests that failed (or panicked).
    pub failed: usize,
    /// Tests skipped.
    pub skipped: usize,
}

/// Runs every GPU test; prints a line per test and `N passed, N failed, N skipped`.
pub fn run_all() -> (usize, usize, usize) {
    let s = run_matching(&[]);
    (s.passed, s.failed, s.skipped)
}

/// Runs the tests whose name contains one of `filters` (all if empty).
pub fn run_matching(filters: &[String]) -> Summary {
    let mut summary = Summary::default();
    let available = cuda_available();
    if available {
        if let Ok(d) = Device::current() {
            println!(
                "kiln gpu tests on {d}: {} ({}), {} MiB, nvtx: {}",
                d.name().unwrap_or_default(),
                d.sm_arch().unwrap_or_default(),
                d.total_memory().unwrap_or(0) >> 20,
                profile::nvtx_backend()
            );
        }
    }
    for test in tests() {
        if !filters.is_empty() && !filters.iter().any(|f| test.name.contains(f.as_str())) {
            continue;
        }
        let start = Instant::now();
        let result = if available {
            catch_unwind(AssertUnwindSafe(test.run)).unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(Failure::Fail(format!("panicked: {why}")))
            })
        } else {
            Err(Failure::Skip("no CUDA device".into()))
        };
        let ms = start.elapsed().as_secs_f64() * 1e3;
        match result {
            Ok(()) => {
                summary.passed += 1;
                println!("test gpu::{} ... ok ({ms:.1} ms)", test.name);
            }
            Err(Failure::Skip(why)) => {
                summary.skipped += 1;
                println!("test gpu::{} ... skipped: {why}", test.name);
            }
            Err(Failure::Fail(why)) => {
                summary.failed += 1;
                println!("test gpu::{} ... FAILED ({ms:.1} ms)\n    {why}", test.name);
            }
        }
    }
    println!("{} passed, {} failed, {} skipped", summary.passed, summary.failed, summary.skipped);
    summary
}

/// Whether compute-sanitizer runs us (timing and memory-filling tests skip).
fn under_sanitizer() -> bool {
    std::env::var("KILN_GPU_SANITIZER").is_ok_and(|v| v == "1")
}

fn device() -> Result<Device, Failure> {
    Ok(Device::current()?)
}

const MIB: usize = 1 << 20;

/// Test data: `n` floats.
fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| i as f32 * scale).collect()
}

/// Test bytes, not a simple ramp.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn kernels(device: Device) -> Result<Arc<crate::Module>, Failure> {
    Ok(device.load_module("kiln_gpu_tests", ModuleImage::Ptx(TEST_PTX))?)
}

fn function(device: Device, name: &str) -> Result<Function, Failure> {
    Ok(kernels(device)?.function(name)?)
}

fn device_properties() -> TestResult {
    let d = device()?;
    let name = d.name()?;
    ensure!(!name.trim().is_empty(), "empty device name");
    let (major, minor) = d.compute_capability()?;
    ensure!(major >= 7, "compute capability {major}.{minor} < 7.0");
    ensure!(d.sm_arch()? == format!("sm_{major}{minor}"), "sm_arch");
    let total = d.total_memory()?;
    ensure!(total >= 1 << 30, "total memory {total}");
    let (free, total2) = d.mem_info()?;
    ensure!(total2 == total && free <= total, "mem_info ({free}, {total2}) vs {total}");
    ensure!(d.multiprocessor_count()? > 0, "no SMs");
    d.synchronize()?;
    ensure!(Device::all().len() == crate::device_count(), "Device::all");
    Ok(())
}

fn current_device_scoped() -> TestResult {
    let before = Device::current()?;
    let last = *Device::all().last().expect("a device");
    {
        let _guard = last.use_scoped()?;
        ensure!(Device::current()? == last, "use_scoped did not set the device");
        let buffer = DeviceBuffer::alloc(1024)?;
        ensure!(buffer.device() == last, "allocated on {}", buffer.device());
        if Device::all().len() > 1 {
            let first = Device::new(0)?;
            let _inner = first.use_scoped()?;
            ensure!(Device::current()? == first, "nested use_scoped");
        }
        ensure!(Device::current()? == last, "nested guard did not restore");
    }
    ensure!(Device::current()? == before, "guard did not restore the device");
    ensure!(
        matches!(Device::new(crate::device_count()), Err(RuntimeError::DeviceUnavailable { .. })),
        "a device past the last exists"
    );
    Ok(())
}

fn current_stream_scoped() -> TestResult {
    let d = device()?;
    let null = Stream::null(d)?;
    ensure!(Stream::current()? == null, "the default current stream is not the null stream");
    let s = Stream::non_blocking(d)?;
    {
        let _g = s.use_scoped();
        ensure!(Stream::current()? == s, "use_scoped did not set the stream");
        let buffer = DeviceBuffer::alloc(16)?;
        ensure!(*buffer.stream() == s, "a buffer allocated on another stream");
    }
    ensure!(Stream::current()? == null, "the guard did not restore the stream");
    let pooled = d.pooled_streams(4)?;
    let mut ids: Vec<u64> = pooled.iter().map(|s| s.id()).collect();
    ids.sort();
    ids.dedup();
    ensure!(ids.len() == 4, "pooled streams are not distinct: {ids:?}");
    ensure!(d.pooled_stream()?.kind() == crate::StreamKind::NonBlocking, "pooled kind");
    let (first, again, other) = (d.pool_stream(1)?, d.pool_stream(1)?, d.pool_stream(2)?);
    ensure!(first == again, "pool_stream(1) made a new stream: {first:?} then {again:?}");
    ensure!(first != other, "pool_stream(1) and pool_stream(2) are one stream: {first:?}");
    ensure!(first.kind() == crate::StreamKind::NonBlocking, "pool_stream kind {:?}", first.kind());
    s.synchronize()?;
    ensure!(s.done()?, "an idle stream is not done");
    Ok(())
}

/// (used, total, n_free_blocks) of a pool.
fn counts(pool: &crate::DeviceMemoryPool) -> (usize, usize, usize) {
    let s = pool.stats();
    (s.used_bytes, s.total_bytes, s.n_free_blocks)
}

/// CuPy's sequence: 1 byte uses 512; freed, it is cached; reused; free_all_blocks empties.
fn pool_allocate_free_reuse() -> TestResult {
    let d = device()?;
    let pool = d.new_memory_pool_with(PoolMode::Caching)?;
    let s = Stream::null(d)?;
    let a = DeviceBuffer::alloc_in(&pool, &s, 1)?;
    ensure!(counts(&pool) == (512, 512, 0), "after malloc(1): {:?}", counts(&pool));
    let a_ptr = a.ptr();
    ensure!(a_ptr % 256 == 0, "misaligned {a_ptr:#x}");
    drop(a);
    ensure!(counts(&pool) == (0, 512, 1), "after free: {:?}", counts(&pool));
    let b = DeviceBuffer::alloc_in(&pool, &s, 100)?;
    ensure!(b.ptr() == a_ptr, "not reused: {:#x} vs {a_ptr:#x}", b.ptr());
    ensure!(counts(&pool) == (512, 512, 0), "after reuse: {:?}", counts(&pool));
    let big = DeviceBuffer::alloc_in(&pool, &s, MIB + 1)?;
    let big_size = round_size(MIB + 1).expect("small");
    ensure!(big.capacity() == big_size, "capacity {}", big.capacity());
    ensure!(
        counts(&pool) == (512 + big_size, 512 + big_size, 0),
        "after a second malloc: {:?}",
        counts(&pool)
    );
    drop(b);
    drop(big);
    ensure!(counts(&pool) == (0, 512 + big_size, 2), "after frees: {:?}", counts(&pool));
    pool.free_all_blocks(None);
    ensure!(counts(&pool) == (0, 0, 0), "after free_all_blocks: {:?}", counts(&pool));
    ensure!(pool.stats().raw_allocs == 2, "raw allocations {}", pool.stats().raw_allocs);
    Ok(())
}

/// Splitting a cached block on the device, and the parts hold their data.
fn pool_split_and_merge_on_device() -> TestResult {
    let d = device()?;
    let pool = d.new_memory_pool_with(PoolMode::Caching)?;
    let s = Stream::null(d)?;
    let whole = DeviceBuffer::alloc_in(&pool, &s, 4096)?;
    let base = whole.ptr();
    drop(whole);
    let mut small = DeviceBuffer::alloc_in(&pool, &s, 1000)?;
    let mut rest = DeviceBuffer::alloc_in(&pool, &s, 3072)?;
    ensure!(small.ptr() == base, "best fit did not split the cached block");
    ensure!(rest.ptr() == base + 1024, "the rest is at {:#x}", rest.ptr());
    ensure!(counts(&pool) == (4096, 4096, 0), "{:?}", counts(&pool));
    small.copy_from_host(&[7u8; 1000])?;
    rest.copy_from_host(&noise(3072, 1))?;
    ensure!(small.to_vec::<u8>()? == vec![7u8; 1000], "small part's data");
    ensure!(rest.to_vec::<u8>()? == noise(3072, 1), "rest part's data");
    drop(small);
    pool.free_all_blocks(None);
    ensure!(counts(&pool) == (3072, 4096, 1), "split blocks stay: {:?}", counts(&pool));
    drop(rest);
    ensure!(counts(&pool) == (0, 4096, 1), "merged: {:?}", counts(&pool));
    pool.free_all_blocks(None);
    ensure!(counts(&pool) == (0, 0, 0), "{:?}", counts(&pool));
    Ok(())
}

/// What free_all_blocks gives back shows in the device's free memory.
fn pool_device_memory_returns() -> TestResult {
    if under_sanitizer() {
        return skip("measures the device's free memory (sanitizer)");
    }
    let d = device()?;
    let pool = d.new_memory_pool_with(PoolMode::Caching)?;
    let s = Stream::null(d)?;
    let size = 512 * MIB;
    let (free0, _) = d.mem_info()?;
    let a = DeviceBuffer::alloc_in(&pool, &s, size)?;
    let (free1, _) = d.mem_info()?;
    ensure!(free0 >= free1 + size, "device free {free0} -> {free1} after {size} bytes");
    drop(a);
    let (free2, _) = d.mem_info()?;
    ensure!(free2 <= free1 + 64 * MIB, "a cached block was given back: {free1} -> {free2}");
    pool.free_all_blocks(None);
    let (free3, _) = d.mem_info()?;
    ensure!(free3 + 64 * MIB >= free0, "not given back: {free0} -> {free3}");
    Ok(())
}

/// Asking for twice the device: a typed error; earlier arrays still read back.
fn pool_out_of_memory() -> TestResult {
    let d = device()?;
    let pool = d.new_memory_pool_with(PoolMode::Caching)?;
    let s = Stream::null(d)?;
    let data = ramp(1 << 20, 0.5);
    let mut keep = DeviceBuffer::alloc_in(&pool, &s, data.len() * 4)?;
    keep.copy_from_host(&data)?;
    let cached = DeviceBuffer::alloc_in(&pool, &s, 8 * MIB)?;
    drop(cached);
    let before = pool.stats();
    let total = d.total_memory()?;
    let asked = total * 2;
    match DeviceBuffer::alloc_in(&pool, &s, asked) {
        Err(RuntimeError::OutOfMemory(oom)) => {
            ensure!(
                oom.requested == round_size(asked).expect("fits"),
                "requested {}",
                oom.requested
            );
            ensure!(oom.total == total, "total {} vs {total}", oom.total);
            ensure!(oom.free <= oom.total && oom.limit.is_none(), "{oom:?}");
        }
        Err(other) => return Err(Failure::Fail(format!("not OutOfMemory: {other}"))),
        Ok(_) => return Err(Failure::Fail("allocated twice the device's memory".into())),
    }
    let after = pool.stats();
    ensure!(after.used_bytes == before.used_bytes, "used {before:?} -> {after:?}");
    ensure!(after.n_free_blocks == 0, "the cache was not freed before failing: {after:?}");
    ensure!(keep.to_vec::<f32>()? == data, "a live array changed");
    // The device still works.
    let again = DeviceBuffer::from_slice_on(&s, &data[..1000])?;
    ensure!(again.to_vec::<f32>()? == data[..1000], "allocation after OOM");
    Ok(())
}

fn pool_limit() -> TestResult {
    let d = device()?;
    let pool = d.new_memory_pool_with(PoolMode::Caching)?;
    let s = Stream::null(d)?;
    pool.set_limit(Some(MIB));
    ensure!(pool.get_limit() == MIB, "get_limit");
    let a = DeviceBuffer::alloc_in(&pool, &s, MIB / 2)?;
    match DeviceBuffer::alloc_in(&pool, &s, MIB) {
        Err(RuntimeError::OutOfMemory(oom)) => {
            ensure!(oom.limit == Some(MIB), "limit {:?}", oom.limit)
        }
        other => return Err(Failure::Fail(format!("not refused by the limit: {other:?}"))),
    }
    drop(a);
    // The cached half is freed to make room within the limit.
    let b = DeviceBuffer::alloc_in(&pool, &s, MIB)?;
    ensure!(pool.total_bytes() == MIB, "total {}", pool.total_bytes());
    drop(b);
    Ok(())
}

/// Out of device memory with blocks cached: the pool frees them and the retry succeeds.
fn pool_oom_retry_frees_cache() -> TestResult {
    if under_sanitizer() {
        return skip("fills the device's memory (sanitizer)");
    }
    let d = device()?;
    d.memory_pool()?.free_all_blocks(None);
    let pool = d.new_memory_pool_with(PoolMode::Caching)?;
    let s = Stream::null(d)?;
    let (free, _) = d.mem_info()?;
    let first = free / 100 * 45 / MIB * MIB;
    let second = free / 100 * 70 / MIB * MIB;
    let a = DeviceBuffer::alloc_in(&pool, &s, first)?;
    drop(a);
    ensure!(pool.stats().n_free_blocks == 1, "not cached");
    let b = DeviceBuffer::alloc_in(&pool, &s, second)?;
    let stats = pool.stats();
    ensure!(stats.raw_frees == 1, "the cached block was not freed: {stats:?}");
    ensure!(stats.total_bytes == second, "{stats:?}");
    drop(b);
    pool.free_all_blocks(None);
    Ok(())
}

/// Spins one thread for `cycles` clock cycles on `stream`.
fn spin(f: &Function, stream: &Stream, cycles: u64) -> TestResult {
    // SAFETY: spin(u64 cycles, u64 out) with out = null writes nothing.
    unsafe { f.launch_on(stream, LaunchConfig::linear(1, 1), &[&cycles, &DevicePtr(0)])? };
    Ok(())
}

/// Clock cycles per millisecond of the spin kernel, measured.
fn cycles_per_ms(f: &Function, stream: &Stream) -> Result<f64, Failure> {
    let probe = 20_000_000u64;
    // A first spin lets an idle GPU raise its clock before the measured one.
    spin(f, stream, probe)?;
    let start = stream.record()?;
    spin(f, stream, probe)?;
    let end = stream.record()?;
    end.synchronize()?;
    let ms = elapsed_time(&start, &end)? as f64;
    ensure_ok(ms > 0.5, format!("a {probe}-cycle spin took {ms} ms"))?;
    Ok(probe as f64 / ms)
}

fn ensure_ok(cond: bool, why: String) -> TestResult {
    if cond {
        Ok(())
    } else {
        Err(Failure::Fail(why))
    }
}

/// A block freed on a busy stream is reused at once on that stream, on another only once the
/// stream has passed the free.
fn pool_stream_ordered_reuse() -> TestResult {
    let d = device()?;
    let pool = d.new_memory_pool_with(PoolMode::Caching)?;
    let f = function(d, "spin")?;
    let s1 = Stream::non_blocking(d)?;
    let s2 = Stream::non_blocking(d)?;
    let per_ms = cycles_per_ms(&f, &s1)?;
    let a = DeviceBuffer::alloc_in(&pool, &s1, MIB)?;
    let a_ptr = a.ptr();
    spin(&f, &s1, (per_ms * 200.0) as u64)?;
    drop(a);
    let b = DeviceBuffer::alloc_in(&pool, &s2, MIB)?;
    if s1.done()? {
        return skip("the spin ended before the check (clock too fast?)");
    }
    ensure!(b.ptr() != a_ptr, "another stream reused a block its stream still uses");
    let c = DeviceBuffer::alloc_in(&pool, &s1, MIB)?;
    ensure!(c.ptr() == a_ptr, "the freeing stream did not reuse its block");
    drop(c);
    s1.synchronize()?;
    let e = DeviceBuffer::alloc_in(&pool, &s2, MIB)?;
    ensure!(e.ptr() == a_ptr, "the block was not reused once its stream passed the free");
    ensure!(pool.stats().raw_allocs == 2, "{:?}", pool.stats());
    drop((b, e));
    Ok(())
}

/// A pool that is off (`KILN_GPU_POOL=off`): each buffer is a driver allocation of its own, of
/// its length rounded up to 16 bytes; its drop waits for its stream, then frees it.
fn pool_off_frees_to_the_driver() -> TestResult {
    let d = device()?;
    let pool = d.new_memory_pool_with(PoolMode::Off)?;
    let f = function(d, "spin")?;
    let s = Stream::non_blocking(d)?;
    let mut a = DeviceBuffer::alloc_in(&pool, &s, 100)?;
    let b = DeviceBuffer::alloc_in(&pool, &s, 100)?;
    ensure!(a.capacity() == 112, "capacity {}", a.capacity());
    ensure!(a.ptr() % 256 == 0, "misaligned {:#x}", a.ptr());
    a.copy_from_host(&noise(100, 4))?;
    ensure!(a.to_vec::<u8>()? == noise(100, 4), "data");
    ensure!(counts(&pool) == (224, 224, 0), "{:?}", counts(&pool));
    spin(&f, &s, 20_000_000)?;
    drop(a);
    ensure!(s.done()?, "the drop did not wait for its stream");
    ensure!(counts(&pool) == (112, 112, 0), "{:?}", counts(&pool));
    drop(b);
    pool.free_all_blocks(None);
    let stats = pool.stats();
    ensure!(
        (stats.total_bytes, stats.raw_allocs, stats.raw_frees, stats.reuses) == (0, 2, 2, 0),
        "{stats:?}"
    );
    Ok(())
}

/// A library handle is shared by every stream of its device (a cuFFT plan's work area,
/// cuBLAS's workspace are not per stream): a call on another stream than the handle's last
/// one waits for that stream's work, so the two never run at once.
fn libraries_wait_for_their_last_stream() -> TestResult {
    let d = device()?;
    let f = function(d, "spin")?;
    let (s1, s2) = (Stream::non_blocking(d)?, Stream::non_blocking(d)?);
    let per_ms = cycles_per_ms(&f, &s1)?;
    let n = 256;
    let x = DeviceBuffer::from_slice_on(&s1, &vec![1.0f32; n])?;
    let y = DeviceBuffer::from_slice_on(&s2, &vec![1.0f32; n])?;
    s2.synchronize()?;
    spin(&f, &s1, (per_ms * 200.0) as u64)?;
    for (stream, buffer, factor) in [(&s1, &x, 2.0), (&s2, &y, 3.0)] {
        let _current = stream.use_scoped();
        // SAFETY: the buffer holds n float32 of this device and lives until its stream has run
        // the call (both streams are synchronised below).
        match unsafe { crate::blas::scale(crate::blas::ScaleType::F32, n, factor, buffer.ptr()) } {
            Err(RuntimeError::Library(l)) if l.call == "libcublas" => return skip("no cuBLAS"),
            r => r?,
        }
    }
    if s1.done()? {
        return skip("the spin ended before the check (clock too fast?)");
    }
    s2.synchronize()?;
    ensure!(
        s1.done()?,
        "a cuBLAS call on a second stream ran while the handle's call on the first was queued"
    );
    ensure!(x.to_vec::<f32>()? == vec![2.0; n], "x scaled");
    ensure!(y.to_vec::<f32>()? == vec![3.0; n], "y scaled");
    Ok(())
}

fn copies_through_pinned_pool() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    let pinned = d.pinned_memory_pool()?;
    for (i, n) in
        [1usize, 511, 4096, STAGING_PIECE + 1, 5 * STAGING_PIECE + 123].into_iter().enumerate()
    {
        let data = noise(n, i as u64 + 7);
        let buffer = DeviceBuffer::from_slice_on(&s, &data)?;
        let back = buffer.to_vec::<u8>()?;
        ensure!(back == data, "{n} bytes did not round-trip");
        let pending = buffer.download_async(&s)?;
        ensure!(pending.wait_vec::<u8>()? == data, "{n} bytes: async download differs");
    }
    let held = pinned.stats();
    ensure!(held.used_bytes == 0, "staging blocks not returned: {held:?}");
    // An upload and the download after it may each hold their pieces in flight.
    let bound = 2 * (STAGING_IN_FLIGHT + 2) * STAGING_PIECE;
    ensure!(held.total_bytes <= bound, "pinned pool grew to {} bytes", held.total_bytes);
    // Many uploads queued without a synchronisation: staging stays bounded.
    let chunk = noise(STAGING_PIECE, 5);
    let mut targets = Vec::new();
    for _ in 0..(STAGING_UPLOADS_IN_FLIGHT + 8) {
        targets.push(DeviceBuffer::from_slice_on(&s, &chunk)?);
    }
    let queued = pinned.stats();
    let bound = (STAGING_UPLOADS_IN_FLIGHT + 2 * STAGING_IN_FLIGHT + 4) * STAGING_PIECE;
    ensure!(queued.total_bytes <= bound, "staging grew to {} bytes", queued.total_bytes);
    let last = targets.last().expect("uploads");
    ensure!(last.to_vec::<u8>()? == chunk, "queued uploads");
    drop(targets);
    let held = pinned.stats();
    // A second large upload reuses the staging blocks (the async download above held five
    // pieces at once, all completed now).
    let data = noise(5 * STAGING_PIECE, 99);
    let buffer = DeviceBuffer::from_slice_on(&s, &data)?;
    let again = pinned.stats();
    ensure!(
        again.raw_allocs == held.raw_allocs,
        "staging was allocated again: {held:?} -> {again:?}"
    );
    ensure!(buffer.to_vec::<u8>()? == data, "second transfer");
    // Typed copies, memset, device-to-device.
    let floats = ramp(100_003, 0.25);
    let mut x = DeviceBuffer::from_slice_on(&s, &floats)?;
    let mut y = DeviceBuffer::alloc_on(&s, floats.len() * 4)?;
    y.copy_from_device(&x, &s)?;
    ensure!(y.to_vec::<f32>()? == floats, "device-to-device copy");
    x.memset(0)?;
    ensure!(x.to_vec::<f32>()?.iter().all(|&v| v == 0.0), "memset");
    ensure!(
        matches!(x.copy_from_host(&vec![0u8; x.len() + 1]), Err(RuntimeError::InvalidArgument(_))),
        "a copy past the end was accepted"
    );
    Ok(())
}

fn pinned_buffers() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    let n = 3 * MIB + 5;
    let data = noise(n, 3);
    let mut src = PinnedBuffer::alloc(d, n)?;
    src.as_mut_slice().copy_from_slice(&data);
    let mut dev = DeviceBuffer::alloc_on(&s, n)?;
    dev.copy_from_pinned(&mut src, &s)?;
    // Writing the source waits for the copy: the device must see the old bytes.
    src.as_mut_slice().fill(0);
    let mut dst = PinnedBuffer::alloc(d, n)?;
    dev.copy_to_pinned(&mut dst, &s)?;
    ensure!(dst.as_slice() == &data[..], "pinned round trip");
    Ok(())
}

/// Streams hash as they compare (as CuPy's `Stream`): clones and the current stream are one
/// key, two streams two, the null stream another.
fn streams_hash() -> TestResult {
    use std::collections::HashSet;
    let d = device()?;
    let (s1, s2) = (Stream::non_blocking(d)?, Stream::non_blocking(d)?);
    let _current = s1.use_scoped();
    let set: HashSet<Stream> =
        [s1.clone(), s2.clone(), Stream::current()?, s1.clone()].into_iter().collect();
    ensure!(set.len() == 2, "{} streams in the set", set.len());
    ensure!(set.contains(&s2) && !set.contains(&Stream::null(d)?), "membership");
    Ok(())
}

fn events() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    let a = Event::new(d)?;
    ensure!(a.done()?, "an unrecorded event is not done");
    a.record(&s)?;
    let b = s.record()?;
    b.synchronize()?;
    ensure!(a.done()? && b.done()?, "synchronized events not done");
    let ms = elapsed_time(&a, &b)?;
    ensure!((0.0..1000.0).contains(&ms), "elapsed {ms} ms");
    let c = Event::with_flags(d, true, true)?;
    c.record(&s)?;
    s.wait_event(&c)?;
    ensure!(
        matches!(elapsed_time(&a, &c), Err(RuntimeError::InvalidArgument(_))),
        "timing a disable_timing event"
    );
    c.record_current()?;
    c.synchronize()?;
    Ok(())
}

fn vector_add_ptx() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    let f = function(d, "vadd")?;
    ensure!(f.max_threads_per_block()? >= 256, "max threads");
    ensure!(f.num_regs()? > 0, "registers");
    let n = 1_000_003usize;
    let (a, b) = (ramp(n, 1.0), ramp(n, 2.0));
    let da = DeviceBuffer::from_slice_on(&s, &a)?;
    let db = DeviceBuffer::from_slice_on(&s, &b)?;
    let dc = DeviceBuffer::alloc_on(&s, n * 4)?;
    let config = f.config_1d(n)?;
    ensure!(config.threads() >= n as u64, "{config:?}");
    let count = n as u32;
    // SAFETY: vadd(f32* a, f32* b, f32* c, u32 n) with n-element buffers.
    unsafe { f.launch_on(&s, config, &[&da, &db, &dc, &count])? };
    let c = dc.to_vec::<f32>()?;
    let wrong = (0..n).find(|&i| c[i] != a[i] + b[i]);
    ensure!(wrong.is_none(), "c[{0}] = {1}", wrong.unwrap_or(0), c[wrong.unwrap_or(0)]);
    ensure!(s.last_kernel().as_deref() == Some("vadd"), "last kernel");
    // On the current stream, through launch().
    let _g = s.use_scoped();
    // SAFETY: as above.
    unsafe { f.launch(config, &[&db, &da, &dc, &count])? };
    ensure!(dc.to_vec::<f32>()? == c, "launch on the current stream");
    Ok(())
}

fn module_cache_and_errors() -> TestResult {
    let d = device()?;
    let m1 = kernels(d)?;
    let m2 = kernels(d)?;
    ensure!(Arc::ptr_eq(&m1, &m2), "the same PTX was loaded twice");
    ensure!(d.cached_modules()? >= 1, "cache empty");
    let m3 = d.load_module_uncached("again", ModuleImage::Ptx(TEST_PTX))?;
    ensure!(!Arc::ptr_eq(&m1, &m3), "uncached load returned the cached module");
    match m1.function("no_such_kernel") {
        Err(RuntimeError::Kernel(e)) => {
            ensure!(e.kernel == "no_such_kernel" && e.stage == KernelStage::GetFunction, "{e}")
        }
        other => return Err(Failure::Fail(format!("missing kernel: {other:?}"))),
    }
    let bad =
        ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry broken() { bogus; }\n";
    match d.load_module("broken_module", ModuleImage::Ptx(bad)) {
        Err(RuntimeError::Kernel(e)) => {
            ensure!(e.kernel == "broken_module" && e.stage == KernelStage::Load, "{e}");
            ensure!(e.cuda.is_some(), "no CUDA error in {e}");
            let e = RuntimeError::Kernel(e).with_dump_path("/tmp/broken.ptx");
            ensure!(e.to_string().contains("/tmp/broken.ptx"), "{e}");
            println!("    (expected) {}", e.to_string().lines().next().unwrap_or(""));
        }
        other => return Err(Failure::Fail(format!("bad PTX loaded: {other:?}"))),
    }
    // Wrong arguments are refused before launching, naming the kernel.
    let f = m1.function("vadd")?;
    match f.param_sizes() {
        Some(sizes) => {
            ensure!(sizes == [8, 8, 8, 4], "vadd's parameters {sizes:?}");
            let n = 1u32;
            // SAFETY: refused before launching.
            match unsafe { f.launch(LaunchConfig::linear(1, 32), &[&n]) } {
                Err(RuntimeError::Kernel(e)) => {
                    ensure!(e.kernel == "vadd" && e.stage == KernelStage::Launch, "{e}")
                }
                other => return Err(Failure::Fail(format!("bad arguments: {other:?}"))),
            }
        }
        None => println!("    (cuFuncGetParamInfo unavailable: argument check off)"),
    }
    // A configuration CUDA refuses.
    let (x, y, z, n) = (DevicePtr(0), DevicePtr(0), DevicePtr(0), 0u32);
    // SAFETY: refused before launching.
    match unsafe { f.launch(LaunchConfig::linear(1, 2048), &[&x, &y, &z, &n]) } {
        Err(RuntimeError::Kernel(e)) => ensure!(e.stage == KernelStage::Launch, "{e}"),
        other => return Err(Failure::Fail(format!("2048-thread block: {other:?}"))),
    }
    // An empty grid launches nothing.
    // SAFETY: nothing runs.
    unsafe { f.launch(LaunchConfig::for_elements(0, 256)?, &[&x, &y, &z, &n])? };
    Ok(())
}

/// Images the driver would read past the end of (it takes no length) are refused before it
/// sees them: an empty one (a dangling pointer), a truncated ELF, bytes without a magic number
/// (read as PTX up to a NUL that is not there). The bad-input walk's `from_cubin` cases
/// segfaulted the process on an H200 before this check.
fn malformed_cubins_are_errors() -> TestResult {
    let d = device()?;
    for (case, bytes) in [
        ("empty", &b""[..]),
        ("truncated ELF", &b"\x7fELFgarbage"[..]),
        ("no magic", &b"garbage!"[..]),
    ] {
        match d.load_module_uncached(case, ModuleImage::Cubin(bytes)) {
            Err(RuntimeError::Kernel(e)) => {
                ensure!(e.stage == KernelStage::Load && e.kernel == case, "{case}: {e}")
            }
            other => return Err(Failure::Fail(format!("{case}: {other:?}"))),
        }
    }
    Ok(())
}

fn link_to_cubin() -> TestResult {
    let d = device()?;
    let cubin = link_ptx_to_cubin(d, "kiln_gpu_tests", TEST_PTX)?;
    ensure!(cubin.starts_with(b"\x7fELF"), "not an ELF cubin ({} bytes)", cubin.len());
    let m = d.load_module("kiln_gpu_tests_cubin", ModuleImage::Cubin(&cubin))?;
    let f = m.function("vadd")?;
    let s = Stream::non_blocking(d)?;
    let n = 4097usize;
    let a = DeviceBuffer::from_slice_on(&s, &ramp(n, 3.0))?;
    let c = DeviceBuffer::alloc_on(&s, n * 4)?;
    let count = n as u32;
    // SAFETY: vadd(a, a, c, n).
    unsafe { f.launch_on(&s, f.config_1d(n)?, &[&a, &a, &c, &count])? };
    ensure!(c.to_vec::<f32>()? == ramp(n, 6.0), "vadd from the cubin");
    match link_ptx_to_cubin(d, "broken", ".version 7.0\n.target sm_70\nnonsense\n") {
        Err(RuntimeError::Kernel(e)) => ensure!(e.stage == KernelStage::Link, "{e}"),
        other => return Err(Failure::Fail(format!("bad PTX linked: {other:?}"))),
    }
    Ok(())
}

/// A cubin kept in the disk cache loads and runs; a corrupted entry is a miss and is rebuilt.
fn disk_cache_cubin() -> TestResult {
    use crate::disk_cache::{CachedKernel, DiskCache, Lookup, MissReason};
    let d = device()?;
    let dir = tempfile::tempdir().map_err(|e| Failure::Fail(format!("temp dir: {e}")))?;
    let cache = DiskCache::new(dir.path());
    let key = format!("vadd for {}\n--\n{TEST_PTX}", d.sm_arch()?);
    ensure!(cache.lookup(&key) == Lookup::Miss(MissReason::Absent), "fresh cache hit");
    let entry = CachedKernel {
        ptx: TEST_PTX.to_owned(),
        cubin: link_ptx_to_cubin(d, "kiln_gpu_tests", TEST_PTX)?,
    };
    let path = cache.store(&key, &entry).map_err(|e| Failure::Fail(format!("store: {e}")))?;
    let mut bytes = std::fs::read(&path).map_err(|e| Failure::Fail(e.to_string()))?;
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&path, &bytes).map_err(|e| Failure::Fail(e.to_string()))?;
    ensure!(cache.lookup(&key) == Lookup::Miss(MissReason::Checksum), "corrupt entry not detected");
    cache.store(&key, &entry).map_err(|e| Failure::Fail(format!("store: {e}")))?;
    let Lookup::Hit(hit) = cache.lookup(&key) else {
        return Err(Failure::Fail("rebuilt entry missed".into()));
    };
    let m = d.load_module_uncached("kiln_disk_cache", ModuleImage::Cubin(&hit.cubin))?;
    let f = m.function("vadd")?;
    let s = Stream::non_blocking(d)?;
    let n = 1000usize;
    let a = DeviceBuffer::from_slice_on(&s, &ramp(n, 1.5))?;
    let c = DeviceBuffer::alloc_on(&s, n * 4)?;
    let count = n as u32;
    // SAFETY: vadd(a, a, c, n) with n-element buffers.
    unsafe { f.launch_on(&s, f.config_1d(n)?, &[&a, &a, &c, &count])? };
    ensure!(c.to_vec::<f32>()? == ramp(n, 3.0), "vadd from the cached cubin");
    Ok(())
}

fn grid_stride_fill() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    let f = function(d, "fill_u32")?;
    let n = 10_000_019usize;
    let config = f.config_1d_grid_stride(n)?;
    ensure!(
        config.grid.0 as u64 * config.block.0 as u64 <= n as u64 + config.block.0 as u64,
        "{config:?}"
    );
    let buffer = DeviceBuffer::alloc_on(&s, n * 4)?;
    let (count, base) = (n as u32, 1000u32);
    // SAFETY: fill_u32(u32* p, u32 n, u32 value) over an n-element buffer.
    unsafe { f.launch_on(&s, config, &[&buffer, &count, &base])? };
    let v = buffer.to_vec::<u32>()?;
    let wrong = (0..n).find(|&i| v[i] != base + i as u32);
    ensure!(wrong.is_none(), "p[{}] wrong ({config:?})", wrong.unwrap_or(0));
    Ok(())
}

/// Two spin kernels on two non-blocking streams overlap: the whole takes less than the sum.
fn streams_overlap() -> TestResult {
    if under_sanitizer() {
        return skip("timing (the sanitizer serialises kernels)");
    }
    let d = device()?;
    let f = function(d, "spin")?;
    let (s1, s2) = (Stream::non_blocking(d)?, Stream::non_blocking(d)?);
    let per_ms = cycles_per_ms(&f, &s1)?;
    let cycles = (per_ms * 50.0) as u64;
    let start = s1.record()?;
    s2.wait_event(&start)?;
    let (a0, b0) = (s1.record()?, s2.record()?);
    spin(&f, &s1, cycles)?;
    spin(&f, &s2, cycles)?;
    let (a1, b1) = (s1.record()?, s2.record()?);
    s1.wait_event(&b1)?;
    let end = s1.record()?;
    end.synchronize()?;
    let (ta, tb) = (elapsed_time(&a0, &a1)?, elapsed_time(&b0, &b1)?);
    let total = elapsed_time(&start, &end)?;
    println!("    spins {ta:.1} ms and {tb:.1} ms; both together {total:.1} ms");
    // 50 ms asked; clocks may change after the calibration.
    ensure!(ta > 20.0 && tb > 20.0, "spins too short: {ta} and {tb} ms");
    ensure!(total < 0.75 * (ta + tb), "no overlap: {total} ms for {ta} + {tb} ms");
    Ok(())
}

/// `elapsed_time` agrees with the host's clock on a 50 ms kernel.
fn elapsed_time_matches_host() -> TestResult {
    if under_sanitizer() {
        return skip("timing (sanitizer)");
    }
    let d = device()?;
    let f = function(d, "spin")?;
    let s = Stream::non_blocking(d)?;
    let per_ms = cycles_per_ms(&f, &s)?;
    s.synchronize()?;
    let host = Instant::now();
    let a = s.record()?;
    spin(&f, &s, (per_ms * 50.0) as u64)?;
    let b = s.record()?;
    b.synchronize()?;
    let host_ms = host.elapsed().as_secs_f64() * 1e3;
    let gpu_ms = elapsed_time(&a, &b)? as f64;
    println!("    events {gpu_ms:.2} ms, host {host_ms:.2} ms");
    ensure!(gpu_ms > 20.0, "the spin took {gpu_ms} ms");
    ensure!(
        host_ms >= gpu_ms - 0.5 && host_ms - gpu_ms < (0.1 * gpu_ms).max(5.0),
        "events {gpu_ms} ms vs host {host_ms} ms"
    );
    Ok(())
}

fn profile_and_nvtx() -> TestResult {
    let _p = crate::profile()?;
    {
        let _r = crate::range("kiln gpu test");
        let _c = crate::range_colored("kiln gpu test (colored)", 0xff00_80ff);
        crate::mark("kiln mark");
        let d = device()?;
        d.synchronize()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine without a GPU every test is skipped, none fails.
    #[test]
    fn gpu_tests_skip_without_a_gpu() {
        let (passed, failed, skipped) = run_all();
        assert_eq!(failed, 0);
        if !cuda_available() {
            assert_eq!((passed, skipped), (0, tests().len()));
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = tests().iter().map(|t| t.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    /// The test kernels assemble for sm_90 when NVIDIA's ptxas is at hand
    /// ([`crate::ptxas_path`]; `pip install nvidia-cuda-nvcc` has one); skipped otherwise.
    #[test]
    fn test_ptx_assembles() {
        let Some(ptxas) = crate::ptxas_path() else {
            eprintln!("ptxas not found: skipped");
            return;
        };
        let dir = std::env::temp_dir().join(format!("kiln-ptx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("kernels.ptx");
        std::fs::write(&src, TEST_PTX).unwrap();
        let out = std::process::Command::new(ptxas)
            .args(["-arch=sm_90", "-o"])
            .arg(dir.join("kernels.cubin"))
            .arg(&src)
            .output();
        let _ = std::fs::remove_dir_all(&dir);
        match out {
            Ok(out) => {
                assert!(out.status.success(), "ptxas: {}", String::from_utf8_lossy(&out.stderr))
            }
            Err(e) => eprintln!("{} did not start ({e}): skipped", ptxas.display()),
        }
    }
}
