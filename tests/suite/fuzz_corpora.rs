//! The fuzz targets' committed inputs, replayed (issue 26): every file of `fuzz/corpus/T/` (the
//! seeds and what the fuzzer found, minimised) and of `fuzz/regressions/T/` (inputs that crashed
//! kiln once, each fixed) goes through the check of target `T`, the very function the fuzz
//! target runs (`fuzz/src/checks.rs`, included here by path). Fuzzing itself runs outside CI
//! (`scripts/fuzz.sh SECONDS`); this replays what it found, once, in seconds.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../../fuzz/src/checks.rs"]
mod checks;

/// The files of `fuzz/<dir>/<target>/`, sorted.
fn files(dir: &str, target: &str) -> Vec<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(dir).join(target);
    let Ok(entries) = std::fs::read_dir(&d) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries.map(|e| e.expect("a readable directory").path()).collect();
    out.sort();
    out
}

/// Runs target `name`'s check on every committed input; fails naming each input that panics.
fn replay(name: &str) {
    let check = checks::TARGETS.iter().find(|t| t.0 == name).expect("a target of that name").1;
    let corpus = files("corpus", name);
    assert!(!corpus.is_empty(), "fuzz/corpus/{name}/ holds no inputs");
    let regressions = files("regressions", name);
    let mut failed = Vec::new();
    for path in corpus.iter().chain(&regressions) {
        let data = std::fs::read(path).expect("a readable input");
        if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} inputs of `{name}` fail its check (the panics are printed above):\n{}",
        failed.len(),
        corpus.len() + regressions.len(),
        failed.join("\n")
    );
}

/// Every target has a test below (a new target without one fails here).
#[test]
fn every_target_is_replayed() {
    let names: Vec<&str> = checks::TARGETS.iter().map(|t| t.0).collect();
    assert_eq!(names, ["kernel_code", "ir_text", "npy", "params", "programs"]);
}

#[test]
fn kernel_code_corpus() {
    replay("kernel_code");
}

#[test]
fn ir_text_corpus() {
    replay("ir_text");
}

#[test]
fn npy_corpus() {
    replay("npy");
}

#[test]
fn params_corpus() {
    replay("params");
}

#[test]
fn programs_corpus() {
    replay("programs");
}

/// The comparison of `programs` tells values apart bit for bit (the sign of zero included) but
/// any NaN from any NaN; and a decoded program is more than its inputs.
#[test]
fn the_programs_check_compares_bits() {
    let f32s =
        |v: &[f32]| kiln::HostArray::new(&[v.len()], kiln::ir::Data::Float32(v.to_vec())).unwrap();
    let nan2 = f32::from_bits(f32::NAN.to_bits() | 1);
    assert!(checks::same(&f32s(&[1.0, f32::NAN]), &f32s(&[1.0, nan2])));
    assert!(!checks::same(&f32s(&[1.0, 2.0]), &f32s(&[1.0, 2.5])));
    assert!(!checks::same(&f32s(&[0.0]), &f32s(&[-0.0])));
    assert!(!checks::same(&f32s(&[1.0]), &f32s(&[f32::NAN])));
    let p =
        checks::decode_program(&[2, 1, 2, 9, 0, 0, 0, 0, 0, 0, 0, 0, 7, 1, 18, 0, 34, 1, 50, 2]);
    assert!(p.graph.len() > p.inputs.len(), "{}", kiln::ir::text::print(&p.graph));
    checks::programs(&[2, 1, 2, 9, 0, 0, 0, 0, 0, 0, 0, 0, 7, 1, 18, 0, 34, 1, 50, 2]);
}
