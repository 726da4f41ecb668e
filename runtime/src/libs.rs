//! What the library wrappers ([`crate::blas`], [`crate::fft`], [`crate::rand`]) share: loading
//! a CUDA library once (a typed error where it is missing, never cudarc's panic) and one handle
//! per device, made with the device's context current.

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::device::{current_id, DeviceState};
use crate::error::{LibraryError, Result, RuntimeError};

/// Errors unless the library `name` can be loaded (`present` is its cudarc `is_culib_present`).
/// Checked once per library and process.
pub(crate) fn ensure_loaded(name: &'static str, cell: &'static OnceLock<bool>, present: unsafe fn() -> bool) -> Result<()> {
    // SAFETY: `is_culib_present` only `dlopen`s the library's candidate names; loading a CUDA
    // library runs its initialisers, which touch no state of ours.
    let ok = *cell.get_or_init(|| panic::catch_unwind(|| unsafe { present() }).unwrap_or(false));
    if ok {
        Ok(())
    } else {
        Err(RuntimeError::Library(LibraryError { call: name, status: "the library could not be loaded".into() }))
    }
}

/// A library handle that may cross threads: the libraries' handles are plain pointers (or ints)
/// used under the registry's lock, one thread at a time.
pub(crate) struct Handles<H> {
    map: Mutex<HashMap<usize, H>>,
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
    /// device's context current and the registry locked. `make` and `f` run under
    /// `catch_unwind`: cudarc panics on a missing symbol.
    pub(crate) fn with<T>(
        &self,
        call: &'static str,
        make: impl FnOnce() -> Result<H>,
        f: impl FnOnce(&mut H) -> Result<T>,
    ) -> Result<T> {
        let id = current_id();
        let state = DeviceState::get(id)?;
        let _bound = state.bind()?;
        let mut map: MutexGuard<'_, HashMap<usize, H>> = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let run = AssertUnwindSafe(|| -> Result<T> {
            let h = match map.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(make()?),
            };
            f(h)
        });
        panic::catch_unwind(run).unwrap_or_else(|_| {
            Err(RuntimeError::Library(LibraryError { call, status: "cudarc panicked (a missing library symbol?)".into() }))
        })
    }
}
