//! kiln's cache of compiled kernels on disk: code kept across processes, so that a warm start
//! skips LLVM (and, on a GPU, the driver's PTX JIT).
//!
//! An entry is one file, `<dir>/kernels/<sha256 of the key>.kc`, holding the key's full text
//! (what was compiled and for what: the compiler puts the kernel's canonical MLIR, the target
//! (`sm_XX`, or the host CPU and its features) and the versions of kiln, LLVM and the driver in
//! it) and the entry's byte strings. This crate knows nothing of what the key means: it stores
//! bytes. Kinds of entry share the directory, each with its [`Format`] (its magic and number
//! of byte strings), the kernels' with its [`Counters`]:
//!
//! - GPU kernels ([`DiskCache::lookup`], [`DiskCache::store`]): the PTX, and the cubin linked from
//!   it for the device.
//! - Host kernels (the compiler's `codegen::host`, through [`DiskCache::read`] and
//!   [`DiskCache::write`]): an object file of the host CPU's machine code.
//! - The CUDA libraries a program called (`kiln-exec`'s `cuda::remembered`, through
//!   [`DiskCache::read`] and [`DiskCache::write`]; `<dir>/programs/<sha256>.kl`): a byte of bits.
//!
//! Their rules:
//!
//! - Writes are atomic: the entry is written to a temporary file in the same directory and
//!   renamed over the final name, so a reader sees a whole entry or none, and processes sharing
//!   the directory never see each other's half-written files (two writers of one key write the
//!   same bytes; the last rename wins).
//! - A truncated or corrupt entry (bad magic, lengths past the end, SHA-256 of the payload not
//!   matching the header's) is a miss with that reason, logged, then rebuilt and rewritten:
//!   never a crash. An entry whose stored key differs from the one asked for (a hash collision,
//!   or a hand-edited file) is a miss too.
//! - The cache is code: directories are made owner-only (`0700`), entries `0600`; a directory or
//!   entry that another user owns or can write, or a symbolic link in an entry's place, is
//!   refused (a miss, [`MissReason::Untrusted`], warned once per directory; a store there is an
//!   error), so a shared or planted cache cannot make kiln run another user's code (`trust.rs`).
//! - Every lookup is logged through `tracing` (target `kiln::cache`): hits, and misses with
//!   their reason; each kind's [`Counters`] count them ([`DiskCache::stats`] for GPU kernels).
//!
//! The directory is `KILN_CACHE_DIR`, else `$XDG_CACHE_HOME/kiln`, else `~/.cache/kiln`;
//! `KILN_CACHE_DIR=off` turns the disk cache off ([`DiskCache::from_env`] gives `None`).
//!
//! The crate also holds what both the compiler and the runtime read of their environment:
//! [`config`], every `KILN_*` variable read once into typed fields with one grammar, and
//! [`cuda_toolkit`], the one search for the CUDA toolkit (`ptxas`, libdevice, `libnvrtc`).
//!
//! File layout (little-endian): the format's 8-byte magic (`KILNKC01` for GPU kernels), the
//! key's length and each byte string's length (u64 each), the SHA-256 of the key and the byte
//! strings (32 bytes), then the key and the byte strings.

use std::{
    fmt, fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use sha2::{Digest, Sha256};

pub mod config;
pub mod cuda_toolkit;
mod trust;

pub use config::{config, Config};

/// The layout of one kind of entry: its magic and how many byte strings follow the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    magic: [u8; 8],
    parts: usize,
}

impl Format {
    /// An entry of `parts` byte strings after the key, recognised by `magic`.
    pub const fn new(magic: [u8; 8], parts: usize) -> Format {
        Format { magic, parts }
    }

    /// Bytes before the key: magic, lengths, checksum.
    fn header(&self) -> usize {
        8 + 8 * (1 + self.parts) + 32
    }
}

/// GPU kernels: PTX, then the cubin.
const GPU: Format = Format::new(*b"KILNKC01", 2);

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
    /// The directory or the entry is owned or writable by another user, or the entry is a
    /// symbolic link: refused, as it could be code planted by someone else.
    Untrusted(String),
}

impl MissReason {
    /// Whether an entry was there but could not be used (everything but [`Absent`](Self::Absent)).
    pub fn damaged(&self) -> bool {
        !matches!(self, MissReason::Absent)
    }
}

