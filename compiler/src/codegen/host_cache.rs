//! Host kernels on disk: each kernel's machine code (the object file the target machine emits)
//! kept in kiln's kernel cache (`KILN_CACHE_DIR`, crate `kiln-cache`, shared with the GPU's
//! cubins), so that a new process links it instead of compiling it through MLIR and LLVM.
//!
//! - Key ([`disk_cache_key`]): the kernel's canonical MLIR text; the target triple, the host
//!   CPU's name and features; the vector math functions offered to the vectoriser (another glibc
//!   may offer others, `KILN_HOST_LIBMVEC=0` none); the versions of kiln and LLVM; and a
//!   fingerprint of the sources that turn kernel MLIR into machine code (`jit.rs`, the MLIR
//!   pipelines, the C++ shim's optimiser and approximations), so that a kiln whose code
//!   generation changed never reads another's entries.
//! - Entry (format `KILNHO01`): the tier's name and the object file. One entry per kernel,
//!   holding the best tier compiled so far: fast code when the kernel is first compiled (a warm
//!   start skips LLVM for every kernel an earlier process ran), optimised code once the kernel
//!   is compiled again optimised (hot, or a large call), never replaced by fast code.
//! - Lookup: a kernel wanted at [`Tier::Fast`] takes either tier (optimised code is better and
//!   costs the same to load), one wanted optimised takes optimised code only, and
//!   `KILN_HOST_TIER=fast` takes fast code only.
//! - Misses, logged with their reason (target `kiln::cache`) and counted ([`disk_stats`]): no
//!   entry; a damaged one (truncated, corrupt, another key's: `kiln_cache::MissReason`); one of
//!   a tier not wanted; an object that does not link. A damaged or unlinkable entry is a warning
//!   and is rebuilt: the kernel is compiled and the entry rewritten (atomically), never a crash.
//!   A store that fails (a read-only directory) is a warning, not an error.

use std::sync::OnceLock;
use std::time::Instant;

use kiln_cache::{CacheStats, Counters, DiskCache, Format, MissReason};

use super::jit::{self, HostCode, Origin, Tier};
use crate::CompileError;

/// Host kernel entries: the tier's name, then the object file.
const FORMAT: Format = Format::new(*b"KILNHO01", 2);

static COUNTERS: Counters = Counters::new("host kernel");

/// The sources whose changes change the machine code made from a kernel's MLIR text.
const CODEGEN_SOURCES: [&str; 4] = [
    include_str!("jit.rs"),
    include_str!("../toolchain/mlir.rs"),
    include_str!("../../shim/optimize.cpp"),
    include_str!("../../shim/approximate.cpp"),
];

/// The cache of this process's environment (`KILN_CACHE_DIR`, read once); `None` when off.
pub(crate) fn disk() -> Option<&'static DiskCache> {
    static DISK: OnceLock<Option<DiskCache>> = OnceLock::new();
    DISK.get_or_init(DiskCache::from_env).as_ref()
}

/// Host kernels' disk cache lookups and stores in this process (all directories together).
pub fn disk_stats() -> CacheStats {
    COUNTERS.stats()
}

/// The disk-cache key of a host kernel of MLIR text `mlir` on this machine (see the module's
/// docs).
pub fn disk_cache_key(mlir: &str) -> String {
    static MACHINE: OnceLock<String> = OnceLock::new();
    let machine = MACHINE.get_or_init(|| {
        let (triple, cpu, features) = jit::host_target();
        let (major, minor, patch) = crate::toolchain::llvm_version();
        let libmvec = kiln_cache::digest(&[jit::libmvec_names().as_bytes()]);
        let codegen = kiln_cache::digest(&CODEGEN_SOURCES.map(str::as_bytes));
        format!(
            "kiln host kernel\nkiln {}\nllvm {major}.{minor}.{patch}\ntarget {triple}\ncpu {cpu}\nfeatures {features}\n\
             libmvec {libmvec}\ncodegen {codegen}\n",
            env!("CARGO_PKG_VERSION")
        )
    });
    format!("{machine}--\n{mlir}")
}

/// Why a host kernel was not taken from the disk.
#[derive(Debug)]
enum Miss {
    /// No entry, or a damaged one.
    Entry(MissReason),
    /// The entry holds code of a tier not wanted.
    Tier { stored: Tier, wanted: Tier },
    /// The entry is whole but cannot be used: an unknown tier, an object that does not link.
    Unusable(String),
}

impl Miss {
    fn damaged(&self) -> bool {
        match self {
            Miss::Entry(reason) => reason.damaged(),
            Miss::Tier { .. } => false,
            Miss::Unusable(_) => true,
        }
    }
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::Entry(reason) => reason.fmt(f),
            Miss::Tier { stored, wanted } => {
                write!(f, "holds {} code, {} wanted", stored.name(), wanted.name())
            }
            Miss::Unusable(why) => write!(f, "unusable: {why}"),
        }
    }
}

