//! Errors of the runtime: every CUDA result is checked and turned into a typed [`RuntimeError`].

use std::{fmt, path::PathBuf};

use cudarc::driver::{result::DriverError, sys};
use thiserror::Error;

/// Everything that can go wrong in the runtime.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RuntimeError {
    /// `KILN_DEVICE` (or another device string) is not `cpu`, `cuda` or `cuda:N`.
    #[error("invalid device `{0}`: expected `cpu`, `cuda` or `cuda:N`")]
    InvalidDevice(String),
    /// A CUDA device was asked for but is not there.
    #[error("CUDA device {requested} is not available ({available} device(s) found)")]
    DeviceUnavailable {
        /// The ordinal asked for.
        requested: usize,
        /// How many CUDA devices the driver reports (0 without a driver).
        available: usize,
    },
    /// The CUDA driver returned an error (or could not be loaded).
    #[error("CUDA driver: {0}")]
    Driver(String),
    /// A CUDA driver call failed.
    #[error("{0}")]
    Cuda(CudaError),
    /// An allocation could not be satisfied, even after the pool freed its cached blocks.
    #[error("{0}")]
    OutOfMemory(OutOfMemory),
    /// Loading, linking or launching a kernel failed (boxed: it carries logs).
    #[error("{0}")]
    Kernel(Box<KernelError>),
    /// An argument is not valid for the call (a buffer of another device, a copy past the end...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Compiling CUDA C++ with NVRTC failed (boxed: it carries the compiler's log).
    #[error("{0}")]
    Nvrtc(Box<crate::nvrtc::NvrtcError>),

    /// NCCL (collectives between GPUs) could not be loaded: where it was looked for.
    #[error("{searched}")]
    NcclUnavailable {
        /// The places tried and why each failed.
        searched: String,
    },

    /// A CUDA library call (cuBLAS, cuBLASLt, cuFFT, cuRAND, NVRTC) failed, or its library
    /// could not be loaded.
    #[error("{0}")]
    Library(LibraryError),
}

/// A failed call of a CUDA library: the function and the status it returned
/// (`cublasGemmStridedBatchedEx: CUBLAS_STATUS_INVALID_VALUE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryError {
    /// The library function (`cublasGemmStridedBatchedEx`, `cufftMakePlanMany64`...).
    pub call: &'static str,
    /// The status name (`CUBLAS_STATUS_...`, `CUFFT_...`), or why the library is missing.
    pub status: String,
}

impl fmt::Display for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.call, self.status)
    }
}

impl RuntimeError {
    /// A [`RuntimeError::Library`] for `call` returning `status` (printed with `Debug`, which
    /// is the status's C name for cudarc's status enums).
    pub fn library(call: &'static str, status: impl fmt::Debug) -> Self {
        RuntimeError::Library(LibraryError { call, status: format!("{status:?}") })
    }
}

impl RuntimeError {
    /// Sets the `dump_path` of a [`KernelError`] (the caller knows where it dumped the kernel's
    /// code); other errors are returned unchanged.
    pub fn with_dump_path(self, path: impl Into<PathBuf>) -> Self {
        match self {
            RuntimeError::Kernel(mut e) => {
                e.dump_path = Some(path.into());
                RuntimeError::Kernel(e)
            }
            other => other,
        }
    }

    /// Whether the error is a sticky CUDA error ([`CudaError::is_sticky`]): the device's
    /// context in this process can do no more work.
    pub fn is_sticky(&self) -> bool {
        match self {
            RuntimeError::Cuda(e) => e.is_sticky(),
            RuntimeError::Kernel(e) => e.cuda.as_ref().is_some_and(CudaError::is_sticky),
            _ => false,
        }
    }

    /// The CUDA result code, when the error came from the driver.
    pub fn cuda_code(&self) -> Option<u32> {
        match self {
            RuntimeError::Cuda(e) => Some(e.code),
            RuntimeError::Kernel(e) => e.cuda.as_ref().map(|c| c.code),
            _ => None,
        }
    }
}

/// A failed CUDA driver call: which call, the `CUresult` code, its name and description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaError {
    /// The driver function (`cuMemAlloc`, `cuLaunchKernel`...).
    pub call: &'static str,
    /// The numeric `CUresult`.
    pub code: u32,
    /// `CUDA_ERROR_...`.
    pub name: String,
    /// The driver's description.
    pub message: String,
}

