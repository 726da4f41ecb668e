//! The host kernels' disk cache (`KILN_CACHE_DIR`): a kernel found there is linked, not
//! compiled, and computes what the compiled kernel computes; damaged entries are rebuilt; a new
//! process with a warm cache runs MLIR and LLVM for none of its kernels; `KILN_CACHE_DIR=off`
//! turns it off. Every test uses a temporary directory of its own.
//!
//! The counters (`codegen::host::disk_stats`) are the process's, shared with the tests running
//! beside these: in this process they are checked as lower bounds; the child processes of
//! `a_new_process_starts_warm` check them exactly.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use kiln::{Array, HostArray};
use kiln_compiler::codegen::{self, host, Origin, Tier};
use kiln_compiler::fusion::{partition, Region};
use kiln_runtime::DiskCache;

fn uniform_f32(shape: &[usize], seed: u64) -> Array {
    let mut s = seed;
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            -3.0 + 6.0 * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect();
    let a = Array::from_vec(v, shape);
    a.eval();
    a
}

/// Programs of one region each: elementwise with math calls (libm, libmvec: external symbols
/// the loaded code must resolve) and a row reduction. `c` makes the kernels new (its constant
/// is in their MLIR).
fn programs(c: f64) -> Vec<Array> {
    let x = uniform_f32(&[64, 100], 7);
    vec![
        ((&x - c).square() * 0.5 + x.sin()) * (-(&x * &x)).exp(),
        (((&x - c).exp()).sum(1) + c).log(),
    ]
}

/// A constant no other run of these tests used: kernels new to every cache, on disk or not.
fn fresh_constant() -> f64 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    1.0 + (nanos % 1_000_000) as f64 * 1e-9 + (std::process::id() % 1000) as f64 * 1e-3
}

/// The program's one region and its inputs.
fn one_region(y: &Array) -> (Region, Vec<std::sync::Arc<HostArray>>) {
    let l = kiln::lower(&[y]);
    let mut p = partition(&l.graph);
    assert_eq!(p.regions.len(), 1, "{}", kiln_compiler::fusion::print_regions(&p.regions));
    (p.regions.remove(0), l.inputs)
}

fn run(c: &codegen::CompiledRegion, inputs: &[std::sync::Arc<HostArray>]) -> Vec<HostArray> {
    let refs: Vec<&HostArray> = inputs.iter().map(|a| a.as_ref()).collect();
    kiln_exec::cpu::run_compiled(c, &refs).unwrap()
}

#[test]
fn a_disk_hit_links_the_same_code() {
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskCache::new(dir.path());
    for (n, y) in programs(fresh_constant()).iter().enumerate() {
        let (region, inputs) = one_region(y);
        let before = host::disk_stats();
        let compiled = codegen::compile_region_disk(&region, Tier::Optimized, &disk).unwrap();
        let code = compiled.code.get();
        assert_eq!((code.origin, code.tier), (Origin::Compiled, Tier::Optimized), "program {n}");
        let loaded = codegen::compile_region_disk(&region, Tier::Fast, &disk).unwrap();
        let code = loaded.code.get();
        assert_eq!(
            (code.origin, code.tier),
            (Origin::DiskCache, Tier::Optimized),
            "program {n}: optimised code taken where fast would do"
        );
        assert_eq!(
            (code.times.mlir, code.times.optimize, code.times.jit),
            (0.0, 0.0, 0.0),
            "program {n}: neither MLIR nor LLVM ran"
        );
        assert!(code.times.link > 0.0);
        let after = host::disk_stats();
        assert!(
            after.misses > before.misses
                && after.stores > before.stores
                && after.hits > before.hits,
            "{before:?} -> {after:?}"
        );
        // The same machine code: the same bits.
        let want = run(&compiled, &inputs);
        assert_eq!(run(&loaded, &inputs), want, "program {n}");
        // And the code computes the program (against the reference evaluator).
        // exp then a sum of them (as softmax): two roundings beside the functions' error.
        crate::codegen::check_program(
            &format!("program {n}"),
            &[y],
            2.0 * crate::codegen::f32_ulps() + 1.0,
        );
    }
}

