//! The pipeline: one straight function of named stages, each verified and dumpable.
//!
//! ```text
//! graph ─▶ simplified ─▶ regions ─▶ schedule
//! ```
//! `compile` runs them; [`Compiled::stage_text`] gives each stage's canonical text, which
//! `KILN_DUMP` writes and `kiln::explain` returns.

use kiln_ir::verify::verify;
use kiln_ir::Graph;

use crate::error::CompileError;
use crate::fusion::{partition, print_regions, FusionReport, Partition};
use crate::int_matmul::lower_int_matmul;
use crate::schedule::{schedule, Schedule};
use crate::simplify::{simplify, SimplifyOptions, SimplifyReport};

/// The stages after `graph`, in order (`graph` itself is the frontend's).
pub const STAGES: &[&str] = &["simplified", "regions", "schedule"];

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
    pub simplified: Graph,
    pub simplify_report: SimplifyReport,
    pub partition: Partition,
    pub schedule: Schedule,
}

/// Runs the pipeline on a graph: verify, simplify, verify, partition (each region's body
/// verified), schedule.
pub fn compile(g: &Graph, opts: &Options) -> Result<Compiled, CompileError> {
    verify(g)?;
    let mut simplified = simplify(g, &opts.simplify)?;
    simplified.graph = lower_int_matmul(&simplified.graph)?;
    verify(&simplified.graph)?;
    let partition = partition(&simplified.graph);
    for r in &partition.regions {
        verify(&r.body)?;
    }
    let schedule = schedule(&simplified.graph, &partition.regions);
    Ok(Compiled {
        simplified: simplified.graph,
        simplify_report: simplified.report,
        partition,
        schedule,
    })
}

impl Compiled {
    /// The fusion report: regions with their ops, inputs, outputs and bytes, and the unfused edges.
    pub fn report(&self) -> FusionReport {
        self.partition.report(&self.simplified)
    }

    /// The canonical text of a stage of [`STAGES`] (`None` for another name).
    pub fn stage_text(&self, stage: &str) -> Option<String> {
        match stage {
            "simplified" => Some(kiln_ir::text::print(&self.simplified)),
            "regions" => Some(print_regions(&self.partition.regions)),
            "schedule" => Some(self.schedule.to_string()),
            _ => None,
        }
    }
}
