//! The CUDA toolkit: where it is, and in it `ptxas`, libdevice (`libdevice.10.bc`), the
//! directories of `libnvrtc` and the headers. One search order serves all of them.
//!
//! The toolkit's roots, in order (each once): `KILN_CUDA_PATH`, `CUDA_PATH`, `CUDA_HOME`,
//! `/usr/local/cuda`. Then, for each file:
//!
//! - `ptxas`: `KILN_PTXAS` (the program itself), else `bin/ptxas` under each root, else `ptxas`
//!   in each directory of `PATH`.
//! - libdevice: `KILN_LIBDEVICE` (the file itself), else `nvvm/libdevice/libdevice.10.bc` under
//!   each root, else NVIDIA's pip wheels: in each Python's `site-packages`, then `dist-packages`,
//!   under [`ToolkitEnv::python_libs`], `nvidia/cu13`, `nvidia/cu12` (`nvidia-nvvm`), then
//!   `nvidia/cuda_nvcc` (`nvidia-cuda-nvcc`).
//! - `libnvrtc`: `lib64`, then `lib`, under each root ([`nvrtc_dirs`]; the runtime tries the
//!   loader's own path first).
//! - headers: the first root's `include` that is a directory ([`include_dir`]).
//! - the device runtime `libcudadevrt.a` (for relocatable code and dynamic parallelism):
//!   `lib64`, then `lib`, then `targets/x86_64-linux/lib`, under each root ([`cudadevrt`]).
//! - NCCL (`libnccl.so.2`, not part of the toolkit): `KILN_NCCL` (the library itself), then
//!   the `nvidia-nccl-cu13`/`-cu12` wheels (`nvidia/nccl/lib/libnccl.so.2`) of the Python of
//!   `VIRTUAL_ENV`, of each `PATH` directory's Python (`bin/..`: a virtual environment on the
//!   `PATH`), then of [`ToolkitEnv::python_libs`] ([`ToolkitEnv::nccl_candidates`]; the runtime
//!   tries the loader's own search for `libnccl.so.2` and `libnccl.so` after `KILN_NCCL`).
//!
//! The first candidate that exists is taken; [`ptxas`] and [`libdevice`] look once per process.
//! The variables come from [`crate::config`] (read once); [`ToolkitEnv`]'s methods give the
//! candidates of explicit variables, for tests.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where `ptxas` is looked for, for error messages.
pub const PTXAS_SEARCH: &str =
    "KILN_PTXAS, bin/ptxas under KILN_CUDA_PATH, CUDA_PATH, CUDA_HOME or /usr/local/cuda, PATH";

/// Where libdevice is looked for, for error messages.
pub const LIBDEVICE_SEARCH: &str = "KILN_LIBDEVICE, nvvm/libdevice/libdevice.10.bc under \
     KILN_CUDA_PATH, CUDA_PATH, CUDA_HOME or /usr/local/cuda, NVIDIA's pip wheels";

/// The default toolkit root, searched after the variables' roots.
const DEFAULT_ROOT: &str = "/usr/local/cuda";

/// libdevice's path under a toolkit root (or a wheel's directory).
const LIBDEVICE_IN_ROOT: &str = "nvvm/libdevice/libdevice.10.bc";

/// The variables the search reads (empty ones as unset). [`crate::config`] holds the process's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolkitEnv {
    /// `KILN_CUDA_PATH`: kiln's own name for the toolkit's root, searched first.
    pub kiln_cuda_path: Option<PathBuf>,
    /// `CUDA_PATH`: a toolkit root.
    pub cuda_path: Option<PathBuf>,
    /// `CUDA_HOME`: a toolkit root.
    pub cuda_home: Option<PathBuf>,
    /// `KILN_PTXAS`: the `ptxas` program, before any root.
    pub ptxas: Option<PathBuf>,
    /// `KILN_LIBDEVICE`: the `libdevice.10.bc` file, before any root.
    pub libdevice: Option<PathBuf>,
    /// `PATH`: directories searched for `ptxas` after the roots.
    pub path: Option<OsString>,
    /// `HOME`: for the pip wheels of `~/.local` and pyenv.
    pub home: Option<PathBuf>,
    /// `KILN_NCCL`: the NCCL library (`libnccl.so.2`), before any other place.
    pub nccl: Option<PathBuf>,
    /// `VIRTUAL_ENV`: an active Python virtual environment, whose wheels may hold NCCL.
    pub virtual_env: Option<PathBuf>,
}

impl ToolkitEnv {
    /// The toolkit's roots in search order: `KILN_CUDA_PATH`, `CUDA_PATH`, `CUDA_HOME`,
    /// `/usr/local/cuda`, each once.
    pub fn roots(&self) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = Vec::new();
        let named = [&self.kiln_cuda_path, &self.cuda_path, &self.cuda_home];
        for root in named.into_iter().flatten().cloned().chain([PathBuf::from(DEFAULT_ROOT)]) {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        roots
    }

