//! nvJitLink (`libnvJitLink.so`), NVIDIA's linker as a library: PTX compiled to a cubin inside
//! the process (ptxas's options through `-Xptxas=...`), so a new kernel's cubin needs neither
//! the driver's JIT nor a `ptxas` process, and the disk cache can keep it.
//!
//! With `KILN_GPU_LINK=nvjitlink` kiln compiles new kernels here, at nvJitLink's default
//! (`-O3`); not the default yet (the GPU suite has not run with it). Measured for the fast tier on an
//! H100 (`benches/RESULTS.md`, session 27): the first call of a new `x * 1000.123 + cos(x)`
//! took 42-57 ms against the driver's JIT's 47-63 with the driver's cache off (both use that
//! cache: ~16 ms where it held the code); a later process's disk hit loads the cubin, 1.3-2.6 ms
//! whether the driver's cache is on or off (28-46 ms through the JIT with it off). The code is
//! relocatable (as `ptxas -c`): fast kernels ran 1-14% slower than the JIT's whole-program code,
//! until replaced by optimised code (through the `ptxas` program, [`crate::ptxas`]) once hot.
//! `-Xptxas=--Ofast-compile=max` took the compile from ~25 to ~18 ms but made the fast code
//! 2.6-5× slower (ew_chain 0.69 ms against 0.26): not used. A compile costs ~19 ms even for a
//! trivial kernel on that host, and a process's first ~27 ms more; [`warm_up`] pays the
//! library's loading and that first compile ahead.
//!
//! The library is looked up once per process: the loader's own search for `libnvJitLink.so.13`
//! then `.so.12`, then `libnvJitLink.so.*` in the CUDA toolkit's `lib64` and `lib`
//! ([`kiln_cache::cuda_toolkit::nvrtc_dirs`]). Its cubins load on a driver of the same major
//! version only ([`usable_with`]); elsewhere kiln loads PTX as before.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

use libloading::Library;

use crate::error::{KernelError, Result};

type Handle = *mut c_void;
/// `nvJitLinkCreate(handle*, numOptions, options)`.
type CreateFn = unsafe extern "C" fn(*mut Handle, c_uint, *const *const c_char) -> c_int;
/// `nvJitLinkDestroy(handle*)`.
type DestroyFn = unsafe extern "C" fn(*mut Handle) -> c_int;
/// `nvJitLinkAddData(handle, inputType, data, size, name)`.
type AddDataFn = unsafe extern "C" fn(Handle, c_int, *const c_void, usize, *const c_char) -> c_int;
/// `nvJitLinkComplete(handle)`.
type CompleteFn = unsafe extern "C" fn(Handle) -> c_int;
/// `nvJitLinkGetLinkedCubinSize`, `nvJitLinkGetErrorLogSize`: `(handle, size*)`.
type SizeFn = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
/// `nvJitLinkGetLinkedCubin`, `nvJitLinkGetErrorLog`: `(handle, buffer)`.
type CopyFn = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
/// `nvJitLinkVersion(major*, minor*)`.
type VersionFn = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int;

/// `NVJITLINK_INPUT_PTX`.
const INPUT_PTX: c_int = 2;

/// The library's entry points.
struct NvJitLink {
    create: CreateFn,
    destroy: DestroyFn,
    add_data: AddDataFn,
    complete: CompleteFn,
    cubin_size: SizeFn,
    cubin: CopyFn,
    log_size: SizeFn,
    log: CopyFn,
    version: (u32, u32),
    path: String,
    /// Keeps the functions above valid.
    _lib: Library,
}

/// `name`'s symbol: the plain name, else the versioned one (`__nvJitLinkCreate_13_0`).
fn symbol<T: Copy>(lib: &Library, name: &str) -> std::result::Result<T, String> {
    let mut tried = Vec::new();
    for n in [name.to_string(), format!("__{name}_13_0"), format!("__{name}_12_0")] {
        // SAFETY: each `T` above is the C prototype of that symbol in `nvJitLink.h`.
        match unsafe { lib.get::<T>(n.as_bytes()) } {
            Ok(f) => return Ok(*f),
            Err(e) => tried.push(format!("{n}: {e}")),
        }
    }
    Err(tried.join("; "))
}

