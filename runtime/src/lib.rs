//! kiln-runtime: devices, buffers and kernel launches (CUDA through cudarc, or the host CPU).
//!
//! For now: device discovery that is safe on machines without a CUDA driver, and backend
//! selection from `KILN_DEVICE`.

pub mod device;
pub mod error;

pub use device::{cuda_available, device_count, select_backend, Backend};
pub use error::RuntimeError;
