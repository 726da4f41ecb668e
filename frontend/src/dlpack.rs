//! DLPack: arrays shared with other libraries (NumPy, CuPy, PyTorch, JAX...) without a copy.
//!
//! [`Array::to_dlpack`] exports an array as a `DLManagedTensorVersioned` (DLPack 1.x;
//! [`Array::to_dlpack_legacy`]: the pre-1.0 `DLManagedTensor`) that keeps the array's memory
//! alive until its deleter runs; [`from_dlpack`] imports one, taking ownership (the deleter runs
//! when the last kiln array using the memory drops, or once a copy is made where the memory is
//! copied: see the table); [`Array::from_device_buffer`] imports
//! device memory another library owns without a DLPack tensor (CuPy's `UnownedMemory`).
//! [`DLPackTensor`] is the owned handle of either struct, for C and Python bindings
//! ([`DLPackTensor::into_raw_versioned`], [`DLPackTensor::from_raw_versioned`]: what a
//! `dltensor_versioned` capsule holds).
//!
//! # Where memory is shared
//!
//! | tensor | export (`to_dlpack`) | import (`from_dlpack`) |
//! |---|---|---|
//! | kiln's host array (`kDLCPU`) | zero-copy, read-only flag | kiln's own export: zero-copy |
//! | another library's host memory (`kDLCPU`, `kDLCUDAHost`), C-contiguous, aligned | | zero-copy |
//! | host memory, other strides or alignment; booleans other than bytes 0 and 1 | | one copy |
//! | device memory (`kDLCUDA`, `kDLCUDAManaged`), C-contiguous, 16-byte aligned | zero-copy | zero-copy |
//! | device memory, other strides or alignment | | one copy on the device (a gather kernel) |
//!
//! Another library's C-contiguous host memory, aligned for its dtype, becomes a kiln host
//! array over that memory ([`kiln_ir::HostArray::from_foreign`]): the CPU's compiled kernels
//! read it in place, an upload to a device reads it in place, and an export shares it again;
//! the tensor's deleter runs when the last array using it drops. Work that needs kiln's own
//! storage (the reference evaluator's regions, the host libraries: GEMM, FFT, sorts) copies it
//! once, on first use, and keeps the copy beside it. Other strides, a misaligned address, or
//! booleans stored as bytes other than 0 and 1 are copied at import (strides read as given,
//! nonzero is true), and the deleter runs at once.
//! Device memory becomes a kiln device buffer
//! that returns nothing to kiln's pool; its deleter runs when the last array using it drops,
//! after the work kiln queued on it. kiln's kernels read device buffers C-contiguous and
//! assume 16-byte alignment (kiln's pool gives 512), so a tensor with other strides (DLPack's
//! strides are in elements; negative and zero allowed) or a less aligned address is gathered
//! into a new buffer of kiln's pool (one kernel), and its deleter runs once that copy is done.
//! kiln's arrays are values: an export is flagged read-only (`DLPACK_FLAG_BITMASK_READ_ONLY`),
//! and a consumer must not write it; likewise the producer of an imported tensor must not
//! write its memory while kiln arrays use it.
//!
//! # Streams (the handshake of `__dlpack__(stream=...)`)
//!
//! An export of device memory takes the consumer's stream as DLPack's Python protocol passes
//! it: `None` or `1` the legacy default stream, `2` the per-thread default stream, a larger
//! integer a `CUstream` handle of the device, `-1` no synchronisation (`0` is refused as
//! ambiguous). kiln records an event on the stream its value was written on and makes the
//! consumer's stream wait for it (`cuStreamWaitEvent`; nothing when they are the same stream),
//! so the consumer's work queued there reads the finished value. Its reads must have finished
//! before it calls the deleter: the buffer then goes back to kiln's pool, ordered on kiln's
//! stream. On import the producer must have made the memory ready on kiln's current stream
//! (pass [`dlpack_stream`] as the consumer's stream to the producer's `__dlpack__`).
//!
//! # Types
//!
//! Every kiln dtype: `kDLBool` 8 bits (bool), `kDLInt`/`kDLUInt` 8–64, `kDLFloat` 16/32/64,
//! `kDLBfloat` 16, `kDLComplex` 64/128, one lane. Other codes (float8, opaque handles), widths,
//! vector lanes and device types are a typed error ([`crate::Error::Value`] naming `from_dlpack`).

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{DType, HostArray};
use kiln_runtime::{Backend, DeviceBuffer, Stream, StreamKind};

use crate::array::Array;
use crate::error::{value_err, Error, Result};
use crate::gpu::DeviceArray;

/// The C structs of `dlpack.h` (DLPack 1.1), field for field.
pub mod ffi;

use ffi::*;

/// An owned DLPack tensor: a `DLManagedTensorVersioned` or (pre-1.0) `DLManagedTensor`
/// pointer whose deleter runs when this drops, unless it was handed on (`into_raw_*`,
/// [`from_dlpack`]).
pub struct DLPackTensor {
    raw: Raw,
}

