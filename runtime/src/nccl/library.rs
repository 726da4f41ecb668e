//! NCCL's library, loaded at run time, and the entry points kiln calls.
//!
//! cudarc's `nccl` feature gives the C types (`cudarc::nccl::sys`), but its loader tries only
//! `libnccl.so`, `libnccl.so.<CUDA major>` and older majors, never `libnccl.so.2`: the only name
//! NCCL's own packages and the `nvidia-nccl-cu13` wheel install. So kiln opens the library
//! itself: `KILN_NCCL`, then the loader's own search for `libnccl.so.2` and `libnccl.so`, then
//! the wheels (`ToolkitEnv::nccl_candidates` in `kiln_cache::cuda_toolkit`). The functions are
//! declared with raw `int` results (`ncclResult_t` as a Rust enum would make an unknown value
//! undefined behaviour).

use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use cudarc::driver::sys::CUstream;
use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};

/// NCCL's entry points (one process-wide table).
pub(crate) struct Nccl {
    /// Where the library was found.
    pub path: String,
    pub get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    pub get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> c_int,
    pub comm_init_rank: unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> c_int,
    pub comm_init_all: unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> c_int,
    pub comm_destroy: unsafe extern "C" fn(ncclComm_t) -> c_int,
    pub get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    pub get_last_error: unsafe extern "C" fn(ncclComm_t) -> *const c_char,
    pub all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        CUstream,
    ) -> c_int,
    pub reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> c_int,
    pub broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> c_int,
    pub all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclComm_t,
        CUstream,
    ) -> c_int,
    pub reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        CUstream,
    ) -> c_int,
    pub send: unsafe extern "C" fn(
        *const c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> c_int,
    pub recv: unsafe extern "C" fn(
        *mut c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> c_int,
    pub group_start: unsafe extern "C" fn() -> c_int,
    pub group_end: unsafe extern "C" fn() -> c_int,
    /// Keeps the functions above valid.
    _lib: libloading::Library,
}

/// The places tried, in order (for the error when none loads).
fn candidates() -> Vec<PathBuf> {
    let env = &kiln_cache::config().toolkit;
    let mut names: Vec<PathBuf> = env.nccl.iter().cloned().collect();
    names.extend(["libnccl.so.2", "libnccl.so"].map(PathBuf::from));
    names.extend(env.nccl_candidates(&env.python_libs()).into_iter().filter(|p| p.is_file()));
    names
}

/// NCCL, loaded on first use; `Err` says where it was looked for.
pub(crate) fn nccl() -> Result<&'static Nccl, String> {
    static NCCL: OnceLock<Result<Nccl, String>> = OnceLock::new();
    NCCL.get_or_init(|| {
        let tried = candidates();
        let mut failures = Vec::new();
        for path in &tried {
            // SAFETY: loading NCCL runs its initialisers, which have no preconditions.
            match unsafe { libloading::Library::new(path) } {
                Ok(lib) => return bind(lib, path.display().to_string()),
                Err(e) => failures.push(format!("{}: {e}", path.display())),
            }
        }
        Err(format!(
            "NCCL not found (tried KILN_NCCL, libnccl.so.2, libnccl.so and the nvidia-nccl \
             wheels of VIRTUAL_ENV, the Pythons on PATH and the system's: {})",
            failures.join("; ")
        ))
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn bind(lib: libloading::Library, path: String) -> Result<Nccl, String> {
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: each symbol is declared in `Nccl` with its C prototype from nccl.h
            // (2.18 and later), results as `int`; the library outlives the pointer (`_lib`).
            *unsafe { lib.get($name) }.map_err(|e| {
                format!("{path}: {}: {e}", String::from_utf8_lossy(&$name[..$name.len() - 1]))
            })?
        };
    }
    Ok(Nccl {
        get_version: sym!(b"ncclGetVersion\0"),
        get_unique_id: sym!(b"ncclGetUniqueId\0"),
        comm_init_rank: sym!(b"ncclCommInitRank\0"),
        comm_init_all: sym!(b"ncclCommInitAll\0"),
        comm_destroy: sym!(b"ncclCommDestroy\0"),
        get_error_string: sym!(b"ncclGetErrorString\0"),
        get_last_error: sym!(b"ncclGetLastError\0"),
        all_reduce: sym!(b"ncclAllReduce\0"),
        reduce: sym!(b"ncclReduce\0"),
        broadcast: sym!(b"ncclBroadcast\0"),
        all_gather: sym!(b"ncclAllGather\0"),
        reduce_scatter: sym!(b"ncclReduceScatter\0"),
        send: sym!(b"ncclSend\0"),
        recv: sym!(b"ncclRecv\0"),
        group_start: sym!(b"ncclGroupStart\0"),
        group_end: sym!(b"ncclGroupEnd\0"),
        path,
        _lib: lib,
    })
}
