//! kiln's own CUDA C++ (the radix sort, the linear-algebra and solver helpers, the bytecode
//! interpreter, the strided gather) as loaded
//! modules: each source compiled by NVRTC once per device and process, and kept in the disk
//! kernel cache (keyed by the source's label and text, kiln's and NVRTC's versions, the driver
//! and `sm_XX`), so a new process loads the cubin without compiling (NVRTC's first compile in
//! a process took 2.4 s for the linear-algebra helpers on an H200); nothing needs nvcc or a
//! host compiler.
//!
//! For `sm_90` (H100, H200) the library carries each module's cubin as NVRTC made it
//! (`runtime/prebuilt/`, with the SHA-256 of the source it was made from): where the source
//! has that digest, the module loads from it with no NVRTC and no disk cache, even in a new process
//! with an empty cache (see [`PREBUILT`]). A source that changed, another `sm_XX`, or a
//! cubin the driver refuses takes the NVRTC path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::Result;
use crate::nvrtc::{self, CodeKind, Program};
use crate::{driver_version, CachedKernel, Device, DiskCache, Lookup, Module, ModuleImage};

/// A module of kiln's CUDA C++ compiled ahead: its label, its `sm_XX`, the SHA-256 of the
/// source it was compiled from ([`kiln_cache::digest`], hex), and the cubin NVRTC made of it.
pub struct Prebuilt {
    pub label: &'static str,
    pub sm: u32,
    pub source_sha256: &'static str,
    pub cubin: &'static [u8],
}

/// kiln's CUDA C++ compiled ahead for `sm_90`: by NVRTC 13.0 on an H200
/// (`scripts/gpu/prebuilt.sh` makes them again), the bytecode interpreter and the gather by
/// clang and ptxas 13.0 (`scripts/gpu/clang_modules.sh`): a device of that `sm_XX` whose driver
/// takes the cubin loads it in about a millisecond where NVRTC's compile took 0.1-2.5 s a module in
/// a new process without a disk cache. The library's source must have the recorded digest (a
/// test of each crate checks it): one that changed falls back to NVRTC.
pub static PREBUILT: [Prebuilt; 5] = [
    Prebuilt {
        label: "kiln_linalg",
        sm: 90,
        source_sha256: include_str!("../prebuilt/kiln_linalg.sha256"),
        cubin: include_bytes!("../prebuilt/kiln_linalg.sm_90.cubin"),
    },
    Prebuilt {
        label: "kiln_radix_sort",
        sm: 90,
        source_sha256: include_str!("../prebuilt/kiln_radix_sort.sha256"),
        cubin: include_bytes!("../prebuilt/kiln_radix_sort.sm_90.cubin"),
    },
    Prebuilt {
        label: "kiln_solver",
        sm: 90,
        source_sha256: include_str!("../prebuilt/kiln_solver.sha256"),
        cubin: include_bytes!("../prebuilt/kiln_solver.sm_90.cubin"),
    },
    // Made by clang and ptxas (`scripts/gpu/clang_modules.sh`), not NVRTC: no GPU is needed.
    Prebuilt {
        label: "kiln_interp",
        sm: 90,
        source_sha256: include_str!("../prebuilt/kiln_interp.sha256"),
        cubin: include_bytes!("../prebuilt/kiln_interp.sm_90.cubin"),
    },
    // The same: the strided gather of the library wrappers' operands.
    Prebuilt {
        label: "kiln_gather",
        sm: 90,
        source_sha256: include_str!("../prebuilt/kiln_gather.sha256"),
        cubin: include_bytes!("../prebuilt/kiln_gather.sm_90.cubin"),
    },
];

impl Prebuilt {
    /// Whether this module was compiled from `source`.
    fn is_of(&self, source: &str) -> bool {
        self.source_sha256.trim() == kiln_cache::digest(&[source.as_bytes()])
    }
}

/// Panics unless the prebuilt module `label` was made from `source`: each crate's test of its
/// own module (a source that changed must make the cubins again, `scripts/gpu/prebuilt.sh`,
/// or every device would compile it with NVRTC).
pub fn assert_prebuilt_current(label: &str, source: &str) {
    assert!(
        PREBUILT.iter().any(|p| p.label == label && p.is_of(source)),
        "runtime/prebuilt/{label}.sha256 is not the library's source's: make the prebuilt modules again (scripts/gpu/prebuilt.sh)"
    );
}

