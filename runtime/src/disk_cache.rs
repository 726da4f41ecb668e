//! The kernel cache on disk: compiled GPU code kept across processes, so a warm start skips
//! both LLVM and the driver's PTX JIT.
//!
//! An entry is one file, `<dir>/kernels/<sha256 of the key>.kc`, holding the key's full text
//! (what was compiled and for what: the compiler puts the kernel's canonical MLIR, the `sm_XX`
//! target and the versions of kiln, LLVM and the driver in it), the PTX, and the cubin linked
//! from it for the device. The runtime knows nothing of what the key means: it stores bytes.
//!
//! - Writes are atomic: the entry is written to a temporary file in the same directory and
//!   renamed over the final name, so a reader sees a whole entry or none, and processes sharing
//!   the directory never see each other's half-written files (two writers of one key write the
//!   same bytes; the last rename wins).
//! - A truncated or corrupt entry (bad magic, lengths past the end, SHA-256 of the payload not
//!   matching the header's) is a miss with that reason, logged, then rebuilt and rewritten:
//!   never a crash. An entry whose stored key differs from the one asked for (a hash collision,
//!   or a hand-edited file) is a miss too.
//! - Every lookup is logged through `tracing` (target `kiln::cache`): hits, and misses with
//!   their reason; [`DiskCache::stats`] counts them.
//!
//! The directory is `KILN_CACHE_DIR`, else `$XDG_CACHE_HOME/kiln`, else `~/.cache/kiln`;
//! `KILN_CACHE_DIR=off` turns the disk cache off ([`DiskCache::from_env`] gives `None`).
//!
//! File layout (little-endian): `KILNKC01` magic, key length, PTX length, cubin length (u64
//! each), the SHA-256 of key + PTX + cubin (32 bytes), then the three byte strings.

use std::{
    fmt,
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        OnceLock,
    },
};

use sha2::{Digest, Sha256};

const MAGIC: &[u8; 8] = b"KILNKC01";
const HEADER: usize = 8 + 3 * 8 + 32;

/// A compiled kernel as the cache keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedKernel {
    /// PTX assembly text.
    pub ptx: String,
    /// The cubin linked from `ptx` for the device (may be empty when only PTX is kept).
    pub cubin: Vec<u8>,
}

/// Why a lookup missed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MissReason {
    /// No entry for the key.
    Absent,
    /// The file could not be read (permissions, I/O error).
    Unreadable(String),
    /// Shorter than its header says: a truncated write or a damaged file.
    Truncated { len: u64, expected: u64 },
    /// Not a kiln cache entry of this format.
    BadMagic,
    /// The payload's SHA-256 differs from the header's: corrupt.
    Checksum,
    /// The entry was made for another key (a hash collision or an edited file).
    KeyMismatch,
}

impl fmt::Display for MissReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MissReason::Absent => f.write_str("absent"),
            MissReason::Unreadable(e) => write!(f, "unreadable: {e}"),
            MissReason::Truncated { len, expected } => write!(f, "truncated: {len} bytes of {expected}"),
            MissReason::BadMagic => f.write_str("not a kiln cache entry (bad magic)"),
            MissReason::Checksum => f.write_str("corrupt: checksum mismatch"),
            MissReason::KeyMismatch => f.write_str("entry made for another key"),
        }
    }
}

/// The result of [`DiskCache::lookup`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit(CachedKernel),
    Miss(MissReason),
}

/// Counts of lookups and stores since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub stores: u64,
    /// Misses whose entry existed but was damaged (truncated, bad magic, checksum, key).
    pub corrupt: u64,
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    stores: AtomicU64,
    corrupt: AtomicU64,
}

/// A kernel cache directory. Cheap to make; every operation goes to the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
}

fn counters() -> &'static Counters {
    static C: OnceLock<Counters> = OnceLock::new();
    C.get_or_init(Counters::default)
}