impl CudaError {
    /// Builds the error from cudarc's `DriverError` (asks the driver for the name and text, so
    /// only call it when a driver is loaded, i.e. after a driver call failed).
    pub fn from_driver(call: &'static str, error: DriverError) -> Self {
        let name = error
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", error.0));
        let message =
            error.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        CudaError { call, code: error.0 as u32, name, message }
    }

    /// Whether this is `CUDA_ERROR_OUT_OF_MEMORY`.
    pub fn is_out_of_memory(&self) -> bool {
        self.code == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32
    }

    /// Whether this is a *sticky* error: a kernel faulted on the device (an illegal address,
    /// a trap, a failed `assert`, ...). The CUDA documentation says of each of these codes that
    /// it "leaves the process in an inconsistent state and any further CUDA work will return
    /// the same error": this process's context on the device is unusable until the process
    /// restarts. Host memory is unaffected.
    pub fn is_sticky(&self) -> bool {
        STICKY.iter().any(|&code| code as u32 == self.code)
    }
}

/// The `CUresult`s that poison the context (CUDA's `cudaError_t` documentation: "the process
/// must be terminated and relaunched").
pub(crate) const STICKY: [sys::CUresult; 9] = {
    use sys::CUresult::*;
    [
        CUDA_ERROR_ILLEGAL_ADDRESS,
        CUDA_ERROR_LAUNCH_FAILED,
        CUDA_ERROR_LAUNCH_TIMEOUT,
        CUDA_ERROR_ASSERT,
        CUDA_ERROR_HARDWARE_STACK_ERROR,
        CUDA_ERROR_ILLEGAL_INSTRUCTION,
        CUDA_ERROR_MISALIGNED_ADDRESS,
        CUDA_ERROR_INVALID_ADDRESS_SPACE,
        CUDA_ERROR_INVALID_PC,
    ]
};

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.name, self.code)?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if self.is_sticky() {
            write!(
                f,
                " [a sticky error: this process's CUDA context on the device is unusable from \
                 now on (every later CUDA call there fails the same way) until the process \
                 restarts; arrays held on the host are unaffected]"
            )?;
        }
        Ok(())
    }
}

/// Out of memory: what was asked for and what the device (or the pool's limit) had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory {
    /// Bytes asked for, rounded up to the pool's 512-byte unit.
    pub requested: usize,
    /// Free bytes on the device (`cuMemGetInfo`) when the allocation failed.
    pub free: usize,
    /// Total bytes of the device.
    pub total: usize,
    /// The pool's limit, when it is the limit that refused the allocation.
    pub limit: Option<usize>,
    /// Bytes the pool held from the device (in use and cached) when it failed.
    pub pool_total: usize,
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "out of memory allocating {} bytes (device: {} bytes free of {}; pool holds {} bytes",
            self.requested, self.free, self.total, self.pool_total
        )?;
        if let Some(limit) = self.limit {
            write!(f, ", limit set to {limit} bytes")?;
        }
        write!(f, ")")
    }
}

/// What was being done with a kernel when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelStage {
    /// `cuModuleLoadData(Ex)`: the driver's JIT or the cubin loader refused the code.
    Load,
    /// `cuModuleGetFunction`: no such entry point.
    GetFunction,
    /// `cuLinkCreate/AddData/Complete`: PTX to cubin.
    Link,
    /// `cuLaunchKernel` refused the launch (bad configuration, too many resources...).
    Launch,
    /// The kernel failed while running (found at the next synchronisation).
    Execution,
}

impl fmt::Display for KernelStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelStage::Load => "loading",
            KernelStage::GetFunction => "finding",
            KernelStage::Link => "linking",
            KernelStage::Launch => "launching",
            KernelStage::Execution => "running",
        })
    }
}

/// A kernel failed to load, link, launch or run. Names the kernel; `dump_path` is filled by the
/// caller ([`RuntimeError::with_dump_path`]) with where it wrote the kernel's code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// The kernel (entry point) or module name.
    pub kernel: String,
    /// What failed.
    pub stage: KernelStage,
    /// The driver's error, if a driver call failed.
    pub cuda: Option<CudaError>,
    /// The JIT/linker log (errors and information), if any.
    pub log: String,
    /// Where the caller dumped the kernel's source, if it did.
    pub dump_path: Option<PathBuf>,
}

