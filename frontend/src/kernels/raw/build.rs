//! CUDA C++ to a binary: [`compile_source`] is the one place a raw kernel's cubin (or PTX) is
//! produced, and [`compile_cached`] keeps what it produces in the disk kernel cache
//! (`KILN_CACHE_DIR`, shared with the compiler's kernels).
//!
//! A cache entry is keyed by everything the binary depends on: kiln's version and its
//! `complex<T>` header, NVRTC's version, the CUDA driver's version, the device's `sm_XX`, the
//! options NVRTC gets, the name expressions and the source. It holds the cubin (or the PTX, when
//! NVRTC compiled for a virtual architecture). The lowered names of the name expressions are
//! kept in a second entry (key + `lowered names`), its text field holding one
//! `expression<TAB>lowered name` line each: a hit needs both entries. NVRTC's log of the
//! compilation (its warnings), when not empty, is a third entry (key + `log`), so a hit
//! returns it too.

use kiln_runtime::nvrtc::{self, CodeKind, Compiled, Program};
use kiln_runtime::{CachedKernel, DiskCache, Lookup};

use crate::error::Result;

/// kiln's `complex<T>` header (see the file), given to NVRTC in memory.
pub(crate) const COMPLEX_HEADER: &str = include_str!("complex.cuh");

/// Headers every program can include without an include path: kiln's `complex<T>` as
/// `<kiln/complex.cuh>`, and as `<cupy/complex.cuh>` so CuPy's kernels compile as written.
pub(crate) const HEADERS: [(&str, &str); 2] =
    [("kiln/complex.cuh", COMPLEX_HEADER), ("cupy/complex.cuh", COMPLEX_HEADER)];

/// A raw module's source and how to compile it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Source {
    /// Names the program in NVRTC's log and kiln's errors.
    pub(crate) name: String,
    pub(crate) code: String,
    /// The user's NVRTC options.
    pub(crate) options: Vec<String>,
    pub(crate) name_expressions: Vec<String>,
}

/// The options NVRTC gets: the user's, and the CUDA toolkit's `include` directory (for
/// `<cuda_fp16.h>` and the like) when one is installed and the user gave no `-I` of it, with
/// its `include/cccl` beside it when there is one (CUDA 13 keeps libcu++'s `<cuda/std/...>`
/// there, which `<cooperative_groups.h>` and `<cuda/std/complex>` include).
pub(crate) fn nvrtc_options(user: &[String]) -> Vec<String> {
    let mut options = user.to_vec();
    if let Some(include) = kiln_cache::cuda_toolkit::include_dir() {
        let cccl = include.join("cccl");
        let dirs = std::iter::once(include).chain(cccl.is_dir().then_some(cccl));
        for dir in dirs {
            let flag = format!("--include-path={}", dir.display());
            let short = format!("-I{}", dir.display());
            if !options.iter().any(|o| *o == flag || *o == short) {
                options.push(flag);
            }
        }
    }
    options
}

/// Compiles `source` with NVRTC for a device of compute capability `sm` (`major * 10 + minor`):
/// a cubin for `sm_XX`, or PTX when NVRTC does not know the device, and the lowered name of each
/// name expression. Errors: `RuntimeError::Nvrtc` (no libnvrtc; a compilation error, with the
/// log).
pub(crate) fn compile_source(source: &Source, sm: u32) -> Result<Compiled> {
    let options = nvrtc_options(&source.options);
    let program = Program {
        name: &source.name,
        source: &source.code,
        options: &options,
        headers: &HEADERS,
        name_expressions: &source.name_expressions,
    };
    Ok(nvrtc::compile(&program, sm)?)
}