impl fmt::Display for MissReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MissReason::Absent => f.write_str("absent"),
            MissReason::Unreadable(e) => write!(f, "unreadable: {e}"),
            MissReason::Truncated { len, expected } => {
                write!(f, "truncated: {len} bytes of {expected}")
            }
            MissReason::BadMagic => f.write_str("not a kiln cache entry (bad magic)"),
            MissReason::Checksum => f.write_str("corrupt: checksum mismatch"),
            MissReason::KeyMismatch => f.write_str("entry made for another key"),
            MissReason::Untrusted(why) => write!(f, "untrusted: {why}"),
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
    /// Misses whose entry existed but was damaged (truncated, bad magic, checksum, key) or could
    /// not be used.
    pub corrupt: u64,
}

/// The lookups and stores of one kind of entry (all cache directories together), each logged
/// as it is counted. A `static` per kind.
#[derive(Debug)]
pub struct Counters {
    what: &'static str,
    hits: AtomicU64,
    misses: AtomicU64,
    stores: AtomicU64,
    corrupt: AtomicU64,
}

impl Counters {
    /// Counters of entries called `what` in the log ("GPU kernel", "host kernel").
    pub const fn new(what: &'static str) -> Counters {
        Counters {
            what,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stores: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
        }
    }

    /// Counts and logs a hit of the entry at `path`.
    pub fn hit(&self, path: &Path) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(target: "kiln::cache", what = self.what, path = %path.display(), "disk cache hit");
    }

    /// Counts and logs a miss with its reason; `damaged`: an entry was there but was unusable
    /// (logged as a warning: it is rebuilt).
    pub fn miss(&self, path: &Path, reason: &dyn fmt::Display, damaged: bool) {
        self.misses.fetch_add(1, Ordering::Relaxed);
        if damaged {
            self.corrupt.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(target: "kiln::cache", what = self.what, path = %path.display(), %reason, "disk cache entry unusable; rebuilding it");
        } else {
            tracing::debug!(target: "kiln::cache", what = self.what, path = %path.display(), %reason, "disk cache miss");
        }
    }

    /// Counts and logs a store of the entry at `path`.
    pub fn stored(&self, path: &Path) {
        self.stores.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(target: "kiln::cache", what = self.what, path = %path.display(), "disk cache store");
    }

    /// The counts so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stores: self.stores.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
        }
    }
}

static GPU_COUNTERS: Counters = Counters::new("GPU kernel");

