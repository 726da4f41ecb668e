//! Simplification: the graph into an e-graph (egg), rewrite rules run to saturation or to a
//! limit, and the cheapest equivalent graph extracted by the [cost model](crate::cost).
//!
//! * [`lang`]: the e-graph language (the op table's ops as e-nodes) and the analysis that gives
//!   every class its dtype, shape and known constant value.
//! * [`rules`]: the rules, by topic (`algebra`, `casts`, `views`, `reductions`, `constants`);
//!   all are exact (IEEE for floats, wrap-around for integers) unless
//!   [`SimplifyOptions::fast_math`] adds the `fast-math-` ones.
//! * [`extract`]: DAG-aware greedy extraction, and the graph rebuilt from it.
//!
//! The result computes the same outputs (same order, dtypes and shapes), passes the verifier,
//! and never costs more than the input by the cost model (else the input is returned as is).
//! Limits ([`DEFAULT_ITER_LIMIT`], [`DEFAULT_NODE_LIMIT`], [`DEFAULT_TIME_LIMIT_MS`]) bound
//! the rewriting; `KILN_EGG_ITERS`, `KILN_EGG_NODES` and `KILN_EGG_TIME_MS` override them
//! ([`SimplifyOptions::from_env`]). Hitting one is not an error: the rewrites found so far are
//! used, and the report says why it stopped.

pub mod extract;
pub mod lang;
pub mod rules;
#[doc(hidden)]
pub mod testgen;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use egg::{Id, Runner, StopReason};
use kiln_ir::graph::Graph;
use kiln_ir::verify::verify;
use smallvec::SmallVec;

use crate::cost::graph_cost;
use crate::error::CompileError;
use lang::{ENode, KilnAnalysis};

/// Rewriting stops after this many iterations (`KILN_EGG_ITERS`).
pub const DEFAULT_ITER_LIMIT: usize = 16;
/// ... or when the e-graph has this many e-nodes (`KILN_EGG_NODES`).
pub const DEFAULT_NODE_LIMIT: usize = 20_000;
/// ... or after this many milliseconds (`KILN_EGG_TIME_MS`). A safety net only: the iteration and
/// node limits are what stop ordinary graphs, so the result (and every dump) does not depend on
/// the machine's speed.
pub const DEFAULT_TIME_LIMIT_MS: u64 = 1_000;

/// How much to simplify.
#[derive(Clone, Debug, PartialEq)]
pub struct SimplifyOptions {
    pub iter_limit: usize,
    pub node_limit: usize,
    pub time_limit: Duration,
    /// Adds rules that are not exact for floats (`x*0 = 0`, `x-x = 0`, `x+0 = x`,
    /// `exp(log x) = x`, `log(exp x) = x`). Off by default.
    pub fast_math: bool,
}

impl Default for SimplifyOptions {
    fn default() -> Self {
        SimplifyOptions {
            iter_limit: DEFAULT_ITER_LIMIT,
            node_limit: DEFAULT_NODE_LIMIT,
            time_limit: Duration::from_millis(DEFAULT_TIME_LIMIT_MS),
            fast_math: false,
        }
    }
}

impl SimplifyOptions {
    /// The defaults, with the limits `KILN_EGG_ITERS`, `KILN_EGG_NODES` and `KILN_EGG_TIME_MS`
    /// and `KILN_FAST_MATH` where set ([`kiln_cache::config`], read once; an invalid value is
    /// ignored, with a warning).
    pub fn from_env() -> Self {
        Self::from_config(kiln_cache::config())
    }

    /// The options `config` sets.
    pub fn from_config(config: &kiln_cache::Config) -> Self {
        let d = SimplifyOptions::default();
        SimplifyOptions {
            iter_limit: config.egg_iters.unwrap_or(d.iter_limit),
            node_limit: config.egg_nodes.unwrap_or(d.node_limit),
            time_limit: config.egg_time_ms.map_or(d.time_limit, Duration::from_millis),
            fast_math: config.fast_math,
        }
    }

    #[cfg(test)]
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        Self::from_config(&kiln_cache::Config::from_vars(|name| var(name).map(Into::into)))
    }
}

/// What the simplification did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimplifyReport {
    /// Rewrite iterations run.
    pub iterations: usize,
    /// E-nodes and e-classes of the final e-graph.
    pub enodes: usize,
    pub eclasses: usize,
    /// Why rewriting stopped: `saturated`, or the limit hit.
    pub stop_reason: String,
    /// How many times each rule changed the e-graph (rules that never did are absent).
    pub rules_applied: BTreeMap<String, usize>,
    /// Nodes of the input and output graphs.
    pub nodes_before: usize,
    pub nodes_after: usize,
    /// Costs of the input and output graphs ([`crate::cost`], bytes).
    pub cost_before: f64,
    pub cost_after: f64,
    /// Time rewriting, time extracting, and the whole.
    pub rewrite_time: Duration,
    pub extract_time: Duration,
    pub time: Duration,
}

