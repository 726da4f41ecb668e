//! Device discovery and backend selection.
//!
//! cudarc is built with `dynamic-loading`: `libcuda.so` is opened on first use, and cudarc
//! *panics* (rather than returning an error) when it is missing. Everything here checks for the
//! library first and, as a second guard, catches panics, so a machine without a driver simply
//! has no CUDA devices.

use std::{
    env,
    panic::{self, AssertUnwindSafe},
    str::FromStr,
    sync::{Once, OnceLock},
};

use cudarc::driver::{sys, CudaContext};

use crate::RuntimeError;

/// The environment variable that selects the backend: `cpu`, `cuda` or `cuda:N`.
pub const DEVICE_ENV: &str = "KILN_DEVICE";

/// Where arrays live and kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The host CPU.
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(usize),
}

impl FromStr for Backend {
    type Err = RuntimeError;

    /// Parses `cpu`, `cuda` (device 0) or `cuda:N`; case-insensitive, surrounding spaces ignored.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || RuntimeError::InvalidDevice(text.to_owned());
        let spec = text.trim().to_ascii_lowercase();
        match spec.as_str() {
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda(0)),
            _ => {
                let ordinal = spec.strip_prefix("cuda:").ok_or_else(invalid)?;
                if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid());
                }
                ordinal.parse().map(Backend::Cuda).map_err(|_| invalid())
            }
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Cpu => write!(f, "cpu"),
            Backend::Cuda(ordinal) => write!(f, "cuda:{ordinal}"),
        }
    }
}

/// The outcome of [`resolve_backend`]: the backend, and why it differs from the request if it
/// does (the text of the fallback notice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The backend to use.
    pub backend: Backend,
    /// Set when falling back to the CPU: why.
    pub fallback: Option<String>,
}

/// Decides the backend from the value of `KILN_DEVICE` (`None` when unset) and the number of
/// CUDA devices. Pure: [`select_backend`] feeds it the environment and the driver.
///
/// - unset or empty: `cuda:0` if there is a device, else the CPU (with a notice);
/// - `cpu`: the CPU;
/// - `cuda` / `cuda:N`: that device if it exists, else the CPU (with a notice);
/// - anything else: treated as unset, with a notice.
pub fn resolve_backend(spec: Option<&str>, cuda_devices: usize) -> Selection {
    let cuda_or_cpu = |ordinal: usize, why: &dyn Fn() -> String| {
        if ordinal < cuda_devices {
            Selection {
                backend: Backend::Cuda(ordinal),
                fallback: None,
            }
        } else {
            Selection {
                backend: Backend::Cpu,
                fallback: Some(why()),
            }
        }
    };
    let no_device = || match cuda_devices {
        0 => "no CUDA device found".to_owned(),
        n => format!("only {n} CUDA device(s) found"),
    };
    match spec.map(str::trim).filter(|s| !s.is_empty()) {
        None => cuda_or_cpu(0, &no_device),
        Some(text) => match text.parse::<Backend>() {
            Ok(Backend::Cpu) => Selection {
                backend: Backend::Cpu,
                fallback: None,
            },
            Ok(Backend::Cuda(n)) => cuda_or_cpu(n, &|| {
                format!("{DEVICE_ENV}={text} asked for cuda:{n} but {}", no_device())
            }),
            Err(error) => {
                let mut selection = cuda_or_cpu(0, &no_device);
                let why = format!("ignoring {DEVICE_ENV}: {error}");
                selection.fallback = Some(match selection.fallback {
                    Some(more) => format!("{why}; {more}"),
                    None => why,
                });
                selection
            }
        },
    }
}

/// Selects the backend from `KILN_DEVICE` and the devices present (see [`resolve_backend`]).
/// When it falls back to the CPU it prints one line on stderr, once per process.
pub fn select_backend() -> Backend {
    let spec = env::var(DEVICE_ENV).ok();
    // Only query the driver when CUDA could be chosen.
    let devices = match spec.as_deref().map(str::parse::<Backend>) {
        Some(Ok(Backend::Cpu)) => 0,
        _ => device_count(),
    };
    let selection = resolve_backend(spec.as_deref(), devices);
    if let Some(why) = &selection.fallback {
        static NOTICE: Once = Once::new();
        NOTICE.call_once(|| eprintln!("kiln: {why}; using the CPU"));
    }
    selection.backend
}

/// Whether a usable CUDA driver with at least one device is present. Never panics.
pub fn cuda_available() -> bool {
    device_count() > 0
}

/// The number of CUDA devices: 0 without a driver, or if the driver fails. Never panics.
/// Probed once per process.
pub fn device_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| probe_devices().unwrap_or(0))
}

