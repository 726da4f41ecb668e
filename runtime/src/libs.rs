//! What the library wrappers ([`crate::blas`], [`crate::fft`], [`crate::rand`]) share: loading
//! a CUDA library once (a typed error where it is missing, never cudarc's panic) and one handle
//! per device, made with the device's context current.
//!
//! A handle is shared by every thread, and each thread queues its calls on its own current
//! stream. A handle's device resources are not per stream (a cuFFT plan's work area, cuBLAS's
//! default workspace, cuRAND's generator state): two calls on different streams could run at
//! once and use them together. So a call on another stream than the handle's last one first
//! makes its stream wait for everything queued so far on that last one.

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::device::{current_id, DeviceState};
use crate::error::{LibraryError, Result, RuntimeError};
use crate::stream::{Event, Stream};

/// Errors unless the library `name` can be loaded (`lib`: its name as cudarc knows it,
/// [`open_kept`]). Checked once per library and process.
pub(crate) fn ensure_loaded(
    name: &'static str,
    cell: &'static OnceLock<bool>,
    lib: &'static [&'static str],
) -> Result<()> {
    if *cell.get_or_init(|| open_kept(lib)) {
        Ok(())
    } else {
        Err(RuntimeError::Library(LibraryError {
            call: name,
            status: "the library could not be loaded".into(),
        }))
    }
}

/// Opens a CUDA library by cudarc's candidate names for `lib` (its names as cudarc's
/// `is_culib_present` lists them: `["cusolver"]`, `["cuda", "nvcuda"]`), in cudarc's order, and
/// keeps the first that opens for the life of the process. Whether one opened. Never panics.
///
/// cudarc loads a library itself at its first call (`culib()`, the same names in the same
/// order): it then finds this one mapped and only counts a reference. cudarc's
/// `is_culib_present` closes what it opened, so a check made with it let the loader unmap the
/// library, and the first call loaded it (and what it links: cuSOLVER links cuBLAS,
/// cuBLASLt and cuSPARSE) a second time: on an H200, cuSOLVER's load took 86 ms, its unload
/// 29-33 and its second load 106-108 (`benches/runs/2026-11-29-session41/floor.c`).
pub(crate) fn open_kept(lib: &[&str]) -> bool {
    static KEPT: Mutex<Vec<libloading::Library>> = Mutex::new(Vec::new());
    let open = || {
        lib.iter().flat_map(|l| cudarc::get_lib_name_candidates(l)).find_map(|name| {
            // SAFETY: loading a CUDA library runs its initialisers, which touch no state of
            // ours; the library stays loaded (kept below), so nothing of it is unmapped while
            // cudarc uses it.
            unsafe { libloading::Library::new(name) }.ok()
        })
    };
    match panic::catch_unwind(open).ok().flatten() {
        Some(library) => {
            KEPT.lock().unwrap_or_else(|p| p.into_inner()).push(library);
            true
        }
        None => false,
    }
}

/// Whether the loader has a library of cudarc's candidate names for `lib` mapped (`dlopen`
/// with glibc's `RTLD_NOLOAD`, 4: loads nothing; the reference it takes is given back at once).
/// For tests: that [`open_kept`] kept a library open, that a preload loaded one.
pub fn is_mapped(lib: &[&str]) -> bool {
    lib.iter().flat_map(|l| cudarc::get_lib_name_candidates(l)).any(|name| {
        // SAFETY: with RTLD_NOLOAD no library is loaded, so no initialiser runs.
        unsafe {
            libloading::os::unix::Library::open(Some(name), libloading::os::unix::RTLD_LAZY | 4)
        }
        .is_ok()
    })
}

/// Runs `load` (a library's [`ensure_loaded`] calls) on a thread of its own, the first time
/// `started` is asked (once per process): a call that comes meanwhile waits for the load in
/// `ensure_loaded`'s `OnceLock`, so nothing is loaded twice. Without a thread, nothing is done
/// (the first call loads the library, as without a preload).
pub(crate) fn preload(started: &'static std::sync::Once, load: fn()) {
    started.call_once(|| {
        let _ = std::thread::Builder::new().name("kiln-preload".into()).spawn(load);
    });
}

/// A library handle that may cross threads: the libraries' handles are plain pointers (or ints)
/// used under the registry's lock, one thread at a time.
pub(crate) struct Handles<H> {
    map: Mutex<HashMap<usize, Slot<H>>>,
}

/// A device's handle and the stream its last call was queued on.
struct Slot<H> {
    handle: H,
    last: Option<Stream>,
}

