//! `KILN_DUMP`: writes the text of each compiler stage of every materialisation to files.
//!
//! `KILN_DUMP=graph,simplified,regions,...` (or `all`) selects stages; files go to
//! `KILN_DUMP_DIR` (default `./kiln-dump/`), named `NNNN-S-stage.kir`: `NNNN` counts
//! materialisations in the process, `S` is the stage's position in the pipeline, so names sort
//! in the order things happened. The texts are canonical: the same program writes the same bytes.

use std::path::PathBuf;
use std::sync::OnceLock;

use kiln_ir::Graph;

/// The pipeline's stages, in order; the position is the `S` of file names.
pub const STAGES: &[&str] = &["graph", "simplified", "regions", "schedule", "mlir", "llvm", "ptx", "asm"];

struct DumpConfig {
    stages: Vec<String>,
    dir: PathBuf,
}

fn config() -> &'static DumpConfig {
    static CONFIG: OnceLock<DumpConfig> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let spec = std::env::var("KILN_DUMP").unwrap_or_default();
        let stages = spec
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .flat_map(|s| if s == "all" { STAGES.iter().map(|s| s.to_string()).collect() } else { vec![s] })
            .collect();
        let dir = std::env::var_os("KILN_DUMP_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("kiln-dump"));
        DumpConfig { stages, dir }
    })
}

/// Whether `KILN_DUMP` asks for `stage`.
pub fn enabled(stage: &str) -> bool {
    config().stages.iter().any(|s| s == stage)
}

/// The path a stage's dump of materialisation `seq` is written to.
pub fn path(seq: usize, stage: &str) -> PathBuf {
    let pos = STAGES.iter().position(|s| *s == stage).unwrap_or(STAGES.len());
    config().dir.join(format!("{seq:04}-{pos}-{stage}.kir"))
}

/// Writes `text` as the dump of `stage` if asked for. A failure to write is reported on stderr
/// and does not stop the computation.
pub fn write(seq: usize, stage: &str, text: impl FnOnce() -> String) {
    if !enabled(stage) {
        return;
    }
    let p = path(seq, stage);
    let result = std::fs::create_dir_all(&config().dir).and_then(|_| std::fs::write(&p, text()));
    if let Err(e) = result {
        eprintln!("kiln: could not write dump {}: {e}", p.display());
    }
}

/// Dumps the input graph of a materialisation (stage `graph`).
pub fn graph(seq: usize, g: &Graph) {
    write(seq, "graph", || kiln_ir::text::print(g));
}