/// For relocatable device code (NVRTC options `-dc`, `--relocatable-device-code=true`, ...,
/// [`kiln_runtime::link::RELOCATABLE_OPTIONS`], as CuPy's): `compiled` linked with the toolkit's
/// `libcudadevrt.a` by the driver's linker, the cubin to load (CuPy's `RawModule(...,
/// options=('-dc',))`, which dynamic parallelism needs); `None` for other programs, loaded as
/// compiled. The link runs at each load (the disk cache keeps NVRTC's relocatable output).
/// Errors: `libcudadevrt.a` not found (`RuntimeError::Library`, naming `cuLinkAddFile` and the
/// places looked in), the linker's errors (`RuntimeError::Kernel` at the link stage, with its
/// log: an unresolved `extern __device__` function...).
pub(crate) fn link_relocatable(
    device: kiln_runtime::Device,
    label: &str,
    source: &Source,
    compiled: &Compiled,
) -> Result<Option<Vec<u8>>> {
    if !kiln_runtime::link::is_relocatable(&source.options) {
        return Ok(None);
    }
    let devrt = kiln_runtime::link::cudadevrt()?;
    let cubin =
        kiln_runtime::link::link_relocatable(device, label, compiled.image()?, &[devrt.as_path()])?;
    Ok(Some(cubin))
}

/// The disk cache key of `source` compiled with `options` for `sm`.
pub(crate) fn cache_key(
    source: &Source,
    options: &[String],
    sm: u32,
    nvrtc: (i32, i32),
    driver: i32,
) -> String {
    format!(
        "kiln raw module {}\nnvrtc {}.{}\ncuda driver {driver}\nsm_{sm}\noptions {}\nname expressions {}\n\
         -- complex.cuh\n{COMPLEX_HEADER}\n-- source\n{}",
        env!("CARGO_PKG_VERSION"),
        nvrtc.0,
        nvrtc.1,
        options.join(" "),
        source.name_expressions.join("\u{1f}"),
        source.code
    )
}

/// The text of the lowered-names entry.
fn lowered_text(names: &[(String, String)]) -> String {
    names.iter().map(|(e, l)| format!("{e}\t{l}\n")).collect()
}

/// Parses the lowered-names entry; `None` unless it names exactly `expressions`, in order.
fn parse_lowered(text: &str, expressions: &[String]) -> Option<Vec<(String, String)>> {
    let names: Vec<(String, String)> = text
        .lines()
        .map(|line| line.split_once('\t').map(|(e, l)| (e.to_string(), l.to_string())))
        .collect::<Option<_>>()?;
    let same =
        names.len() == expressions.len() && names.iter().zip(expressions).all(|((e, _), x)| e == x);
    same.then_some(names)
}

/// [`compile_source`] through the disk cache: a hit returns the stored binary (and `true`);
/// a miss compiles and stores it (a failed store is logged, not an error).
pub(crate) fn compile_cached(
    source: &Source,
    sm: u32,
    disk: Option<&DiskCache>,
    driver: i32,
) -> Result<(Compiled, bool)> {
    let Some(disk) = disk else { return Ok((compile_source(source, sm)?, false)) };
    let options = nvrtc_options(&source.options);
    let key = cache_key(source, &options, sm, nvrtc::version()?, driver);
    let names_key = format!("{key}\nlowered names");
    let log_key = format!("{key}\nlog");
    if let Lookup::Hit(entry) = disk.lookup(&key) {
        let lowered = if source.name_expressions.is_empty() {
            Some(Vec::new())
        } else {
            match disk.lookup(&names_key) {
                Lookup::Hit(names) => parse_lowered(&names.ptx, &source.name_expressions),
                Lookup::Miss(_) => None,
            }
        };
        if let Some(lowered_names) = lowered {
            let (kind, code) = if entry.cubin.is_empty() {
                (CodeKind::Ptx, entry.ptx.into_bytes())
            } else {
                (CodeKind::Cubin, entry.cubin)
            };
            let log = match disk.lookup(&log_key) {
                Lookup::Hit(log) => log.ptx,
                Lookup::Miss(_) => String::new(),
            };
            return Ok((Compiled { kind, code, lowered_names, log, options }, true));
        }
    }
    let compiled = compile_source(source, sm)?;
    store(disk, &key, &names_key, &compiled);
    if !compiled.log.trim().is_empty() {
        let log = CachedKernel { ptx: compiled.log.clone(), cubin: Vec::new() };
        if let Err(e) = disk.store(&log_key, &log) {
            tracing::warn!(target: "kiln::cache", dir = %disk.dir().display(), error = %e, "cannot write the disk cache");
        }
    }
    Ok((compiled, false))
}

