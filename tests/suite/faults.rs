//! Faults that are not the user's input (issue 26 §3): a full disk while kiln writes its kernel
//! cache, and a kernel that faults on the device.
//!
//! - **A full disk.** A child process (this test binary) runs with `RLIMIT_FSIZE` at 2 KiB and
//!   `SIGXFSZ` ignored, so every cache entry's write fails part-way (`EFBIG`), as on a full disk.
//!   kiln must compute the right values anyway, leave no entry and no temporary file behind,
//!   and store normally in the next process that has room. This runs on the suite's backend: the
//!   host's object files on the CPU (CI), cubins on a GPU.
//! - **A sticky fault** (GPU only). A user's raw kernel that writes far out of bounds
//!   (`CUDA_ERROR_ILLEGAL_ADDRESS`), traps (`__trap()`: `CUDA_ERROR_LAUNCH_FAILED`) or stores
//!   through a misaligned pointer (`CUDA_ERROR_MISALIGNED_ADDRESS`) poisons the process's CUDA
//!   context: every later call fails the same way. kiln reports a typed error that says so
//!   ([`kiln::Error::is_sticky`], "a sticky error" in its text), later work fails with the same
//!   typed error instead of a panic, and host-held arrays still read back. Each runs in a child
//!   process, which the fault spoils.
//! - **A fault that leaves the context usable** (GPU only): a launch the driver refuses (a block
//!   of 4,096 threads) is a typed, non-sticky error, and kiln goes on working in the same process.

use std::path::Path;
use std::process::{Command, Stdio};

use kiln::{arange, zeros, Array, DType, RawKernel};

use crate::raw_kernels::on_gpu;

/// Files (not directories) under `dir`, recursively: entries and any temporary file left over.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else { return out };
    for e in read.flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

/// Work whose kernels no earlier process compiled (`c` is in their code), and its values
/// computed here in f64: an elementwise chain with math calls and a row reduction.
fn fresh_work(c: f64) -> Vec<(Array, Vec<f64>)> {
    let n = 3000usize;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32) * 1e-3 - 1.5).collect();
    let x = Array::from_vec(xs.clone(), &[30, 100]);
    let chain = ((&x * c).exp() + x.sin()) * 0.5;
    let chain_want: Vec<f64> = xs
        .iter()
        .map(|&v| (((v as f64 * c) as f32).exp() as f64 + (v.sin()) as f64) * 0.5)
        .collect();
    let rows = (&x - c).square().sum(1);
    let rows_want: Vec<f64> = xs
        .chunks(100)
        .map(|r| r.iter().map(|&v| ((v as f64 - c) as f32 as f64).powi(2)).sum())
        .collect();
    vec![(chain, chain_want), (rows, rows_want)]
}

fn check_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0), "{what}[{i}]: {g} vs {w}");
    }
}

/// The child of [`a_full_disk_while_writing_the_cache`]: computes [`fresh_work`] and reports
/// the cache's stores and the files in it.
#[test]
#[ignore = "a child process of faults::a_full_disk_while_writing_the_cache"]
fn full_disk_child() {
    let Some(c) = std::env::var_os("KILN_FAULTS_CHILD") else {
        println!("skipped: run by faults::a_full_disk_while_writing_the_cache");
        return;
    };
    let c: f64 = c.to_str().unwrap().parse().unwrap();
    for (i, (y, want)) in fresh_work(c).into_iter().enumerate() {
        let got = y.try_to_vec::<f32>().unwrap_or_else(|e| panic!("work {i} failed: {e}"));
        check_close(&got, &want, &format!("work {i}"));
    }
    // Kernels interpreted while they compile reach the disk cache when their compiles land
    // (at the latest as the process ends): counted once they did.
    kiln_exec::cuda::interp::wait_for_compiles();
    let dir = std::env::var_os("KILN_CACHE_DIR").unwrap();
    let host = kiln_compiler::codegen::host::disk_stats();
    let gpu = kiln_runtime::DiskCache::stats();
    println!(
        "faults-child stores={} hits={} files={}",
        host.stores + gpu.stores,
        host.hits + gpu.hits,
        files_under(Path::new(&dir)).len()
    );
}

