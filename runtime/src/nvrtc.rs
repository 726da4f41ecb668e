//! CUDA C++ compiled at run time through NVRTC (cudarc's bindings; `libnvrtc` is loaded when
//! first needed, so a machine without it only fails when it compiles), as CuPy's `RawModule`
//! does: [`compile`] takes the source, the options, in-memory headers and the template
//! instantiations to lower (`name_expressions`), and returns a cubin for the device's
//! architecture (PTX for the driver to compile when NVRTC does not know the device) with the
//! mangled name of each name expression.
//!
//! Errors are [`RuntimeError::Nvrtc`]: the NVRTC call that failed, its result code and the
//! program's log (the compiler's messages with line numbers).

use std::{
    ffi::{c_char, c_int, CStr, CString},
    path::{Path, PathBuf},
    sync::OnceLock,
};

use cudarc::nvrtc::sys;

use crate::{error::Result, module::ModuleImage, RuntimeError};

/// A failed step of a run-time compilation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvrtcError {
    /// The program (the kernel or module it was compiled for).
    pub program: String,
    /// What failed: an NVRTC function, or `load libnvrtc` when the library is missing.
    pub call: &'static str,
    /// NVRTC's result (`NVRTC_ERROR_COMPILATION` ...), or why the library did not load.
    pub status: String,
    /// The program log: the compiler's errors and warnings (empty if it did not get that far).
    pub log: String,
    /// The options it was compiled with.
    pub options: Vec<String>,
}

impl std::fmt::Display for NvrtcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "compiling `{}` with NVRTC failed: {}: {}",
            self.program, self.call, self.status
        )?;
        let log = self.log.trim();
        if !log.is_empty() {
            write!(f, "\n{log}")?;
        }
        if !self.options.is_empty() {
            write!(f, "\n(options: {})", self.options.join(" "))?;
        }
        Ok(())
    }
}

/// What to compile.
#[derive(Clone, Copy, Debug)]
pub struct Program<'a> {
    /// Names the program in errors and in NVRTC's log (its "file name").
    pub name: &'a str,
    /// CUDA C++ source.
    pub source: &'a str,
    /// NVRTC options (`-std=c++17`, `--use_fast_math`, `-I...`); an `-arch`/`--gpu-architecture`
    /// among them replaces the device's architecture.
    pub options: &'a [String],
    /// Headers given to NVRTC in memory: `(include name, contents)`, found by `#include <name>`.
    pub headers: &'a [(&'a str, &'a str)],
    /// Template instantiations and other names to lower (`fx3<float>`); their mangled names
    /// come back in [`Compiled::lowered_names`].
    pub name_expressions: &'a [String],
}

/// The kind of code NVRTC produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeKind {
    /// SASS for a real architecture (`-arch=sm_XX`), loaded as is.
    Cubin,
    /// PTX for a virtual architecture (`-arch=compute_XX`), compiled by the driver when loaded.
    Ptx,
}

/// A compiled program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiled {
    /// Cubin or PTX.
    pub kind: CodeKind,
    /// The code (PTX without its closing NUL).
    pub code: Vec<u8>,
    /// Each name expression with its lowered (mangled) name, in the order given.
    pub lowered_names: Vec<(String, String)>,
    /// NVRTC's log of a successful compilation (warnings; often empty).
    pub log: String,
    /// The options passed to NVRTC, the architecture included.
    pub options: Vec<String>,
}

impl Compiled {
    /// The code as a module image for [`crate::Device::load_module`]. Errors: PTX that is not
    /// UTF-8 (NVRTC writes ASCII).
    pub fn image(&self) -> Result<ModuleImage<'_>> {
        Ok(match self.kind {
            CodeKind::Cubin => ModuleImage::Cubin(&self.code),
            CodeKind::Ptx => {
                ModuleImage::Ptx(std::str::from_utf8(&self.code).map_err(|_| {
                    RuntimeError::InvalidArgument("NVRTC's PTX is not UTF-8".into())
                })?)
            }
        })
    }

    /// The lowered name of `name_expression`, if it was one of the program's.
    pub fn lowered_name(&self, name_expression: &str) -> Option<&str> {
        self.lowered_names.iter().find(|(e, _)| e == name_expression).map(|(_, l)| l.as_str())
    }
}