#[derive(Clone, Copy)]
enum Raw {
    Versioned(NonNull<DLManagedTensorVersioned>),
    Legacy(NonNull<DLManagedTensor>),
}

// SAFETY: DLPack hands a tensor from one owner to the next, and its C API puts no thread on
// the deleter (Python producers take the GIL in theirs); kiln's own exports hold `Arc`s of
// `Send + Sync` values. The handle gives shared access to the metadata only.
unsafe impl Send for DLPackTensor {}
// SAFETY: as above; `&DLPackTensor` reads the metadata, which nobody writes while it is owned.
unsafe impl Sync for DLPackTensor {}

impl Drop for DLPackTensor {
    fn drop(&mut self) {
        // SAFETY: the pointer is an owned, live managed tensor (the constructors' contract);
        // its deleter is called once, here, and the pointer is not used after.
        unsafe {
            match self.raw {
                Raw::Versioned(p) => {
                    if let Some(d) = (*p.as_ptr()).deleter {
                        d(p.as_ptr());
                    }
                }
                Raw::Legacy(p) => {
                    if let Some(d) = (*p.as_ptr()).deleter {
                        d(p.as_ptr());
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for DLPackTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.tensor();
        f.debug_struct("DLPackTensor")
            .field("version", &self.version())
            .field("device", &t.device)
            .field("dtype", &t.dtype)
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("flags", &self.flags())
            .finish()
    }
}

impl DLPackTensor {
    /// Takes ownership of a `DLManagedTensorVersioned` (what a `dltensor_versioned` capsule
    /// holds; the capsule is then renamed `used_dltensor_versioned` by the caller).
    ///
    /// # Safety
    /// `ptr` must be a live managed tensor nobody else will use or delete: its deleter (if
    /// any) is called once, when the returned handle (or the kiln arrays made from it) drop.
    /// Its `shape` and `strides` must have `ndim` entries, and its data must be readable as
    /// its `DLTensor` says (on its device) until the deleter runs.
    pub unsafe fn from_raw_versioned(ptr: *mut DLManagedTensorVersioned) -> Result<DLPackTensor> {
        let ptr = NonNull::new(ptr)
            .ok_or_else(|| value_err("from_dlpack", "a null DLManagedTensorVersioned pointer"))?;
        Ok(DLPackTensor { raw: Raw::Versioned(ptr) })
    }

    /// Takes ownership of a pre-1.0 `DLManagedTensor` (a `dltensor` capsule's).
    ///
    /// # Safety
    /// As [`DLPackTensor::from_raw_versioned`].
    pub unsafe fn from_raw_legacy(ptr: *mut DLManagedTensor) -> Result<DLPackTensor> {
        let ptr = NonNull::new(ptr)
            .ok_or_else(|| value_err("from_dlpack", "a null DLManagedTensor pointer"))?;
        Ok(DLPackTensor { raw: Raw::Legacy(ptr) })
    }

    /// Hands the versioned tensor on: the pointer for a `dltensor_versioned` capsule. The
    /// receiver must call its deleter once. A legacy tensor is given back as the error.
    pub fn into_raw_versioned(self) -> std::result::Result<*mut DLManagedTensorVersioned, Self> {
        match self.raw {
            Raw::Versioned(p) => {
                std::mem::forget(self);
                Ok(p.as_ptr())
            }
            Raw::Legacy(_) => Err(self),
        }
    }

    /// Hands the legacy tensor on (a `dltensor` capsule's pointer). A versioned tensor is
    /// given back as the error.
    pub fn into_raw_legacy(self) -> std::result::Result<*mut DLManagedTensor, Self> {
        match self.raw {
            Raw::Legacy(p) => {
                std::mem::forget(self);
                Ok(p.as_ptr())
            }
            Raw::Versioned(_) => Err(self),
        }
    }

    /// The `DLTensor`.
    pub fn tensor(&self) -> &DLTensor {
        // SAFETY: an owned, live managed tensor, not written while owned.
        unsafe {
            match self.raw {
                Raw::Versioned(p) => &(*p.as_ptr()).dl_tensor,
                Raw::Legacy(p) => &(*p.as_ptr()).dl_tensor,
            }
        }
    }

    /// The DLPack version of a versioned tensor (`None` for a legacy one).
    pub fn version(&self) -> Option<DLPackVersion> {
        match self.raw {
            // SAFETY: as in `tensor`; the version is the struct's first field in every version.
            Raw::Versioned(p) => Some(unsafe { (*p.as_ptr()).version }),
            Raw::Legacy(_) => None,
        }
    }

    /// The flags of a versioned tensor (`DLPACK_FLAG_BITMASK_*`; 0 for a legacy one).
    pub fn flags(&self) -> u64 {
        match self.raw {
            // SAFETY: as in `tensor`.
            Raw::Versioned(p) => unsafe { (*p.as_ptr()).flags },
            Raw::Legacy(_) => 0,
        }
    }

    /// The device the data is on.
    pub fn device(&self) -> DLDevice {
        self.tensor().device
    }

    /// The element type.
    pub fn dtype(&self) -> DLDataType {
        self.tensor().dtype
    }

    /// The extents (`ndim` of them).
    pub fn shape(&self) -> &[i64] {
        let t = self.tensor();
        raw_slice(t.shape, t.ndim)
    }

    /// The strides in elements, `None` where the tensor says C-contiguous (null strides).
    pub fn strides(&self) -> Option<&[i64]> {
        let t = self.tensor();
        (!t.strides.is_null()).then(|| raw_slice(t.strides, t.ndim))
    }

    /// The address of the first element (`data + byte_offset`).
    pub fn data_ptr(&self) -> u64 {
        let t = self.tensor();
        (t.data as u64).wrapping_add(t.byte_offset)
    }

    /// The manager context's address: kiln's own exports are recognised by it.
    fn manager_ctx(&self) -> usize {
        // SAFETY: as in `tensor`.
        unsafe {
            match self.raw {
                Raw::Versioned(p) => (*p.as_ptr()).manager_ctx as usize,
                Raw::Legacy(p) => (*p.as_ptr()).manager_ctx as usize,
            }
        }
    }
}

/// `ndim` entries at `p` (none for `ndim <= 0` or a null pointer).
fn raw_slice<'a>(p: *mut i64, ndim: i32) -> &'a [i64] {
    if ndim <= 0 || p.is_null() {
        return &[];
    }
    // SAFETY: DLPack's contract (the constructors' safety): `ndim` entries at `p`, alive and
    // unwritten while the tensor is owned.
    unsafe { std::slice::from_raw_parts(p, ndim as usize) }
}

/// What an export keeps alive.
enum Held {
    Host(Arc<HostArray>),
    Device(Arc<DeviceArray>),
}

/// An exported tensor and what it points into; `managed` first, so the managed tensor's
/// address is the box's (the deleter frees the box from it).
#[repr(C)]
struct Exported<M> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    held: Held,
}

/// The manager contexts of kiln's live exports: an import of one of them takes its value
/// back without a copy. Entries are added at export and removed by the deleter.
fn live_exports() -> &'static Mutex<BTreeSet<usize>> {
    static LIVE: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());
    &LIVE
}

/// kiln's two managed-tensor structs, for the code they share.
trait Managed {
    /// The tensor and the manager context.
    fn parts(&mut self) -> (&mut DLTensor, &mut *mut c_void);
}

impl Managed for DLManagedTensorVersioned {
    fn parts(&mut self) -> (&mut DLTensor, &mut *mut c_void) {
        (&mut self.dl_tensor, &mut self.manager_ctx)
    }
}

impl Managed for DLManagedTensor {
    fn parts(&mut self) -> (&mut DLTensor, &mut *mut c_void) {
        (&mut self.dl_tensor, &mut self.manager_ctx)
    }
}

/// `managed` boxed with what it points into: its shape, strides and manager context set, the
/// export registered as live. The box is freed by [`delete`].
fn export_box<M: Managed>(
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    held: Held,
) -> NonNull<M> {
    let p = Box::into_raw(Box::new(Exported { managed, shape, strides, held }));
    // SAFETY: `p` is the box just made, not shared yet; the shape and strides vectors live in
    // it (their heap memory does not move with the box).
    unsafe {
        let e = &mut *p;
        let (tensor, ctx) = e.managed.parts();
        tensor.shape = e.shape.as_mut_ptr();
        tensor.strides = e.strides.as_mut_ptr();
        *ctx = p.cast();
    }
    live_exports().lock().unwrap_or_else(|e| e.into_inner()).insert(p as usize);
    NonNull::new(p.cast()).expect("a box")
}

/// The deleter of kiln's exports (of `Exported<M>`).
unsafe extern "C" fn delete<M>(p: *mut M) {
    if p.is_null() {
        return;
    }
    live_exports().lock().unwrap_or_else(|e| e.into_inner()).remove(&(p as usize));
    // SAFETY: kiln's exports are `Box<Exported<M>>` made by `export_box`, the managed tensor
    // first (`repr(C)`), so `p` is the box's address; the deleter is called once (DLPack's
    // contract).
    let boxed = unsafe { Box::from_raw(p.cast::<Exported<M>>()) };
    // Dropping releases an `Arc` (a device buffer goes back to the pool): no unwinding
    // across the C boundary.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(boxed)));
}

/// The `DLDataType` of a kiln dtype.
fn dl_dtype(dtype: DType) -> DLDataType {
    let code = match dtype {
        DType::Bool => K_DL_BOOL,
        DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 => K_DL_INT,
        DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64 => K_DL_UINT,
        DType::Float16 | DType::Float32 | DType::Float64 => K_DL_FLOAT,
        DType::BFloat16 => K_DL_BFLOAT,
        DType::Complex64 | DType::Complex128 => K_DL_COMPLEX,
    };
    DLDataType { code, bits: (dtype.itemsize() * 8) as u8, lanes: 1 }
}

/// The kiln dtype of a `DLDataType`, or an error naming it.
fn kiln_dtype(t: DLDataType) -> Result<DType> {
    if t.lanes != 1 {
        return Err(value_err(
            "from_dlpack",
            format!(
                "vector dtypes are not supported (code {}, {} bits, {} lanes)",
                t.code, t.bits, t.lanes
            ),
        ));
    }
    let dtype = match (t.code, t.bits) {
        (K_DL_BOOL, 8) => DType::Bool,
        (K_DL_INT, 8) => DType::Int8,
        (K_DL_INT, 16) => DType::Int16,
        (K_DL_INT, 32) => DType::Int32,
        (K_DL_INT, 64) => DType::Int64,
        (K_DL_UINT, 8) => DType::UInt8,
        (K_DL_UINT, 16) => DType::UInt16,
        (K_DL_UINT, 32) => DType::UInt32,
        (K_DL_UINT, 64) => DType::UInt64,
        (K_DL_FLOAT, 16) => DType::Float16,
        (K_DL_FLOAT, 32) => DType::Float32,
        (K_DL_FLOAT, 64) => DType::Float64,
        (K_DL_BFLOAT, 16) => DType::BFloat16,
        (K_DL_COMPLEX, 64) => DType::Complex64,
        (K_DL_COMPLEX, 128) => DType::Complex128,
        (code, bits) => {
            let kind = match code {
                K_DL_INT => "kDLInt",
                K_DL_UINT => "kDLUInt",
                K_DL_FLOAT => "kDLFloat",
                K_DL_OPAQUE_HANDLE => "kDLOpaqueHandle",
                K_DL_BFLOAT => "kDLBfloat",
                K_DL_COMPLEX => "kDLComplex",
                K_DL_BOOL => "kDLBool",
                7..=13 => "a float8 type",
                _ => "an unknown type code",
            };
            return Err(value_err(
                "from_dlpack",
                format!("dtype code {code} ({kind}) of {bits} bits has no kiln dtype"),
            ));
        }
    };
    Ok(dtype)
}

/// A device type's name in DLPack's header.
fn device_name(device_type: i32) -> String {
    match device_type {
        K_DL_CPU => "kDLCPU".into(),
        K_DL_CUDA => "kDLCUDA".into(),
        K_DL_CUDA_HOST => "kDLCUDAHost".into(),
        K_DL_OPENCL => "kDLOpenCL".into(),
        K_DL_VULKAN => "kDLVulkan".into(),
        K_DL_METAL => "kDLMetal".into(),
        K_DL_ROCM => "kDLROCM".into(),
        K_DL_CUDA_MANAGED => "kDLCUDAManaged".into(),
        other => format!("device type {other}"),
    }
}

/// The consumer's stream of `__dlpack__(stream=...)` as a raw `CUstream` to wait on, `None`
/// for no synchronisation (`-1`). Errors: `0` (ambiguous) and values below `-1`.
fn consumer_stream(stream: Option<i64>) -> Result<Option<usize>> {
    match stream {
        None => Ok(Some(1)),
        Some(-1) => Ok(None),
        Some(0) => Err(value_err(
            "to_dlpack",
            "stream 0 is ambiguous in DLPack (pass 1 for the legacy default stream, 2 for the per-thread one, -1 for none)",
        )),
        Some(s) if s < -1 => Err(value_err("to_dlpack", format!("stream {s} is not a stream"))),
        Some(s) => Ok(Some(s as usize)),
    }
}

/// C-contiguous strides in elements.
fn c_strides(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![0i64; shape.len()];
    let mut step = 1i64;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = step;
        step *= n.max(1) as i64;
    }
    strides
}

