//! GPU tests of CuPy's stream API beyond the basics (issue 23 §4): nested scopes, priorities,
//! host functions, streams made by another library, CUDA Graph capture; and a user allocator
//! under the memory pool (`set_allocator`).

use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::{device, function, ramp, Failure, GpuTest, TestResult};
use crate::{CaptureMode, DeviceBuffer, LaunchConfig, RuntimeError, Stream};

/// The tests of this module.
pub fn tests() -> Vec<GpuTest> {
    macro_rules! list {
        ($($name:ident),* $(,)?) => { vec![$(GpuTest { name: stringify!($name), run: $name }),*] };
    }
    list![
        nested_stream_scopes,
        stream_priorities,
        host_functions_run_in_stream_order,
        external_streams_are_not_destroyed,
        graph_capture_and_replay,
        user_allocator_under_the_pool,
    ]
}

/// Nested `use_scoped` scopes restore what was current when each began, in order or not.
fn nested_stream_scopes() -> TestResult {
    let d = device()?;
    let null = Stream::null(d)?;
    let (s1, s2) = (Stream::non_blocking(d)?, Stream::non_blocking(d)?);
    {
        let _g1 = s1.use_scoped();
        {
            let _g2 = s2.use_scoped();
            ensure!(Stream::current()? == s2, "inner scope");
        }
        ensure!(Stream::current()? == s1, "the inner scope's end left {:?}", Stream::current()?);
    }
    ensure!(Stream::current()? == null, "the outer scope's end left {:?}", Stream::current()?);
    let g1 = s1.use_scoped();
    let g2 = s2.use_scoped();
    drop(g1);
    ensure!(Stream::current()? == s2, "an outer guard dropped first changed the stream");
    drop(g2);
    ensure!(Stream::current()? == null, "out of order: left {:?}", Stream::current()?);
    Ok(())
}

/// A stream made with a priority reports it; the default is the least urgent.
fn stream_priorities() -> TestResult {
    let d = device()?;
    let (least, greatest) = Stream::priority_range(d)?;
    ensure!(greatest <= least, "range ({least}, {greatest})");
    ensure!(Stream::non_blocking(d)?.priority()? == least, "default priority");
    let urgent = Stream::with_priority(d, true, greatest)?;
    ensure!(urgent.priority()? == greatest, "priority {} for {greatest}", urgent.priority()?);
    Ok(())
}

/// Host functions run after the work before them, in order, and once.
fn host_functions_run_in_stream_order() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    let f = function(d, "fill_u32")?;
    let n = 1 << 20;
    let buf = DeviceBuffer::alloc_on(&s, n * 4)?;
    let log = Arc::new(Mutex::new(Vec::new()));
    let (n32, value) = (n as u32, 7u32);
    // SAFETY: fill_u32(u32* p, u32 n, u32 value) over a buffer of n u32.
    unsafe { f.launch_on(&s, LaunchConfig::for_elements(n, 256)?, &[&buf, &n32, &value])? };
    let l = log.clone();
    s.launch_host_func(move || l.lock().expect("the log").push(1))?;
    let l = log.clone();
    s.launch_host_func(move || l.lock().expect("the log").push(2))?;
    s.synchronize()?;
    ensure!(*log.lock().expect("the log") == [1, 2], "ran {:?}", log.lock().expect("the log"));
    let filled = buf.to_vec::<u32>()?;
    ensure!(
        (0..n).all(|i| filled[i] == 7 + i as u32),
        "the fill before them (fill_u32 writes value + i)"
    );
    Ok(())
}