    /// Where `ptxas` may be, in order: `KILN_PTXAS`, `bin/ptxas` under each root, `ptxas` in
    /// each directory of `PATH`.
    pub fn ptxas_candidates(&self) -> Vec<PathBuf> {
        let mut candidates: Vec<PathBuf> = self.ptxas.iter().cloned().collect();
        candidates.extend(self.roots().into_iter().map(|r| r.join("bin/ptxas")));
        if let Some(path) = &self.path {
            candidates.extend(std::env::split_paths(path).map(|d| d.join("ptxas")));
        }
        candidates
    }

    /// Where libdevice may be, in order: `KILN_LIBDEVICE`, under each root, then in the pip
    /// wheels of the Pythons under each of `python_libs` (directories such as `/usr/lib`,
    /// holding `pythonX.Y`; [`python_libs`](Self::python_libs) gives the usual ones).
    pub fn libdevice_candidates(&self, python_libs: &[PathBuf]) -> Vec<PathBuf> {
        let mut candidates: Vec<PathBuf> = self.libdevice.iter().cloned().collect();
        candidates.extend(self.roots().into_iter().map(|r| r.join(LIBDEVICE_IN_ROOT)));
        for lib in python_libs {
            let Ok(entries) = std::fs::read_dir(lib) else { continue };
            let mut pythons: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            pythons.sort();
            for py in pythons {
                for site in ["site-packages", "dist-packages"] {
                    let nvidia = py.join(site).join("nvidia");
                    for wheel in ["cu13", "cu12", "cuda_nvcc"] {
                        candidates.push(nvidia.join(wheel).join(LIBDEVICE_IN_ROOT));
                    }
                }
            }
        }
        candidates
    }

    /// The directories holding Pythons whose pip wheels may hold libdevice: `/usr/lib`,
    /// `/usr/local/lib`, `~/.local/lib`, then each pyenv version's `lib` (sorted).
    pub fn python_libs(&self) -> Vec<PathBuf> {
        let mut libs = vec![PathBuf::from("/usr/lib"), PathBuf::from("/usr/local/lib")];
        if let Some(home) = &self.home {
            libs.push(home.join(".local/lib"));
            if let Ok(versions) = std::fs::read_dir(home.join(".pyenv/versions")) {
                let mut versions: Vec<PathBuf> =
                    versions.flatten().map(|e| e.path().join("lib")).collect();
                versions.sort();
                libs.extend(versions);
            }
        }
        libs
    }

    /// Where NCCL may be, in order: `KILN_NCCL`, then `nvidia/nccl/lib/libnccl.so.2` in the
    /// `site-packages` (then `dist-packages`) of each Python under `VIRTUAL_ENV`'s `lib`, the
    /// `lib` beside each `PATH` directory named `bin`, and each of `python_libs`. (The
    /// `nvidia-nccl-cu13` wheel, which torch installs, names the library only `libnccl.so.2`.)
    pub fn nccl_candidates(&self, python_libs: &[PathBuf]) -> Vec<PathBuf> {
        let mut candidates: Vec<PathBuf> = self.nccl.iter().cloned().collect();
        let mut libs: Vec<PathBuf> = self.virtual_env.iter().map(|v| v.join("lib")).collect();
        if let Some(path) = &self.path {
            for dir in std::env::split_paths(path) {
                if dir.file_name().is_some_and(|n| n == "bin") {
                    if let Some(prefix) = dir.parent() {
                        libs.push(prefix.join("lib"));
                    }
                }
            }
        }
        libs.extend(python_libs.iter().cloned());
        let mut seen = Vec::new();
        for lib in libs {
            if seen.contains(&lib) {
                continue;
            }
            seen.push(lib.clone());
            for py in pythons(&lib) {
                for site in ["site-packages", "dist-packages"] {
                    candidates.push(py.join(site).join("nvidia/nccl/lib/libnccl.so.2"));
                }
            }
        }
        candidates
    }

    /// The directories that may hold `libnvrtc`, in order: `lib64`, then `lib`, of each root.
    pub fn nvrtc_dirs(&self) -> Vec<PathBuf> {
        self.roots().into_iter().flat_map(|r| [r.join("lib64"), r.join("lib")]).collect()
    }

    /// Where `libcudadevrt.a` may be, in order: `lib64`, `lib`, `targets/x86_64-linux/lib`
    /// of each root.
    pub fn cudadevrt_candidates(&self) -> Vec<PathBuf> {
        let dirs = ["lib64", "lib", "targets/x86_64-linux/lib"];
        let roots = self.roots();
        roots.iter().flat_map(|r| dirs.map(|d| r.join(d).join("libcudadevrt.a"))).collect()
    }