impl NvJitLink {
    fn open(lib: Library, path: String) -> std::result::Result<NvJitLink, String> {
        let version_fn: VersionFn = symbol(&lib, "nvJitLinkVersion")?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: out-pointers to locals.
        let status = unsafe { version_fn(&mut major, &mut minor) };
        if status != 0 {
            return Err(format!("{path}: nvJitLinkVersion returned {status}"));
        }
        Ok(NvJitLink {
            create: symbol(&lib, "nvJitLinkCreate")?,
            destroy: symbol(&lib, "nvJitLinkDestroy")?,
            add_data: symbol(&lib, "nvJitLinkAddData")?,
            complete: symbol(&lib, "nvJitLinkComplete")?,
            cubin_size: symbol(&lib, "nvJitLinkGetLinkedCubinSize")?,
            cubin: symbol(&lib, "nvJitLinkGetLinkedCubin")?,
            log_size: symbol(&lib, "nvJitLinkGetErrorLogSize")?,
            log: symbol(&lib, "nvJitLinkGetErrorLog")?,
            version: (major, minor),
            path,
            _lib: lib,
        })
    }
}

/// The library, loaded once ([`library_candidates`] in order); `Err` says what was tried.
fn library() -> std::result::Result<&'static NvJitLink, &'static str> {
    static LIB: OnceLock<std::result::Result<NvJitLink, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        let mut tried = Vec::new();
        for path in library_candidates() {
            let shown = path.display().to_string();
            // SAFETY: loading NVIDIA's library runs its initialisers, which have no
            // preconditions.
            match unsafe { Library::new(&path) } {
                Ok(lib) => match NvJitLink::open(lib, shown) {
                    Ok(l) => return Ok(l),
                    Err(e) => tried.push(e),
                },
                Err(e) => tried.push(format!("{shown}: {e}")),
            }
        }
        Err(format!("libnvJitLink not found (tried {})", tried.join("; ")))
    })
    .as_ref()
    .map_err(String::as_str)
}

/// Where the library is looked for, in order: the loader's names, then the toolkit's files.
fn library_candidates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        ["libnvJitLink.so.13", "libnvJitLink.so.12"].iter().map(PathBuf::from).collect();
    for dir in kiln_cache::cuda_toolkit::nvrtc_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("libnvJitLink.so."))
            .collect();
        names.sort();
        out.extend(names.last().map(|n| dir.join(n)));
    }
    out
}

/// nvJitLink's version `(major, minor)`, if the library loads.
pub fn version() -> Option<(u32, u32)> {
    library().ok().map(|l| l.version)
}

/// Where the library was loaded from, or why it was not.
pub fn describe() -> String {
    match library() {
        Ok(l) => format!("{} (nvJitLink {}.{})", l.path, l.version.0, l.version.1),
        Err(why) => why.to_string(),
    }
}

/// Whether nvJitLink's cubins load on a driver of `driver_version` (`cuDriverGetVersion`'s
/// `1000 * major + 10 * minor`): the library loads and its major version is the driver's.
pub fn usable_with(driver_version: i32) -> bool {
    version().is_some_and(|(major, _)| major as i32 == driver_version / 1000)
}

/// A link, destroyed on drop.
struct Link<'a> {
    lib: &'a NvJitLink,
    handle: Handle,
}

impl Drop for Link<'_> {
    fn drop(&mut self) {
        // SAFETY: `handle` came from `nvJitLinkCreate` and is destroyed once.
        unsafe { (self.lib.destroy)(&mut self.handle) };
    }
}

impl Link<'_> {
    /// The error log (empty where there is none).
    fn log(&self) -> String {
        let mut n = 0usize;
        // SAFETY: a live handle and an out-pointer to a local.
        if unsafe { (self.lib.log_size)(self.handle, &mut n) } != 0 || n == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; n];
        // SAFETY: `buf` holds the `n` bytes the log takes.
        if unsafe { (self.lib.log)(self.handle, buf.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        String::from_utf8_lossy(&buf).trim_end_matches('\0').trim().to_string()
    }
}