/// The `-arch` option for a device of compute capability `cc` (`major * 10 + minor`), given the
/// real architectures this NVRTC supports: `sm_XX` (a cubin) when it knows the device, else
/// `compute_YY` (PTX) for the newest architecture it knows below the device's, which the
/// driver compiles forward. `None` if NVRTC knows nothing as old as the device.
pub fn arch_option(cc: u32, supported: &[u32]) -> Option<(String, CodeKind)> {
    if supported.contains(&cc) {
        return Some((format!("-arch=sm_{cc}"), CodeKind::Cubin));
    }
    let below = supported.iter().copied().filter(|&s| s < cc).max()?;
    Some((format!("-arch=compute_{below}"), CodeKind::Ptx))
}

/// The architecture named by a user's option, if any: `-arch=sm_90`, `-arch sm_90` (two
/// options), `--gpu-architecture=compute_90`, `-arch=sm_90a`. Returns the kind of code it makes.
pub fn user_arch(options: &[String]) -> Option<CodeKind> {
    let mut it = options.iter();
    while let Some(o) = it.next() {
        let value = ["-arch=", "--gpu-architecture=", "-arch", "--gpu-architecture"]
            .iter()
            .find_map(|p| o.strip_prefix(p).map(|rest| (p.ends_with('='), rest)));
        let arch = match value {
            Some((true, rest)) => rest.to_string(),
            Some((false, "")) => it.next()?.clone(),
            _ => continue,
        };
        return Some(if arch.starts_with("compute_") { CodeKind::Ptx } else { CodeKind::Cubin });
    }
    None
}

/// The CUDA toolkit's roots, in search order (`kiln_cache::cuda_toolkit::roots`:
/// `KILN_CUDA_PATH`, `CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda`).
pub fn cuda_roots() -> Vec<PathBuf> {
    kiln_cache::cuda_toolkit::roots()
}

/// Loads `libnvrtc` once: from the loader's path as cudarc looks for it, else from a CUDA
/// installation (`lib64`, then `lib`, of each of [`cuda_roots`]), opened by full path so that cudarc's later `dlopen` of
/// `libnvrtc.so.N` finds it loaded (the loader matches it by its soname). The builtins
/// library NVRTC opens itself is loaded first from the same directory.
fn library() -> std::result::Result<(), String> {
    static LOADED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            if crate::libs::open_kept(&["nvrtc"]) {
                return Ok(());
            }
            let mut tried = Vec::new();
            for dir in kiln_cache::cuda_toolkit::nvrtc_dirs() {
                match preload_from(&dir) {
                    Ok(true) if crate::libs::open_kept(&["nvrtc"]) => return Ok(()),
                    Ok(_) => tried.push(dir.display().to_string()),
                    Err(why) => tried.push(why),
                }
            }
            Err(format!(
                "libnvrtc was not found on the library path nor in {} (set KILN_CUDA_PATH to the \
                 CUDA toolkit, or LD_LIBRARY_PATH to its lib64)",
                tried.join(", ")
            ))
        })
        .clone()
}

/// Opens `libnvrtc-builtins.so.*` then `libnvrtc.so.*` of `dir` for the rest of the process.
/// Returns whether libnvrtc was opened; an error names a library that would not load.
fn preload_from(dir: &Path) -> std::result::Result<bool, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(false);
    };
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    names.sort();
    let mut opened = false;
    for prefix in ["libnvrtc-builtins.so.", "libnvrtc.so."] {
        // Any one version file will do: they are links to the same library.
        if let Some(name) = names.iter().rev().find(|n| n.starts_with(prefix)) {
            let path = dir.join(name);
            // SAFETY: loading NVIDIA's library runs its initialisers, which have no
            // preconditions; the handle is leaked so the library stays loaded for cudarc.
            let lib = unsafe { libloading::Library::new(&path) }
                .map_err(|e| format!("{}: {e}", path.display()))?;
            std::mem::forget(lib);
            opened |= prefix == "libnvrtc.so.";
        }
    }
    Ok(opened)
}

/// Whether NVRTC can be loaded on this machine.
pub fn nvrtc_available() -> bool {
    library().is_ok()
}

/// NVRTC's version `(major, minor)`.
pub fn version() -> Result<(i32, i32)> {
    let fail = |call, status: String| nvrtc_error("nvrtc", call, status, String::new(), Vec::new());
    library().map_err(|why| fail("load libnvrtc", why))?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: out-pointers to locals.
    let status = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    status.result().map_err(|e| fail("nvrtcVersion", format!("{:?}", e.0)))?;
    Ok((major, minor))
}