/// The machine code of the kernel of MLIR text `mlir` at `tier` (or, if `better`, optimised
/// code where fast code is wanted): read from `disk` and linked, else compiled and stored there.
/// Without a disk cache, compiled.
pub(crate) fn load_or_compile(
    mlir: &str,
    tier: Tier,
    better: bool,
    disk: Option<&DiskCache>,
) -> Result<HostCode, CompileError> {
    let Some(disk) = disk else { return jit::compile(mlir, tier) };
    let key = disk_cache_key(mlir);
    let path = disk.path_of(&key);
    let t = Instant::now();
    let miss = match disk.read(&FORMAT, &path, &key) {
        Err(reason) => Miss::Entry(reason),
        Ok(parts) => match std::str::from_utf8(&parts[0]).ok().and_then(Tier::from_name) {
            None => Miss::Unusable("unknown tier".into()),
            Some(stored) if stored == tier || (better && stored == Tier::Optimized) => {
                let times =
                    jit::CompileTimes { disk: t.elapsed().as_secs_f64(), ..Default::default() };
                match jit::load_object(&parts[1], stored, Origin::DiskCache, times) {
                    Ok(code) => {
                        COUNTERS.hit(&path);
                        return Ok(code);
                    }
                    Err(e) => Miss::Unusable(e.to_string()),
                }
            }
            Some(stored) => Miss::Tier { stored, wanted: tier },
        },
    };
    COUNTERS.miss(&path, &miss, miss.damaged());
    // Optimised code on disk stays there when fast code is compiled (`KILN_HOST_TIER=fast`).
    let keep = matches!(miss, Miss::Tier { stored: Tier::Optimized, .. });
    compile_and_store(mlir, tier, (!keep).then_some(disk))
}

/// Compiles the kernel of MLIR text `mlir` at `tier` and stores its object file in `disk`, if
/// given (a failed store is logged, not an error).
pub(crate) fn compile_and_store(
    mlir: &str,
    tier: Tier,
    disk: Option<&DiskCache>,
) -> Result<HostCode, CompileError> {
    let (mut code, object) = jit::compile_with_object(mlir, tier)?;
    if let Some(disk) = disk {
        let t = Instant::now();
        let key = disk_cache_key(mlir);
        let path = disk.path_of(&key);
        match disk.write(&FORMAT, &path, &key, &[tier.name().as_bytes(), &object]) {
            Ok(()) => COUNTERS.stored(&path),
            Err(e) => {
                tracing::warn!(target: "kiln::cache", path = %path.display(), error = %e, "could not store a host kernel in the disk cache")
            }
        }
        code.times.disk += t.elapsed().as_secs_f64();
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = r#"module attributes {kiln.math = "libm"} {
  llvm.func @kiln_kernel_host(%bufs: !llvm.ptr, %params: !llvm.ptr, %start: i64, %end: i64) {
    llvm.return
  }
}
"#;

    #[test]
    fn the_key_names_the_kernel_the_machine_and_the_versions() {
        let key = disk_cache_key(KERNEL);
        let (triple, cpu, features) = jit::host_target();
        let (major, minor, patch) = crate::toolchain::llvm_version();
        for part in [
            format!("kiln {}\n", env!("CARGO_PKG_VERSION")),
            format!("llvm {major}.{minor}.{patch}\n"),
            format!("target {triple}\n"),
            format!("cpu {cpu}\n"),
            format!("features {features}\n"),
            format!("--\n{KERNEL}"),
        ] {
            assert!(key.contains(&part), "{part:?} not in\n{key}");
        }
        assert!(key.ends_with(KERNEL));
        assert_ne!(disk_cache_key(&KERNEL.replace("libm", "polynomial")), key);
    }

    /// The same object linked twice (two JITDylibs: both define the entry), each callable,
    /// then unloaded; a damaged entry is rebuilt; fast code never replaces optimised code.
    #[test]
    fn entries_are_linked_and_damaged_ones_rebuilt() {
        let dir = tempfile_dir();
        let disk = DiskCache::new(&dir);
        let first = load_or_compile(KERNEL, Tier::Optimized, true, Some(&disk)).unwrap();
        assert_eq!(first.origin, Origin::Compiled);
        let second = load_or_compile(KERNEL, Tier::Fast, true, Some(&disk)).unwrap();
        assert_eq!((second.origin, second.tier), (Origin::DiskCache, Tier::Optimized));
        assert_eq!((second.times.mlir, second.times.optimize, second.times.jit), (0.0, 0.0, 0.0));
        assert_ne!(first.entry as usize, second.entry as usize);
        for code in [&first, &second] {
            // SAFETY: the kernel reads nothing and returns at once.
            unsafe { (code.entry)(std::ptr::null(), std::ptr::null(), 0, 0) };
        }
        drop((first, second));
        let path = disk.path_of(&disk_cache_key(KERNEL));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let before = disk_stats();
        let rebuilt = load_or_compile(KERNEL, Tier::Optimized, true, Some(&disk)).unwrap();
        assert_eq!(rebuilt.origin, Origin::Compiled);
        assert!(disk_stats().corrupt > before.corrupt);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "rewritten whole");
        assert_eq!(
            load_or_compile(KERNEL, Tier::Optimized, true, Some(&disk)).unwrap().origin,
            Origin::DiskCache
        );
        // Fast code only (`KILN_HOST_TIER=fast`): the optimised entry is a miss, and stays.
        let fast = load_or_compile(KERNEL, Tier::Fast, false, Some(&disk)).unwrap();
        assert_eq!((fast.origin, fast.tier), (Origin::Compiled, Tier::Fast));
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "the optimised entry kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kiln-host-cache-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
