//! File tests, as Cranelift has them: each `tests/filetests/<topic>/<name>.kir` holds a program
//! in the textual IR and, below it, the expected text of the pipeline stages its header names.
//! The format is in `tests/filetests/README.md`.
//!
//! One test walks every `.kir` file, compiles its program with the options of its header, and
//! compares each stage's text with the file's section for it; it fails at the end, listing every
//! failing file with the first line that differs. `KILN_BLESS=1` writes the stages' text into
//! the files instead (then read the diff). Every program must also pass the verifier and read
//! back as itself (`parse(print(g)) == g`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kiln_compiler::codegen::{self, MathLib};
use kiln_compiler::fusion::Region;
use kiln_compiler::pipeline::{compile, Compiled, Options, Stage};
use kiln_compiler::simplify::SimplifyOptions;
use kiln_compiler::CompileError;
use kiln_ir::text::{parse, print};

/// The stages of code generation a file may name beside the pipeline's ([`pipeline_stages`]): each region's
/// MLIR for the host, and for the GPU (both made as text, without a GPU).
const CODE_STAGES: &[&str] = &["host-mlir", "gpu-mlir"];

/// A section starts with `; ==== <stage> ====`.
const SECTION_OPEN: &str = "; ==== ";
const SECTION_CLOSE: &str = " ====";

/// One `.kir` file, read.
struct FileTest {
    /// The lines before the first section (header and program), as written.
    head: Vec<String>,
    /// The program: the head with its `;` lines blanked, so the parser's line numbers are the
    /// file's.
    program: String,
    stages: Vec<String>,
    options: FileOptions,
    sections: Vec<Section>,
}

/// A `; ==== <stage> ====` section: the expected text of a stage.
struct Section {
    stage: String,
    /// The file's line number of the marker.
    marker: usize,
    /// The expected lines, each with its line number in the file.
    lines: Vec<(String, usize)>,
}

/// The options a header's `; options:` line sets.
struct FileOptions {
    pipeline: Options,
    /// The math library of `gpu-mlir` (libdevice unless `gpu-math=polynomial`): fixed by the
    /// file, not by whether this machine has libdevice.
    gpu_math: MathLib,
}

fn read_options(words: &str) -> Result<FileOptions, String> {
    // The simplifier's defaults, not the environment's `KILN_EGG_*`: a file's expectations do
    // not depend on the shell that runs them.
    let mut simplify = SimplifyOptions::default();
    let mut gpu_math = MathLib::Libdevice;
    for word in words.split_whitespace() {
        let (key, value) = word.split_once('=').unwrap_or((word, ""));
        let number = || value.parse::<u64>().map_err(|_| format!("option `{word}`: not a number"));
        match key {
            "fast-math" if value.is_empty() => simplify.fast_math = true,
            "egg-iters" => simplify.iter_limit = number()? as usize,
            "egg-nodes" => simplify.node_limit = number()? as usize,
            "egg-time-ms" => simplify.time_limit = std::time::Duration::from_millis(number()?),
            "gpu-math" => {
                gpu_math = match value {
                    "libdevice" => MathLib::Libdevice,
                    "polynomial" => MathLib::Polynomial,
                    _ => return Err(format!("option `{word}`: libdevice or polynomial")),
                }
            }
            _ => return Err(format!("unknown option `{word}`")),
        }
    }
    let mut pipeline = Options::from_env();
    pipeline.simplify = simplify;
    Ok(FileOptions { pipeline, gpu_math })
}

/// An expected line as a section writes it: `; ` before it, `;` alone for an empty line.
fn commented(line: &str) -> String {
    if line.is_empty() {
        ";".to_string()
    } else {
        format!("; {line}")
    }
}

/// The stage a section marker names, if `line` is one.
fn section_marker(line: &str) -> Option<&str> {
    line.strip_prefix(SECTION_OPEN)?.strip_suffix(SECTION_CLOSE).map(str::trim)
}