/// The real architectures (`sm_XX` as `XX`) this NVRTC compiles for.
pub fn supported_archs() -> Result<Vec<u32>> {
    let fail = |call, status: String| nvrtc_error("nvrtc", call, status, String::new(), Vec::new());
    library().map_err(|why| fail("load libnvrtc", why))?;
    let mut n: c_int = 0;
    // SAFETY: out-pointer to a local.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(|e| fail("nvrtcGetNumSupportedArchs", format!("{:?}", e.0)))?;
    let mut archs: Vec<c_int> = vec![0; n.max(0) as usize];
    // SAFETY: `archs` holds the `n` ints NVRTC writes.
    unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(|e| fail("nvrtcGetSupportedArchs", format!("{:?}", e.0)))?;
    Ok(archs.into_iter().map(|a| a as u32).collect())
}

fn nvrtc_error(
    program: &str,
    call: &'static str,
    status: String,
    log: String,
    options: Vec<String>,
) -> RuntimeError {
    RuntimeError::Nvrtc(Box::new(NvrtcError {
        program: program.to_owned(),
        call,
        status,
        log,
        options,
    }))
}

/// An NVRTC program, destroyed on drop; it keeps the C strings it was created from.
struct Handle {
    prog: sys::nvrtcProgram,
    _strings: Vec<CString>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram, destroyed once.
        let _ = unsafe { sys::nvrtcDestroyProgram(&mut self.prog) };
    }
}

/// Compiles `program` for a device of compute capability `cc` (`major * 10 + minor`, e.g. 90).
///
/// The architecture comes from the options when they name one, else from [`arch_option`].
/// Errors ([`RuntimeError::Nvrtc`]): no libnvrtc, a NUL byte in a string, no architecture NVRTC
/// knows for the device, a compilation error (with the log), a name expression NVRTC cannot
/// lower.
pub fn compile(program: &Program<'_>, cc: u32) -> Result<Compiled> {
    compile_as(program, cc, false)
}

/// Link-time-optimisable device code (NVVM IR in a fatbin: "LTO-IR") of a program compiled with
/// `-dlto`, for cuFFT's JIT callbacks (`cufftXtSetJITCallback`) or nvJitLink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LtoIr {
    /// The LTO-IR.
    pub code: Vec<u8>,
    /// NVRTC's log of the compilation (warnings; often empty).
    pub log: String,
    /// The options passed to NVRTC, `-dlto` and the architecture included.
    pub options: Vec<String>,
}

/// Compiles `program` to LTO-IR (`-dlto`, NVRTC's `nvrtcGetLTOIR`) for a device of compute
/// capability `cc`: the architecture as [`compile`] picks it (`sm_XX`, or `compute_YY` below an
/// unknown device). Name expressions are lowered but not returned. Errors as [`compile`].
pub fn compile_lto(program: &Program<'_>, cc: u32) -> Result<LtoIr> {
    let mut options = program.options.to_vec();
    if !options.iter().any(|o| o == "-dlto" || o == "--dlink-time-opt") {
        options.push("-dlto".into());
    }
    let c = compile_as(&Program { options: &options, ..*program }, cc, true)?;
    Ok(LtoIr { code: c.code, log: c.log, options: c.options })
}