impl DiskCache {
    /// A cache in `dir` (created on the first store).
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The cache of this process's environment: `KILN_CACHE_DIR` (`off` turns it off), else
    /// `$XDG_CACHE_HOME/kiln`, else `$HOME/.cache/kiln`; `None` when off or no home is known.
    pub fn from_env() -> Option<DiskCache> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// [`from_env`](Self::from_env) over given variables (testable without touching the
    /// process's environment).
    pub fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<DiskCache> {
        let nonempty = |name: &str| var(name).filter(|v| !v.is_empty());
        if let Some(dir) = nonempty("KILN_CACHE_DIR") {
            if dir == "off" {
                return None;
            }
            return Some(DiskCache::new(dir));
        }
        if let Some(xdg) = nonempty("XDG_CACHE_HOME") {
            return Some(DiskCache::new(PathBuf::from(xdg).join("kiln")));
        }
        nonempty("HOME").map(|home| DiskCache::new(PathBuf::from(home).join(".cache").join("kiln")))
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds `key`'s entry.
    pub fn path_of(&self, key: &str) -> PathBuf {
        let digest = Sha256::digest(key.as_bytes());
        let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join("kernels").join(format!("{name}.kc"))
    }

    /// Looks `key` up. Never fails: a damaged entry is a miss with its reason (logged).
    pub fn lookup(&self, key: &str) -> Lookup {
        let path = self.path_of(key);
        let result = match fs::read(&path) {
            Ok(bytes) => decode(key, &bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Lookup::Miss(MissReason::Absent),
            Err(e) => Lookup::Miss(MissReason::Unreadable(e.to_string())),
        };
        let c = counters();
        match &result {
            Lookup::Hit(k) => {
                c.hits.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(target: "kiln::cache", path = %path.display(), cubin = k.cubin.len(), "disk cache hit");
            }
            Lookup::Miss(reason) => {
                c.misses.fetch_add(1, Ordering::Relaxed);
                if !matches!(reason, MissReason::Absent) {
                    c.corrupt.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(target: "kiln::cache", path = %path.display(), %reason, "disk cache entry unusable; rebuilding it");
                } else {
                    tracing::debug!(target: "kiln::cache", path = %path.display(), %reason, "disk cache miss");
                }
            }
        }
        result
    }

    /// Stores `kernel` under `key`, atomically (temporary file + rename). Returns the entry's
    /// path. Errors: the directory cannot be made or written.
    pub fn store(&self, key: &str, kernel: &CachedKernel) -> io::Result<PathBuf> {
        let path = self.path_of(key);
        let dir = path.parent().expect("entries live in a directory");
        fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&encode(key, kernel))?;
        tmp.as_file().sync_data()?;
        tmp.persist(&path).map_err(|e| e.error)?;
        counters().stores.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(target: "kiln::cache", path = %path.display(), "disk cache store");
        Ok(path)
    }

    /// Lookup and store counts of this process (all cache directories together).
    pub fn stats() -> CacheStats {
        let c = counters();
        CacheStats {
            hits: c.hits.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            stores: c.stores.load(Ordering::Relaxed),
            corrupt: c.corrupt.load(Ordering::Relaxed),
        }
    }
}

fn checksum(parts: [&[u8]; 3]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn encode(key: &str, k: &CachedKernel) -> Vec<u8> {
    let parts = [key.as_bytes(), k.ptx.as_bytes(), &k.cubin[..]];
    let mut out = Vec::with_capacity(HEADER + parts.iter().map(|p| p.len()).sum::<usize>());
    out.extend_from_slice(MAGIC);
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
    }
    out.extend_from_slice(&checksum(parts));
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

fn decode(key: &str, bytes: &[u8]) -> Lookup {
    let miss = Lookup::Miss;
    if bytes.len() < HEADER {
        if bytes.len() >= 8 && &bytes[..8] != MAGIC {
            return miss(MissReason::BadMagic);
        }
        return miss(MissReason::Truncated { len: bytes.len() as u64, expected: HEADER as u64 });
    }
    if &bytes[..8] != MAGIC {
        return miss(MissReason::BadMagic);
    }
    let len_at = |i: usize| u64::from_le_bytes(bytes[8 + 8 * i..16 + 8 * i].try_into().expect("8 bytes"));
    let lens = [len_at(0), len_at(1), len_at(2)];
    let expected = lens.iter().try_fold(HEADER as u64, |a, &l| a.checked_add(l)).unwrap_or(u64::MAX);
    if (bytes.len() as u64) != expected {
        return miss(MissReason::Truncated { len: bytes.len() as u64, expected });
    }
    let (k, rest) = bytes[HEADER..].split_at(lens[0] as usize);
    let (ptx, cubin) = rest.split_at(lens[1] as usize);
    if checksum([k, ptx, cubin])[..] != bytes[32..HEADER] {
        return miss(MissReason::Checksum);
    }
    if k != key.as_bytes() {
        return miss(MissReason::KeyMismatch);
    }
    match std::str::from_utf8(ptx) {
        Ok(ptx) => Lookup::Hit(CachedKernel { ptx: ptx.to_owned(), cubin: cubin.to_vec() }),
        Err(_) => miss(MissReason::Checksum),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(tag: &str) -> CachedKernel {
        CachedKernel { ptx: format!(".version 8.0\n// {tag}\n"), cubin: vec![0x7f, b'E', b'L', b'F', 1, 2, 3] }
    }

    #[test]
    fn store_then_hit() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        assert_eq!(cache.lookup("k1"), Lookup::Miss(MissReason::Absent));
        cache.store("k1", &kernel("a")).unwrap();
        assert_eq!(cache.lookup("k1"), Lookup::Hit(kernel("a")));
        assert_eq!(cache.lookup("k2"), Lookup::Miss(MissReason::Absent));
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(dir.path().join("kernels")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn truncated_corrupt_and_foreign_entries_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        let path = cache.store("k", &kernel("a")).unwrap();
        let good = fs::read(&path).unwrap();

        for cut in [0, 5, HEADER - 1, HEADER + 3, good.len() - 1] {
            fs::write(&path, &good[..cut]).unwrap();
            match cache.lookup("k") {
                Lookup::Miss(MissReason::Truncated { len, .. }) => assert_eq!(len, cut as u64),
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        fs::write(&path, &flipped).unwrap();
        assert_eq!(cache.lookup("k"), Lookup::Miss(MissReason::Checksum));

        let mut magic = good.clone();
        magic[0] = b'X';
        fs::write(&path, &magic).unwrap();
        assert_eq!(cache.lookup("k"), Lookup::Miss(MissReason::BadMagic));

        // An entry written for another key, placed under this key's name.
        fs::write(&path, encode("other", &kernel("a"))).unwrap();
        assert_eq!(cache.lookup("k"), Lookup::Miss(MissReason::KeyMismatch));

        // A rebuild rewrites the entry whole.
        cache.store("k", &kernel("b")).unwrap();
        assert_eq!(cache.lookup("k"), Lookup::Hit(kernel("b")));
    }

    #[test]
    fn concurrent_writers_and_readers_never_see_a_partial_entry() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        let big = CachedKernel { ptx: "x".repeat(1 << 20), cubin: vec![7; 1 << 20] };
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20 {
                        cache.store("shared", &big).unwrap();
                    }
                });
            }
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..200 {
                        match cache.lookup("shared") {
                            Lookup::Hit(k) => assert_eq!(k, big),
                            Lookup::Miss(MissReason::Absent) => {}
                            Lookup::Miss(other) => panic!("reader saw {other}"),
                        }
                    }
                });
            }
        });
        assert_eq!(cache.lookup("shared"), Lookup::Hit(big));
    }

    #[test]
    fn directory_from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into())
        };
        assert_eq!(DiskCache::from_vars(vars(&[("KILN_CACHE_DIR", "/c"), ("HOME", "/h")])), Some(DiskCache::new("/c")));
        assert_eq!(DiskCache::from_vars(vars(&[("KILN_CACHE_DIR", "off"), ("HOME", "/h")])), None);
        assert_eq!(DiskCache::from_vars(vars(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])), Some(DiskCache::new("/x/kiln")));
        assert_eq!(DiskCache::from_vars(vars(&[("HOME", "/h")])), Some(DiskCache::new("/h/.cache/kiln")));
        assert_eq!(DiskCache::from_vars(vars(&[])), None);
    }
}