    /// The toolkit's headers: the first root's `include` that is a directory.
    pub fn include_dir(&self) -> Option<PathBuf> {
        self.roots().into_iter().map(|r| r.join("include")).find(|d| d.is_dir())
    }
}

/// The `python*` directories under `lib` (a prefix's `lib`), sorted.
fn pythons(lib: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(lib) else { return Vec::new() };
    let mut pythons: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python")))
        .collect();
    pythons.sort();
    pythons
}

/// The first of `candidates` that is a file.
fn first_file(candidates: Vec<PathBuf>) -> Option<PathBuf> {
    candidates.into_iter().find(|p| p.is_file())
}

/// The process's search variables ([`crate::config`]).
fn env() -> &'static ToolkitEnv {
    &crate::config::config().toolkit
}

/// `ptxas`, if found ([`ToolkitEnv::ptxas_candidates`]); looked up once per process.
pub fn ptxas() -> Option<&'static Path> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| first_file(env().ptxas_candidates())).as_deref()
}

/// `libdevice.10.bc`, if found ([`ToolkitEnv::libdevice_candidates`]); looked up once per
/// process.
pub fn libdevice() -> Option<&'static Path> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        let env = env();
        first_file(env.libdevice_candidates(&env.python_libs()))
    })
    .as_deref()
}

/// `libcudadevrt.a`, if found ([`ToolkitEnv::cudadevrt_candidates`]); looked up once per
/// process.
pub fn cudadevrt() -> Option<&'static Path> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| first_file(env().cudadevrt_candidates())).as_deref()
}

/// Where `libcudadevrt.a` is looked for ([`ToolkitEnv::cudadevrt_candidates`]).
pub fn cudadevrt_candidates() -> Vec<PathBuf> {
    env().cudadevrt_candidates()
}

/// The toolkit's roots in search order ([`ToolkitEnv::roots`]).
pub fn roots() -> Vec<PathBuf> {
    env().roots()
}

/// The directories that may hold `libnvrtc`, in order ([`ToolkitEnv::nvrtc_dirs`]).
pub fn nvrtc_dirs() -> Vec<PathBuf> {
    env().nvrtc_dirs()
}