/// Which struct an export makes.
#[derive(Clone, Copy, PartialEq)]
enum Abi {
    Versioned,
    Legacy,
}

impl Array {
    /// `x.__dlpack__()`: the array as a DLPack 1.x tensor sharing its memory (computing it
    /// first): device memory when the value is held there, else host memory. For device
    /// memory the consumer's stream is the legacy default stream (see
    /// [`Array::to_dlpack_stream`]). The tensor is C-contiguous (strides given) but for a view
    /// of a copy's buffer (an F-ordered copy, [`Array::copy`]), which shares that buffer with
    /// its strides ([`Array::strides`], in elements); it is flagged read-only, and keeps the
    /// memory alive until its deleter runs.
    ///
    /// Errors: a failed evaluation; the device's errors of the stream handshake.
    pub fn to_dlpack(&self) -> Result<DLPackTensor> {
        self.export(None, Abi::Versioned, false)
    }

    /// `x.__dlpack__(stream=stream)`: [`Array::to_dlpack`] with DLPack's consumer stream for
    /// device memory: `None`/`1` the legacy default stream, `2` the per-thread default stream,
    /// a `CUstream` handle of the array's device, `-1` no synchronisation. The consumer's
    /// stream is made to wait for the work that wrote the value.
    ///
    /// Errors: stream `0` or below `-1`; a stream other than `None`/`-1` for a host array
    /// (DLPack's CPU tensors take none).
    pub fn to_dlpack_stream(&self, stream: Option<i64>) -> Result<DLPackTensor> {
        self.export(stream, Abi::Versioned, false)
    }