/// The stream a call on `now` must first wait for: the last one, when it is another.
fn switched_from<S: PartialEq + Clone>(last: &mut Option<S>, now: &S) -> Option<S> {
    match last.replace(now.clone()) {
        Some(previous) if previous != *now => Some(previous),
        _ => None,
    }
}

// SAFETY: the handles are only reached through the mutex, so one thread uses a handle at a
// time, which is what cuBLAS, cuFFT and cuRAND require of their handles.
unsafe impl<H> Sync for Handles<H> {}
// SAFETY: as above; a handle is not tied to the thread that made it.
unsafe impl<H> Send for Handles<H> {}

impl<H> Handles<H> {
    pub(crate) fn new() -> Self {
        Handles { map: Mutex::new(HashMap::new()) }
    }

    /// Runs `f` with the current device's handle (made by `make` on first use), with that
    /// device's context current and the registry locked. `stream`: the stream `f` queues work
    /// on; when the handle's last work went to another stream, `stream` first waits for it.
    /// `make` and `f` run under `catch_unwind`: cudarc panics on a missing symbol.
    pub(crate) fn with<T>(
        &self,
        call: &'static str,
        stream: Option<&Stream>,
        make: impl FnOnce() -> Result<H>,
        f: impl FnOnce(&mut H) -> Result<T>,
    ) -> Result<T> {
        let id = current_id();
        let state = DeviceState::get(id)?;
        let _bound = state.bind()?;
        let mut map: MutexGuard<'_, HashMap<usize, Slot<H>>> =
            self.map.lock().unwrap_or_else(|p| p.into_inner());
        let run = AssertUnwindSafe(|| -> Result<T> {
            let slot = match map.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(Slot { handle: make()?, last: None })
                }
            };
            if let Some(stream) = stream {
                if let Some(previous) = switched_from(&mut slot.last, stream) {
                    let event = Event::with_flags(previous.device(), false, true)?;
                    event.record(&previous)?;
                    stream.wait_event(&event)?;
                }
            }
            f(&mut slot.handle)
        });
        panic::catch_unwind(run).unwrap_or_else(|_| {
            Err(RuntimeError::Library(LibraryError {
                call,
                status: "cudarc panicked (a missing library symbol?)".into(),
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{is_mapped, open_kept, switched_from};

    /// A preload runs its load once, on a thread of its own.
    #[test]
    fn a_preload_runs_once_on_a_thread_of_its_own() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static STARTED: std::sync::Once = std::sync::Once::new();
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        static ON_ITS_OWN: AtomicUsize = AtomicUsize::new(0);
        fn load() {
            if std::thread::current().name() == Some("kiln-preload") {
                ON_ITS_OWN.fetch_add(1, Ordering::SeqCst);
            }
            // Last: the test reads both once this is set.
            RUNS.fetch_add(1, Ordering::SeqCst);
        }
        super::preload(&STARTED, load);
        super::preload(&STARTED, load);
        let t = std::time::Instant::now();
        while RUNS.load(Ordering::SeqCst) == 0 && t.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(RUNS.load(Ordering::SeqCst), 1, "once");
        assert_eq!(ON_ITS_OWN.load(Ordering::SeqCst), 1, "on the preload's thread");
    }

    /// A library opened by cudarc's names stays mapped, so that cudarc's own load finds it
    /// (glibc's libBrokenLocale, which every glibc ships and nothing of ours loads, stands in for
    /// a CUDA library: cudarc's names include `lib{name}.so.1`).
    #[test]
    fn a_library_opened_by_cudarc_s_names_stays_mapped() {
        let name = "libBrokenLocale.so.1";
        assert!(
            !is_mapped(&["BrokenLocale"]),
            "{name} is mapped before the test: it tells nothing"
        );
        assert!(open_kept(&["BrokenLocale"]), "{name} opens");
        assert!(is_mapped(&["BrokenLocale"]), "{name} was unmapped after the check");
        assert!(!open_kept(&["kiln-no-such-library"]));
    }

    #[test]
    fn a_call_waits_for_the_last_stream_only_when_it_changes() {
        let mut last = None;
        assert_eq!(switched_from(&mut last, &1), None, "first use");
        assert_eq!(switched_from(&mut last, &1), None, "same stream");
        assert_eq!(switched_from(&mut last, &2), Some(1));
        assert_eq!(switched_from(&mut last, &1), Some(2));
        assert_eq!(last, Some(1));
    }
}