/// Compiles `ptx` to a cubin for `sm_{sm}` with `options` after `-arch=sm_{sm}` (none: `-O3`).
/// `name` names the code in errors.
///
/// Errors: no library ([`describe`] says why), or nvJitLink rejecting the options or the PTX,
/// as [`crate::RuntimeError::Kernel`] at [`crate::error::KernelStage::Link`] with its error log.
pub fn nvjitlink_cubin(name: &str, ptx: &str, sm: u32, options: &[&str]) -> Result<Vec<u8>> {
    let error = |log: String| KernelError::link(name, log);
    let lib = library().map_err(|why| error(why.to_string()))?;
    let args: Vec<String> = std::iter::once(format!("-arch=sm_{sm}"))
        .chain(options.iter().map(|o| o.to_string()))
        .collect();
    let cargs: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_str()).map_err(|_| error(format!("option {a:?} holds a NUL"))))
        .collect::<Result<_>>()?;
    let pointers: Vec<*const c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    let cname = CString::new(name).map_err(|_| error("the kernel's name holds a NUL".into()))?;
    // nvJitLink reads PTX as a C string: its size counts the NUL (as `nvrtcGetPTXSize`'s).
    let text = CString::new(ptx).map_err(|_| error("the PTX holds a NUL".into()))?;
    let mut handle: Handle = std::ptr::null_mut();
    // SAFETY: `pointers` are `cargs`' NUL-terminated strings, alive for the call.
    let status = unsafe { (lib.create)(&mut handle, pointers.len() as c_uint, pointers.as_ptr()) };
    if status != 0 {
        return Err(error(format!("nvJitLinkCreate({}) returned {status}", args.join(" "))));
    }
    let link = Link { lib, handle };
    let fail = |call: &str, status: c_int| {
        let log = link.log();
        error(format!("{call} returned {status} ({}): {log}", args.join(" ")))
    };
    let bytes = text.as_bytes_with_nul();
    // SAFETY: a live handle; `bytes` and `cname` outlive the call (nvJitLink copies the data).
    let status = unsafe {
        (lib.add_data)(link.handle, INPUT_PTX, bytes.as_ptr().cast(), bytes.len(), cname.as_ptr())
    };
    if status != 0 {
        return Err(fail("nvJitLinkAddData", status));
    }
    // SAFETY: a live handle.
    let status = unsafe { (lib.complete)(link.handle) };
    if status != 0 {
        return Err(fail("nvJitLinkComplete", status));
    }
    let mut size = 0usize;
    // SAFETY: a live, completed handle; an out-pointer to a local.
    let status = unsafe { (lib.cubin_size)(link.handle, &mut size) };
    if status != 0 {
        return Err(fail("nvJitLinkGetLinkedCubinSize", status));
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` holds the `size` bytes the cubin takes.
    let status = unsafe { (lib.cubin)(link.handle, cubin.as_mut_ptr().cast()) };
    if status != 0 {
        return Err(fail("nvJitLinkGetLinkedCubin", status));
    }
    Ok(cubin)
}

/// PTX of a kernel that stores its thread index, for [`warm_up`] (PTX 8.0: any sm_XX ≥ 50).
const WARM_PTX: &str = ".version 8.0\n.target sm_50\n.address_size 64\n\
    .visible .entry kiln_warm(.param .u64 out) {\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<4>;\n\
    ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n\
    mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";

/// Loads the library and compiles a small kernel for `sm_{sm}`, so that the process's first
/// real compile does not pay the library's loading (234 ms from a
/// cold disk on an H100's host) or its first compile's set-up (~27 ms). Returns whether that
/// compile succeeded (false without the library).
pub fn warm_up(sm: u32) -> bool {
    library().is_ok() && nvjitlink_cubin("kiln_warm", WARM_PTX, sm, &[]).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_ptx_to_an_elf_cubin_or_says_why_not() {
        match version() {
            Some((major, _)) => {
                assert!(major >= 12, "{}", describe());
                let cubin = nvjitlink_cubin("kiln_warm", WARM_PTX, 90, &[]).unwrap();
                assert_eq!(&cubin[..4], b"\x7fELF", "a cubin is an ELF file");
                let bad = nvjitlink_cubin("broken", "not ptx", 90, &[]).unwrap_err().to_string();
                assert!(bad.contains("broken") && bad.contains("nvJitLink"), "{bad}");
                let opt = nvjitlink_cubin("kiln_warm", WARM_PTX, 90, &["-no-such-option"]);
                assert!(opt.is_err(), "an unknown option is refused");
                assert!(warm_up(90));
                assert!(usable_with(major as i32 * 1000 + 20));
                assert!(!usable_with((major as i32 + 1) * 1000));
            }
            None => {
                let e = nvjitlink_cubin("kiln_warm", WARM_PTX, 90, &[]).unwrap_err().to_string();
                assert!(e.contains("libnvJitLink not found"), "{e}");
                assert!(!warm_up(90) && !usable_with(13000));
            }
        }
    }
}