/// Stores a compiled program (and its lowered names) in the disk cache.
pub(crate) fn store(disk: &DiskCache, key: &str, names_key: &str, compiled: &Compiled) {
    let entry = match compiled.kind {
        CodeKind::Cubin => CachedKernel { ptx: String::new(), cubin: compiled.code.clone() },
        CodeKind::Ptx => CachedKernel {
            ptx: String::from_utf8_lossy(&compiled.code).into_owned(),
            cubin: Vec::new(),
        },
    };
    let mut result = disk.store(key, &entry).map(|_| ());
    if result.is_ok() && !compiled.lowered_names.is_empty() {
        let names = CachedKernel { ptx: lowered_text(&compiled.lowered_names), cubin: Vec::new() };
        result = disk.store(names_key, &names).map(|_| ());
    }
    if let Err(e) = result {
        tracing::warn!(target: "kiln::cache", dir = %disk.dir().display(), error = %e, "cannot write the disk cache");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_options_come_first_and_stay() {
        let user = vec!["-std=c++17".to_string(), "--use_fast_math".to_string()];
        let options = nvrtc_options(&user);
        assert_eq!(options[..2], user[..]);
        // At most the toolkit's include directory and its cccl are added, once.
        assert!(options.len() <= 4, "{options:?}");
        assert_eq!(nvrtc_options(&options), options);
    }

    fn source(code: &str, exprs: &[&str]) -> Source {
        Source {
            name: "m.cu".into(),
            code: code.into(),
            options: Vec::new(),
            name_expressions: exprs.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn cache_keys_tell_programs_apart() {
        let a = source("__global__ void k() {}", &["k"]);
        let key = |s: &Source, o: &[String], sm, driver| cache_key(s, o, sm, (13, 0), driver);
        let base = key(&a, &[], 90, 13000);
        assert_eq!(base, key(&a, &[], 90, 13000));
        assert_ne!(base, key(&a, &[], 100, 13000), "another device");
        assert_ne!(base, key(&a, &[], 90, 13010), "another driver");
        assert_ne!(base, key(&a, &["-std=c++17".into()], 90, 13000), "other options");
        assert_ne!(
            base,
            key(&source("__global__ void k() {}", &["k", "j"]), &[], 90, 13000),
            "other names"
        );
        assert_ne!(
            base,
            key(&source("__global__ void k() { }", &["k"]), &[], 90, 13000),
            "other code"
        );
        assert_ne!(base, cache_key(&a, &[], 90, (13, 1), 13000), "another NVRTC");
    }

    #[test]
    fn lowered_names_round_trip_through_their_entry() {
        let names = vec![
            ("fx3<float>".to_string(), "_Z3fx3IfEvPT_i".to_string()),
            ("fx3<double>".into(), "_Z3fx3IdEvPT_i".into()),
        ];
        let exprs: Vec<String> = names.iter().map(|(e, _)| e.clone()).collect();
        let text = lowered_text(&names);
        assert_eq!(parse_lowered(&text, &exprs), Some(names));
        assert_eq!(parse_lowered(&text, &exprs[..1]), None, "another program's names");
        assert_eq!(parse_lowered("fx3<float> no tab\n", &exprs[..1]), None);
    }

    #[test]
    fn a_cached_binary_is_returned_with_its_names() {
        let dir = std::env::temp_dir().join(format!("kiln-raw-cache-{}", std::process::id()));
        let disk = DiskCache::new(&dir);
        let s = source("template<class T> __global__ void fx3(T*, int) {}", &["fx3<float>"]);
        let options = nvrtc_options(&s.options);
        let key = cache_key(&s, &options, 90, (13, 0), 13000);
        let names_key = format!("{key}\nlowered names");
        let compiled = Compiled {
            kind: CodeKind::Cubin,
            code: vec![0x7f, b'E', b'L', b'F', 2, 1],
            lowered_names: vec![("fx3<float>".into(), "_Z3fx3IfEvPT_i".into())],
            log: String::new(),
            options: options.clone(),
        };
        store(&disk, &key, &names_key, &compiled);
        let Lookup::Hit(entry) = disk.lookup(&key) else { panic!("stored") };
        assert_eq!((entry.ptx.as_str(), entry.cubin.as_slice()), ("", compiled.code.as_slice()));
        let Lookup::Hit(names) = disk.lookup(&names_key) else { panic!("stored") };
        assert_eq!(
            parse_lowered(&names.ptx, &s.name_expressions),
            Some(compiled.lowered_names.clone())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
