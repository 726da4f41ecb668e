//! NVIDIA's `ptxas`, where a CUDA toolkit is installed: PTX compiled to a cubin as a whole
//! program, the way the driver's JIT compiles PTX that `cuModuleLoadDataEx` loads, so the
//! disk cache can keep the very code the driver would run, and a warm start loads it without
//! any JIT.
//!
//! `cuLinkAddData` and nvJitLink compile PTX as relocatable code (as `ptxas -c`): on an H200
//! their SASS of kiln's kernels was longer (ew_chain 880 instructions against 840, sum_all 840
//! against 720) and slower (sum_all 0.122 ms against 0.081). No library of the driver or the
//! toolkit's shared libraries compiles PTX as a whole program and hands the cubin back, so kiln
//! runs the `ptxas` program.
//!
//! Found by `kiln_cache::cuda_toolkit`: `KILN_PTXAS`, else `bin/ptxas` under the toolkit's roots
//! (`KILN_CUDA_PATH`, `CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda`), else `ptxas` on the `PATH`;
//! [`ptxas_path`] is `None` without a toolkit (the driver's JIT
//! then compiles the PTX, and the disk cache keeps the PTX only).
//!
//! Its files (the PTX in, the cubin out) live in a folder of the process's own
//! (`kiln-ptxas-XXXXXX` in the temp dir, owner-only), which the process's end removes
//! ([`remove_files_at_exit`]): a `ptxas` still running then finds no folder to write its
//! cubin to, where it left its files behind before.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use crate::error::{KernelError, Result};

/// Where `ptxas` is, if anywhere: `kiln_cache::cuda_toolkit::ptxas` (looked up once per
/// process).
pub fn ptxas_path() -> Option<&'static Path> {
    kiln_cache::cuda_toolkit::ptxas()
}