impl fmt::Display for SimplifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "simplify: {} -> {} nodes, cost {:.0} -> {:.0}; {} iterations, {} e-nodes, {} e-classes, stopped: {}; {:.2} ms ({:.2} rewriting, {:.2} extracting)",
            self.nodes_before,
            self.nodes_after,
            self.cost_before,
            self.cost_after,
            self.iterations,
            self.enodes,
            self.eclasses,
            self.stop_reason,
            self.time.as_secs_f64() * 1e3,
            self.rewrite_time.as_secs_f64() * 1e3,
            self.extract_time.as_secs_f64() * 1e3,
        )?;
        if !self.rules_applied.is_empty() {
            let rules: Vec<String> =
                self.rules_applied.iter().map(|(r, n)| format!("{r} x{n}")).collect();
            write!(f, "; rules: {}", rules.join(", "))?;
        }
        Ok(())
    }
}

/// A simplified graph and how it was obtained.
#[derive(Clone, Debug)]
pub struct Simplified {
    pub graph: Graph,
    pub report: SimplifyReport,
}

/// The rules, built once per `fast_math` setting.
fn cached_rules(fast_math: bool) -> &'static [rules::Rewrite] {
    static EXACT: OnceLock<Vec<rules::Rewrite>> = OnceLock::new();
    static FAST: OnceLock<Vec<rules::Rewrite>> = OnceLock::new();
    let cell = if fast_math { &FAST } else { &EXACT };
    cell.get_or_init(|| rules::all(&SimplifyOptions { fast_math, ..SimplifyOptions::default() }))
}

fn describe(stop: Option<&StopReason>) -> String {
    match stop {
        Some(StopReason::Saturated) => "saturated".to_string(),
        Some(StopReason::IterationLimit(n)) => format!("iteration limit ({n})"),
        Some(StopReason::NodeLimit(n)) => format!("node limit ({n})"),
        Some(StopReason::TimeLimit(s)) => format!("time limit ({:.1} ms)", s * 1e3),
        Some(StopReason::Other(why)) => why.clone(),
        None => "not run".to_string(),
    }
}

/// Simplifies `g`: the cheapest equivalent graph the rules find (see the [module](self) docs).
///
/// Errors: [`CompileError::Ir`] if `g` does not verify; [`CompileError::Simplify`] if the result
/// would not (a bug).
pub fn simplify(g: &Graph, opts: &SimplifyOptions) -> Result<Simplified, CompileError> {
    let start = Instant::now();
    verify(g)?;
    let (egraph, ids) = lang::egraph_of(g);
    let runner = Runner::<ENode, KilnAnalysis, ()>::new(KilnAnalysis::default())
        .with_egraph(egraph)
        .with_iter_limit(opts.iter_limit)
        .with_node_limit(opts.node_limit)
        .with_time_limit(opts.time_limit)
        .run(cached_rules(opts.fast_math));
    let rewrite_time = start.elapsed();
    let egraph = &runner.egraph;

    let mut rules_applied = BTreeMap::new();
    for it in &runner.iterations {
        for (rule, n) in &it.applied {
            *rules_applied.entry(rule.to_string()).or_insert(0) += n;
        }
    }
    let stop_reason = describe(runner.stop_reason.as_ref());
    tracing::debug!(
        iterations = runner.iterations.len(),
        enodes = egraph.total_number_of_nodes(),
        eclasses = egraph.number_of_classes(),
        "simplify: rewriting stopped: {stop_reason}"
    );

    let extract_start = Instant::now();
    // The input's e-nodes, as they now are in the e-graph (children canonical): they win ties,
    // and keep their order.
    let mut original: HashMap<ENode, usize> = HashMap::with_capacity(g.len());
    for (i, node) in g.nodes().iter().enumerate() {
        let children: SmallVec<[Id; 3]> =
            node.inputs.iter().map(|i| egraph.find(ids[i.index()])).collect();
        original.entry(ENode::from_node(node, &children)).or_insert(i);
    }
    let choices = extract::greedy_dag(egraph, &original);
    let roots: Vec<Id> = g.outputs().iter().map(|o| ids[o.index()]).collect();
    let out = extract::build(egraph, &choices, &roots, g, &original)?;
    verify(&out).map_err(|e| CompileError::Simplify {
        message: format!("the simplified graph does not verify: {e}"),
    })?;
    let extract_time = extract_start.elapsed();

    let (cost_before, mut cost_after) = (graph_cost(g), graph_cost(&out));
    let graph = if cost_after > cost_before {
        tracing::debug!("simplify: the extracted graph costs more ({cost_after} > {cost_before}); keeping the input");
        cost_after = cost_before;
        g.clone()
    } else {
        out
    };
    let report = SimplifyReport {
        iterations: runner.iterations.len(),
        enodes: egraph.total_number_of_nodes(),
        eclasses: egraph.number_of_classes(),
        stop_reason,
        rules_applied,
        nodes_before: g.len(),
        nodes_after: graph.len(),
        cost_before,
        cost_after,
        rewrite_time,
        extract_time,
        time: start.elapsed(),
    };
    tracing::debug!("{report}");
    Ok(Simplified { graph, report })
}

#[cfg(test)]
mod tests;