/// [`compile`]; `lto`: return the LTO-IR (the program was given `-dlto`) instead of the cubin
/// or PTX (`kind` then tells only the architecture's kind).
fn compile_as(program: &Program<'_>, cc: u32, lto: bool) -> Result<Compiled> {
    let mut options: Vec<String> = program.options.to_vec();
    let fail = |call, status: String, log: String, options: &[String]| {
        nvrtc_error(program.name, call, status, log, options.to_vec())
    };
    library().map_err(|why| fail("load libnvrtc", why, String::new(), &options))?;
    let kind = match user_arch(&options) {
        Some(kind) => kind,
        None => {
            let supported = supported_archs()?;
            let (arch, kind) = arch_option(cc, &supported).ok_or_else(|| {
                fail(
                    "nvrtcGetSupportedArchs",
                    format!("this NVRTC knows no architecture as old as sm_{cc} (it knows {supported:?})"),
                    String::new(),
                    &options,
                )
            })?;
            options.push(arch);
            kind
        }
    };
    let cstring = |what: &str, s: &str| {
        CString::new(s).map_err(|_| {
            fail(
                "nvrtcCreateProgram",
                format!("{what} contains a NUL byte"),
                String::new(),
                &options,
            )
        })
    };
    let source = cstring("the source", program.source)?;
    let name = cstring("the program name", program.name)?;
    let header_texts: Vec<CString> =
        program.headers.iter().map(|(_, text)| cstring("a header", text)).collect::<Result<_>>()?;
    let header_names: Vec<CString> =
        program.headers.iter().map(|(n, _)| cstring("a header name", n)).collect::<Result<_>>()?;
    let expressions: Vec<CString> = program
        .name_expressions
        .iter()
        .map(|e| cstring("a name expression", e))
        .collect::<Result<_>>()?;
    let option_strings: Vec<CString> =
        options.iter().map(|o| cstring("an option", o)).collect::<Result<_>>()?;

    let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|s| s.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = header_names.iter().map(|s| s.as_ptr()).collect();
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings and arrays of `headers.len()` pointers, all alive until
    // the program is destroyed (kept in the handle below).
    unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            source.as_ptr(),
            name.as_ptr(),
            text_ptrs.len() as c_int,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    }
    .result()
    .map_err(|e| fail("nvrtcCreateProgram", format!("{:?}", e.0), String::new(), &options))?;
    let mut strings = vec![source, name];
    strings.extend(header_texts);
    strings.extend(header_names);
    let handle = Handle { prog, _strings: strings };

    for (e, text) in expressions.iter().zip(program.name_expressions) {
        // SAFETY: a live program and a NUL-terminated string (NVRTC copies it).
        unsafe { sys::nvrtcAddNameExpression(handle.prog, e.as_ptr()) }.result().map_err(
            |err| {
                fail(
                    "nvrtcAddNameExpression",
                    format!("{:?} for `{text}`", err.0),
                    String::new(),
                    &options,
                )
            },
        )?;
    }
    let option_ptrs: Vec<*const c_char> = option_strings.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: a live program; `option_ptrs` points at NUL-terminated strings alive for the call.
    let compiled = unsafe {
        sys::nvrtcCompileProgram(handle.prog, option_ptrs.len() as c_int, option_ptrs.as_ptr())
    };
    let log = program_log(&handle);
    compiled
        .result()
        .map_err(|e| fail("nvrtcCompileProgram", format!("{:?}", e.0), log.clone(), &options))?;

    let mut lowered_names = Vec::with_capacity(expressions.len());
    for (e, text) in expressions.iter().zip(program.name_expressions) {
        let mut lowered: *const c_char = std::ptr::null();
        // SAFETY: a compiled program, a name expression added before compiling; the lowered
        // name belongs to the program and is copied before it is destroyed.
        unsafe { sys::nvrtcGetLoweredName(handle.prog, e.as_ptr(), &mut lowered) }
            .result()
            .map_err(|err| {
                fail(
                    "nvrtcGetLoweredName",
                    format!("{:?} for `{text}`", err.0),
                    log.clone(),
                    &options,
                )
            })?;
        // SAFETY: NVRTC returned a NUL-terminated string owned by the live program.
        let lowered = unsafe { CStr::from_ptr(lowered) }.to_string_lossy().into_owned();
        lowered_names.push((text.clone(), lowered));
    }
    let code = match kind {
        _ if lto => code_of(
            &handle,
            ("nvrtcGetLTOIRSize", sys::nvrtcGetLTOIRSize),
            ("nvrtcGetLTOIR", sys::nvrtcGetLTOIR),
        ),
        CodeKind::Cubin => code_of(
            &handle,
            ("nvrtcGetCUBINSize", sys::nvrtcGetCUBINSize),
            ("nvrtcGetCUBIN", sys::nvrtcGetCUBIN),
        ),
        CodeKind::Ptx => code_of(
            &handle,
            ("nvrtcGetPTXSize", sys::nvrtcGetPTXSize),
            ("nvrtcGetPTX", sys::nvrtcGetPTX),
        )
        .map(|mut ptx| {
            while ptx.last() == Some(&0) {
                ptx.pop();
            }
            ptx
        }),
    }
    .map_err(|(call, e)| fail(call, format!("{e:?}"), log.clone(), &options))?;
    crate::host_trace::point("nvrtc: compiled");
    Ok(Compiled { kind, code, lowered_names, log, options })
}

type SizeFn = unsafe fn(sys::nvrtcProgram, *mut usize) -> sys::nvrtcResult;
type CodeFn = unsafe fn(sys::nvrtcProgram, *mut c_char) -> sys::nvrtcResult;

