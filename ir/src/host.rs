//! Materialised arrays in host memory: C-contiguous, typed storage.

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

/// A C-contiguous array in host memory.
#[derive(Clone, Debug, PartialEq)]
pub struct HostArray {
    shape: Shape,
    data: Data,
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
        Ok(HostArray { shape: shape.into(), data })
    }

    pub fn from_vec<T: HostElement>(shape: &[usize], v: Vec<T>) -> Result<HostArray> {
        HostArray::new(shape, T::into_data(v))
    }

    pub fn zeros(dtype: DType, shape: &[usize]) -> HostArray {
        HostArray { shape: shape.into(), data: Data::zeros(dtype, numel(shape)) }
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn data(&self) -> &Data {
        &self.data
    }

    pub fn into_data(self) -> Data {
        self.data
    }

    /// The elements as `&[T]`; error if `T` is not the array's dtype.
    pub fn as_slice<T: HostElement>(&self) -> Result<&[T]> {
        T::slice_of(&self.data).ok_or(IrError::ElementType {
            op: "as_slice".into(),
            dtype: self.dtype(),
            wanted: T::DTYPE,
        })
    }
}