fn read_file_test(text: &str) -> Result<FileTest, String> {
    let lines: Vec<&str> = text.lines().collect();
    let body_start = lines.iter().position(|l| section_marker(l).is_some()).unwrap_or(lines.len());

    // The header: the `;` lines at the top; a description first, then `key: value` lines.
    let header_len = lines.iter().take_while(|l| l.starts_with(';')).count().min(body_start);
    let description = lines.first().and_then(|l| l.strip_prefix(';')).map(str::trim);
    if description.is_none_or(|d| d.is_empty() || d.starts_with("stages:")) {
        return Err("line 1: expected a `; <description>` line".into());
    }
    let (mut stages, mut options) = (None, None);
    for (k, line) in lines[..header_len].iter().enumerate().skip(1) {
        let entry = line[1..].split_once(':').map(|(key, value)| (key.trim(), value.trim()));
        let (slot, value) = match entry {
            Some(("stages", value)) => (&mut stages, value),
            Some(("options", value)) => (&mut options, value),
            _ => {
                return Err(format!(
                    "line {}: expected `; stages: ...` or `; options: ...`, found `{line}`",
                    k + 1
                ))
            }
        };
        if slot.replace(value.to_string()).is_some() {
            return Err(format!("line {}: a second `{line}`", k + 1));
        }
    }
    let stages: Vec<String> = stages
        .ok_or("no `; stages: ...` line in the header")?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let options = read_options(options.as_deref().unwrap_or(""))?;

    // The program: header lines blanked; no other `;` line before the first section.
    let mut program = String::new();
    for (k, line) in lines[..body_start].iter().enumerate() {
        if k >= header_len && line.starts_with(';') {
            return Err(format!("line {}: a `;` line inside the program: `{line}`", k + 1));
        }
        program += if k < header_len { "" } else { line };
        program.push('\n');
    }

    // The sections: `; <line>` or `;` lines under their marker; blank lines are layout.
    let mut sections: Vec<Section> = Vec::new();
    for (k, line) in lines.iter().enumerate().skip(body_start) {
        let expected = if let Some(stage) = section_marker(line) {
            sections.push(Section { stage: stage.to_string(), marker: k + 1, lines: Vec::new() });
            continue;
        } else if let Some(rest) = line.strip_prefix("; ") {
            rest
        } else if *line == ";" {
            ""
        } else if line.trim().is_empty() {
            continue;
        } else {
            return Err(format!("line {}: a section line must start with `;`: `{line}`", k + 1));
        };
        // The first line from `body_start` on is a marker: there is a section.
        sections.last_mut().expect("a section").lines.push((expected.to_string(), k + 1));
    }

    let mut head: Vec<String> = lines[..body_start].iter().map(|l| l.to_string()).collect();
    while head.last().is_some_and(|l| l.trim().is_empty()) {
        head.pop();
    }
    Ok(FileTest { head, program, stages, options, sections })
}

/// The pipeline's stages a compiled program holds (`simplified` to `schedule`).
fn pipeline_stages() -> Vec<&'static str> {
    Stage::ALL.iter().filter(|s| **s != Stage::Graph && !s.is_code()).map(|s| s.name()).collect()
}

/// The text of a pipeline stage: the one place that asks [`Compiled::stage_text`].
fn pipeline_stage_text(compiled: &Compiled, stage: &str) -> Option<String> {
    kiln_compiler::pipeline::Stage::from_name(stage).and_then(|s| compiled.stage_text(s))
}

