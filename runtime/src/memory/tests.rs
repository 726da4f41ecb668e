//! Unit tests of the memory module that need no GPU.

use super::*;

#[test]
fn staging_pieces() {
    assert_eq!(pieces(0).count(), 0);
    assert_eq!(pieces(5).collect::<Vec<_>>(), [(0, 5)]);
    let n = 2 * STAGING_PIECE + 3;
    assert_eq!(
        pieces(n).collect::<Vec<_>>(),
        [(0, STAGING_PIECE), (STAGING_PIECE, STAGING_PIECE), (2 * STAGING_PIECE, 3)]
    );
}

#[test]
fn meminfo() {
    let text = "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   22000000 kB\n";
    assert_eq!(parse_meminfo(text), (22_000_000 * 1024, 24_000_000 * 1024));
    assert_eq!(parse_meminfo(""), (0, 0));
    let (avail, total) = host_mem_info();
    assert!(avail <= total);
}

#[test]
fn byte_views() {
    let mut v = [1u32, 2];
    assert_eq!(bytes_of(&v), [1, 0, 0, 0, 2, 0, 0, 0]);
    bytes_of_mut(&mut v)[4] = 7;
    assert_eq!(v, [1, 7]);
}

#[test]
fn buffers_need_a_driver() {
    if crate::cuda_available() {
        return;
    }
    assert!(matches!(DeviceBuffer::alloc(16), Err(RuntimeError::DeviceUnavailable { .. })));
    assert!(DeviceBuffer::from_slice(&[1.0f32]).is_err());
}

#[test]
fn small_uploads_are_aligned_whole_words() {
    let words = |dst: u64, src: &[u8]| super::small::small_upload_words(dst, src).map(|(_, w)| w);
    // A u64 (a draw's counter offset) as its two little-endian words.
    let v = 0x0123_4567_89ab_cdefu64.to_le_bytes();
    assert_eq!(words(512, &v), Some(vec![0x89ab_cdef, 0x0123_4567]));
    assert_eq!(words(4, &[1, 0, 0, 0]), Some(vec![1]));
    assert_eq!(words(0, &[0xff; SMALL_UPLOAD]).map(|w| w.len()), Some(SMALL_UPLOAD / 4));
    // Not whole words, not aligned, or too long: staged.
    assert_eq!(words(0, &[1, 2, 3]), None);
    assert_eq!(words(2, &[1, 2, 3, 4]), None);
    assert_eq!(words(0, &[0; SMALL_UPLOAD + 4]), None);
}
