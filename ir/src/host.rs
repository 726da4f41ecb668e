//! Materialised arrays in host memory: C-contiguous, typed storage.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

use crate::dtype::{DType, Element};
use crate::error::{IrError, Result};
use crate::shape::{numel, Shape, ShapeDisplay};

/// Typed element storage, one variant per dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Bool(Vec<bool>),
    Int8(Vec<i8>),
    Int16(Vec<i16>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    UInt8(Vec<u8>),
    UInt16(Vec<u16>),
    UInt32(Vec<u32>),
    UInt64(Vec<u64>),
    Float16(Vec<f16>),
    BFloat16(Vec<bf16>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Complex64(Vec<Complex32>),
    Complex128(Vec<Complex64>),
}

/// Calls `$body` with `$v` bound to the typed vector inside a [`Data`].
#[macro_export]
macro_rules! with_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            $crate::host::Data::Bool($v) => $body,
            $crate::host::Data::Int8($v) => $body,
            $crate::host::Data::Int16($v) => $body,
            $crate::host::Data::Int32($v) => $body,
            $crate::host::Data::Int64($v) => $body,
            $crate::host::Data::UInt8($v) => $body,
            $crate::host::Data::UInt16($v) => $body,
            $crate::host::Data::UInt32($v) => $body,
            $crate::host::Data::UInt64($v) => $body,
            $crate::host::Data::Float16($v) => $body,
            $crate::host::Data::BFloat16($v) => $body,
            $crate::host::Data::Float32($v) => $body,
            $crate::host::Data::Float64($v) => $body,
            $crate::host::Data::Complex64($v) => $body,
            $crate::host::Data::Complex128($v) => $body,
        }
    };
}

/// Conversion between a Rust element type's `Vec` and [`Data`].
pub trait HostElement: Element {
    fn into_data(v: Vec<Self>) -> Data;
    fn slice_of(d: &Data) -> Option<&[Self]>;
}

macro_rules! host_element {
    ($($t:ty => $var:ident),* $(,)?) => {$(
        impl HostElement for $t {
            fn into_data(v: Vec<Self>) -> Data { Data::$var(v) }
            fn slice_of(d: &Data) -> Option<&[Self]> {
                match d { Data::$var(v) => Some(v), _ => None }
            }
        }
    )*};
}
host_element!(
    bool => Bool, i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => UInt8, u16 => UInt16, u32 => UInt32, u64 => UInt64,
    f16 => Float16, bf16 => BFloat16, f32 => Float32, f64 => Float64,
    Complex32 => Complex64, Complex64 => Complex128,
);

impl Data {
    pub fn dtype(&self) -> DType {
        match self {
            Data::Bool(_) => DType::Bool,
            Data::Int8(_) => DType::Int8,
            Data::Int16(_) => DType::Int16,
            Data::Int32(_) => DType::Int32,
            Data::Int64(_) => DType::Int64,
            Data::UInt8(_) => DType::UInt8,
            Data::UInt16(_) => DType::UInt16,
            Data::UInt32(_) => DType::UInt32,
            Data::UInt64(_) => DType::UInt64,
            Data::Float16(_) => DType::Float16,
            Data::BFloat16(_) => DType::BFloat16,
            Data::Float32(_) => DType::Float32,
            Data::Float64(_) => DType::Float64,
            Data::Complex64(_) => DType::Complex64,
            Data::Complex128(_) => DType::Complex128,
        }
    }

    pub fn len(&self) -> usize {
        with_data!(self, v => v.len())
    }

