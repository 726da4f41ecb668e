//! The pipeline: one straight function of named stages, each verified and dumpable.
//!
//! ```text
//! graph ─▶ simplified ─▶ int-matmul ─▶ regions ─▶ schedule ─▶ mlir ─▶ llvm ─▶ ptx / asm
//! ```
//! [`Stage`] lists them once, in order. [`compile`] runs the stages up to the schedule;
//! [`Compiled::stage_text`] gives each one's canonical text, which `KILN_DUMP` writes and
//! `kiln::explain` returns. The code stages are made per region by `codegen` ([`lower`]
//! then [`compile`](crate::codegen::compile)) when the executor runs the plan, and dumped from
//! the code that ran.
//!
//! [`lower`]: crate::codegen::lower

use kiln_ir::verify::verify;
use kiln_ir::Graph;

use crate::error::CompileError;
use crate::fusion::{partition, print_regions, FusionReport, Partition};
use crate::int_matmul;
use crate::schedule::{schedule, Schedule};
use crate::simplify::{simplify, SimplifyOptions, SimplifyReport};

/// Declares [`Stage`]: one row per stage, in pipeline order (as Cranelift's `define_passes!`):
/// its variant, its name (in `KILN_DUMP` and file names) and the extension of its dump file.
macro_rules! define_stages {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, $ext:literal; )*) => {
        /// A stage of the pipeline, in order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Stage {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Stage {
            /// Every stage, in pipeline order.
            pub const ALL: &'static [Stage] = &[$(Stage::$variant),*];

            /// The stage's name (`simplified`, `ptx`...).
            pub fn name(self) -> &'static str {
                match self {
                    $(Stage::$variant => $name,)*
                }
            }

            /// The extension of its dump file: `kir` for kiln's own texts.
            pub fn extension(self) -> &'static str {
                match self {
                    $(Stage::$variant => $ext,)*
                }
            }
        }
    };
}

define_stages! {
    /// The lowered input graph (the frontend's).
    Graph = "graph", "kir";
    /// After the e-graph simplification (module `simplify`).
    Simplified = "simplified", "kir";
    /// Integer matrix products lowered to multiplies and sums (module `int_matmul`): the graph
    /// the partitioner sees.
    IntMatmul = "int-matmul", "kir";
    /// The fused regions (module `fusion`).
    Regions = "regions", "kir";
    /// Regions in order, their buffers and streams (module `schedule`).
    Schedule = "schedule", "kir";
    /// Each region's kernel as MLIR (`codegen::lower`), canonical and shape-generic.
    Mlir = "mlir", "mlir";
    /// Its LLVM IR as translated, before optimisation (canonical).
    Llvm = "llvm", "ll";
    /// Its PTX (the GPU's code).
    Ptx = "ptx", "ptx";
    /// Its host assembly (this CPU's, for reading).
    Asm = "asm", "s";
}

impl Stage {
    /// The stage of a name.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// Its position in the pipeline (0 for `graph`).
    pub fn position(self) -> usize {
        self as usize
    }

    /// Whether it is a code stage (made per region by code generation).
    pub fn is_code(self) -> bool {
        self >= Stage::Mlir
    }
}

/// Options of the whole pipeline.
#[derive(Clone, Debug)]
pub struct Options {
    pub simplify: SimplifyOptions,
}

impl Options {
    /// Defaults, overridden by the environment (`KILN_EGG_*`, `KILN_FAST_MATH`).
    pub fn from_env() -> Options {
        Options { simplify: SimplifyOptions::from_env() }
    }
}

/// Everything the pipeline made of one graph.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The graph after the e-graph simplification, where the `int-matmul` stage changed it
    /// (`None`: [`Compiled::simplified`] is that graph).
    pub egg: Option<Graph>,
    /// The graph the partitioner saw (after `int-matmul`).
    pub simplified: Graph,
    pub simplify_report: SimplifyReport,
    pub partition: Partition,
    pub schedule: Schedule,
}

/// Runs the pipeline on a graph: verify, expand the ops written compactly (`crate::expand`,
/// verified), simplify, verify, partition (each region's body verified), schedule.
pub fn compile(g: &Graph, opts: &Options) -> Result<Compiled, CompileError> {
    verify(g)?;
    let expanded;
    let g = if crate::expand::needed(g) {
        expanded = crate::expand::expand(g)?;
        verify(&expanded)?;
        &expanded
    } else {
        g
    };
    let simplified = simplify(g, &opts.simplify)?;
    verify(&simplified.graph)?;
    let (egg, graph) = if int_matmul::needed(&simplified.graph) {
        let lowered = int_matmul::lower_int_matmul(&simplified.graph)?;
        verify(&lowered)?;
        (Some(simplified.graph), lowered)
    } else {
        (None, simplified.graph)
    };
    let partition = partition(&graph);
    for r in &partition.regions {
        verify(&r.body)?;
    }
    let schedule = schedule(&graph, &partition.regions);
    Ok(Compiled { egg, simplified: graph, simplify_report: simplified.report, partition, schedule })
}

impl Compiled {
    /// The fusion report: regions with their ops, inputs, outputs and bytes, the unfused edges,
    /// and the FFTs' callback sites.
    pub fn report(&self) -> FusionReport {
        let mut report = self.partition.report(&self.simplified);
        report.fft_callbacks = crate::vendor::fft_callback_sites::report(self);
        report
    }

    /// Whether a plan holds `stage`'s text ([`Compiled::stage_text`] gives it).
    pub fn holds(stage: Stage) -> bool {
        matches!(stage, Stage::Simplified | Stage::IntMatmul | Stage::Regions | Stage::Schedule)
    }

    /// The canonical text of a stage this plan holds: `simplified` to `schedule`; `None` for
    /// `graph` (the frontend's) and the code stages (made per region when the plan runs).
    pub fn stage_text(&self, stage: Stage) -> Option<String> {
        match stage {
            Stage::Simplified => {
                Some(kiln_ir::text::print(self.egg.as_ref().unwrap_or(&self.simplified)))
            }
            Stage::IntMatmul => Some(kiln_ir::text::print(&self.simplified)),
            Stage::Regions => Some(print_regions(&self.partition.regions)),
            Stage::Schedule => Some(self.schedule.to_string()),
            Stage::Graph | Stage::Mlir | Stage::Llvm | Stage::Ptx | Stage::Asm => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Stage;

    /// `KILN_DUMP`'s names (read by `kiln-cache`, which knows no compiler) are the stages'.
    #[test]
    fn dump_names_are_the_stages() {
        let names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, kiln_cache::config::DUMP_STAGES);
        for s in Stage::ALL {
            assert_eq!(Stage::from_name(s.name()), Some(*s));
            assert_eq!(Stage::ALL[s.position()], *s);
        }
        assert_eq!(Stage::from_name("lowered"), None);
    }
}
