//! GPU tests of small uploads (stream writes and memsets of their words, `memory::upload`).

use super::{device, noise, Failure, GpuTest, TestResult};
use crate::{DeviceBuffer, Stream};

/// The tests of this module.
pub fn tests() -> Vec<GpuTest> {
    vec![GpuTest { name: "small_uploads_as_memsets", run: small_uploads_as_memsets }]
}

/// Uploads of a few aligned words (memsets of their words) and the sizes around them (staged)
/// land in stream order: each overwrites what a kernel-free queue wrote before it.
fn small_uploads_as_memsets() -> TestResult {
    let d = device()?;
    let s = Stream::non_blocking(d)?;
    for n in [1usize, 3, 4, 5, 8, 12, 15, 16, 17, 20, 64] {
        let mut b = DeviceBuffer::alloc_on(&s, n)?;
        for seed in 0..3u64 {
            let data = noise(n, 31 * n as u64 + seed);
            b.copy_from_host_on(&data, &s)?;
            ensure!(b.to_vec::<u8>()? == data, "{n} bytes (seed {seed}) did not round-trip");
        }
        // Queued back to back without a wait: the last one wins.
        let (first, last) = (noise(n, 1000 + n as u64), noise(n, 2000 + n as u64));
        b.copy_from_host_on(&first, &s)?;
        b.copy_from_host_on(&last, &s)?;
        ensure!(b.to_vec::<u8>()? == last, "{n} bytes: queued uploads out of order");
    }
    // A typed 0-d value (a u64 counter offset) reads back as itself.
    let mut w = DeviceBuffer::alloc_on(&s, 8)?;
    w.copy_from_host_on(&[0x0123_4567_89ab_cdefu64], &s)?;
    ensure!(w.to_vec::<u64>()? == vec![0x0123_4567_89ab_cdefu64], "a u64 did not round-trip");
    Ok(())
}