/// Counts of this process by module label (for tests and reports).
struct Tally(OnceLock<Mutex<HashMap<&'static str, usize>>>);

impl Tally {
    const fn new() -> Tally {
        Tally(OnceLock::new())
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<&'static str, usize>> {
        self.0.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add(&self, label: &'static str) {
        *self.counts().entry(label).or_default() += 1;
    }

    fn get(&self, label: &str) -> usize {
        self.counts().get(label).copied().unwrap_or(0)
    }
}

/// Modules [`kiln_module`] loaded from [`PREBUILT`], and NVRTC compiles it made.
static PREBUILT_LOADS: Tally = Tally::new();
static COMPILES: Tally = Tally::new();

/// How many times this process loaded the module labelled `label` from its prebuilt cubin
/// (once per device at most).
pub fn prebuilt_loads(label: &str) -> usize {
    PREBUILT_LOADS.get(label)
}

/// The disk cache key of `source` (labelled `label`) for `sm`.
fn cache_key(label: &str, source: &str, sm: u32, nvrtc: (i32, i32), driver: i32) -> String {
    format!(
        "kiln nvrtc module {label} {}\nnvrtc {}.{}\ncuda driver {driver}\nsm_{sm}\n-- source\n{source}",
        env!("CARGO_PKG_VERSION"),
        nvrtc.0,
        nvrtc.1,
    )
}

/// How many times this process compiled the source labelled `label` with NVRTC (once per
/// device at most, none where the disk cache held it).
pub fn compiles(label: &str) -> usize {
    COMPILES.get(label)
}

/// The process's disk kernel cache (`KILN_CACHE_DIR`), for callers that have no other.
pub fn process_disk_cache() -> Option<&'static DiskCache> {
    static DISK: OnceLock<Option<DiskCache>> = OnceLock::new();
    DISK.get_or_init(DiskCache::from_env).as_ref()
}

/// The module of `source` on `device`: kept per device and label, else loaded from its
/// [`PREBUILT`] cubin (the same label, `sm_XX` and source), else from `disk`, else compiled by
/// NVRTC (no options, no headers) and stored there.
///
/// Errors: NVRTC's ([`crate::RuntimeError::Nvrtc`]: no libnvrtc, a compile error), a module
/// that does not load. A cache that cannot be written is logged, not an error.
pub fn kiln_module(
    device: Device,
    label: &'static str,
    source: &'static str,
    disk: Option<&DiskCache>,
) -> Result<Arc<Module>> {
    /// Each (device, label)'s slot: its module once made.
    type Slot = Arc<Mutex<Option<Arc<Module>>>>;
    static MODULES: OnceLock<Mutex<HashMap<(usize, &'static str), Slot>>> = OnceLock::new();
    let map = MODULES.get_or_init(Default::default);
    let slot = map
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry((device.id(), label))
        .or_default()
        .clone();
    // The slot is held while its module is made: threads asking for the same module at once
    // wait for the first's compile instead of compiling it again (each NVRTC compile takes
    // 0.1-3 s); other modules do not wait for it. A module that failed leaves the slot empty,
    // and the next caller tries again.
    let mut module = slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = module.as_ref() {
        return Ok(m.clone());
    }
    let (major, minor) = device.compute_capability()?;
    let sm = major * 10 + minor;
    let ahead = PREBUILT.iter().find(|p| p.label == label && p.sm == sm && p.is_of(source));
    if let Some(ahead) = ahead {
        match device.load_module(label, ModuleImage::Cubin(ahead.cubin)) {
            Ok(m) => {
                crate::host_trace::point("kiln module: prebuilt cubin loaded");
                PREBUILT_LOADS.add(label);
                *module = Some(m.clone());
                return Ok(m);
            }
            Err(e) => {
                tracing::warn!(target: "kiln::cache", label, error = %e, "the prebuilt cubin did not load; compiling with NVRTC");
            }
        }
    }
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
            COMPILES.add(label);
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
    *module = Some(m.clone());
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn a_tally_counts_each_label_apart() {
        static T: Tally = Tally::new();
        assert_eq!(T.get("a"), 0);
        T.add("a");
        T.add("a");
        T.add("b");
        assert_eq!((T.get("a"), T.get("b"), T.get("c")), (2, 1, 0));
    }
}
