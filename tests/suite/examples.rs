//! The examples, run as a user runs them: `digits_stats` against NumPy's figures, and its
//! `KILN_DUMP=graph` output parsed back to the graph the API lowers; the dumps of every stage,
//! and of the host path's code (`softmax_layernorm`), the same bytes on every run.
//!
//! `cargo test` builds the examples next to the test binary (`target/<profile>/examples/`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/..");
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "{} not built (cargo test builds the examples)", path.display());
    path
}

fn data(name: &str) -> PathBuf {
    crate::shared_data().join(name)
}

fn fixture(name: &str) -> Vec<f32> {
    let p = crate::repo_root().join("tests").join("fixtures").join(name);
    kiln::load_npy(p).unwrap().to_vec::<f32>()
}

fn parse_line(stdout: &str, label: &str) -> Vec<f32> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` line in {stdout}"));
    line[label.len()..].split_whitespace().map(|v| v.parse().unwrap()).collect()
}

/// The files of a dump directory, (name, text), by name.
fn dump_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_str().unwrap().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn digits_stats_matches_numpy_and_dumps_its_graph() {
    let digits = data("digits_x.npy");
    if !digits.exists() {
        eprintln!("skipped: {} not found", digits.display());
        return;
    }
    let dir = std::env::temp_dir().join(format!("kiln-dump-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(example("digits_stats"))
        .arg(&digits)
        .env("KILN_DUMP", "graph")
        .env("KILN_DUMP_DIR", &dir)
        .output()
        .expect("run digits_stats");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();

    // Two lines of 64 numbers, equal to NumPy's to 1e-5.
    for (label, file) in [("mean: ", "digits_mean.npy"), ("std: ", "digits_std.npy")] {
        let got = parse_line(&stdout, label);
        let want = fixture(file);
        assert_eq!(got.len(), 64, "{label}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5, "{label} column {i}: {g} vs NumPy {w}");
        }
    }

    // The dump: one graph file, which parses back to the graph the API lowers.
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].file_name().unwrap().to_str().unwrap().ends_with("-graph.kir"));
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let parsed = kiln::ir::text::parse(&text).unwrap();
    kiln::ir::verify::verify(&parsed).unwrap();
    let x = kiln::load_npy(&digits).unwrap();
    let (mean, std) = (x.mean(0), x.std(0, 0));
    assert_eq!(parsed, kiln::lower(&[&mean, &std]).graph);
    assert_eq!(kiln::ir::text::print(&parsed), text);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `KILN_DUMP=all` writes every stage of the pipeline, the host code's included, with the same
/// bytes on every run.
#[test]
fn dumps_of_every_stage_are_canonical() {
    let digits = data("digits_x.npy");
    if !digits.exists() {
        eprintln!("skipped: {} not found", digits.display());
        return;
    }
    let run = |tag: &str| -> Vec<(String, String)> {
        let dir = std::env::temp_dir().join(format!("kiln-dump-all-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new(example("digits_stats"))
            .arg(&digits)
            .env("KILN_CODEGEN", "host")
            .env("KILN_DUMP", "all")
            .env("KILN_DUMP_DIR", &dir)
            .output()
            .expect("run digits_stats");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let files = dump_files(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        files
    };
    let first = run("a");
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "0000-0-graph.kir",
            "0000-1-simplified.kir",
            "0000-2-int-matmul.kir",
            "0000-3-regions.kir",
            "0000-4-schedule.kir",
            "0000-5-mlir.mlir",
            "0000-6-llvm.ll",
            "0000-8-asm.s"
        ]
    );
    // The assembly too, on one machine.
    assert_eq!(first, run("b"));
    // The regions stage: mean and std are one reduction region with two outputs.
    let regions = kiln_compiler::fusion::parse_regions(&first[3].1).unwrap();
    assert_eq!(regions.len(), 1, "{}", first[3].1);
    assert_eq!(regions[0].outputs.len(), 2);
}

/// `KILN_DUMP=mlir,llvm` writes the host path's code of every materialisation: each region's
/// kernel in MLIR and its LLVM IR before any optimisation for this CPU. The files are canonical:
/// the same bytes on every run, nothing of this machine's CPU in them, and (the kernels being
/// shape-generic) the same bytes for another size of the same program where its constants stay.
#[test]
fn host_code_dumps_are_canonical() {
    let run = |tag: &str, rows: &str, cols: &str| -> Vec<(String, String)> {
        let dir = std::env::temp_dir().join(format!("kiln-dump-host-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new(example("softmax_layernorm"))
            .args([rows, cols])
            .current_dir(&dir)
            .env("KILN_CODEGEN", "host")
            .env("KILN_DUMP", "mlir,llvm")
            .env("KILN_DUMP_DIR", dir.join("dump"))
            .output()
            .expect("run softmax_layernorm");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let files = dump_files(&dir.join("dump"));
        let _ = std::fs::remove_dir_all(&dir);
        files
    };
    let first = run("a", "64", "40");
    let mlir: Vec<&(String, String)> =
        first.iter().filter(|(n, _)| n.ends_with("-5-mlir.mlir")).collect();
    let llvm: Vec<&(String, String)> =
        first.iter().filter(|(n, _)| n.ends_with("-6-llvm.ll")).collect();
    // w and b (reshapes of held arrays), softmax, layer norm: one file of each stage apiece.
    assert_eq!(
        (mlir.len(), llvm.len(), first.len()),
        (4, 4, 8),
        "{:?}",
        first.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (name, text) in &mlir {
        assert!(
            text.starts_with("// region 0: ")
                && text.contains(" tier\nmodule {")
                && text.contains("func.func @kiln_kernel("),
            "{name}:\n{text}"
        );
    }
    for (name, text) in &llvm {
        assert!(
            text.starts_with("; region 0: ") && text.contains("define void @kiln_kernel_host("),
            "{name}:\n{text}"
        );
        assert!(
            !text.contains("target-cpu") && !text.contains("target-features"),
            "{name}:\n{text}"
        );
    }
    // Softmax is one kernel, which calls exp.
    let softmax = &mlir[2].1;
    assert!(!softmax.contains("// -----") && softmax.contains("math.exp"), "{softmax}");
    assert_eq!(first, run("b", "64", "40"));
    // Another size: the same kernels, but layer norm's, whose mean divides by the row length, a
    // constant of the program (not a size).
    let other = run("c", "48", "56");
    assert_eq!(first.len(), other.len());
    for (a, c) in first.iter().zip(&other) {
        assert_eq!(a.0, c.0);
        if !a.0.starts_with("0003-") {
            assert_eq!(a.1, c.1, "{}: another size, the same kernels", a.0);
        }
    }
}
