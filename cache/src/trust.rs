//! Whether a cache directory and its entries can be trusted. An entry is machine code that kiln
//! loads and runs (host object files are linked into the process, cubins loaded on the device):
//! the checksum catches damage, not a planted entry. So the cache is made owner-only, and a
//! directory or entry that another user owns or can write (a shared `KILN_CACHE_DIR` on a
//! cluster, a `chmod 777`, a symbolic link in place of an entry) is refused: a lookup there
//! misses with [`MissReason::Untrusted`](crate::MissReason::Untrusted), logged once per
//! directory as a warning, and the kernel is compiled instead; a store there is an error.
//! Unix only: elsewhere every directory is trusted.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::Path;
use std::sync::Mutex;

/// Creates `dir` and its missing parents, owner-only (`0700`) where made here.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Why `path` (a directory, or an entry when `entry`) may not be trusted, if it exists.
pub(crate) fn untrusted(path: &Path, entry: bool) -> Option<String> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return None,
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Some(format!("{} is a symbolic link", path.display()));
    }
    if entry && !ft.is_file() {
        return Some(format!("{} is not a regular file", path.display()));
    }
    if !entry && !ft.is_dir() {
        return Some(format!("{} is not a directory", path.display()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Some(format!(
                "{} is owned by user {}, not by this process's user {me}",
                path.display(),
                meta.uid()
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Some(format!(
                "{} can be written by other users (mode {:o})",
                path.display(),
                meta.mode() & 0o7777
            ));
        }
    }
    None
}

/// Why the entry at `path` in cache directory `dir` may not be trusted: the directory, the
/// entry's own directory, or the entry. Warns once per directory.
pub(crate) fn untrusted_entry(dir: &Path, path: &Path) -> Option<String> {
    let parent = path.parent().unwrap_or(dir);
    let why = untrusted(dir, false)
        .or_else(|| untrusted(parent, false))
        .or_else(|| untrusted(path, true))?;
    warn_once(dir, &why);
    Some(why)
}

/// Why a store into `dir` (entries in `entries`) must be refused: either directory, where it
/// exists, may not be trusted.
pub(crate) fn untrusted_store(dir: &Path, entries: &Path) -> Option<String> {
    let why = untrusted(dir, false).or_else(|| untrusted(entries, false))?;
    warn_once(dir, &why);
    Some(why)
}

fn warn_once(dir: &Path, why: &str) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if warned.get_or_insert_with(HashSet::new).insert(dir.display().to_string()) {
        tracing::warn!(target: "kiln::cache", dir = %dir.display(), "refusing an untrusted kernel cache (compiling instead): {why}");
    }
}
