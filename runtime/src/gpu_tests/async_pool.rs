//! GPU tests of the stream-ordered pool (`cuMemAllocAsync`, CuPy's `MemoryAsyncPool`; issue 23
//! §4): allocations on their streams, the driver pool's figures, frees that do not wait, the
//! run-time switch (`set_async_pool`) and trimming.

use super::{cycles_per_ms, device, function, noise, spin, Failure, GpuTest, TestResult};
use crate::{DeviceBuffer, PoolMode, Stream};

/// The tests of this module.
pub fn tests() -> Vec<GpuTest> {
    macro_rules! list {
        ($($name:ident),* $(,)?) => { vec![$(GpuTest { name: stringify!($name), run: $name }),*] };
    }
    list![async_pool_allocates_on_streams, async_pool_frees_do_not_wait, async_pool_switch_and_trim]
}

/// A block is a driver allocation of its size rounded to 16 bytes, 256-byte aligned, holding
/// data; the figures are the driver pool's, and fall back once the free has run.
fn async_pool_allocates_on_streams() -> TestResult {
    let d = device()?;
    let pool = d.async_memory_pool()?;
    ensure!(pool.mode() == PoolMode::Async, "mode {:?}", pool.mode());
    let s = Stream::non_blocking(d)?;
    s.synchronize()?;
    let before = pool.stats();
    let mut a = DeviceBuffer::alloc_in(&pool, &s, 1000)?;
    ensure!(a.capacity() == 1008, "capacity {}", a.capacity());
    ensure!(a.ptr() % 256 == 0, "misaligned {:#x}", a.ptr());
    a.copy_from_host(&noise(1000, 9))?;
    ensure!(a.to_vec::<u8>()? == noise(1000, 9), "data");
    let during = pool.stats();
    ensure!(during.used_bytes >= before.used_bytes + 1008, "{before:?} then {during:?}");
    ensure!(during.total_bytes >= during.used_bytes, "{during:?}");
    ensure!(during.raw_allocs == before.raw_allocs + 1, "{during:?}");
    drop(a);
    s.synchronize()?;
    let after = pool.stats();
    ensure!(after.used_bytes == before.used_bytes, "{before:?} then {after:?}");
    ensure!(after.raw_frees == before.raw_frees + 1, "{after:?}");
    Ok(())
}

/// A free on a busy stream returns at once (`cuMemFreeAsync`, no host wait), and memory freed
/// there serves later allocations of either stream, with their data intact.
fn async_pool_frees_do_not_wait() -> TestResult {
    let d = device()?;
    let pool = d.async_memory_pool()?;
    let f = function(d, "spin")?;
    let (s1, s2) = (Stream::non_blocking(d)?, Stream::non_blocking(d)?);
    let per_ms = cycles_per_ms(&f, &s1)?;
    let a = DeviceBuffer::alloc_in(&pool, &s1, 1 << 20)?;
    spin(&f, &s1, (per_ms * 200.0) as u64)?;
    drop(a);
    ensure!(!s1.done()?, "the free waited for its stream");
    let mut b = DeviceBuffer::alloc_in(&pool, &s2, 1 << 20)?;
    let mut c = DeviceBuffer::alloc_in(&pool, &s1, 1 << 20)?;
    b.copy_from_host(&noise(1 << 20, 1))?;
    c.copy_from_host(&noise(1 << 20, 2))?;
    ensure!(b.to_vec::<u8>()? == noise(1 << 20, 1), "data on the other stream");
    ensure!(c.to_vec::<u8>()? == noise(1 << 20, 2), "data on the freeing stream");
    Ok(())
}

/// `set_async_pool` switches the device's new buffers to the stream-ordered pool and back;
/// `free_all_blocks` trims the driver pool to what is in use.
fn async_pool_switch_and_trim() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    crate::set_async_pool(d, true)?;
    let on = DeviceBuffer::alloc_on(&s, 1000);
    let in_use = crate::async_pool_in_use(d);
    crate::set_async_pool(d, false)?;
    let on = on?;
    ensure!(in_use?, "not in use after set_async_pool(true)");
    ensure!(on.capacity() == 1008, "a stream-ordered block rounds to 16: {}", on.capacity());
    let off = DeviceBuffer::alloc_on(&s, 1000)?;
    ensure!(!crate::async_pool_in_use(d)?, "still in use after set_async_pool(false)");
    ensure!(off.capacity() == 1024, "the caching pool rounds to 512: {}", off.capacity());
    drop((on, off));
    let pool = d.async_memory_pool()?;
    let big = DeviceBuffer::alloc_in(&pool, &s, 64 << 20)?;
    drop(big);
    pool.free_all_blocks(None);
    let stats = pool.stats();
    ensure!(stats.total_bytes <= stats.used_bytes + (2 << 20), "not trimmed: {stats:?}");
    Ok(())
}