/// Asks the driver how many devices it has, if the driver library can be loaded.
fn probe_devices() -> Result<usize, RuntimeError> {
    // SAFETY: `is_culib_present` only tries `dlopen` on the candidate names of libcuda and closes
    // what it opened; loading libcuda runs no code of ours.
    if !unsafe { sys::is_culib_present() } {
        return Ok(0);
    }
    // The library exists; cudarc still panics if a symbol it needs is missing (old driver), so
    // catch that too. `AssertUnwindSafe`: nothing of ours is borrowed across the call.
    let count = panic::catch_unwind(AssertUnwindSafe(CudaContext::device_count))
        .map_err(|_| RuntimeError::Driver("cudarc panicked while loading the driver".into()))?
        .map_err(|e| RuntimeError::Driver(e.to_string()))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_device_strings() {
        assert_eq!("cpu".parse(), Ok(Backend::Cpu));
        assert_eq!(" CPU ".parse(), Ok(Backend::Cpu));
        assert_eq!("cuda".parse(), Ok(Backend::Cuda(0)));
        assert_eq!("cuda:0".parse(), Ok(Backend::Cuda(0)));
        assert_eq!("CUDA:3".parse(), Ok(Backend::Cuda(3)));
        for bad in [
            "", "gpu", "cuda:", "cuda:-1", "cuda:+1", "cuda:x", "cuda:1:2", "cuda0", "cpu:0",
        ] {
            assert_eq!(
                bad.parse::<Backend>(),
                Err(RuntimeError::InvalidDevice(bad.to_owned())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn display_round_trips() {
        for backend in [Backend::Cpu, Backend::Cuda(0), Backend::Cuda(7)] {
            assert_eq!(backend.to_string().parse(), Ok(backend));
        }
    }

    #[test]
    fn default_prefers_cuda_0() {
        let pick = resolve_backend(None, 2);
        assert_eq!(
            pick,
            Selection {
                backend: Backend::Cuda(0),
                fallback: None
            }
        );
        assert_eq!(resolve_backend(Some("  "), 1).backend, Backend::Cuda(0));
    }

    #[test]
    fn default_falls_back_to_cpu_with_notice() {
        let pick = resolve_backend(None, 0);
        assert_eq!(pick.backend, Backend::Cpu);
        assert!(pick.fallback.unwrap().contains("no CUDA device"));
    }

    #[test]
    fn explicit_choices() {
        assert_eq!(
            resolve_backend(Some("cpu"), 4),
            Selection {
                backend: Backend::Cpu,
                fallback: None
            }
        );
        assert_eq!(resolve_backend(Some("cuda"), 1).backend, Backend::Cuda(0));
        assert_eq!(resolve_backend(Some("cuda:3"), 4).backend, Backend::Cuda(3));
        let missing = resolve_backend(Some("cuda:4"), 4);
        assert_eq!(missing.backend, Backend::Cpu);
        assert!(missing.fallback.unwrap().contains("only 4 CUDA device(s)"));
        let none = resolve_backend(Some("cuda"), 0);
        assert_eq!(none.backend, Backend::Cpu);
        assert!(none.fallback.unwrap().contains("no CUDA device"));
    }

    #[test]
    fn invalid_value_is_ignored_with_notice() {
        let pick = resolve_backend(Some("tpu"), 1);
        assert_eq!(pick.backend, Backend::Cuda(0));
        assert!(pick.fallback.unwrap().contains("ignoring KILN_DEVICE"));
        let pick = resolve_backend(Some("tpu"), 0);
        assert_eq!(pick.backend, Backend::Cpu);
        let why = pick.fallback.unwrap();
        assert!(
            why.contains("ignoring KILN_DEVICE") && why.contains("no CUDA device"),
            "{why}"
        );
    }

    /// Runs on every machine: must not panic; on the development/CI machine (no driver) it is
    /// also checked to report nothing. `KILN_EXPECT_GPU=1` / `=0` state the expectation.
    #[test]
    fn cuda_probe_never_panics() {
        let available = cuda_available();
        assert_eq!(available, device_count() > 0);
        match env::var("KILN_EXPECT_GPU").as_deref() {
            Ok("1") => assert!(available, "KILN_EXPECT_GPU=1 but no CUDA device found"),
            Ok("0") => assert!(!available),
            // No kernel driver at all: certainly no device (the development and CI machines).
            _ if !["/proc/driver/nvidia", "/dev/nvidiactl"]
                .iter()
                .any(|p| std::path::Path::new(p).exists()) =>
            {
                assert!(!available);
                assert_eq!(device_count(), 0);
            }
            _ => {}
        }
    }

    #[test]
    fn select_backend_never_panics() {
        let backend = select_backend();
        if !cuda_available() {
            assert_eq!(backend, Backend::Cpu);
        }
    }
}
