//! Uploads of a few aligned words (a draw's counter offset, a 0-d array), written by stream
//! memory operations or memsets of their values: queued without staging, an event or a wait
//! (`KILN_GPU_SMALL_UPLOAD`).

use cudarc::driver::sys;

use crate::disk_cache::config::SmallUpload;
use crate::error::{check, Result};
use crate::stream::Stream;

/// Writes `src` to device address `dst` on `stream` as words, where it is a small upload;
/// `false` (nothing queued) where it is not.
///
/// # Safety
/// As [`super::upload`]: `dst..dst + src.len()` must be device memory of the stream's device
/// that nothing else writes meanwhile.
pub(super) unsafe fn upload(stream: &Stream, dst: u64, src: &[u8]) -> Result<bool> {
    let Some((mode, words)) = small_upload_words(dst, src) else {
        return Ok(false);
    };
    // A few aligned words (a draw's counter offset, a 0-d array) are written by stream
    // memory operations or memsets of their values: queued without staging, an event or a
    // wait (a pinned piece cost ~10 µs of the host's time a call on an H200, a memset of a
    // word ~2.5 µs on an H100's host).
    let state = stream.state();
    let _bound = state.bind()?;
    let write64 = mode == SmallUpload::Write && stream_write64(state);
    let mut i = 0;
    while i < words.len() {
        let at = dst + 4 * i as u64;
        let value = || u64::from(words[i + 1]) << 32 | u64::from(words[i]);
        // SAFETY: an 8-byte-aligned word inside the caller's range; the write is ordered on
        // the stream after its earlier work (default flags: with a fence). A refused write
        // queues nothing: its words are then memsets (the driver refused some writes on the
        // null stream in the suite's parallel tests, CUDA_ERROR_INVALID_VALUE, on an H200,
        // while the same writes of kiln-bench were taken).
        if write64
            && at % 8 == 0
            && i + 1 < words.len()
            && unsafe { sys::cuStreamWriteValue64_v2(stream.raw(), at, value(), 0) }
                == sys::CUresult::CUDA_SUCCESS
        {
            i += 2;
        } else {
            // SAFETY: a 4-byte-aligned word inside the caller's range.
            check("cuMemsetD32Async", unsafe {
                sys::cuMemsetD32Async(at, words[i], 1, stream.raw()).result()
            })?;
            i += 1;
        }
    }
    Ok(true)
}

/// Uploads of at most this many bytes, whole 4-byte words to a 4-byte-aligned address, are
/// written word by word ([`upload`]).
pub const SMALL_UPLOAD: usize = 16;

/// How [`upload`] writes `src` and its 32-bit words (little-endian, as the device stores
/// them), where it writes them one by one: short enough, whole words, aligned, and
/// `KILN_GPU_SMALL_UPLOAD` not off.
pub(super) fn small_upload_words(dst: u64, src: &[u8]) -> Option<(SmallUpload, Vec<u32>)> {
    let fits = src.len() <= SMALL_UPLOAD && src.len() % 4 == 0 && dst % 4 == 0;
    let mode = kiln_cache::config().gpu_small_upload;
    (fits && mode != SmallUpload::Off).then(|| {
        (mode, src.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect())
    })
}

/// Whether `state`'s device takes `cuStreamWriteValue64` (asked once).
fn stream_write64(state: &crate::device::DeviceState) -> bool {
    *state.stream_write64.get_or_init(|| {
        use sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS as ATTR;
        // SAFETY: a valid device handle.
        let on = unsafe { cudarc::driver::result::device::get_attribute(state.cu_device, ATTR) };
        on.is_ok_and(|v| v != 0)
    })
}