    /// [`Array::to_dlpack_stream`] as a pre-1.0 `DLManagedTensor` (no version, no flags), for
    /// consumers that call `__dlpack__` without `max_version`.
    pub fn to_dlpack_legacy(&self, stream: Option<i64>) -> Result<DLPackTensor> {
        self.export(stream, Abi::Legacy, false)
    }

    /// `x.__dlpack__(dl_device=(kDLCPU, 0))`: a host tensor, the value copied down from the
    /// device if it is only there (flagged `IS_COPIED` then).
    pub fn to_dlpack_host(&self) -> Result<DLPackTensor> {
        self.export(None, Abi::Versioned, true)
    }

    fn export(&self, stream: Option<i64>, abi: Abi, host: bool) -> Result<DLPackTensor> {
        let consumer = consumer_stream(stream)?;
        self.try_eval()?;
        // A view of a copy's buffer (an F-ordered copy: `layout.rs`) shares that buffer.
        let src = crate::layout::over(self).map_or_else(|| self.clone(), |o| o.base);
        let mut flags = DLPACK_FLAG_BITMASK_READ_ONLY;
        let (held, data, device) = match src.device_value() {
            Some(d) if !host => {
                // The consumer's stream waits for the work that wrote the value.
                if let Some(consumer) = consumer {
                    let producer = d.buffer().stream();
                    let same = producer.raw() as usize == consumer
                        || (producer.kind() == StreamKind::Null && consumer == 1);
                    if !same && !d.buffer().is_empty() {
                        let _current = d.buffer().device().use_scoped()?;
                        let event = producer.record()?;
                        // SAFETY: the consumer passed a stream of this device (DLPack's
                        // contract for `stream`), or 1 or 2, the driver's default streams.
                        unsafe { event.wait_on_raw_stream(consumer)? };
                    }
                }
                let dev =
                    DLDevice { device_type: K_DL_CUDA, device_id: d.buffer().device().id() as i32 };
                let data = d.buffer().ptr() as *mut c_void;
                (Held::Device(d.clone()), data, dev)
            }
            _ => {
                if !matches!(stream, None | Some(-1)) {
                    return Err(value_err(
                        "to_dlpack",
                        format!(
                            "stream {} given for a host array (DLPack's CPU tensors take none)",
                            stream.unwrap_or_default()
                        ),
                    ));
                }
                if src.value().is_none() {
                    flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
                }
                let h = src.host_value()?.expect("evaluated");
                let data = h.as_bytes().as_ptr().cast_mut().cast::<c_void>();
                (Held::Host(h), data, DLDevice { device_type: K_DL_CPU, device_id: 0 })
            }
        };
        let shape: Vec<i64> = self.shape().iter().map(|&n| n as i64).collect();
        let strides: Vec<i64> = if src.same_expr(self) {
            c_strides(self.shape())
        } else {
            self.memory_layout().strides.iter().map(|&s| s as i64).collect()
        };
        let tensor = DLTensor {
            data,
            device,
            ndim: shape.len() as i32,
            dtype: dl_dtype(self.dtype()),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let raw = match abi {
            Abi::Versioned => Raw::Versioned(export_box(
                DLManagedTensorVersioned {
                    version: DLPackVersion {
                        major: DLPACK_MAJOR_VERSION,
                        minor: DLPACK_MINOR_VERSION,
                    },
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete::<DLManagedTensorVersioned>),
                    flags,
                    dl_tensor: tensor,
                },
                shape,
                strides,
                held,
            )),
            Abi::Legacy => Raw::Legacy(export_box(
                DLManagedTensor {
                    dl_tensor: tensor,
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete::<DLManagedTensor>),
                },
                shape,
                strides,
                held,
            )),
        };
        Ok(DLPackTensor { raw })
    }

    /// An array over device memory another library owns (CuPy's
    /// `cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(ptr, size,
    /// owner), 0), strides)`): `shape` elements of `dtype` whose first element is at `ptr` on
    /// kiln's CUDA device, `strides` in elements (`None`: C-contiguous). `owner` is dropped
    /// when the last array using the memory drops (after kiln's work on it), or at once when
    /// the memory was copied: C-contiguous memory at a 16-byte aligned address is used in
    /// place; other strides or alignments are gathered into a new buffer (one kernel).
    ///
    /// Errors: the backend is the CPU; a gather's errors (more than 8 axes that do not merge).
    ///
    /// # Safety
    /// Every element the shape and strides reach must be device memory of kiln's current
    /// device, alive while `owner` is, and ready on kiln's current stream. Booleans must be
    /// bytes 0 or 1.
    pub unsafe fn from_device_buffer(
        ptr: u64,
        shape: &[usize],
        dtype: DType,
        strides: Option<&[isize]>,
        owner: impl Send + Sync + 'static,
    ) -> Result<Array> {
        let strides: Vec<i64> = match strides {
            Some(s) if s.len() != shape.len() => {
                return Err(value_err(
                    "from_device_buffer",
                    format!("{} strides for a shape of {} axes", s.len(), shape.len()),
                ))
            }
            Some(s) => s.iter().map(|&x| x as i64).collect(),
            None => c_strides(shape),
        };
        let ordinal = cuda_ordinal("from_device_buffer")?;
        let owner = Box::new(owner);
        // SAFETY: the caller's contract.
        unsafe { import_device("from_device_buffer", ordinal, ptr, shape, &strides, dtype, owner) }
    }
}