    /// The elements' bytes (little-endian; booleans one byte, 0 or 1), borrowed.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: every element type (bool, integers, f16/bf16, floats, complex of floats) is
        // plain data without padding, so the vector's memory is `len * itemsize` initialised
        // bytes, borrowed for as long as `self`.
        with_data!(self, v => unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice()))
        })
    }

    /// Typed elements from little-endian bytes, `bytes.len() / itemsize` of them (booleans:
    /// any nonzero byte is true).
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Data {
        if dtype == DType::Bool {
            return Data::Bool(bytes.iter().map(|&b| b != 0).collect());
        }
        let mut data = Data::zeros(dtype, bytes.len() / dtype.itemsize());
        with_data!(&mut data, v => {
            // SAFETY: every dtype but bool (handled above) is plain data with every bit
            // pattern valid and no padding: the vector's `size_of_val` bytes, which `bytes`
            // holds (its length rounded down to whole elements).
            let dst = unsafe {
                std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice()))
            };
            dst.copy_from_slice(&bytes[..dst.len()]);
        });
        data
    }

    /// [`Data::zeros`], or `None` where the allocator refuses the memory (an array far
    /// beyond memory), which [`Data::zeros`] would abort the process on.
    pub fn try_zeros(dtype: DType, n: usize) -> Option<Data> {
        // SAFETY: the all-zero bits of every dtype's element are its zero (false, 0, +0.0,
        // a complex zero).
        unsafe {
            Some(match dtype {
                DType::Bool => Data::Bool(try_zeroed_vec(n)?),
                DType::Int8 => Data::Int8(try_zeroed_vec(n)?),
                DType::Int16 => Data::Int16(try_zeroed_vec(n)?),
                DType::Int32 => Data::Int32(try_zeroed_vec(n)?),
                DType::Int64 => Data::Int64(try_zeroed_vec(n)?),
                DType::UInt8 => Data::UInt8(try_zeroed_vec(n)?),
                DType::UInt16 => Data::UInt16(try_zeroed_vec(n)?),
                DType::UInt32 => Data::UInt32(try_zeroed_vec(n)?),
                DType::UInt64 => Data::UInt64(try_zeroed_vec(n)?),
                DType::Float16 => Data::Float16(try_zeroed_vec(n)?),
                DType::BFloat16 => Data::BFloat16(try_zeroed_vec(n)?),
                DType::Float32 => Data::Float32(try_zeroed_vec(n)?),
                DType::Float64 => Data::Float64(try_zeroed_vec(n)?),
                DType::Complex64 => Data::Complex64(try_zeroed_vec(n)?),
                DType::Complex128 => Data::Complex128(try_zeroed_vec(n)?),
            })
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `n` zeros (false, 0, +0.0) of `dtype`.
    pub fn zeros(dtype: DType, n: usize) -> Data {
        match dtype {
            DType::Bool => Data::Bool(vec![false; n]),
            DType::Int8 => Data::Int8(vec![0; n]),
            DType::Int16 => Data::Int16(vec![0; n]),
            DType::Int32 => Data::Int32(vec![0; n]),
            DType::Int64 => Data::Int64(vec![0; n]),
            DType::UInt8 => Data::UInt8(vec![0; n]),
            DType::UInt16 => Data::UInt16(vec![0; n]),
            DType::UInt32 => Data::UInt32(vec![0; n]),
            DType::UInt64 => Data::UInt64(vec![0; n]),
            DType::Float16 => Data::Float16(vec![f16::ZERO; n]),
            DType::BFloat16 => Data::BFloat16(vec![bf16::ZERO; n]),
            DType::Float32 => Data::Float32(vec![0.0; n]),
            DType::Float64 => Data::Float64(vec![0.0; n]),
            DType::Complex64 => Data::Complex64(vec![Complex32::new(0.0, 0.0); n]),
            DType::Complex128 => Data::Complex128(vec![Complex64::new(0.0, 0.0); n]),
        }
    }
}

/// Whether the allocator gives `bytes` of host memory now: tried and freed at once (a large
/// allocation is an address-space reservation, no page is touched). A buffer far beyond
/// memory is refused here as `false`, where allocating it in place would abort the process.
pub fn can_allocate(bytes: usize) -> bool {
    let Ok(layout) = std::alloc::Layout::from_size_align(bytes.max(1), 64) else { return false };
    // SAFETY: the layout's size is non-zero; the block is freed with the layout it was
    // allocated with, and never read or written.
    unsafe {
        let p = std::alloc::alloc(layout);
        if p.is_null() {
            return false;
        }
        std::alloc::dealloc(p, layout);
    }
    true
}

/// `n` zero elements of `T` from the allocator (`calloc`: pages zeroed lazily, as `vec![0; n]`),
/// `None` where it refuses (an array far beyond memory) or the size overflows.
///
/// # Safety
/// The all-zero bit pattern must be a valid `T` (false, 0, +0.0, complex zero).
unsafe fn try_zeroed_vec<T>(n: usize) -> Option<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    if layout.size() == 0 {
        return Some(Vec::new());
    }
    // SAFETY: the layout's size is non-zero; the block holds `n` zeroed `T`s (valid by the
    // caller's promise) and was allocated by the global allocator with `Vec<T>`'s layout.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<T>();
        (!p.is_null()).then(|| Vec::from_raw_parts(p, n, n))
    }
}

