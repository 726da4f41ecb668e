//! kiln's own CUDA C++ (the radix sort, the linear-algebra and solver helpers) as loaded
//! modules: each source compiled by NVRTC once per device and process, and kept in the disk
//! kernel cache (keyed by the source's label and text, kiln's and NVRTC's versions, the driver
//! and `sm_XX`), so a new process loads the cubin without compiling (NVRTC's first compile in
//! a process took 2.4 s for the linear-algebra helpers on an H200); nothing needs nvcc or a
//! host compiler.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::Result;
use crate::nvrtc::{self, CodeKind, Program};
use crate::{driver_version, CachedKernel, Device, DiskCache, Lookup, Module, ModuleImage};

/// The disk cache key of `source` (labelled `label`) for `sm`.
fn cache_key(label: &str, source: &str, sm: u32, nvrtc: (i32, i32), driver: i32) -> String {
    format!(
        "kiln nvrtc module {label} {}\nnvrtc {}.{}\ncuda driver {driver}\nsm_{sm}\n-- source\n{source}",
        env!("CARGO_PKG_VERSION"),
        nvrtc.0,
        nvrtc.1,
    )
}

/// NVRTC compiles [`kiln_module`] made, by label (for tests and reports).
fn compile_counts() -> &'static Mutex<HashMap<&'static str, usize>> {
    static COUNTS: OnceLock<Mutex<HashMap<&'static str, usize>>> = OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

/// How many times this process compiled the source labelled `label` with NVRTC (once per
/// device at most, none where the disk cache held it).
pub fn compiles(label: &str) -> usize {
    compile_counts().lock().unwrap_or_else(|p| p.into_inner()).get(label).copied().unwrap_or(0)
}

/// The process's disk kernel cache (`KILN_CACHE_DIR`), for callers that have no other.
pub fn process_disk_cache() -> Option<&'static DiskCache> {
    static DISK: OnceLock<Option<DiskCache>> = OnceLock::new();
    DISK.get_or_init(DiskCache::from_env).as_ref()
}

/// The module of `source` on `device`: kept per device and label, else from `disk`, else
/// compiled by NVRTC (no options, no headers) and stored there.
///
/// Errors: NVRTC's ([`crate::RuntimeError::Nvrtc`]: no libnvrtc, a compile error), a module
/// that does not load. A cache that cannot be written is logged, not an error.
pub fn kiln_module(
    device: Device,
    label: &'static str,
    source: &'static str,
    disk: Option<&DiskCache>,
) -> Result<Arc<Module>> {
    static MODULES: OnceLock<Mutex<HashMap<(usize, &'static str), Arc<Module>>>> = OnceLock::new();
    let map = MODULES.get_or_init(Default::default);
    let id = (device.id(), label);
    // Held while a module is made: threads asking for one at once wait for the first's
    // compile instead of compiling it again (each NVRTC compile takes 0.1-3 s).
    let mut modules = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = modules.get(&id) {
        return Ok(m.clone());
    }
    let (major, minor) = device.compute_capability()?;
    let sm = major * 10 + minor;
    let key = cache_key(label, source, sm, nvrtc::version()?, driver_version()?);
    let cached = match disk.map(|d| d.lookup(&key)) {
        Some(Lookup::Hit(entry)) => Some(entry),
        Some(Lookup::Miss(_)) | None => None,
    };
    let entry = match cached {
        Some(entry) => entry,
        None => {
            let program =
                Program { name: label, source, options: &[], headers: &[], name_expressions: &[] };
            let compiled = nvrtc::compile(&program, sm)?;
            *compile_counts()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(label)
                .or_default() += 1;
            let entry = match compiled.kind {
                CodeKind::Cubin => CachedKernel { ptx: String::new(), cubin: compiled.code },
                CodeKind::Ptx => CachedKernel {
                    ptx: String::from_utf8_lossy(&compiled.code).into_owned(),
                    cubin: Vec::new(),
                },
            };
            if let Some(disk) = disk {
                if let Err(e) = disk.store(&key, &entry) {
                    tracing::warn!(target: "kiln::cache", dir = %disk.dir().display(), error = %e, "cannot write the disk cache");
                }
            }
            entry
        }
    };
    let image = if entry.cubin.is_empty() {
        ModuleImage::Ptx(&entry.ptx)
    } else {
        ModuleImage::Cubin(&entry.cubin)
    };
    let m = device.load_module(label, image)?;
    modules.insert(id, m.clone());
    Ok(m)
}