#[test]
fn damaged_entries_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskCache::new(dir.path());
    let y = &programs(fresh_constant())[0];
    let (region, inputs) = one_region(y);
    let first = codegen::compile_region_disk(&region, Tier::Fast, &disk).unwrap();
    let want = run(&first, &inputs);
    let path = disk.path_of(&host::disk_cache_key(&first.kernel));
    let good = std::fs::read(&path).unwrap();
    let mut flipped_object = good.clone();
    *flipped_object.last_mut().unwrap() ^= 0x40;
    let mut flipped_key = good.clone();
    flipped_key[100] ^= 1;
    let damaged: [(&str, Vec<u8>); 6] = [
        ("empty", Vec::new()),
        ("cut in the header", good[..20].to_vec()),
        ("cut in the object", good[..good.len() - 100].to_vec()),
        ("a bit of the object flipped", flipped_object),
        ("a bit of the key flipped", flipped_key),
        ("not an entry", b"ELF? no: a file some other program wrote here".to_vec()),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&path, &bytes).unwrap();
        let before = host::disk_stats();
        let rebuilt = codegen::compile_region_disk(&region, Tier::Fast, &disk).unwrap();
        assert_eq!(rebuilt.code.get().origin, Origin::Compiled, "{what}");
        assert!(host::disk_stats().corrupt > before.corrupt, "{what}: counted as damaged");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            good,
            "{what}: the entry is written again, whole"
        );
        assert_eq!(run(&rebuilt, &inputs), want, "{what}");
        let again = codegen::compile_region_disk(&region, Tier::Fast, &disk).unwrap();
        assert_eq!(again.code.get().origin, Origin::DiskCache, "{what}: read back");
    }
    // An entry of fast code where optimised code is wanted: a miss, then optimised code
    // replaces it, and is what fast code's lookups get from then on.
    let optimized = codegen::compile_region_disk(&region, Tier::Optimized, &disk).unwrap();
    assert_eq!(optimized.code.get().origin, Origin::Compiled);
    assert_ne!(std::fs::read(&path).unwrap(), good);
    let code = codegen::compile_region_disk(&region, Tier::Fast, &disk).unwrap().code.get();
    assert_eq!((code.origin, code.tier), (Origin::DiskCache, Tier::Optimized));
    // Nothing but entries in the directory: no temporary file left behind.
    for e in std::fs::read_dir(path.parent().unwrap()).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(name.ends_with(".kc"), "{name}");
    }
}

/// What a child process of [`a_new_process_starts_warm`] reports.
#[derive(Debug, PartialEq)]
struct Report {
    kernels: u64,
    hits: u64,
    misses: u64,
    stores: u64,
    corrupt: u64,
    llvm: u64,
    results: String,
}

impl Report {
    fn parse(stdout: &str) -> Report {
        // The harness prints the test's name on the same line, before it.
        let at =
            stdout.find("host-cache-child ").unwrap_or_else(|| panic!("no report in:\n{stdout}"));
        let line = stdout[at..].lines().next().unwrap_or_default();
        let field = |name: &str| -> String {
            let prefix = format!("{name}=");
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(prefix.as_str()))
                .unwrap_or_else(|| panic!("{name} in {line}"))
                .to_string()
        };
        let num = |name: &str| field(name).parse::<u64>().unwrap();
        Report {
            kernels: num("kernels"),
            hits: num("hits"),
            misses: num("misses"),
            stores: num("stores"),
            corrupt: num("corrupt"),
            llvm: num("llvm"),
            results: field("results"),
        }
    }
}

/// Run by `a_new_process_starts_warm` as a child process (`KILN_HOST_CACHE_CHILD` set, with the
/// constant to use): the programs through the public API, then a report of the disk cache's
/// counters and the results' bits.
#[test]
#[ignore = "a child process of a_new_process_starts_warm"]
fn warm_start_child() {
    let Some(c) = std::env::var_os("KILN_HOST_CACHE_CHILD") else {
        println!("skipped: run by host_cache::a_new_process_starts_warm");
        return;
    };
    let c: f64 = c.to_str().unwrap().parse().unwrap();
    let mut bits = Vec::new();
    let programs = programs(c);
    let t = std::time::Instant::now();
    for y in programs {
        bits.extend(y.to_vec::<f32>().iter().map(|v| format!("{:08x}", v.to_bits())));
    }
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let s = host::disk_stats();
    // `ms`: the programs' first calls, compilation or loading included (not checked: printed for
    // reading, e.g. `KILN_HOST_CACHE_CHILD=1.5 KILN_CACHE_DIR=/tmp/x main host_cache::warm_start_child
    // --exact --ignored --nocapture`, twice).
    println!(
        "host-cache-child ms={ms:.2} kernels={} hits={} misses={} stores={} corrupt={} llvm={} results={}",
        host::compiled_count(),
        s.hits,
        s.misses,
        s.stores,
        s.corrupt,
        host::llvm_compile_count(),
        kiln_runtime::disk_cache::digest(&[bits.join(",").as_bytes()])
    );
}