/// Each region's kernel as `kernel` writes it, under a `// region N` line, regions separated by
/// `// -----`; a region code generation does not support says why. Any other error fails.
fn code_text(
    regions: &[Region],
    kernel: impl Fn(&Region) -> Result<String, CompileError>,
) -> Result<String, String> {
    let mut out = String::new();
    for (i, region) in regions.iter().enumerate() {
        if i > 0 {
            out += "// -----\n";
        }
        match kernel(region) {
            Ok(text) => out += &format!("// region {i}\n{text}"),
            Err(CompileError::Unsupported { op, reason, .. }) => {
                let e = CompileError::Unsupported { region: i, op, reason };
                writeln!(out, "// {e}").unwrap();
            }
            Err(e) => return Err(format!("region {i}: code generation failed: {e}")),
        }
    }
    Ok(out)
}

/// The text of `stage` for a compiled program.
fn stage_output(compiled: &Compiled, stage: &str, opts: &FileOptions) -> Result<String, String> {
    let regions = &compiled.partition.regions;
    match stage {
        "host-mlir" => code_text(regions, codegen::mlir_text),
        "gpu-mlir" => {
            let options = codegen::LowerOptions::gpu().with_math(opts.gpu_math);
            code_text(regions, |r| Ok(codegen::lower(r, &options)?.mlir))
        }
        _ => pipeline_stage_text(compiled, stage).ok_or_else(|| {
            format!(
                "unknown stage `{stage}` (known: {} {})",
                pipeline_stages().join(" "),
                CODE_STAGES.join(" ")
            )
        }),
    }
}

/// Where `actual` first differs from `expected`, as a message; `None` if they are equal.
fn first_difference(section: &Section, actual: &str) -> Option<String> {
    let expected: Vec<&str> = section.lines.iter().map(|(l, _)| l.as_str()).collect();
    let actual: Vec<&str> = actual.lines().collect();
    let k = (0..expected.len().max(actual.len())).find(|&k| expected.get(k) != actual.get(k))?;
    let file_line = section.lines.get(k).map_or(section.marker + k + 1, |&(_, n)| n);
    let show = |l: Option<&&str>| l.map_or("(no line)".to_string(), |l| format!("`{l}`"));
    Some(format!(
        "line {} of its section (line {file_line} of the file):\n    expected: {}\n    actual:   {}\n    \
         ({} lines expected, {} actual)",
        k + 1,
        show(expected.get(k)),
        show(actual.get(k)),
        expected.len(),
        actual.len(),
    ))
}

/// Checks the text of a `.kir` file: the failures, one message each; or, when `bless`, the text
/// with its sections made anew from the stages' output.
fn check_text(text: &str, bless: bool) -> Result<String, Vec<String>> {
    let one = |message: String| vec![message];
    let test = read_file_test(text).map_err(one)?;
    let graph =
        parse(&test.program).map_err(|e| one(format!("the program does not parse: {e}")))?;
    kiln_ir::verify::verify(&graph)
        .map_err(|e| one(format!("the program does not verify: {e}")))?;
    if !matches!(parse(&print(&graph)), Ok(back) if back == graph) {
        return Err(one("the program's printed text does not read back as itself".into()));
    }
    if test.stages.is_empty() {
        return Err(one("`; stages:` names no stage".into()));
    }
    let compiled = compile(&graph, &test.options.pipeline)
        .map_err(|e| one(format!("the program does not compile: {e}")))?;

    let mut failures = Vec::new();
    let mut actual = Vec::new();
    for (k, stage) in test.stages.iter().enumerate() {
        if test.stages[..k].contains(stage) {
            failures.push(format!("stage `{stage}` named twice"));
        }
        match stage_output(&compiled, stage, &test.options) {
            Ok(t) => actual.push((stage, t)),
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        return Err(failures);
    }

    if bless {
        let mut out = test.head.join("\n");
        out.push('\n');
        for (stage, t) in &actual {
            out += &format!("\n{SECTION_OPEN}{stage}{SECTION_CLOSE}\n");
            for line in t.lines() {
                out += &commented(line);
                out.push('\n');
            }
        }
        return Ok(out);
    }

    if test.sections.is_empty() {
        failures.push("no `; ==== <stage> ====` section (KILN_BLESS=1 writes them)".into());
    }
    for s in &test.sections {
        if !test.stages.contains(&s.stage) {
            failures.push(format!(
                "line {}: a section for `{}`, not in `; stages:`",
                s.marker, s.stage
            ));
        }
    }
    for (stage, t) in &actual {
        match test.sections.iter().find(|s| &s.stage == *stage) {
            None if !test.sections.is_empty() => {
                failures.push(format!("no section for stage `{stage}`"))
            }
            None => {}
            Some(section) => {
                if let Some(d) = first_difference(section, t) {
                    failures.push(format!("stage `{stage}` differs at {d}"));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(text.to_string())
    } else {
        Err(failures)
    }
}

/// Checks one file, or blesses it (writing it only where its text changes).
fn check_file(path: &Path, bless: bool) -> Result<(), Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("cannot read it: {e}")])?;
    let out = check_text(&text, bless)?;
    if out != text {
        std::fs::write(path, out).map_err(|e| vec![format!("cannot write it: {e}")])?;
    }
    Ok(())
}

/// Every `.kir` file below `dir`, sorted.
fn kir_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            kir_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "kir") {
            out.push(path);
        }
    }
    out.sort();
}

