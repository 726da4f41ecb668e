//! The examples, run as a user runs them: `digits_stats` against NumPy's figures, and its
//! `KILN_DUMP=graph` output parsed back to the graph the API lowers.
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
    let line = stdout.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no `{label}` line in {stdout}"));
    line[label.len()..].split_whitespace().map(|v| v.parse().unwrap()).collect()
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

/// `KILN_DUMP=all` writes every stage of the pipeline, with the same bytes on every run.
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
            .env("KILN_DUMP", "all")
            .env("KILN_DUMP_DIR", &dir)
            .output()
            .expect("run digits_stats");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (p.file_name().unwrap().to_str().unwrap().to_string(), std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        files.sort();
        let _ = std::fs::remove_dir_all(&dir);
        files
    };
    let first = run("a");
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["0000-0-graph.kir", "0000-1-simplified.kir", "0000-2-regions.kir", "0000-3-schedule.kir"]);
    assert_eq!(first, run("b"));
    // The regions stage: mean and std are one reduction region with two outputs.
    let regions = kiln_compiler::fusion::parse_regions(&first[2].1).unwrap();
    assert_eq!(regions.len(), 1, "{}", first[2].1);
    assert_eq!(regions[0].outputs.len(), 2);
}