/// Compiles `ptx` to a cubin for `sm_{sm}` with `ptxas` at `-O{opt}` (0-3; more is 3, the
/// default) as a whole program (no `-c`). `name` names the code in errors.
///
/// Errors: no `ptxas` ([`ptxas_path`]); ptxas failing to start or rejecting the PTX, as
/// [`crate::RuntimeError::Kernel`] at [`crate::error::KernelStage::Link`] with ptxas's messages as the log.
pub fn ptxas_cubin(name: &str, ptx: &str, sm: u32, opt: u32) -> Result<Vec<u8>> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let error = |log: String| KernelError::link(name, log);
    let ptxas = ptxas_path().ok_or_else(|| {
        error(format!("ptxas not found ({})", kiln_cache::cuda_toolkit::PTXAS_SEARCH))
    })?;
    let stem = folder()
        .map_err(|e| error(format!("no folder for ptxas's files: {e}")))?
        .join(SEQ.fetch_add(1, Ordering::Relaxed).to_string());
    let (input, output) = (stem.with_extension("ptx"), stem.with_extension("cubin"));
    let result = (|| {
        std::fs::write(&input, ptx)
            .map_err(|e| error(format!("cannot write {}: {e}", input.display())))?;
        let out = Command::new(ptxas)
            .arg(format!("-arch=sm_{sm}"))
            .arg(format!("-O{}", opt.min(3)))
            .arg("-o")
            .arg(&output)
            .arg(&input)
            .output()
            .map_err(|e| error(format!("cannot run {}: {e}", ptxas.display())))?;
        if !out.status.success() {
            return Err(error(format!(
                "{} failed ({}): {}",
                ptxas.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        std::fs::read(&output).map_err(|e| error(format!("cannot read {}: {e}", output.display())))
    })();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    result
}

/// This process's folder for `ptxas`'s files: made at the first compile, with a name no other
/// user can guess or take first (`kiln-ptxas-XXXXXX` in the temp dir, owner-only, made
/// exclusively: `tempfile`), and the process's end then set to remove it. An error once that
/// end removed it: no compile makes it again.
fn folder() -> std::io::Result<PathBuf> {
    let mut folder = FOLDER.lock().unwrap_or_else(|e| e.into_inner());
    match &*folder {
        Folder::Made(f) => Ok(f.clone()),
        Folder::Removed => Err(std::io::Error::other("the process is ending")),
        Folder::None => {
            let f = tempfile::Builder::new().prefix("kiln-ptxas-").tempdir()?.keep();
            remove_files_at_exit();
            *folder = Folder::Made(f.clone());
            Ok(f)
        }
    }
}

/// The state of this process's folder of `ptxas` files.
enum Folder {
    None,
    Made(PathBuf),
    Removed,
}

/// Made and removed under one lock: a compile that starts as the process ends makes no folder
/// after the end removed it.
static FOLDER: Mutex<Folder> = Mutex::new(Folder::None);

/// Has the process's end remove this process's folder of `ptxas` files (`atexit`; once, the
/// first compile calls it too). Handlers run in the reverse order of their registration: a
/// handler that waits at exit for compiles running `ptxas` registers after calling this, so
/// that the folder goes after that wait.
pub fn remove_files_at_exit() {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: `remove_folder` does not unwind (it ignores errors and a poisoned lock). It
        // takes the folder's lock, which a compile holds only while it makes the folder, and
        // allocates: at exit other threads still run, so neither can deadlock.
        unsafe { libc::atexit(remove_folder) };
    });
}

extern "C" fn remove_folder() {
    let mut folder = FOLDER.lock().unwrap_or_else(|e| e.into_inner());
    if let Folder::Made(f) = std::mem::replace(&mut *folder, Folder::Removed) {
        // A `ptxas` that writes its cubin between the listing and the folder's removal leaves
        // the folder not empty: again, a few times.
        for _ in 0..4 {
            if std::fs::remove_dir_all(&f).is_ok() || !f.exists() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PTX of a kernel that stores its thread index (sm_90, PTX 8.0).
    const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .visible .entry kiln_tid(.param .u64 out) {\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<4>;\n\
        ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n\
        mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";

    /// A process that ends while `ptxas` runs (the child below) leaves none of its files: its
    /// folder is gone.
    #[test]
    fn a_process_that_ends_while_ptxas_runs_leaves_no_files() {
        if ptxas_path().is_none() {
            eprintln!("skipped: no ptxas");
            return;
        }
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "ptxas::tests::ends_while_ptxas_runs", "--ignored", "--nocapture"])
            .env("KILN_PTXAS_CHILD", "1")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&child.stdout);
        assert!(out.contains("ptxas running, exiting"), "the child did not reach ptxas:\n{out}");
        let folder: PathBuf = out
            .lines()
            .find_map(|l| l.strip_prefix("child folder "))
            .map(|p| p.trim().into())
            .expect("the child's folder");
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("kiln-ptxas-") && name.len() > "kiln-ptxas-".len(), "{name}");
        assert!(!folder.exists(), "the child left {}", folder.display());
    }

    /// The child of the test above: compiles on a thread, and ends the process once `ptxas`
    /// has its input (the compile has not finished: `ptxas` takes 15 ms or more).
    #[test]
    #[ignore = "a child process of a_process_that_ends_while_ptxas_runs_leaves_no_files"]
    fn ends_while_ptxas_runs() {
        if std::env::var_os("KILN_PTXAS_CHILD").is_none() {
            return;
        }
        let folder = folder().unwrap();
        println!("child folder {}", folder.display());
        std::thread::spawn(|| ptxas_cubin("kiln_tid", PTX, 90, 3));
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(10) {
            if folder.join("0.ptx").exists() {
                println!("ptxas running, exiting");
                std::process::exit(0);
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        panic!("ptxas's input never appeared");
    }

    #[test]
    fn compiles_ptx_to_an_elf_cubin_or_says_why_not() {
        match ptxas_path() {
            Some(_) => {
                let cubin = ptxas_cubin("kiln_tid", PTX, 90, 3).unwrap();
                assert_eq!(&cubin[..4], b"\x7fELF", "a cubin is an ELF file");
                let bad = ptxas_cubin("broken", "not ptx", 90, 1).unwrap_err().to_string();
                assert!(bad.contains("broken"), "{bad}");
            }
            None => {
                let e = ptxas_cubin("kiln_tid", PTX, 90, 3).unwrap_err().to_string();
                assert!(e.contains("ptxas not found"), "{e}");
            }
        }
    }
}
