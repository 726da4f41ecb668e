//! The host executor: a schedule's regions run on this CPU.
//!
//! [`run_schedule`] walks a schedule ([`crate::walk`]) with one of three ways of running a
//! region ([`HostRun`]): compiled host code (the default), library calls with everything else
//! in the reference evaluator (`KILN_CODEGEN=eval`), or the evaluator alone (the oracle every
//! path is tested against).

pub mod kernel;
pub mod vendor;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use kiln_compiler::codegen::CompiledRegion;
use kiln_compiler::fusion::{Region, RegionKind};
use kiln_compiler::pipeline::Compiled;
use kiln_compiler::schedule::{Schedule, Step};
use kiln_compiler::CompileError;
use kiln_ir::HostArray;

pub use kernel::{run_compiled, run_region};

use crate::walk::{walk, Walker};
use crate::{ExecError, RanCode};

/// How [`run_schedule`] runs each region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostRun {
    /// Library regions through the host libraries ([`vendor`]), sorts by the host sort, the
    /// rest as compiled host code, or by the reference evaluator where code generation does not
    /// support a region yet (logged at debug level with the reason). kiln's default CPU path.
    Compiled,
    /// Library regions and sorts as in `Compiled`, every other region in the reference
    /// evaluator (`KILN_CODEGEN=eval`).
    Libraries,
    /// Every region's body in the reference evaluator, library ops included: the oracle.
    Evaluator,
}

/// Runs `region` on host arrays the [`HostRun::Compiled`] way: a vendor region through the
/// host libraries, a sort by the host sort, others compiled (cached), or, when code generation
/// does not support them yet, by the reference evaluator.
///
/// Errors: inputs of the wrong dtypes or shapes, a compilation failure, a library failure, an
/// evaluation error of a region the evaluator runs.
pub fn run_region_or_evaluate(
    region: &Region,
    inputs: &[&HostArray],
) -> Result<Vec<HostArray>, ExecError> {
    Ok(run_one(HostRun::Compiled, 0, region, inputs, None)?.0)
}

/// Runs a region as `how` says; returns its outputs and how it ran. `slot` keeps the region's
/// compiled code for the next run of the same plan.
pub(crate) fn run_one(
    how: HostRun,
    index: usize,
    region: &Region,
    inputs: &[&HostArray],
    slot: Option<&OnceLock<Arc<CompiledRegion>>>,
) -> Result<(Vec<HostArray>, RanCode), ExecError> {
    let evaluate = || Ok((kiln_ir::eval::evaluate(&region.body, inputs)?, RanCode::Evaluator));
    if how == HostRun::Evaluator {
        return evaluate();
    }
    match region.kind {
        RegionKind::Vendor => Ok((vendor::run_region(region, inputs)?, RanCode::Library)),
        RegionKind::Sort => Ok((vendor::sort::run_region(region, inputs)?, RanCode::HostSort)),
        _ if how == HostRun::Libraries => evaluate(),
        _ => match kernel::run_region_code(region, inputs, slot) {
            Ok((outs, code)) => Ok((outs, RanCode::Host(code))),
            Err(ExecError::Compile(CompileError::Unsupported { op, reason, .. })) => {
                tracing::debug!(region = index, op = %op, reason = %reason, "code generation unsupported; evaluating the region");
                evaluate()
            }
            Err(e) => Err(e),
        },
    }
}

/// Runs a schedule on the host, each region as `how` says; `inputs[k]` is the graph's
/// `input {index=k}`. Returns the graph's outputs.
///
/// Errors: a missing input, a compilation failure, a library failure, an evaluation error of a
/// region the evaluator runs.
pub fn run_schedule(
    sched: &Schedule,
    regions: &[Region],
    inputs: &[&HostArray],
    how: HostRun,
) -> Result<Vec<HostArray>, ExecError> {
    run_schedule_with(sched, regions, inputs, how, None)
}