/// The kiln device's ordinal, or an error naming `op` when the backend is the CPU.
fn cuda_ordinal(op: &str) -> Result<usize> {
    match crate::current_backend() {
        Backend::Cuda(ordinal) => Ok(ordinal),
        Backend::Cpu => Err(value_err(
            op,
            "device memory, but the backend is the CPU (no CUDA device, or KILN_DEVICE=cpu)",
        )),
    }
}

/// An array of the device memory at `ptr` (see [`Array::from_device_buffer`]).
///
/// # Safety
/// As [`Array::from_device_buffer`].
#[allow(clippy::too_many_arguments)]
unsafe fn import_device(
    op: &str,
    ordinal: usize,
    ptr: u64,
    shape: &[usize],
    strides: &[i64],
    dtype: DType,
    owner: Box<dyn std::any::Any + Send + Sync>,
) -> Result<Array> {
    let gpu = crate::gpu::Gpu::get(ordinal).map_err(|e| Error::from(e).within(op))?;
    let _current = gpu.device().use_scoped()?;
    let stream = Stream::current_on(gpu.device())?;
    let size = dtype.itemsize();
    let n = numel(shape);
    if n == 0 {
        drop(owner);
        return Ok(Array::from_device(Arc::new(DeviceArray::empty(dtype, shape)?)));
    }
    let contiguous =
        shape.iter().zip(strides).zip(c_strides(shape)).all(|((&e, &s), c)| e == 1 || s == c);
    if contiguous && ptr % 16 == 0 {
        // SAFETY: the caller's contract: n elements at ptr, alive while `owner` is.
        let buf = unsafe { DeviceBuffer::from_foreign(ptr, n * size, &stream, owner)? };
        return Ok(Array::from_device(Arc::new(DeviceArray::from_buffer(buf, dtype, shape)?)));
    }
    // Gathered into kiln's pool: the span the strides reach, as a foreign buffer read by the
    // runtime's strided gather.
    let (lo, hi) = shape.iter().zip(strides).fold((0i64, 0i64), |(lo, hi), (&e, &s)| {
        let reach = (e as i64 - 1) * s;
        (lo + reach.min(0), hi + reach.max(0))
    });
    let base = ptr.wrapping_add_signed(lo * size as i64);
    let span = ((hi - lo) as usize + 1) * size;
    // SAFETY: the caller's contract: the elements the strides reach lie in base..base + span.
    let src = unsafe { DeviceBuffer::from_foreign(base, span, &stream, owner)? };
    let offset = (-lo) as isize;
    let istrides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
    let aligned = base % size as u64 == 0 && (size < 16 || base % 16 == 0);
    let out = if aligned {
        kiln_runtime::gather::gather(&src, size, offset, shape, &istrides)?
    } else {
        // Bytes, an axis of the element's bytes last: any address.
        let mut bshape = shape.to_vec();
        bshape.push(size);
        let mut bstrides: Vec<isize> = istrides.iter().map(|&s| s * size as isize).collect();
        bstrides.push(1);
        kiln_runtime::gather::gather(&src, 1, offset * size as isize, &bshape, &bstrides)?
    };
    // `src` drops here: its stream (the gather's) is synchronised, then its owner released.
    drop(src);
    Ok(Array::from_device(Arc::new(DeviceArray::from_buffer(out, dtype, shape)?)))
}