/// A kernel cache directory. Cheap to make; every operation goes to the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    /// A cache in `dir` (created on the first store).
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The cache of this process's environment ([`Config::cache_dir`], read once):
    /// `KILN_CACHE_DIR` (`off` turns it off), else `$XDG_CACHE_HOME/kiln`, else
    /// `$HOME/.cache/kiln`; `None` when off or no home is known.
    pub fn from_env() -> Option<DiskCache> {
        config().cache_dir.clone().map(DiskCache::new)
    }

    /// [`from_env`](Self::from_env) over given variables (testable without touching the
    /// process's environment).
    pub fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<DiskCache> {
        Config::from_vars(var).cache_dir.map(DiskCache::new)
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds `key`'s entry.
    pub fn path_of(&self, key: &str) -> PathBuf {
        self.dir.join("kernels").join(format!("{}.kc", digest(&[key.as_bytes()])))
    }

    /// Reads the entry of `format` at `path` (which [`path_of`](Self::path_of) gave for `key`):
    /// its byte strings, or why it cannot be used. Neither counted nor logged: the caller does
    /// that with its kind's [`Counters`].
    pub fn read(
        &self,
        format: &Format,
        path: &Path,
        key: &str,
    ) -> Result<Vec<Vec<u8>>, MissReason> {
        if let Some(why) = trust::untrusted_entry(&self.dir, path) {
            return Err(MissReason::Untrusted(why));
        }
        match fs::read(path) {
            Ok(bytes) => decode(format, key, &bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(MissReason::Absent),
            Err(e) => Err(MissReason::Unreadable(e.to_string())),
        }
    }

    /// Writes `parts` (as many as `format` says) as the entry of `key` at `path`, atomically
    /// (temporary file + rename), owner-only. Not counted: the caller does that. Errors: the
    /// directory cannot be made or written, or may not be trusted (`PermissionDenied`: another
    /// user owns it or can write it).
    pub fn write(
        &self,
        format: &Format,
        path: &Path,
        key: &str,
        parts: &[&[u8]],
    ) -> io::Result<()> {
        assert_eq!(
            parts.len(),
            format.parts,
            "an entry of this format has {} byte strings",
            format.parts
        );
        let dir = path.parent().expect("entries live in a directory");
        if let Some(why) = trust::untrusted_store(&self.dir, dir) {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
        }
        trust::create_private_dir(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        // No fsync: readers need the rename's atomicity, not durability; an entry torn by a
        // crash fails its checksum and is rebuilt.
        tmp.write_all(&encode(format, key, parts))?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Looks a GPU kernel up. Never fails: a damaged entry is a miss with its reason (logged).
    pub fn lookup(&self, key: &str) -> Lookup {
        let path = self.path_of(key);
        let result = self.read(&GPU, &path, key).and_then(|mut parts| {
            let cubin = parts.pop().expect("two parts");
            let ptx = String::from_utf8(parts.pop().expect("two parts"))
                .map_err(|_| MissReason::Checksum)?;
            Ok(CachedKernel { ptx, cubin })
        });
        match result {
            Ok(k) => {
                GPU_COUNTERS.hit(&path);
                Lookup::Hit(k)
            }
            Err(reason) => {
                GPU_COUNTERS.miss(&path, &reason, reason.damaged());
                Lookup::Miss(reason)
            }
        }
    }

    /// Stores a GPU kernel under `key`, atomically (temporary file + rename). Returns the
    /// entry's path. Errors: the directory cannot be made or written.
    pub fn store(&self, key: &str, kernel: &CachedKernel) -> io::Result<PathBuf> {
        let path = self.path_of(key);
        self.write(&GPU, &path, key, &[kernel.ptx.as_bytes(), &kernel.cubin])?;
        GPU_COUNTERS.stored(&path);
        Ok(path)
    }

    /// GPU kernels' lookup and store counts of this process (all cache directories together).
    pub fn stats() -> CacheStats {
        GPU_COUNTERS.stats()
    }
}

/// The SHA-256 of the byte strings one after the other, in hex: what entries are named by, and
/// a fingerprint for keys (of sources, of tables) too long to keep whole.
pub fn digest(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn checksum(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(key);
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn encode(format: &Format, key: &str, parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        format.header() + key.len() + parts.iter().map(|p| p.len()).sum::<usize>(),
    );
    out.extend_from_slice(&format.magic);
    for len in std::iter::once(key.len()).chain(parts.iter().map(|p| p.len())) {
        out.extend_from_slice(&(len as u64).to_le_bytes());
    }
    out.extend_from_slice(&checksum(key.as_bytes(), parts));
    out.extend_from_slice(key.as_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

fn decode(format: &Format, key: &str, bytes: &[u8]) -> Result<Vec<Vec<u8>>, MissReason> {
    let header = format.header();
    if bytes.len() >= 8 && bytes[..8] != format.magic {
        return Err(MissReason::BadMagic);
    }
    if bytes.len() < header {
        return Err(MissReason::Truncated { len: bytes.len() as u64, expected: header as u64 });
    }
    let len_at =
        |i: usize| u64::from_le_bytes(bytes[8 + 8 * i..16 + 8 * i].try_into().expect("8 bytes"));
    let lens: Vec<u64> = (0..=format.parts).map(len_at).collect();
    let expected =
        lens.iter().try_fold(header as u64, |a, &l| a.checked_add(l)).unwrap_or(u64::MAX);
    if (bytes.len() as u64) != expected {
        return Err(MissReason::Truncated { len: bytes.len() as u64, expected });
    }
    let mut rest = &bytes[header..];
    let mut fields = Vec::with_capacity(lens.len());
    for &len in &lens {
        let (head, tail) = rest.split_at(len as usize);
        fields.push(head);
        rest = tail;
    }
    let (stored_key, parts) = (fields[0], &fields[1..]);
    if checksum(stored_key, parts)[..] != bytes[header - 32..header] {
        return Err(MissReason::Checksum);
    }
    if stored_key != key.as_bytes() {
        return Err(MissReason::KeyMismatch);
    }
    Ok(parts.iter().map(|p| p.to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(tag: &str) -> CachedKernel {
        CachedKernel {
            ptx: format!(".version 8.0\n// {tag}\n"),
            cubin: vec![0x7f, b'E', b'L', b'F', 1, 2, 3],
        }
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
        let names: Vec<_> = fs::read_dir(dir.path().join("kernels"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn truncated_corrupt_and_foreign_entries_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        let path = cache.store("k", &kernel("a")).unwrap();
        let good = fs::read(&path).unwrap();

        for cut in [0, 5, GPU.header() - 1, GPU.header() + 3, good.len() - 1] {
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
        let k = kernel("a");
        fs::write(&path, encode(&GPU, "other", &[k.ptx.as_bytes(), &k.cubin])).unwrap();
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
    fn formats_of_other_kinds_share_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        let host = Format::new(*b"TESTHO01", 1);
        let path = cache.path_of("h");
        assert_eq!(cache.read(&host, &path, "h"), Err(MissReason::Absent));
        cache.write(&host, &path, "h", &[b"object"]).unwrap();
        assert_eq!(cache.read(&host, &path, "h"), Ok(vec![b"object".to_vec()]));
        // Read as another kind of entry: not this format.
        assert_eq!(cache.read(&GPU, &path, "h"), Err(MissReason::BadMagic));
        assert_eq!(cache.lookup("h"), Lookup::Miss(MissReason::BadMagic));
        let counters = Counters::new("test entry");
        counters.miss(&path, &MissReason::Absent, false);
        counters.stored(&path);
        counters.hit(&path);
        counters.miss(&path, &MissReason::Checksum, true);
        assert_eq!(counters.stats(), CacheStats { hits: 1, misses: 2, stores: 1, corrupt: 1 });
    }

    #[test]
    fn directory_from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into())
        };
        assert_eq!(
            DiskCache::from_vars(vars(&[("KILN_CACHE_DIR", "/c"), ("HOME", "/h")])),
            Some(DiskCache::new("/c"))
        );
        assert_eq!(DiskCache::from_vars(vars(&[("KILN_CACHE_DIR", "off"), ("HOME", "/h")])), None);
        assert_eq!(
            DiskCache::from_vars(vars(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            Some(DiskCache::new("/x/kiln"))
        );
        assert_eq!(
            DiskCache::from_vars(vars(&[("HOME", "/h")])),
            Some(DiskCache::new("/h/.cache/kiln"))
        );
        assert_eq!(DiskCache::from_vars(vars(&[])), None);
    }

    /// The cache is made owner-only; a directory others can write, an entry others can write,
    /// a symbolic link in an entry's place and (as root, able to give a file away) an entry
    /// another user owns are refused, and a refused entry is rebuilt over.
    #[cfg(unix)]
    #[test]
    fn untrusted_directories_and_entries_are_refused() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o777;
        let untrusted = |l: Lookup| matches!(l, Lookup::Miss(MissReason::Untrusted(_)));
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("a").join("cache");
        let cache = DiskCache::new(&root);
        let path = cache.store("k", &kernel("a")).unwrap();
        assert_eq!((mode(&root), mode(path.parent().unwrap()), mode(&path)), (0o700, 0o700, 0o600));
        assert_eq!(mode(&base.path().join("a")), 0o700, "made here: owner-only too");
        assert_eq!(cache.lookup("k"), Lookup::Hit(kernel("a")));

        // An entry others can write: refused, then rebuilt over (owner-only again).
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(untrusted(cache.lookup("k")));
        cache.store("k", &kernel("a")).unwrap();
        assert_eq!((mode(&path), cache.lookup("k")), (0o600, Lookup::Hit(kernel("a"))));

        // A symbolic link in an entry's place, even to a good entry.
        let other = DiskCache::new(base.path().join("b"));
        let target = other.store("k", &kernel("a")).unwrap();
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(untrusted(cache.lookup("k")));
        fs::remove_file(&path).unwrap();

        // A directory others can write (a shared cache): lookups refused, stores too.
        cache.store("k", &kernel("a")).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(untrusted(cache.lookup("k")));
        let err = cache.store("k", &kernel("a")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(cache.lookup("k"), Lookup::Hit(kernel("a")));

        // An entry another user owns (only root can give a file away).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: `c` is a NUL-terminated path that lives across the call.
            assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
            assert_eq!(fs::metadata(&path).unwrap().uid(), 65534);
            assert!(untrusted(cache.lookup("k")));
        } else {
            eprintln!("not root: the other owner's entry is not tried");
        }
    }
}