/// A stream another library made is used and left alive.
fn external_streams_are_not_destroyed() -> TestResult {
    let d = device()?;
    let _current = d.use_scoped()?;
    let mut raw: sys::CUstream = std::ptr::null_mut();
    // SAFETY: an out-pointer to a local; the device's primary context is current.
    crate::error::check_raw("cuStreamCreate", unsafe {
        sys::cuStreamCreate(&mut raw, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
    })?;
    let result = (|| -> TestResult {
        // SAFETY: `raw` lives until the end of this test, past every use of the wrapper.
        let s = unsafe { Stream::from_external(d, raw as usize)? };
        ensure!(!s.is_owned() && s.kind() == crate::StreamKind::NonBlocking, "{s:?}");
        let f = function(d, "vadd")?;
        let n = 1000usize;
        let (a, b) = (ramp(n, 1.0), ramp(n, 3.0));
        let da = DeviceBuffer::from_slice_on(&s, &a)?;
        let db = DeviceBuffer::from_slice_on(&s, &b)?;
        let dc = DeviceBuffer::alloc_on(&s, n * 4)?;
        let count = n as u32;
        // SAFETY: vadd over n-element buffers.
        unsafe { f.launch_on(&s, f.config_1d(n)?, &[&da, &db, &dc, &count])? };
        ensure!(dc.to_vec::<f32>()?[10] == a[10] + b[10], "vadd on the external stream");
        drop((da, db, dc, s));
        // SAFETY: the stream is still ours and alive.
        let status = unsafe { sys::cuStreamQuery(raw) };
        ensure!(
            status == sys::CUresult::CUDA_SUCCESS,
            "the external stream after the wrapper: {status:?}"
        );
        Ok(())
    })();
    // SAFETY: made above, destroyed once, after its wrappers.
    let _ = unsafe { sys::cuStreamDestroy_v2(raw) };
    result
}

/// Work captured on a stream runs only when the graph launches, and again at each launch,
/// reading the buffers' current contents.
fn graph_capture_and_replay() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    let vadd = function(d, "vadd")?;
    let n = 4096usize;
    let (a, b) = (ramp(n, 1.0), ramp(n, 2.0));
    let mut da = DeviceBuffer::from_slice_on(&s, &a)?;
    let db = DeviceBuffer::from_slice_on(&s, &b)?;
    let mut dc = DeviceBuffer::alloc_on(&s, n * 4)?;
    dc.memset(0)?;
    s.synchronize()?;
    let count = n as u32;
    let config = vadd.config_1d(n)?;
    match Stream::null(d)?.begin_capture(CaptureMode::Relaxed) {
        Err(RuntimeError::InvalidArgument(_)) => {}
        other => return Err(Failure::Fail(format!("capturing the null stream: {other:?}"))),
    }
    ensure!(!s.is_capturing()?, "capturing before begin_capture");
    s.begin_capture(CaptureMode::Relaxed)?;
    ensure!(s.is_capturing()?, "not capturing after begin_capture");
    // c = a + b, then c = b + c: two kernel nodes.
    // SAFETY: vadd over n-element buffers allocated before the capture.
    unsafe {
        vadd.launch_on(&s, config, &[&da, &db, &dc, &count])?;
        vadd.launch_on(&s, config, &[&db, &dc, &dc, &count])?;
    }
    let graph = s.end_capture()?;
    ensure!(!s.is_capturing()?, "capturing after end_capture");
    ensure!(graph.node_count() == 2, "{} nodes", graph.node_count());
    ensure!(dc.to_vec::<f32>()?.iter().all(|&v| v == 0.0), "captured work ran before the launch");
    graph.upload(&s)?;
    graph.launch(&s)?;
    s.synchronize()?;
    let c = dc.to_vec::<f32>()?;
    ensure!((0..n).all(|i| c[i] == a[i] + 2.0 * b[i]), "first replay: c[1] = {}", c[1]);
    // A new `a` is read by the next replay.
    let a2 = ramp(n, 10.0);
    da.copy_from_host_on(&a2, &s)?;
    graph.launch(&s)?;
    s.synchronize()?;
    let c = dc.to_vec::<f32>()?;
    ensure!((0..n).all(|i| c[i] == a2[i] + 2.0 * b[i]), "second replay: c[1] = {}", c[1]);
    ensure!(s.end_capture().is_err(), "end_capture without a capture");
    Ok(())
}

/// `cuMemAlloc` with counts.
#[derive(Default)]
struct Counting {
    allocs: std::sync::atomic::AtomicUsize,
    frees: std::sync::atomic::AtomicUsize,
}

impl crate::pool::RawAllocator for Counting {
    fn alloc(&self, bytes: usize) -> Result<u64, crate::pool::AllocError> {
        self.allocs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // SAFETY: a plain allocation; the device's context is current (set_allocator's rule).
        unsafe { cudarc::driver::result::malloc_sync(bytes) }
            .map_err(|e| crate::pool::AllocError::Failed(RuntimeError::Driver(format!("{e:?}"))))
    }
    fn free(&self, ptr: u64, _bytes: usize) {
        self.frees.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // SAFETY: allocated above, freed once, after its last use.
        let _ = unsafe { cudarc::driver::result::free_sync(ptr) };
    }
    fn mem_info(&self) -> (usize, usize) {
        (0, 0)
    }
}

/// A pool's new blocks come from the allocator `set_allocator` gave, and go back to it, also
/// after the device's allocator was reset.
fn user_allocator_under_the_pool() -> TestResult {
    use std::sync::atomic::Ordering::SeqCst;
    let d = device()?;
    let counting = Arc::new(Counting::default());
    crate::set_allocator(d, Some(counting.clone()))?;
    ensure!(crate::get_allocator(d).is_some(), "get_allocator after set_allocator");
    let pool = d.new_memory_pool()?;
    let s = Stream::non_blocking(d)?;
    let result = (|| -> TestResult {
        let mut b = DeviceBuffer::alloc_in(&pool, &s, 1 << 20)?;
        ensure!(counting.allocs.load(SeqCst) == 1, "{} allocations", counting.allocs.load(SeqCst));
        b.copy_from_host_on(&[3u32; 4], &s)?;
        ensure!(b.to_vec::<u32>()?[..4] == [3; 4], "the memory works");
        crate::set_allocator(d, None)?;
        drop(b);
        s.synchronize()?;
        pool.free_all_blocks(None);
        ensure!(
            counting.frees.load(SeqCst) == 1,
            "{} frees by the allocator that made it",
            counting.frees.load(SeqCst)
        );
        let _c = DeviceBuffer::alloc_in(&pool, &s, 1 << 20)?;
        ensure!(
            counting.allocs.load(SeqCst) == 1,
            "an allocation after the reset went to the user allocator"
        );
        Ok(())
    })();
    crate::set_allocator(d, None)?;
    result
}