/// `np.from_dlpack(x)` / `cupy.from_dlpack(x)`: an array over a DLPack tensor's memory, taking
/// ownership of the tensor. Device tensors (`kDLCUDA`, `kDLCUDAManaged` on kiln's device)
/// become device arrays without a copy when C-contiguous and 16-byte aligned, the deleter
/// called when the last array using them drops; host tensors (`kDLCPU`, `kDLCUDAHost`) of
/// another library are copied and their deleter called at once; kiln's own exports come back
/// without a copy (see the module docs for strides and alignment).
///
/// Errors ([`crate::Error::Value`] naming `from_dlpack`): a DLPack major version other than 1, a
/// dtype kiln lacks (code, bits or lanes), a device type other than those above, a CUDA
/// tensor on another device or with the CPU backend, negative extents, null data for a
/// non-empty tensor. The tensor's deleter is called on error too.
///
/// Booleans (`kDLBool`, one byte) must be 0 or 1, as NumPy, CuPy and PyTorch store them: host
/// tensors are read as nonzero-is-true, device tensors are used as they are.
pub fn from_dlpack(tensor: DLPackTensor) -> Result<Array> {
    if let Some(v) = tensor.version() {
        if v.major != DLPACK_MAJOR_VERSION {
            return Err(value_err(
                "from_dlpack",
                format!(
                    "DLPack version {}.{} (kiln reads {DLPACK_MAJOR_VERSION}.x)",
                    v.major, v.minor
                ),
            ));
        }
    }
    let t = tensor.tensor();
    if t.ndim < 0 {
        return Err(value_err("from_dlpack", format!("ndim {}", t.ndim)));
    }
    let dtype = kiln_dtype(t.dtype)?;
    let device = t.device;
    if let Some(&e) = tensor.shape().iter().find(|&&e| e < 0) {
        return Err(value_err(
            "from_dlpack",
            format!("a negative extent {e} in {:?}", tensor.shape()),
        ));
    }
    let shape: Vec<usize> = tensor.shape().iter().map(|&e| e as usize).collect();
    let strides: Vec<i64> = tensor.strides().map_or_else(|| c_strides(&shape), <[i64]>::to_vec);
    let n = numel(&shape);
    if n > 0 && t.data.is_null() {
        return Err(value_err("from_dlpack", "null data for a non-empty tensor"));
    }

    // kiln's own export: its value, shared.
    let ctx = tensor.manager_ctx();
    if live_exports().lock().unwrap_or_else(|e| e.into_inner()).contains(&ctx) {
        // SAFETY: a live export of kiln's: the manager context is its `Exported` box (of the
        // struct the handle's variant names), alive until the deleter, which `tensor` holds.
        let held = unsafe {
            match tensor.raw {
                Raw::Versioned(_) => &(*(ctx as *const Exported<DLManagedTensorVersioned>)).held,
                Raw::Legacy(_) => &(*(ctx as *const Exported<DLManagedTensor>)).held,
            }
        };
        let a = match held {
            Held::Host(h) => Array::from_host_shared(h.clone()),
            Held::Device(d) => Array::from_device(d.clone()),
        };
        a.keep_alive(Box::new(tensor));
        return Ok(a);
    }

    match device.device_type {
        K_DL_CPU | K_DL_CUDA_HOST => {
            let ptr = tensor.data_ptr();
            // SAFETY (both calls): DLPack's contract (the handle's constructors): the elements
            // the shape and strides reach are readable host memory while the tensor is owned,
            // and the producer does not write them meanwhile (the module's docs).
            if let Some(p) = unsafe { shareable_host(ptr, &shape, &strides, dtype) } {
                let h = unsafe { HostArray::from_foreign(&shape, dtype, p, Box::new(tensor))? };
                return Ok(Array::from_host(h));
            }
            let h = unsafe { copy_host(ptr, &shape, &strides, dtype)? };
            drop(tensor);
            Ok(Array::from_host(h))
        }
        K_DL_CUDA | K_DL_CUDA_MANAGED => {
            // The array lives on the tensor's device (whichever is current).
            cuda_ordinal("from_dlpack")?;
            let devices = kiln_runtime::Device::all().len();
            let ordinal = usize::try_from(device.device_id)
                .ok()
                .filter(|&d| d < devices)
                .ok_or_else(|| {
                    value_err(
                        "from_dlpack",
                        format!(
                            "a tensor on cuda:{}, but there are {devices} CUDA device(s)",
                            device.device_id
                        ),
                    )
                })?;
            let ptr = tensor.data_ptr();
            let owner = Box::new(tensor);
            // SAFETY: DLPack's contract: the tensor's memory on device `ordinal`, alive until
            // its deleter, which the buffer's owner (the tensor) calls.
            unsafe { import_device("from_dlpack", ordinal, ptr, &shape, &strides, dtype, owner) }
        }
        other => Err(value_err(
            "from_dlpack",
            format!(
                "a tensor on {} (device {}): kiln reads kDLCPU, kDLCUDAHost, kDLCUDA and kDLCUDAManaged",
                device_name(other),
                device.device_id
            ),
        )),
    }
}