#[test]
fn filetests() {
    let root = crate::repo_root().join("tests").join("filetests");
    let bless = std::env::var("KILN_BLESS").is_ok_and(|v| v == "1");
    let mut files = Vec::new();
    kir_files(&root, &mut files);
    assert!(!files.is_empty(), "no .kir file under {}", root.display());

    let mut report = String::new();
    let mut failed = 0;
    for path in &files {
        if let Err(failures) = check_file(path, bless) {
            failed += 1;
            let name = path.strip_prefix(crate::repo_root()).unwrap_or(path);
            writeln!(report, "{}:", name.display()).unwrap();
            for f in failures {
                writeln!(report, "  {f}").unwrap();
            }
        }
    }
    assert!(
        failed == 0,
        "{failed} of {} file tests failed (KILN_BLESS=1 rewrites the expectations):\n{report}",
        files.len()
    );
}

/// The runner's own rules: a blessed text passes and an altered one fails at its line; an
/// unknown stage, a missing or foreign section, a header without stages and a `;` line inside
/// the program are failures, not skips.
#[test]
fn filetest_format() {
    let program = "kiln.graph v1\n%0 = input {index=0} : f32[2]\n%1 = negative(%0) : f32[2]\n\
                   %2 = negative(%1) : f32[2]\nreturn %2\n";
    let file = |header: &str, body: &str| format!("; a test\n{header}{program}{body}");
    let fails_with = |text: &str, bless: bool, needle: &str| match check_text(text, bless) {
        Err(f) => assert!(f.iter().any(|m| m.contains(needle)), "{needle:?} not in {f:?}"),
        Ok(_) => panic!("passed, expected a failure with {needle:?}:\n{text}"),
    };

    let blessed = check_text(&file("; stages: simplified regions\n", ""), true).unwrap();
    assert!(blessed.contains("\n; ==== simplified ====\n; kiln.graph v1\n; %0 = input"));
    assert_eq!(check_text(&blessed, false).unwrap(), blessed);
    fails_with(&blessed.replacen("; return %0", "; return %1", 1), false, "line 3 of its section");
    fails_with(&blessed.replacen("==== regions ====", "==== schedule ====", 1), false, "not in");

    fails_with(&file("; stages: simplified\n", ""), false, "no `; ==== <stage> ====` section");
    fails_with(&file("; stages: simplified bogus\n", ""), true, "unknown stage `bogus`");
    fails_with(&file("; stages:\n", ""), true, "names no stage");
    fails_with(&file("", ""), true, "no `; stages: ...` line");
    fails_with(&file("; stages: simplified\n; options: turbo\n", ""), true, "unknown option");
    fails_with(&file("; stages: simplified\n", "; stray\n"), true, "inside the program");
}