/// Runs [`full_disk_child`] with the cache in `dir`; with `limit`, every file it writes is cut
/// at that many bytes (`RLIMIT_FSIZE`, `SIGXFSZ` ignored: the write fails with `EFBIG`).
fn full_disk_run(dir: &Path, c: f64, limit: Option<u64>) -> (u64, u64, usize) {
    full_disk_run_with(dir, c, limit, &[])
}

/// [`full_disk_run`] with more variables in the child's environment.
fn full_disk_run_with(
    dir: &Path,
    c: f64,
    limit: Option<u64>,
    vars: &[(&str, &str)],
) -> (u64, u64, usize) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.envs(vars.iter().copied());
    cmd.args(["faults::full_disk_child", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads=1"])
        .env("KILN_FAULTS_CHILD", c.to_string())
        .env("KILN_CACHE_DIR", dir)
        .env_remove("KILN_HOST_TIER")
        .env_remove("KILN_GPU_TIER")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(limit) = limit {
        // SAFETY: between fork and exec the closure calls only `signal` and `setrlimit`, both
        // async-signal-safe, and touches no memory the parent's threads hold.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                if libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
                let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child (limit {limit:?}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| Some(l.split_once("faults-child ")?.1))
        .unwrap_or_else(|| panic!("no report:\n{stdout}"));
    let field = |k: &str| -> u64 {
        line.split(' ')
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {line}"))
    };
    (field("stores"), field("hits"), field("files") as usize)
}

/// A full disk while the cache is written: the work is right, nothing half-written stays; with
/// room again the next process stores, and the one after it finds what was stored.
#[test]
fn a_full_disk_while_writing_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let c = 0.5 + (nanos % 1_000_000) as f64 * 1e-7 + (std::process::id() % 1000) as f64 * 1e-4;

    let (stores, _, files) = full_disk_run(dir.path(), c, Some(2048));
    assert_eq!((stores, files), (0, 0), "a failed write stored something or left a file");
    assert!(files_under(dir.path()).is_empty(), "left behind: {:?}", files_under(dir.path()));

    let (stores, _, files) = full_disk_run(dir.path(), c, None);
    assert!(stores >= 2 && files >= 2, "with room, the kernels are stored: {stores} {files}");
    let (stores_again, hits, _) = full_disk_run(dir.path(), c, None);
    assert!(hits >= 2, "the next process finds them: {hits} hits, {stores_again} stores");
}

/// Raw kernels that fault on the device, each a different sticky error.
fn faulting_kernel(kind: &str) -> RawKernel {
    let body = match kind {
        // 2^38 floats (1 TiB) past the array: unmapped.
        "out_of_bounds" => "y[(long long)1 << 38] = 1.0f;",
        "trap" => "y[0] = 1.0f; __trap();",
        "misaligned" => "*(float*)((char*)y + 1) = 1.0f;",
        other => panic!("no fault {other}"),
    };
    let code = format!("extern \"C\" __global__ void fault(float* y) {{ {body} }}");
    RawKernel::new(&code, "fault", &[])
}

/// The child of [`gpu_sticky_faults_are_reported_and_say_so`]: one faulting kernel.
#[test]
#[ignore = "a child process of faults::gpu_sticky_faults_are_reported_and_say_so"]
fn sticky_fault_child() {
    let Some(kind) = std::env::var_os("KILN_FAULT_KIND") else {
        println!("skipped: run by faults::gpu_sticky_faults_are_reported_and_say_so");
        return;
    };
    let kind = kind.into_string().unwrap();
    let held = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let on_device = arange(1000).astype(DType::Float32) * 2.0;
    on_device.try_eval().unwrap();
    let mut y = zeros(&[16], DType::Float32);
    y.try_eval().unwrap();
    // SAFETY: the kernel's fault is the point of the test; it runs in a process of its own.
    let launched =
        unsafe { faulting_kernel(&kind).try_launch((1,), (1,), &mut [(&mut y).into()], 0, None) };
    // The fault shows at the launch or at the next synchronisation.
    let first = match launched {
        Err(e) => e,
        Ok(()) => y.try_to_vec::<f32>().expect_err("a faulting kernel's output read back"),
    };
    assert!(first.is_sticky(), "{kind}: {first}");
    assert!(first.to_string().contains("a sticky error"), "{first}");
    // Later device work fails with the same typed error, no panic.
    let later = (&on_device + 1.0).try_to_vec::<f32>().expect_err("work after a sticky fault");
    assert!(later.is_sticky(), "{kind}, later: {later}");
    let fresh = (arange(10).astype(DType::Float32) + 1.0).try_to_vec::<f32>();
    assert!(fresh.as_ref().is_err_and(kiln::Error::is_sticky), "{kind}, fresh: {fresh:?}");
    // Host-held data is unaffected.
    assert_eq!(held.to_vec::<f32>(), vec![1.0, 2.0, 3.0]);
    println!("faults-child kind={kind} first={:?} later={:?}", code(&first), code(&later));
}

fn code(e: &kiln::Error) -> Option<u32> {
    e.runtime().and_then(kiln_runtime::RuntimeError::cuda_code)
}

#[test]
fn gpu_sticky_faults_are_reported_and_say_so() {
    if !on_gpu() {
        return;
    }
    if std::env::var("KILN_GPU_SANITIZER").is_ok_and(|v| v == "1") {
        // The faults are the test: compute-sanitizer (which follows the children) would report
        // each as the error it is.
        println!("skipped: its kernels fault on purpose, which compute-sanitizer reports");
        return;
    }
    for (kind, want) in [("out_of_bounds", 700), ("trap", 719), ("misaligned", 716)] {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["faults::sticky_fault_child", "--exact", "--ignored", "--nocapture"])
            .env("KILN_FAULT_KIND", kind)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{kind}: the child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = format!("faults-child kind={kind} first=Some({want}) later=Some({want})");
        assert!(stdout.contains(&line), "{kind}: want `{line}` in\n{stdout}");
    }
}