/// `ptr` where kiln can read the host tensor in place ([`HostArray::from_foreign`]'s contract):
/// non-empty, C-contiguous, aligned for `dtype`, booleans all bytes 0 or 1. `None`: copy it.
///
/// # Safety
/// Every element the shape and strides reach must be readable host memory of `dtype`'s size.
unsafe fn shareable_host(
    ptr: u64,
    shape: &[usize],
    strides: &[i64],
    dtype: DType,
) -> Option<NonNull<u8>> {
    let n = numel(shape);
    let contiguous =
        shape.iter().zip(strides).zip(c_strides(shape)).all(|((&e, &s), c)| e == 1 || s == c);
    // Complex numbers are pairs of their parts, aligned as one part.
    let align = if dtype.is_complex() { dtype.itemsize() / 2 } else { dtype.itemsize() };
    if n == 0 || !contiguous || ptr % align as u64 != 0 {
        return None;
    }
    let p = NonNull::new(ptr as *mut u8)?;
    if dtype == DType::Bool {
        // SAFETY: the caller's contract: n contiguous one-byte elements at `ptr`.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), n) };
        if bytes.iter().any(|&b| b > 1) {
            return None;
        }
    }
    Some(p)
}

/// The host elements at `ptr` through `strides` (in elements), copied into a C-order array.
///
/// # Safety
/// Every element the shape and strides reach must be readable host memory of `dtype`'s size.
unsafe fn copy_host(ptr: u64, shape: &[usize], strides: &[i64], dtype: DType) -> Result<HostArray> {
    let size = dtype.itemsize();
    let n = numel(shape);
    let mut bytes = vec![0u8; n * size];
    if n > 0 {
        let contiguous =
            shape.iter().zip(strides).zip(c_strides(shape)).all(|((&e, &s), c)| e == 1 || s == c);
        if contiguous {
            // SAFETY: the caller's contract: n contiguous elements at ptr.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr as *const u8, bytes.as_mut_ptr(), n * size)
            };
        } else {
            let mut index = vec![0usize; shape.len()];
            for chunk in bytes.chunks_exact_mut(size) {
                let off: i64 = index.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum();
                let src = ptr.wrapping_add_signed(off * size as i64) as *const u8;
                // SAFETY: the caller's contract: the element at this multi-index is readable.
                unsafe { std::ptr::copy_nonoverlapping(src, chunk.as_mut_ptr(), size) };
                for ax in (0..shape.len()).rev() {
                    index[ax] += 1;
                    if index[ax] < shape[ax] {
                        break;
                    }
                    index[ax] = 0;
                }
            }
        }
    }
    let data = Data::from_le_bytes(dtype, &bytes);
    Ok(HostArray::new(shape, data)?)
}