/// The compiled code through NVRTC's size and copy functions (named for errors).
fn code_of(
    handle: &Handle,
    (size_call, size): (&'static str, SizeFn),
    (get_call, get): (&'static str, CodeFn),
) -> std::result::Result<Vec<u8>, (&'static str, sys::nvrtcResult)> {
    let mut n = 0usize;
    // SAFETY: a compiled program, an out-pointer to a local.
    unsafe { size(handle.prog, &mut n) }.result().map_err(|e| (size_call, e.0))?;
    if n == 0 {
        // NVRTC gives no code of this kind (a cubin asked of a virtual architecture).
        return Err((size_call, sys::nvrtcResult::NVRTC_ERROR_INVALID_PROGRAM));
    }
    let mut code = vec![0u8; n];
    // SAFETY: `code` holds the `n` bytes NVRTC writes.
    unsafe { get(handle.prog, code.as_mut_ptr().cast()) }.result().map_err(|e| (get_call, e.0))?;
    Ok(code)
}

/// The program's log, empty if NVRTC cannot give it.
fn program_log(handle: &Handle) -> String {
    let mut n = 0usize;
    // SAFETY: a live program, an out-pointer to a local.
    if unsafe { sys::nvrtcGetProgramLogSize(handle.prog, &mut n) }.result().is_err() || n == 0 {
        return String::new();
    }
    let mut log = vec![0u8; n];
    // SAFETY: `log` holds the `n` bytes (with the NUL) NVRTC writes.
    if unsafe { sys::nvrtcGetProgramLog(handle.prog, log.as_mut_ptr().cast()) }.result().is_err() {
        return String::new();
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(n);
    String::from_utf8_lossy(&log[..end]).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_devices_architecture_or_the_newest_below_as_ptx() {
        let known = [75, 80, 86, 87, 89, 90, 100, 103, 120];
        assert_eq!(arch_option(90, &known), Some(("-arch=sm_90".into(), CodeKind::Cubin)));
        // A newer device than NVRTC knows: PTX of the newest it knows, JIT-compiled forward.
        assert_eq!(arch_option(130, &known), Some(("-arch=compute_120".into(), CodeKind::Ptx)));
        assert_eq!(arch_option(88, &known), Some(("-arch=compute_87".into(), CodeKind::Ptx)));
        assert_eq!(arch_option(70, &known), None);
    }

    #[test]
    fn an_architecture_in_the_options_is_the_users() {
        let opts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(user_arch(&opts(&["-std=c++17"])), None);
        assert_eq!(user_arch(&opts(&["-arch=sm_90"])), Some(CodeKind::Cubin));
        assert_eq!(user_arch(&opts(&["-arch=sm_90a"])), Some(CodeKind::Cubin));
        assert_eq!(user_arch(&opts(&["--gpu-architecture=compute_80"])), Some(CodeKind::Ptx));
        assert_eq!(user_arch(&opts(&["-arch", "compute_90"])), Some(CodeKind::Ptx));
        assert_eq!(user_arch(&opts(&["-arch"])), None);
    }

    #[test]
    fn errors_carry_the_log_and_options() {
        let e = nvrtc_error(
            "my_func",
            "nvrtcCompileProgram",
            "NVRTC_ERROR_COMPILATION".into(),
            "my_func(3): error: identifier \"undefined_thing\" is undefined\n".into(),
            vec!["-arch=sm_90".into()],
        );
        assert_eq!(
            e.to_string(),
            "compiling `my_func` with NVRTC failed: nvrtcCompileProgram: NVRTC_ERROR_COMPILATION\n\
             my_func(3): error: identifier \"undefined_thing\" is undefined\n(options: -arch=sm_90)"
        );
    }

    #[test]
    fn lowered_names_by_expression() {
        let c = Compiled {
            kind: CodeKind::Ptx,
            code: b".version 8.0".to_vec(),
            lowered_names: vec![("fx3<float>".into(), "_Z3fx3IfEvPT_i".into())],
            log: String::new(),
            options: Vec::new(),
        };
        assert_eq!(c.lowered_name("fx3<float>"), Some("_Z3fx3IfEvPT_i"));
        assert_eq!(c.lowered_name("fx3<double>"), None);
        assert!(matches!(c.image(), Ok(ModuleImage::Ptx(".version 8.0"))));
    }

    #[test]
    fn without_libnvrtc_compiling_is_an_error() {
        if nvrtc_available() {
            return;
        }
        let program = Program {
            name: "k",
            source: "extern \"C\" __global__ void k() {}",
            options: &[],
            headers: &[],
            name_expressions: &[],
        };
        let e = compile(&program, 90).unwrap_err();
        assert!(matches!(&e, RuntimeError::Nvrtc(n) if n.call == "load libnvrtc"), "{e}");
        assert!(e.to_string().contains("libnvrtc was not found"), "{e}");
    }
}