/// A launch the driver refuses leaves the context usable: a typed error that is not sticky,
/// then live arrays read back and new work runs, in this process.
#[test]
fn gpu_a_refused_launch_is_not_sticky() {
    if !on_gpu() {
        return;
    }
    let live = arange(100).astype(DType::Float32) * 3.0;
    live.try_eval().unwrap();
    let mut y = zeros(&[16], DType::Float32);
    // SAFETY: the launch is refused before anything runs (4,096 threads in a block).
    let e = unsafe {
        faulting_kernel("trap").try_launch((1,), (4096,), &mut [(&mut y).into()], 0, None)
    }
    .expect_err("a block of 4,096 threads");
    assert!(!e.is_sticky(), "{e}");
    assert!(!e.to_string().contains("sticky"), "{e}");
    let want: Vec<f32> = (0..100).map(|i| i as f32 * 3.0).collect();
    assert_eq!(live.to_vec::<f32>(), want);
    assert_eq!(y.to_vec::<f32>(), vec![0.0; 16]);
    assert_eq!((&live + 1.0).to_vec::<f32>()[99], 298.0);
}

/// With `KILN_GPU_LINK=nvjitlink` a new kernel's fast-tier code reaches the disk cache as a
/// cubin (`kiln_runtime::nvjitlink`), so the next process loads it with no JIT: every GPU entry
/// the child of [`a_full_disk_while_writing_the_cache`] stores holds an ELF image, and the next
/// process computes the same values from them.
#[test]
fn gpu_fast_kernels_are_cached_as_cubins_through_nvjitlink() {
    if !on_gpu() {
        return;
    }
    let driver = kiln_runtime::driver_version().unwrap();
    if !kiln_runtime::nvjitlink::usable_with(driver) {
        println!("skipped: {} (driver {driver})", kiln_runtime::nvjitlink::describe());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = 0.75 + (std::process::id() % 1000) as f64 * 1e-4;
    let link = [("KILN_GPU_LINK", "nvjitlink")];
    let (stores, _, _) = full_disk_run_with(dir.path(), c, None, &link);
    assert!(stores >= 2, "the kernels are stored: {stores}");
    let entries = files_under(&dir.path().join("kernels"));
    assert!(!entries.is_empty());
    for f in &entries {
        let bytes = std::fs::read(f).unwrap();
        assert!(bytes.windows(4).any(|w| w == b"\x7fELF"), "{f}: no cubin in the entry");
    }
    let (_, hits, _) = full_disk_run_with(dir.path(), c, None, &link);
    assert!(hits >= 2, "the next process loads them: {hits} hits");
}