/// A C-contiguous array in host memory: kiln's own elements (a [`Data`]), or memory another
/// library owns, shared without a copy ([`HostArray::from_foreign`]: a DLPack import).
#[derive(Clone)]
pub struct HostArray {
    shape: Shape,
    store: Store,
}

#[derive(Clone)]
enum Store {
    Owned(Data),
    Foreign(Arc<Foreign>),
}

/// Elements in memory another library owns: read in place by compiled code (through
/// [`HostArray::as_bytes`]), copied into a [`Data`] once, on the first [`HostArray::data`].
struct Foreign {
    ptr: NonNull<u8>,
    dtype: DType,
    len: usize,
    /// Dropped (releasing the memory) when the last array sharing it drops.
    _owner: Box<dyn Any + Send + Sync>,
    copy: OnceLock<Data>,
}

// SAFETY: the memory is only read, by any thread, while `_owner` (itself `Send + Sync`) keeps
// it alive (`from_foreign`'s contract: nobody writes it meanwhile).
unsafe impl Send for Foreign {}
// SAFETY: as above: shared reads only.
unsafe impl Sync for Foreign {}
// The owner is only ever dropped, never read, and a panic in the copy's `get_or_init` leaves
// it unset: unwind-safe whatever the owner holds (arrays cross `catch_unwind`).
impl std::panic::UnwindSafe for Foreign {}
impl std::panic::RefUnwindSafe for Foreign {}

impl Foreign {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `from_foreign`'s contract: `len` elements of `dtype` at `ptr`, readable and
        // unwritten while `_owner` lives (as long as `self`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len * self.dtype.itemsize()) }
    }
}

impl PartialEq for HostArray {
    /// Same shape, dtype and elements (as [`Data`] compares them: NaN unequal, -0.0 == 0.0).
    fn eq(&self, other: &HostArray) -> bool {
        self.shape == other.shape && self.data() == other.data()
    }
}

impl std::fmt::Debug for HostArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostArray")
            .field("shape", &self.shape)
            .field("foreign", &self.is_foreign())
            .field("data", self.data())
            .finish()
    }
}

impl HostArray {
    /// Error if `data.len()` is not the product of `shape`.
    pub fn new(shape: &[usize], data: Data) -> Result<HostArray> {
        // An element count that overflows is never the data's (it would wrap to any length).
        let counts = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if counts != Some(data.len()) {
            return Err(IrError::InvalidShape {
                op: "array".into(),
                shape: shape.into(),
                message: format!("{} elements given for shape {}", data.len(), ShapeDisplay(shape)),
            });
        }
        Ok(HostArray { shape: shape.into(), store: Store::Owned(data) })
    }

