//! LTO-IR of CUDA C++ (NVRTC `-dlto`) through the disk kernel cache: cuFFT's JIT callbacks,
//! the user's (`kiln::fft::config::set_cufft_callbacks`) and the ones kiln generates
//! (`super::fft_fusion`), so a new process compiles no callback it has seen before.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kiln_runtime::nvrtc::{self, Program};
use kiln_runtime::{CachedKernel, DiskCache, Lookup};

use super::{Gpu, Result};

/// The LTO-IR of `source` compiled with `options` for `gpu`, from the disk kernel cache or
/// compiled (and stored). The key is the source, the options, NVRTC's and the driver's
/// versions and the device's `sm`; the entry holds the LTO-IR where a kernel's holds its cubin.
/// Errors: NVRTC's (with its log).
pub fn compile_lto_cached(
    gpu: &Gpu,
    name: &str,
    source: &str,
    options: &[String],
) -> Result<Arc<[u8]>> {
    let program = Program { name, source, options, headers: &[], name_expressions: &[] };
    let disk = gpu.disk();
    let key = match disk {
        Some(_) => {
            let nvrtc = nvrtc::version()?;
            Some(format!(
                "kiln cufft callback {}\nnvrtc {}.{}\ncuda driver {}\nsm_{}\noptions {}\n-- source\n{source}",
                env!("CARGO_PKG_VERSION"),
                nvrtc.0,
                nvrtc.1,
                gpu.driver(),
                gpu.sm(),
                options.join(" ")
            ))
        }
        None => None,
    };
    if let (Some(disk), Some(key)) = (disk, &key) {
        if let Lookup::Hit(entry) = disk.lookup(key) {
            if !entry.cubin.is_empty() {
                return Ok(Arc::from(entry.cubin));
            }
        }
    }
    let lto = nvrtc::compile_lto(&program, gpu.sm())?;
    COMPILES.fetch_add(1, Ordering::Relaxed);
    if let (Some(disk), Some(key)) = (disk, &key) {
        store(disk, key, &lto.code);
    }
    Ok(Arc::from(lto.code))
}

/// NVRTC compiles [`compile_lto_cached`] made in this process (what the disk cache did not hold).
pub fn lto_compile_count() -> u64 {
    COMPILES.load(Ordering::Relaxed)
}

static COMPILES: AtomicU64 = AtomicU64::new(0);

fn store(disk: &DiskCache, key: &str, code: &[u8]) {
    let entry = CachedKernel { ptx: String::new(), cubin: code.to_vec() };
    if let Err(e) = disk.store(key, &entry) {
        tracing::warn!(target: "kiln::cache", dir = %disk.dir().display(), error = %e, "cannot write the disk cache");
    }
}
