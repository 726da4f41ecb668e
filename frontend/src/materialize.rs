//! Materialisation: from lazy arrays to an IR graph, computed, with results kept for reuse.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use kiln_compiler::fusion::FusionReport;
use kiln_compiler::pipeline::Options;
use kiln_compiler::plan_cache::PlanCache;

use kiln_ir::{Graph, HostArray, HostElement, Node, NodeId};

use crate::array::{Array, Expr};
use crate::dump;
use crate::error::{Error, Result};

/// The IR graph of some arrays: arrays already held become `input` nodes (numbered in the order
/// first met), the rest their ops. Identical subexpressions become one node (hash-consing).
pub struct Lowered {
    pub graph: Graph,
    /// The held arrays the graph reads, by input index.
    pub inputs: Vec<Arc<HostArray>>,
}

/// Builds the graph whose outputs are `arrays` (in order; held arrays are outputs too, as
/// inputs passed through).
pub fn lower(arrays: &[&Array]) -> Lowered {
    let mut graph = Graph::new();
    let mut inputs: Vec<Arc<HostArray>> = Vec::new();
    let mut memo: HashMap<*const Expr, NodeId> = HashMap::new();
    let mut input_index: HashMap<*const HostArray, u32> = HashMap::new();
    // Iterative post-order walk: deep expression chains do not overflow the stack.
    for root in arrays {
        let mut stack: Vec<(&Array, bool)> = vec![(root, false)];
        while let Some((a, expanded)) = stack.pop() {
            let key = Arc::as_ptr(&a.e);
            if memo.contains_key(&key) {
                continue;
            }
            if let Some(v) = a.value() {
                let next = inputs.len() as u32;
                let index = *input_index.entry(Arc::as_ptr(v)).or_insert_with(|| {
                    inputs.push(v.clone());
                    next
                });
                memo.insert(key, graph.input(index, a.dtype(), a.shape()));
                continue;
            }
            if !expanded {
                stack.push((a, true));
                for i in a.e.inputs.iter().rev() {
                    if !memo.contains_key(&Arc::as_ptr(&i.e)) {
                        stack.push((i, false));
                    }
                }
                continue;
            }
            let node = Node {
                op: a.e.op,
                attrs: a.e.attrs.clone(),
                inputs: a.e.inputs.iter().map(|i| memo[&Arc::as_ptr(&i.e)]).collect(),
                dtype: a.e.dtype,
                shape: a.e.shape.clone(),
            };
            memo.insert(key, graph.insert(node));
        }
        graph.push_output(memo[&Arc::as_ptr(&root.e)]);
    }
    Lowered { graph, inputs }
}

static MATERIALIZATIONS: AtomicUsize = AtomicUsize::new(0);

fn plans() -> &'static PlanCache {
    static PLANS: OnceLock<PlanCache> = OnceLock::new();
    PLANS.get_or_init(PlanCache::new)
}

/// What runs a schedule's regions on the CPU (`KILN_CODEGEN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostBackend {
    /// Host code compiled through MLIR and LLVM, a region the code generator does not support
    /// (complex dtypes, copies) run by the reference evaluator: the default, and
    /// `KILN_CODEGEN=host`.
    Compiled,
    /// The reference evaluator for every region: `KILN_CODEGEN=eval`.
    Evaluator,
}

fn host_backend() -> HostBackend {
    static BACKEND: OnceLock<HostBackend> = OnceLock::new();
    *BACKEND.get_or_init(|| match std::env::var("KILN_CODEGEN").as_deref() {
        Ok("eval") => HostBackend::Evaluator,
        _ => HostBackend::Compiled,
    })
}

fn options() -> &'static Options {
    static OPTIONS: OnceLock<Options> = OnceLock::new();
    OPTIONS.get_or_init(Options::from_env)
}

/// Computes every array of `arrays` not yet held, in one graph (shared work is done once), and
/// keeps the results in the arrays.
///
/// The graph goes through the compiler's pipeline (a plan reused when a graph of the same
/// structure was compiled before) and its schedule runs region by region as compiled host code
/// (`kiln_compiler::codegen::run_schedule_on_host`), or in the reference evaluator with
/// `KILN_CODEGEN=eval`. `KILN_DUMP` writes each stage's text.
///
/// Errors: a compilation or evaluation failure (the arrays are left unmaterialised and still
/// valid).
pub fn try_eval_all(arrays: &[&Array]) -> Result<()> {
    let pending: Vec<&Array> = arrays.iter().copied().filter(|a| !a.is_materialized()).collect();
    if pending.is_empty() {
        return Ok(());
    }
    let lowered = lower(&pending);
    let seq = MATERIALIZATIONS.fetch_add(1, Ordering::Relaxed);
    dump::graph(seq, &lowered.graph);
    let (plan, _lookup) = plans().get_or_compile(&lowered.graph, options())?;
    for stage in kiln_compiler::pipeline::STAGES {
        dump::write(seq, stage, || plan.stage_text(stage).expect("a pipeline stage"));
    }
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let results = match host_backend() {
        HostBackend::Compiled => {
            dump::host_code(seq, &plan.partition.regions);
            kiln_compiler::codegen::run_schedule_on_host(&plan.schedule, &plan.partition.regions, &inputs)?
        }
        HostBackend::Evaluator => {
            kiln_compiler::schedule::run_on_host(&plan.schedule, &plan.partition.regions, &inputs)?
        }
    };
    for (a, r) in pending.iter().zip(results) {
        let _ = a.e.value.set(Arc::new(r));
    }
    Ok(())
}