/// This test binary run as a child on `warm_start_child`, the cache in `cache` (a directory or
/// `off`), on the CPU.
fn child(cache: &std::ffi::OsStr, c: f64) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "host_cache::warm_start_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("KILN_HOST_CACHE_CHILD", c.to_string())
        .env("KILN_CACHE_DIR", cache)
        .env("KILN_DEVICE", "cpu")
        .env_remove("KILN_HOST_TIER")
        .env_remove("KILN_CODEGEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn report(child: std::process::Child) -> Report {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Report::parse(&stdout)
}

fn entries(dir: &Path) -> BTreeSet<(String, Vec<u8>)> {
    std::fs::read_dir(dir.join("kernels"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// Processes sharing a cache: two cold ones at once (both compile and store; the entries stay
/// whole), then a warm one that links every kernel from the disk (no MLIR, no LLVM), then one
/// with `KILN_CACHE_DIR=off` that compiles everything and touches nothing. All compute the same
/// bits.
#[test]
fn a_new_process_starts_warm() {
    let dir = tempfile::tempdir().unwrap();
    let c = fresh_constant();
    let cold = [child(dir.path().as_os_str(), c), child(dir.path().as_os_str(), c)].map(report);
    for r in &cold {
        assert!(r.kernels >= 2, "{r:?}");
        assert_eq!((r.hits + r.misses, r.corrupt), (r.kernels, 0), "one lookup per kernel: {r:?}");
        assert_eq!(r.llvm, r.misses, "{r:?}");
    }
    assert_eq!(cold[0].results, cold[1].results);
    let stored = entries(dir.path());
    assert_eq!(stored.len() as u64, cold[0].kernels, "one entry per kernel");

    let warm = report(child(dir.path().as_os_str(), c));
    assert_eq!(
        (warm.hits, warm.misses, warm.stores, warm.llvm),
        (warm.kernels, 0, 0, 0),
        "every kernel from the disk, none compiled: {warm:?}"
    );
    assert_eq!(warm.results, cold[0].results);

    let off = report(child(std::ffi::OsStr::new("off"), c));
    assert_eq!((off.hits, off.misses, off.stores, off.llvm), (0, 0, 0, off.kernels), "{off:?}");
    assert_eq!(off.results, cold[0].results);
    assert_eq!(entries(dir.path()), stored, "the cache untouched");
}

/// The first host kernel of a process from a warm disk cache, one-time costs included (LLVM's
/// host target, the libmvec table, the ORC JIT), then the next ones: run it twice (the first run
/// fills the cache):
/// `KILN_CACHE_DIR=/tmp/kiln-probe cargo test --release --test main host_cache::probe_first_hit -- --ignored --nocapture`.
#[test]
#[ignore = "a probe: prints times"]
fn probe_first_hit() {
    let Some(disk) = DiskCache::from_env() else {
        println!("skipped: the disk cache is off");
        return;
    };
    let regions: Vec<Region> = programs(1.25).iter().map(|y| one_region(y).0).collect();
    for (n, r) in regions.iter().enumerate() {
        let t = std::time::Instant::now();
        let c = codegen::compile_region_disk(r, Tier::Fast, &disk).unwrap();
        let wall = t.elapsed().as_secs_f64() * 1e3;
        let code = c.code.get();
        let ts = code.times;
        println!(
            "kernel {n}: {:?} {:?}, {wall:.3} ms (disk {:.3}, mlir {:.3}, optimize {:.3}, codegen {:.3}, link {:.3})",
            code.origin,
            code.tier,
            ts.disk * 1e3,
            ts.mlir * 1e3,
            ts.optimize * 1e3,
            ts.jit * 1e3,
            ts.link * 1e3
        );
    }
}