    /// An array over `numel(shape)` elements of `dtype` at `ptr`, in memory another library
    /// owns (a DLPack import), without a copy. `owner` is dropped when the last clone of the
    /// array drops. Compiled kernels read the memory in place ([`HostArray::as_bytes`]);
    /// [`HostArray::data`] copies it into kiln's own storage once, on first use.
    ///
    /// Errors: the element count of `shape` overflows.
    ///
    /// # Safety
    /// `ptr` must be aligned for `dtype` and point to `numel(shape)` C-contiguous elements of
    /// `dtype` (booleans: bytes 0 or 1), readable, and written by nobody, while `owner` lives.
    pub unsafe fn from_foreign(
        shape: &[usize],
        dtype: DType,
        ptr: NonNull<u8>,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Result<HostArray> {
        // (A slice of the memory may not pass `isize::MAX` bytes.)
        crate::shape::checked_nbytes(shape, dtype.itemsize()).ok_or_else(|| {
            IrError::InvalidShape {
                op: "array".into(),
                shape: shape.into(),
                message: "more bytes than memory can hold".into(),
            }
        })?;
        let f = Foreign { ptr, dtype, len: numel(shape), _owner: owner, copy: OnceLock::new() };
        Ok(HostArray { shape: shape.into(), store: Store::Foreign(Arc::new(f)) })
    }

    pub fn from_vec<T: HostElement>(shape: &[usize], v: Vec<T>) -> Result<HostArray> {
        HostArray::new(shape, T::into_data(v))
    }

    pub fn zeros(dtype: DType, shape: &[usize]) -> HostArray {
        HostArray { shape: shape.into(), store: Store::Owned(Data::zeros(dtype, numel(shape))) }
    }

    pub fn dtype(&self) -> DType {
        match &self.store {
            Store::Owned(d) => d.dtype(),
            Store::Foreign(f) => f.dtype,
        }
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn len(&self) -> usize {
        match &self.store {
            Store::Owned(d) => d.len(),
            Store::Foreign(f) => f.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the elements are memory another library owns ([`HostArray::from_foreign`]).
    pub fn is_foreign(&self) -> bool {
        matches!(self.store, Store::Foreign(_))
    }

    /// The elements as kiln's typed storage; for foreign memory a copy, made on the first call
    /// and kept.
    pub fn data(&self) -> &Data {
        match &self.store {
            Store::Owned(d) => d,
            Store::Foreign(f) => f.copy.get_or_init(|| Data::from_le_bytes(f.dtype, f.bytes())),
        }
    }

    /// The elements' bytes in place (little-endian, C order; booleans one byte each), with
    /// no copy whichever memory holds them: what compiled kernels and uploads read.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.store {
            Store::Owned(d) => d.as_bytes(),
            Store::Foreign(f) => f.bytes(),
        }
    }

    pub fn into_data(self) -> Data {
        match self.store {
            Store::Owned(d) => d,
            Store::Foreign(f) => match Arc::try_unwrap(f) {
                Ok(mut f) => {
                    f.copy.take().unwrap_or_else(|| Data::from_le_bytes(f.dtype, f.bytes()))
                }
                Err(f) => HostArray { shape: self.shape, store: Store::Foreign(f) }.data().clone(),
            },
        }
    }

    /// The elements as `&[T]`; error if `T` is not the array's dtype.
    pub fn as_slice<T: HostElement>(&self) -> Result<&[T]> {
        T::slice_of(self.data()).ok_or(IrError::ElementType {
            op: "as_slice".into(),
            dtype: self.dtype(),
            wanted: T::DTYPE,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops: the foreign owner.
    struct Owner(Arc<AtomicUsize>);
    impl Drop for Owner {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn foreign_memory_is_read_in_place_copied_on_demand_and_released_at_the_last_drop() {
        let memory: Arc<Vec<f32>> = Arc::new(vec![1.0, -0.0, f32::NAN, 2.5, 3.0, -4.0]);
        let dropped = Arc::new(AtomicUsize::new(0));
        let ptr = NonNull::new(memory.as_ptr().cast_mut().cast::<u8>()).unwrap();
        let owner = (memory.clone(), Owner(dropped.clone()));
        // SAFETY: six aligned f32s, alive and unwritten while the owner (an `Arc`) lives.
        let a = unsafe { HostArray::from_foreign(&[2, 3], DType::Float32, ptr, Box::new(owner)) }
            .unwrap();
        assert!(a.is_foreign());
        assert_eq!((a.dtype(), a.shape(), a.len()), (DType::Float32, &[2usize, 3][..], 6));
        assert_eq!(a.as_bytes().as_ptr(), ptr.as_ptr().cast_const(), "in place");
        assert_eq!(a.as_bytes().len(), 24);
        // `data` is a copy with the same bits.
        let d = a.as_slice::<f32>().unwrap();
        assert_ne!(d.as_ptr().cast::<u8>(), ptr.as_ptr().cast_const());
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(d), bits(&memory));
        let b = a.clone();
        assert!(b.is_foreign());
        assert_eq!(b.as_bytes().as_ptr(), ptr.as_ptr().cast_const(), "a clone shares it");
        drop(a);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        // Taken apart, the last holder gives its copy and releases the memory.
        let data = b.into_data();
        assert_eq!(bits(f32::slice_of(&data).unwrap()), bits(&memory));
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        // An overflowing element count is an error, and drops the owner.
        let owner = Owner(dropped.clone());
        // SAFETY: refused before any read.
        let r = unsafe {
            HostArray::from_foreign(&[usize::MAX, 2], DType::Float32, ptr, Box::new(owner))
        };
        assert!(r.is_err());
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn data_round_trips_through_its_bytes() {
        let d = Data::Int16(vec![-1, 2, 300]);
        assert_eq!(Data::from_le_bytes(DType::Int16, d.as_bytes()), d);
        assert_eq!(
            Data::from_le_bytes(DType::Bool, &[0, 1, 7]),
            Data::Bool(vec![false, true, true])
        );
    }
}