/// The stream a producer should make its tensor ready on before kiln imports it (the
/// `stream=` kiln, as consumer, passes to another library's `__dlpack__`): kiln's current
/// stream on its device as DLPack numbers it (1 for the legacy default stream, else the
/// `CUstream` handle); `None` on the CPU backend.
pub fn dlpack_stream() -> Result<Option<i64>> {
    let Backend::Cuda(ordinal) = crate::current_backend() else { return Ok(None) };
    let gpu = crate::gpu::Gpu::get(ordinal)?;
    let stream = Stream::current_on(gpu.device())?;
    Ok(Some(match stream.kind() {
        StreamKind::Null => 1,
        _ => stream.raw() as i64,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The structs' layout is `dlpack.h`'s on a 64-bit target.
    #[test]
    fn the_structs_have_dlpack_h_layout() {
        assert_eq!(size_of::<DLDevice>(), 8);
        assert_eq!(size_of::<DLDataType>(), 4);
        assert_eq!(offset_of!(DLTensor, data), 0);
        assert_eq!(offset_of!(DLTensor, device), 8);
        assert_eq!(offset_of!(DLTensor, ndim), 16);
        assert_eq!(offset_of!(DLTensor, dtype), 20);
        assert_eq!(offset_of!(DLTensor, shape), 24);
        assert_eq!(offset_of!(DLTensor, strides), 32);
        assert_eq!(offset_of!(DLTensor, byte_offset), 40);
        assert_eq!(size_of::<DLTensor>(), 48);
        assert_eq!(offset_of!(DLManagedTensor, manager_ctx), 48);
        assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
        assert_eq!(size_of::<DLManagedTensor>(), 64);
        assert_eq!(offset_of!(DLManagedTensorVersioned, version), 0);
        assert_eq!(offset_of!(DLManagedTensorVersioned, manager_ctx), 8);
        assert_eq!(offset_of!(DLManagedTensorVersioned, deleter), 16);
        assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
        assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
        assert_eq!(size_of::<DLManagedTensorVersioned>(), 80);
    }

    #[test]
    fn dtypes_map_both_ways() {
        for dtype in DType::ALL {
            assert_eq!(kiln_dtype(dl_dtype(dtype)).unwrap(), dtype);
        }
        assert_eq!(dl_dtype(DType::Bool), DLDataType { code: K_DL_BOOL, bits: 8, lanes: 1 });
        assert_eq!(
            dl_dtype(DType::Complex64),
            DLDataType { code: K_DL_COMPLEX, bits: 64, lanes: 1 }
        );
    }

    #[test]
    fn consumer_streams_follow_the_python_protocol() {
        assert_eq!(consumer_stream(None).unwrap(), Some(1));
        assert_eq!(consumer_stream(Some(-1)).unwrap(), None);
        assert_eq!(consumer_stream(Some(2)).unwrap(), Some(2));
        assert_eq!(consumer_stream(Some(0x7f00_1234)).unwrap(), Some(0x7f00_1234));
        assert!(consumer_stream(Some(0)).unwrap_err().to_string().contains("ambiguous"));
        assert!(consumer_stream(Some(-2)).is_err());
    }

    #[test]
    fn c_strides_in_elements() {
        assert_eq!(c_strides(&[2, 3, 4]), [12, 4, 1]);
        assert_eq!(c_strides(&[]), [] as [i64; 0]);
        assert_eq!(c_strides(&[0, 3]), [3, 1]);
    }
}
