//! kiln-runtime: devices, memory, streams and kernel launches on CUDA (through cudarc's driver
//! API), in the image of CuPy's low-level `cupy.cuda` API; and backend selection
//! (`KILN_DEVICE`) between CUDA and the host CPU.
//!
//! The runtime knows nothing of kiln's graphs: it runs kernels and moves buffers.
//!
//! Nothing here panics on a machine without a CUDA driver: [`cuda_available`] is false and
//! every CUDA call returns a typed [`RuntimeError`].
//!
//! | CuPy | kiln-runtime |
//! |---|---|
//! | `cupy.cuda.Device(i)`, `.use()`, `with Device(i):` | [`Device::new`], [`Device::make_current`], [`Device::use_scoped`] |
//! | `Device.compute_capability`, `.mem_info`, `.synchronize()` | [`Device::compute_capability`], [`Device::mem_info`], [`Device::synchronize`] |
//! | `cupy.get_default_memory_pool()` | [`Device::memory_pool`] ([`pool`] has the semantics) |
//! | `cupy.get_default_pinned_memory_pool()` | [`Device::pinned_memory_pool`] |
//! | `cupy.cuda.set_allocator(f)`, `get_allocator()` | [`set_allocator`], [`get_allocator`] (the pools' raw allocator, see [`allocator`]) |
//! | `cupy.cuda.alloc(n)` / `MemoryPointer` | [`DeviceBuffer::alloc`] |
//! | `Stream()`, `Stream(non_blocking=True)`, `Stream.null` | [`Stream::new`], [`Stream::non_blocking`], [`Stream::null`] |
//! | `with stream:`, `get_current_stream()` | [`Stream::use_scoped`], [`Stream::current`] |
//! | `Stream(priority=p)`, `.priority`, `ExternalStream(ptr)` | [`Stream::with_priority`], [`Stream::priority`], `unsafe` [`Stream::from_external`] |
//! | `stream.launch_host_func(f, arg)` | [`Stream::launch_host_func`] |
//! | `stream.begin_capture()`, `end_capture()`, `Graph.launch()` | [`Stream::begin_capture`], [`Stream::end_capture`], [`Graph::launch`] ([`graph`]) |
//! | `Event()`, `get_elapsed_time(a, b)` | [`Event::new`], [`elapsed_time`] |
//! | `RawModule(code=...)`, `get_function` | [`nvrtc::compile`], [`Device::load_module`], [`Module::function`] |
//! | `RawKernel.attributes`, `.max_dynamic_shared_size_bytes = n` | [`Function::attributes`], [`Function::set_max_dynamic_shared_memory`] |
//! | `kernel((grid,), (block,), args, shared_mem=)` | `unsafe` [`Function::launch`] with a [`LaunchConfig`] |
//! | `kernel(..., enable_cooperative_groups=True)` | `unsafe` [`Function::launch_cooperative_on`] |
//! | `cupy.cuda.profile()`, `cupyx.profiler.time_range` | [`profile()`], [`range`] |
//!
//! Modules: [`device`] (devices, backend selection), [`pool`] (the caching allocator, generic
//! and tested without a GPU), [`memory`] (CUDA and pinned allocators, buffers, copies),
//! [`stream`] (streams, events), [`module`] (PTX/cubin loading and linking), [`nvrtc`]
//! (CUDA C++ compiled at run time), [`launch`] (launch configurations and launches),
//! [`mod@profile`] (NVTX, the CUDA profiler), [`blas`] (cuBLAS/cuBLASLt GEMMs), [`fft`] (cuFFT
//! with its plan cache), [`rand`] (cuRAND), [`error`],
//! and [`gpu_tests`] (the tests that need a GPU, run by `kiln-gpu-selftest` or any test
//! binary through [`gpu_tests::run_all`]).
//!
//! ```no_run
//! use kiln_runtime::{Device, DeviceBuffer, ModuleImage, Stream};
//! # fn main() -> kiln_runtime::Result<()> {
//! # let ptx = "";
//! let device = Device::current()?;
//! let stream = Stream::non_blocking(device)?;
//! let _current = stream.use_scoped(); // kernels and buffers go to `stream`
//! let a = DeviceBuffer::from_slice(&[1.0f32, 2.0, 3.0])?;
//! let b = DeviceBuffer::from_slice(&[10.0f32, 20.0, 30.0])?;
//! let c = DeviceBuffer::alloc(3 * 4)?;
//! let vadd = device.load_module("vadd", ModuleImage::Ptx(ptx))?.function("vadd")?;
//! let n = 3u32;
//! // SAFETY: vadd(const float*, const float*, float*, unsigned) over 3-element buffers.
//! unsafe { vadd.launch(vadd.config_1d(3)?, &[&a, &b, &c, &n])? };
//! assert_eq!(c.to_vec::<f32>()?, [11.0, 22.0, 33.0]);
//! # Ok(())
//! # }
//! ```

pub mod allocator;
pub mod blas;
pub mod device;
/// The kernel cache on disk (crate `kiln-cache`, shared with the host compiler).
pub use kiln_cache as disk_cache;
pub mod error;
pub mod fft;
pub mod gather;
pub mod gpu_tests;
pub mod graph;
pub mod host_trace;
mod image_check;
pub mod kiln_modules;
pub mod launch;
mod libs;
pub mod link;
pub mod memory;
pub mod module;
pub mod nccl;
pub mod nvjitlink;
pub mod nvrtc;
pub mod pool;
pub mod profile;
pub mod ptxas;
pub mod rand;
pub mod replay;
pub mod solver;
pub mod stream;

pub use allocator::{get_allocator, set_allocator};
pub use device::{
    cuda_available, device_count, driver_version, select_backend, Backend, Device, DeviceGuard,
};
pub use disk_cache::{CacheStats, CachedKernel, DiskCache, Lookup, MissReason};
pub use error::{
    CudaError, KernelError, KernelStage, LibraryError, OutOfMemory, Result, RuntimeError,
};
pub use graph::{CaptureMode, Graph};
pub use launch::{KernelArg, LaunchConfig};
pub use libs::is_mapped;
pub use memory::{
    DeviceBuffer, DeviceCopy, DeviceMemoryPool, DevicePtr, PinnedBuffer, PinnedMemoryPool,
};
pub use module::{link_ptx_to_cubin, Function, FunctionAttributes, Module, ModuleImage};
pub use nvrtc::{NvrtcError, Program};
pub use pool::async_pool::{async_pool_in_use, set_async_pool};
pub use pool::{MemoryPool, PoolMode, PoolStats};
pub use profile::{mark, profile, range, range_colored};
pub use ptxas::{ptxas_cubin, ptxas_path, remove_files_at_exit as remove_ptxas_files_at_exit};
pub use stream::{elapsed_time, Event, Stream, StreamGuard, StreamKind};
