//! # kiln
//!
//! NumPy/CuPy-style arrays whose operations are lazy: expressions build a graph that kiln's
//! compiler simplifies, fuses into kernels and runs on an NVIDIA GPU or the host CPU.
//!
//! ```
//! use kiln::{Array, DType};
//! let x = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
//! let y = (&x * 2.0 + x.sin()).sum(1);     // lazy: nothing computed yet
//! assert_eq!(y.dtype(), DType::Float32);
//! let v: Vec<f32> = y.to_vec();             // computed here
//! assert!((v[0] - (6.0 + 1f32.sin() + 2f32.sin())).abs() < 1e-5);
//! ```

pub use kiln_frontend::*;
pub use kiln_ir as ir;

/// CuPy's low-level `cupy.cuda` API, from this crate alone: devices (`Device`, `with Device(n)`
/// as `Device::use_scoped`), streams and events, the device and pinned memory pools, modules
/// and launches, NVRTC, the profiler and NVTX ranges, and the backend selection
/// (`KILN_DEVICE`). See [`kiln_runtime`]'s table of CuPy names. On a machine without a CUDA
/// driver nothing here panics: calls return a typed `RuntimeError`.
pub mod cuda {
    pub use kiln_runtime::*;
}

/// Composite operations (softmax, logsumexp, layer norm, l2 norm, relu, gelu).
pub mod nn {
    pub use kiln_std::*;
}
