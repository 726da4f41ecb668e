//! The CUDA libraries a program called, remembered in the disk cache (`programs/`, an entry
//! per executable, keyed by its path) so that its next process starts loading them when it
//! picks the CUDA backend ([`preload_remembered`], from [`super::warm_up`]), beside the
//! device's context, rather than before the first plan that calls them: gmm's first solver
//! step opens its EM plan, and cuSOLVER's load took 80-97 ms there (H200, session 41).
//!
//! The entry only grows: a library a program stops calling is still loaded, on a thread of
//! its own, by its later processes (a hint; nothing waits for it).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};

use kiln_cache::{digest, DiskCache, Format};

/// The entry: one byte string, a byte of [`Library`] bits.
const FORMAT: Format = Format::new(*b"KILNLB01", 1);

/// A CUDA library a plan's library steps call, as a bit of the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Library {
    Blas = 1,
    Fft = 2,
    Solver = 4,
}

impl Library {
    const ALL: [Library; 3] = [Library::Blas, Library::Fft, Library::Solver];

    /// Starts loading it on a thread of its own (once per process).
    fn preload(self) {
        match self {
            Library::Blas => kiln_runtime::blas::preload(),
            Library::Fft => kiln_runtime::fft::preload(),
            Library::Solver => kiln_runtime::solver::preload(),
        }
    }
}

/// What this process called, and what its program's entry holds (as read or written).
pub(crate) struct Remembered {
    used: AtomicU8,
    known: AtomicU8,
}

/// This process's.
pub(crate) static REMEMBERED: Remembered = Remembered::new();

/// The entry's key: this executable's path (`None` where it is not known).
fn key() -> Option<String> {
    std::env::current_exe().ok().map(|p| format!("CUDA libraries of {}", p.display()))
}

fn path(disk: &DiskCache, key: &str) -> PathBuf {
    disk.dir().join("programs").join(format!("{}.kl", digest(&[key.as_bytes()])))
}

/// The libraries `disk`'s entry for `key` holds (none where there is no entry, or it cannot
/// be used).
fn read(disk: &DiskCache, key: &str) -> u8 {
    disk.read(&FORMAT, &path(disk, key), key)
        .ok()
        .and_then(|parts| parts.first().and_then(|p| p.first().copied()))
        .unwrap_or(0)
}

impl Remembered {
    pub(crate) const fn new() -> Remembered {
        Remembered { used: AtomicU8::new(0), known: AtomicU8::new(0) }
    }

    /// The libraries `disk` remembers for `key`, each started loading.
    fn preload(&self, disk: &DiskCache, key: &str) -> u8 {
        let bits = read(disk, key);
        self.known.fetch_or(bits, Ordering::AcqRel);
        preload(bits);
        bits
    }

    /// Notes that this process calls `libraries` (bits); where the entry in `disk` (under the
    /// key `key` gives, asked only then) lacks one, writes it with them (the entry read again
    /// first: its union with them).
    fn used(&self, libraries: u8, disk: Option<&DiskCache>, key: impl FnOnce() -> Option<String>) {
        if libraries & !self.used.load(Ordering::Acquire) == 0 {
            return;
        }
        let used = self.used.fetch_or(libraries, Ordering::AcqRel) | libraries;
        if used & !self.known.load(Ordering::Acquire) == 0 {
            return;
        }
        let (Some(disk), Some(key)) = (disk, key()) else { return };
        let key = key.as_str();
        // One writer at a time: two threads' read-then-write could drop the other's library.
        static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
        let used = self.used.load(Ordering::Acquire);
        let all = used | read(disk, key);
        self.known.fetch_or(all, Ordering::AcqRel);
        if let Err(e) = disk.write(&FORMAT, &path(disk, key), key, &[&[all]]) {
            tracing::debug!(error = %e, "the libraries this program calls were not remembered");
        }
    }
}

/// Starts loading `libraries` (bits of [`Library`]), each once per process on a thread of its
/// own.
pub(crate) fn preload(libraries: u8) {
    for l in Library::ALL.into_iter().filter(|&l| libraries & l as u8 != 0) {
        l.preload();
    }
}

/// Starts loading the libraries this program called in its last processes (its entry in
/// `disk`), each on a thread of its own.
pub(super) fn preload_remembered(disk: &DiskCache) {
    if let Some(key) = key() {
        REMEMBERED.preload(disk, &key);
    }
}

/// Notes that this process calls `libraries` (bits of [`Library`]), remembering them in
/// `disk` for the next where its entry lacks one.
pub(crate) fn used(libraries: u8, disk: Option<&DiskCache>) {
    REMEMBERED.used(libraries, disk, key);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_called_are_remembered_for_the_next_process_and_the_entry_only_grows() {
        let dir = tempfile::tempdir().unwrap();
        let disk = DiskCache::new(dir.path());
        let key = "CUDA libraries of /some/program";
        assert_eq!(read(&disk, key), 0, "no entry yet");
        // A process that calls cuSOLVER writes it.
        let first = Remembered::new();
        first.used(Library::Solver as u8, Some(&disk), || Some(key.to_string()));
        assert_eq!(read(&disk, key), Library::Solver as u8);
        // The next reads it at start; calling cuBLAS too adds it, and a third call adds nothing.
        let next = Remembered::new();
        assert_eq!(next.preload(&disk, key), Library::Solver as u8);
        next.used(Library::Blas as u8, Some(&disk), || Some(key.to_string()));
        next.used(Library::Solver as u8, Some(&disk), || Some(key.to_string()));
        assert_eq!(read(&disk, key), (Library::Solver as u8) | (Library::Blas as u8));
        // One that read nothing yet (its start raced its first plan) keeps the entry's bits.
        let racing = Remembered::new();
        racing.used(Library::Fft as u8, Some(&disk), || Some(key.to_string()));
        assert_eq!(read(&disk, key), 7);
        // Another program's entry is its own.
        assert_eq!(read(&disk, "CUDA libraries of /another"), 0);
    }
}
