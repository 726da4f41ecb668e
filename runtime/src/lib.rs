//! kiln-runtime: devices, memory, streams and kernel launches on CUDA (through cudarc's driver
//! API), in the image of CuPy's low-level `cupy.cuda` API; or the host CPU.
//!
//! The runtime knows nothing of kiln's graphs: it runs kernels and moves buffers.
//!
//! Nothing here panics on a machine without a CUDA driver: [`cuda_available`] is false and
//! every CUDA call returns a typed [`RuntimeError`].

pub mod device;
pub mod error;
pub mod gpu_tests;
pub mod pool;
pub mod profile;

pub use device::{cuda_available, device_count, select_backend, Backend};
pub use error::{CudaError, KernelError, KernelStage, OutOfMemory, Result, RuntimeError};
pub mod launch;
pub mod memory;
pub mod module;
pub mod stream;

pub use device::{Device, DeviceGuard};
pub use launch::{KernelArg, LaunchConfig};
pub use memory::{
    DeviceBuffer, DeviceCopy, DeviceMemoryPool, DevicePtr, PinnedBuffer, PinnedMemoryPool,
};
pub use module::{link_ptx_to_cubin, Function, Module, ModuleImage};
pub use pool::{MemoryPool, PoolStats};
pub use profile::{mark, profile, range, range_colored};
pub use stream::{elapsed_time, Event, Stream, StreamGuard, StreamKind};