/// The toolkit's `include` directory, if any ([`ToolkitEnv::include_dir`]).
pub fn include_dir() -> Option<PathBuf> {
    env().include_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn all_set() -> ToolkitEnv {
        ToolkitEnv {
            kiln_cuda_path: Some(p("/k")),
            cuda_path: Some(p("/p")),
            cuda_home: Some(p("/h")),
            ptxas: Some(p("/bin/my-ptxas")),
            libdevice: Some(p("/my/libdevice.bc")),
            path: Some(OsString::from("/a:/b")),
            home: None,
            nccl: None,
            virtual_env: None,
        }
    }

    #[test]
    fn nccl_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for prefix in ["venv", "opt/torch/.venv", "usr"] {
            std::fs::create_dir_all(d.join(prefix).join("lib/python3.12")).unwrap();
        }
        let path = std::env::join_paths([d.join("opt/torch/.venv/bin"), d.join("sbin")]).unwrap();
        let env = ToolkitEnv {
            nccl: Some(p("/my/libnccl.so.2")),
            virtual_env: Some(d.join("venv")),
            path: Some(path),
            ..ToolkitEnv::default()
        };
        let wheel = |prefix: &str, site: &str| {
            d.join(prefix).join("lib/python3.12").join(site).join("nvidia/nccl/lib/libnccl.so.2")
        };
        let mut want = vec![p("/my/libnccl.so.2")];
        for prefix in ["venv", "opt/torch/.venv", "usr"] {
            want.push(wheel(prefix, "site-packages"));
            want.push(wheel(prefix, "dist-packages"));
        }
        // The venv's lib named twice (VIRTUAL_ENV and python_libs) is searched once.
        assert_eq!(env.nccl_candidates(&[d.join("usr/lib"), d.join("venv/lib")]), want);
        assert!(ToolkitEnv::default().nccl_candidates(&[]).is_empty());
    }

    #[test]
    fn roots_in_order_each_once() {
        assert_eq!(all_set().roots(), [p("/k"), p("/p"), p("/h"), p("/usr/local/cuda")]);
        assert_eq!(ToolkitEnv::default().roots(), [p("/usr/local/cuda")]);
        let same = ToolkitEnv {
            cuda_path: Some(p("/usr/local/cuda")),
            cuda_home: Some(p("/h")),
            kiln_cuda_path: Some(p("/h")),
            ..ToolkitEnv::default()
        };
        assert_eq!(same.roots(), [p("/h"), p("/usr/local/cuda")]);
    }

    #[test]
    fn ptxas_order() {
        assert_eq!(
            all_set().ptxas_candidates(),
            [
                p("/bin/my-ptxas"),
                p("/k/bin/ptxas"),
                p("/p/bin/ptxas"),
                p("/h/bin/ptxas"),
                p("/usr/local/cuda/bin/ptxas"),
                p("/a/ptxas"),
                p("/b/ptxas"),
            ]
        );
        assert_eq!(ToolkitEnv::default().ptxas_candidates(), [p("/usr/local/cuda/bin/ptxas")]);
    }

    #[test]
    fn cudadevrt_order() {
        let env = ToolkitEnv { cuda_home: Some(p("/h")), ..ToolkitEnv::default() };
        assert_eq!(
            env.cudadevrt_candidates(),
            [
                p("/h/lib64/libcudadevrt.a"),
                p("/h/lib/libcudadevrt.a"),
                p("/h/targets/x86_64-linux/lib/libcudadevrt.a"),
                p("/usr/local/cuda/lib64/libcudadevrt.a"),
                p("/usr/local/cuda/lib/libcudadevrt.a"),
                p("/usr/local/cuda/targets/x86_64-linux/lib/libcudadevrt.a"),
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("lib/libcudadevrt.a"), b"!<arch>\n").unwrap();
        let env = ToolkitEnv { kiln_cuda_path: Some(dir.path().into()), ..ToolkitEnv::default() };
        assert_eq!(
            first_file(env.cudadevrt_candidates()),
            Some(dir.path().join("lib/libcudadevrt.a"))
        );
    }

    #[test]
    fn nvrtc_and_include_order() {
        let env = ToolkitEnv { cuda_home: Some(p("/h")), ..ToolkitEnv::default() };
        assert_eq!(
            env.nvrtc_dirs(),
            [p("/h/lib64"), p("/h/lib"), p("/usr/local/cuda/lib64"), p("/usr/local/cuda/lib")]
        );
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(b.join("include")).unwrap();
        let env = ToolkitEnv {
            kiln_cuda_path: Some(a.clone()),
            cuda_path: Some(b.clone()),
            ..ToolkitEnv::default()
        };
        assert_eq!(env.include_dir(), Some(b.join("include")));
        std::fs::create_dir_all(a.join("include")).unwrap();
        assert_eq!(env.include_dir(), Some(a.join("include")));
    }

    #[test]
    fn libdevice_order_and_wheels() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        for py in ["python3.12", "python3.11"] {
            std::fs::create_dir_all(lib.join(py)).unwrap();
        }
        let wheel = |py: &str, site: &str, w: &str| {
            lib.join(py).join(site).join("nvidia").join(w).join(LIBDEVICE_IN_ROOT)
        };
        let got = all_set().libdevice_candidates(std::slice::from_ref(&lib));
        let mut want = vec![
            p("/my/libdevice.bc"),
            p("/k/nvvm/libdevice/libdevice.10.bc"),
            p("/p/nvvm/libdevice/libdevice.10.bc"),
            p("/h/nvvm/libdevice/libdevice.10.bc"),
            p("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"),
        ];
        for py in ["python3.11", "python3.12"] {
            for site in ["site-packages", "dist-packages"] {
                for w in ["cu13", "cu12", "cuda_nvcc"] {
                    want.push(wheel(py, site, w));
                }
            }
        }
        assert_eq!(got, want);
        // The first that exists wins: a wheel when no root has it.
        let found = wheel("python3.12", "site-packages", "cu12");
        std::fs::create_dir_all(found.parent().unwrap()).unwrap();
        std::fs::write(&found, b"bc").unwrap();
        let env = ToolkitEnv { cuda_home: Some(dir.path().join("none")), ..ToolkitEnv::default() };
        assert_eq!(first_file(env.libdevice_candidates(std::slice::from_ref(&lib))), Some(found));
    }

    #[test]
    fn python_libs_with_pyenv() {
        let home = tempfile::tempdir().unwrap();
        for v in ["3.12.1", "3.11.9"] {
            std::fs::create_dir_all(home.path().join(".pyenv/versions").join(v)).unwrap();
        }
        let env = ToolkitEnv { home: Some(home.path().into()), ..ToolkitEnv::default() };
        let versions = home.path().join(".pyenv/versions");
        assert_eq!(
            env.python_libs(),
            [
                p("/usr/lib"),
                p("/usr/local/lib"),
                home.path().join(".local/lib"),
                versions.join("3.11.9/lib"),
                versions.join("3.12.1/lib"),
            ]
        );
        assert_eq!(ToolkitEnv::default().python_libs(), [p("/usr/lib"), p("/usr/local/lib")]);
    }
}
