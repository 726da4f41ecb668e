use std::ffi::c_void;

/// The DLPack version this module implements (`DLPACK_MAJOR_VERSION`).
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// `DLPACK_MINOR_VERSION`.
pub const DLPACK_MINOR_VERSION: u32 = 1;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the tensor.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer copied the data for this export.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// `DLDeviceType` values (a C enum: an `int`).
pub const K_DL_CPU: i32 = 1;
/// CUDA device memory.
pub const K_DL_CUDA: i32 = 2;
/// Pinned host memory (`cudaMallocHost`).
pub const K_DL_CUDA_HOST: i32 = 3;
/// `kDLOpenCL`.
pub const K_DL_OPENCL: i32 = 4;
/// `kDLVulkan`.
pub const K_DL_VULKAN: i32 = 7;
/// `kDLMetal`.
pub const K_DL_METAL: i32 = 8;
/// `kDLROCM`.
pub const K_DL_ROCM: i32 = 10;
/// CUDA managed (unified) memory.
pub const K_DL_CUDA_MANAGED: i32 = 13;

/// `DLDataTypeCode` values.
pub const K_DL_INT: u8 = 0;
/// Unsigned integers.
pub const K_DL_UINT: u8 = 1;
/// IEEE floats.
pub const K_DL_FLOAT: u8 = 2;
/// Opaque handles.
pub const K_DL_OPAQUE_HANDLE: u8 = 3;
/// bfloat16.
pub const K_DL_BFLOAT: u8 = 4;
/// Complex numbers (two floats).
pub const K_DL_COMPLEX: u8 = 5;
/// Booleans.
pub const K_DL_BOOL: u8 = 6;

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

/// `DLDataType`: `bits` per lane, `lanes` per element.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// `DLTensor`: `shape` and `strides` (in elements; null strides: C-contiguous) have
/// `ndim` entries; the first element is at `data + byte_offset`.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// `DLManagedTensor` (DLPack before 1.0, the `dltensor` capsule).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned` (DLPack 1.x, the `dltensor_versioned` capsule).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}