impl KernelError {
    /// A link-stage failure of `kernel` with no driver error (ptxas, nvJitLink), its log.
    pub(crate) fn link(kernel: &str, log: String) -> RuntimeError {
        RuntimeError::Kernel(Box::new(KernelError {
            kernel: kernel.to_owned(),
            stage: KernelStage::Link,
            cuda: None,
            log,
            dump_path: None,
        }))
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} kernel `{}` failed", self.stage, self.kernel)?;
        if let Some(cuda) = &self.cuda {
            write!(f, ": {cuda}")?;
        }
        let log = self.log.trim();
        if !log.is_empty() {
            write!(f, "\n{log}")?;
        }
        if let Some(path) = &self.dump_path {
            write!(f, "\n(kernel code dumped to {})", path.display())?;
        }
        Ok(())
    }
}

/// The runtime's result type.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// Turns a cudarc result into a typed error naming the driver call.
pub(crate) fn check<T>(call: &'static str, result: Result<T, DriverError>) -> Result<T> {
    result.map_err(|e| RuntimeError::Cuda(CudaError::from_driver(call, e)))
}

/// Checks a raw `CUresult`.
pub(crate) fn check_raw(call: &'static str, result: sys::CUresult) -> Result<()> {
    check(call, result.result())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_failed() {
        let cuda = CudaError {
            call: "cuLaunchKernel",
            code: 701,
            name: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES".into(),
            message: "too many resources requested for launch".into(),
        };
        let error = RuntimeError::Kernel(Box::new(KernelError {
            kernel: "fused_add_mul".into(),
            stage: KernelStage::Launch,
            cuda: Some(cuda.clone()),
            log: String::new(),
            dump_path: None,
        }))
        .with_dump_path("/tmp/kiln-dump/fused_add_mul.ptx");
        let text = error.to_string();
        assert!(text.starts_with("launching kernel `fused_add_mul` failed: cuLaunchKernel failed"));
        assert!(text.contains("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)"), "{text}");
        assert!(text.ends_with("(kernel code dumped to /tmp/kiln-dump/fused_add_mul.ptx)"));
        assert_eq!(error.cuda_code(), Some(701));
        // Other errors are left alone.
        let other = RuntimeError::Cuda(cuda).with_dump_path("x");
        assert!(matches!(other, RuntimeError::Cuda(_)));
    }

    #[test]
    fn sticky_errors_say_so() {
        let fault = |code: sys::CUresult| CudaError {
            call: "cuStreamSynchronize",
            code: code as u32,
            name: format!("{code:?}"),
            message: String::new(),
        };
        for code in STICKY {
            let e = RuntimeError::Cuda(fault(code));
            assert!(e.is_sticky(), "{code:?}");
            assert!(e.to_string().contains("a sticky error"), "{e}");
            let k = RuntimeError::Kernel(Box::new(KernelError {
                kernel: "oob".into(),
                stage: KernelStage::Execution,
                cuda: Some(fault(code)),
                log: String::new(),
                dump_path: None,
            }));
            assert!(k.is_sticky() && k.to_string().contains("until the process restarts"), "{k}");
        }
        // Errors that leave the context usable do not claim otherwise.
        for code in [
            sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        ] {
            let e = RuntimeError::Cuda(fault(code));
            assert!(!e.is_sticky() && !e.to_string().contains("sticky"), "{e}");
        }
        assert!(!RuntimeError::InvalidArgument("x".into()).is_sticky());
    }

    #[test]
    fn library_errors_name_the_call_and_status() {
        let e = RuntimeError::library(
            "cublasGemmStridedBatchedEx",
            cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE,
        );
        assert_eq!(e.to_string(), "cublasGemmStridedBatchedEx: CUBLAS_STATUS_INVALID_VALUE");
        let e = RuntimeError::library(
            "cufftMakePlanMany64",
            cudarc::cufft::sys::cufftResult::CUFFT_INVALID_SIZE,
        );
        assert_eq!(e.to_string(), "cufftMakePlanMany64: CUFFT_INVALID_SIZE");
    }

    #[test]
    fn out_of_memory_message() {
        let oom = OutOfMemory {
            requested: 1024,
            free: 10,
            total: 100,
            limit: Some(2048),
            pool_total: 1536,
        };
        assert_eq!(
            RuntimeError::OutOfMemory(oom).to_string(),
            "out of memory allocating 1024 bytes (device: 10 bytes free of 100; pool holds 1536 \
             bytes, limit set to 2048 bytes)"
        );
    }
}