/// [`try_eval_all`], panicking on error.
#[track_caller]
pub fn eval_all(arrays: &[&Array]) {
    crate::unwrap(try_eval_all(arrays))
}

/// What materialising some arrays would do, stage by stage: the texts `KILN_DUMP` writes, and
/// the fusion report.
#[derive(Clone, Debug)]
pub struct Explain {
    /// The lowered graph's textual IR.
    pub graph: String,
    /// After e-graph simplification.
    pub simplified: String,
    /// The fused regions.
    pub regions: String,
    /// The schedule: kernels in order, buffers and their lifetimes.
    pub schedule: String,
    /// Regions with their ops, inputs, outputs and bytes; unfused edges with reasons.
    pub report: FusionReport,
}

impl std::fmt::Display for Explain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\n{}\n{}\n{}\n{}", self.graph, self.simplified, self.regions, self.schedule, self.report)
    }
}

/// Compiles (without running) the graph that materialising `arrays` would run, and returns each
/// stage's text (kiln's `explain`). Errors: a compiler failure.
pub fn try_explain(arrays: &[&Array]) -> Result<Explain> {
    let lowered = lower(arrays);
    let (plan, _) = plans().get_or_compile(&lowered.graph, options())?;
    let stage = |s: &str| plan.stage_text(s).expect("a pipeline stage");
    Ok(Explain {
        graph: kiln_ir::text::print(&lowered.graph),
        simplified: stage("simplified"),
        regions: stage("regions"),
        schedule: stage("schedule"),
        report: plan.report(),
    })
}

/// [`try_explain`], panicking on error.
#[track_caller]
pub fn explain(arrays: &[&Array]) -> Explain {
    crate::unwrap(try_explain(arrays))
}

impl Array {
    /// Computes the array now and keeps the result, so later uses read it instead of
    /// recomputing. Errors as [`try_eval_all`].
    pub fn try_eval(&self) -> Result<&Array> {
        try_eval_all(&[self])?;
        Ok(self)
    }

    /// Computes the array now and keeps the result. Panics where [`Array::try_eval`] errs.
    #[track_caller]
    pub fn eval(&self) -> &Array {
        crate::unwrap(self.try_eval())
    }

    /// The computed value in host memory.
    pub fn try_to_host(&self) -> Result<Arc<HostArray>> {
        self.try_eval()?;
        Ok(self.value().expect("evaluated").clone())
    }

    /// The elements in C order as a `Vec<T>`; `T` must be the array's element type
    /// (`x.get().ravel().tolist()` in CuPy). Errors: another `T`, or an evaluation failure.
    pub fn try_to_vec<T: HostElement>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::ElementType { op: "to_vec".into(), dtype: self.dtype(), wanted: T::DTYPE });
        }
        Ok(self.try_to_host()?.as_slice::<T>()?.to_vec())
    }

    /// The elements in C order. Panics where [`Array::try_to_vec`] errs.
    #[track_caller]
    pub fn to_vec<T: HostElement>(&self) -> Vec<T> {
        crate::unwrap(self.try_to_vec())
    }

    /// The value as an `ndarray::ArrayD<T>` (`cupy.asnumpy`).
    pub fn try_to_ndarray<T: HostElement>(&self) -> Result<ndarray::ArrayD<T>> {
        let v = self.try_to_vec::<T>()?;
        Ok(ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(self.shape()), v).expect("sizes agree"))
    }

    /// The value as an `ndarray::ArrayD<T>`. Panics where [`Array::try_to_ndarray`] errs.
    #[track_caller]
    pub fn to_ndarray<T: HostElement>(&self) -> ndarray::ArrayD<T> {
        crate::unwrap(self.try_to_ndarray())
    }

    /// The single element of a size-1 array (`ndarray.item()`). Errors: a size other than 1,
    /// another `T`.
    pub fn try_item<T: HostElement>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(crate::error::value_err("item", format!("can only convert an array of size 1, size is {}", self.size())));
        }
        Ok(self.try_to_vec::<T>()?[0])
    }

    /// The single element of a size-1 array. Panics where [`Array::try_item`] errs.
    #[track_caller]
    pub fn item<T: HostElement>(&self) -> T {
        crate::unwrap(self.try_item())
    }
}