fn run_schedule_with(
    sched: &Schedule,
    regions: &[Region],
    inputs: &[&HostArray],
    how: HostRun,
    prepared: Option<&Prepared>,
) -> Result<Vec<HostArray>, ExecError> {
    let mut ran = Vec::with_capacity(sched.steps.len());
    let outs = run_steps(sched, regions, inputs, |s, region, refs| {
        let r = sched.steps[s].region;
        let slot = prepared.map(|p| &p.regions[r]);
        let (outs, code) = run_one(how, r, region, refs, slot)?;
        ran.push((sched.steps[s].region, code));
        Ok(outs)
    });
    crate::record_run(ran);
    outs
}

/// Runs a plan's schedule on the host, each region as `how` says (see [`run_schedule`]).
pub fn run_plan(
    plan: &Compiled,
    inputs: &[&HostArray],
    how: HostRun,
) -> Result<Vec<HostArray>, ExecError> {
    run_schedule(&plan.schedule, &plan.partition.regions, inputs, how)
}

/// The compiled code of a plan's regions, filled as they first run.
struct Prepared {
    regions: Vec<OnceLock<Arc<CompiledRegion>>>,
}

/// Most plans whose code [`run_plan_prepared`] keeps; past this the oldest are forgotten all
/// at once (their kernels stay in the code caches, only the lookup by region text returns).
const PREPARED_PLANS: usize = 1024;

/// Prepared plans by address; an entry holds its plan, so the address is not reused while the
/// entry lives.
#[allow(clippy::type_complexity)]
fn prepared_plans() -> &'static Mutex<HashMap<usize, (Arc<Compiled>, Arc<Prepared>)>> {
    static CACHE: OnceLock<Mutex<HashMap<usize, (Arc<Compiled>, Arc<Prepared>)>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// [`run_plan`] for a plan that will run again (one the plan cache keeps): each region's
/// compiled code is kept with the plan, so a later run neither prints nor looks up its regions
/// (the in-memory code cache's key is a region's text: 20–30 µs for a small plan).
pub fn run_plan_prepared(
    plan: &Arc<Compiled>,
    inputs: &[&HostArray],
    how: HostRun,
) -> Result<Vec<HostArray>, ExecError> {
    let prepared = {
        let mut cache = prepared_plans().lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= PREPARED_PLANS {
            cache.clear();
        }
        let entry = cache.entry(Arc::as_ptr(plan) as usize).or_insert_with(|| {
            let regions = plan.partition.regions.iter().map(|_| OnceLock::new()).collect();
            (plan.clone(), Arc::new(Prepared { regions }))
        });
        entry.1.clone()
    };
    run_schedule_with(&plan.schedule, &plan.partition.regions, inputs, how, Some(&prepared))
}

/// Runs a schedule's steps in order with `run(step, region, inputs)` computing each region:
/// graph inputs borrowed, intermediates freed after their last reader (for tests that run
/// regions their own way).
pub fn run_steps(
    sched: &Schedule,
    regions: &[Region],
    inputs: &[&HostArray],
    run: impl FnMut(usize, &Region, &[&HostArray]) -> Result<Vec<HostArray>, ExecError>,
) -> Result<Vec<HostArray>, ExecError> {
    let inputs: Vec<Cow<'_, HostArray>> = inputs.iter().map(|a| Cow::Borrowed(*a)).collect();
    let mut steps = Steps { regions, run };
    Ok(walk(sched, &inputs, &mut steps)?.into_iter().map(Cow::into_owned).collect())
}

struct Steps<'a, F> {
    regions: &'a [Region],
    run: F,
}

impl<'a, F> Walker for Steps<'a, F>
where
    F: FnMut(usize, &Region, &[&HostArray]) -> Result<Vec<HostArray>, ExecError>,
{
    type Buf = Cow<'a, HostArray>;

    fn step(
        &mut self,
        s: usize,
        step: &Step,
        reads: &[&Self::Buf],
    ) -> Result<Vec<Self::Buf>, ExecError> {
        let refs: Vec<&HostArray> = reads.iter().map(|a| a.as_ref()).collect();
        let outs = (self.run)(s, &self.regions[step.region], &refs)?;
        Ok(outs.into_iter().map(Cow::Owned).collect())
    }
}
