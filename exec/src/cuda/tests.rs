//! The CUDA executor's size arithmetic, without a GPU.

use kiln_ir::DType;

use super::device_bytes;

/// Bytes of arrays that fit are their elements' bytes; an empty array is 0 bytes whatever its
/// other extents.
#[test]
fn device_bytes_of_arrays_that_fit() {
    assert_eq!(device_bytes(DType::Float32, &[2, 3]), 24);
    assert_eq!(device_bytes(DType::Complex128, &[]), 16);
    assert_eq!(device_bytes(DType::Bool, &[7]), 7);
    assert_eq!(device_bytes(DType::Float32, &[1 << 60]), 1 << 62);
    assert_eq!(device_bytes(DType::Int64, &[1 << 62, 1 << 62, 0]), 0);
    assert_eq!(device_bytes(DType::Int8, &[0, usize::MAX]), 0);
}

/// Counts that overflow (`arange(2**62)` of int64: 2^65 bytes, which wrapped to 0) or pass
/// `isize::MAX` saturate to `usize::MAX`, a size the pool refuses as out of memory (its rounding
/// overflows: the pool's own tests), so no kernel is launched over a block too small for it.
#[test]
fn device_bytes_that_overflow_saturate() {
    for (dtype, shape) in [
        (DType::Int64, vec![1usize << 62]),
        (DType::Float32, vec![1 << 32, 1 << 32]),
        (DType::Float64, vec![1 << 31, 1 << 31, 4]),
        (DType::UInt8, vec![usize::MAX, 2]),
        (DType::Float32, vec![1 << 61]),
    ] {
        assert_eq!(device_bytes(dtype, &shape), usize::MAX, "{dtype} {shape:?}");
    }
    // isize::MAX + 1 bytes exactly: no allocation can hold it either.
    assert_eq!(device_bytes(DType::UInt8, &[1 << 63]), usize::MAX);
    assert_eq!(device_bytes(DType::UInt8, &[(1 << 63) - 1]), (1 << 63) - 1);
}
