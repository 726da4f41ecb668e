//! A plan's new kernels compiled at once (`KILN_GPU_COMPILE_AHEAD`, default on): before the
//! first step of a plan runs on a device for the first time, each step whose region makes a
//! kernel, is not ready yet and would compile before it launches (no interpreter runs it
//! meanwhile) is prepared on the compile workers ([`interp::on_worker`]). A plan of ten new
//! kernels then waits for about its slowest compile, not their sum.
//!
//! Their code goes through `ptxas` where it is found ([`prepare::cubin_source`]): `ptxas`
//! processes run side by side, where the driver's JIT compiles one module at a time in a
//! process. A step whose preparation no worker has started when the walk reaches it prepares
//! its region itself, as without this module.

use std::panic::AssertUnwindSafe;
use std::sync::Condvar;

use kiln_cache::config::GpuInterp;
use kiln_compiler::bytecode::Bytecode;
use kiln_compiler::fusion::RegionKind;

use super::prepare::{may_interpret, prepare, ready_cache, ready_key, Ready};
use super::*;

/// The steps of one run prepared ahead, by step index (`None`: the step prepares itself):
/// [`Ahead::start`], then [`super::run_schedule`] of the same plan.
pub struct Ahead {
    slots: Vec<Option<Arc<Slot<Prepared>>>>,
    /// The plan whose steps these are (its address; 0 for none).
    plan: usize,
}

/// A step's preparation: its result, or the panic that ended it on a worker (raised again on
/// the walk's thread, as where the walk prepares it itself).
type Prepared = std::thread::Result<Result<Ready>>;

thread_local! {
    /// Steps this thread's runs queued to prepare ahead.
    static QUEUED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many steps this thread's runs queued to prepare ahead on the compile workers (each
/// prepared there, or by the walk where it reached the step first).
pub fn queued_ahead() -> usize {
    QUEUED.with(|q| q.get())
}

/// One step's preparation, its result a `T`.
struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
}

enum State<T> {
    /// Waiting for a worker.
    Queued,
    /// A worker prepares it.
    Running,
    /// Prepared; the walk takes it.
    Done(T),
    /// Taken by the walk, or prepared by it.
    Taken,
}

impl Ahead {
    /// No step prepared ahead.
    pub(super) fn none() -> Ahead {
        Ahead { slots: Vec::new(), plan: 0 }
    }

    /// Whether these are `plan`'s steps (or none at all).
    pub(super) fn is_for(&self, plan: &Arc<Compiled>) -> bool {
        self.slots.is_empty() || self.plan == Arc::as_ptr(plan) as usize
    }

    /// Starts preparing `plan`'s new kernel steps on the workers, where the plan is in the plan
    /// cache (`cached`: its steps are then kept ready, [`ready_cache`]), at least two steps are
    /// new, more than one worker compiles and `KILN_GPU_COMPILE_AHEAD` is on.
    ///
    /// Where the device has no context yet (a process's first call), one new step is enough,
    /// and steps the interpreter would run are compiled too (unless `KILN_GPU_INTERP=always`):
    /// the context's creation (~125 ms on an H200, on the interpreter's warm-up thread or on
    /// the caller's as it copies the inputs) then runs beside the compiles (an elementwise
    /// kernel's ~40-60 ms), not before them.
    pub fn start(gpu: &'static Gpu, plan: &Arc<Compiled>, cached: bool) -> Ahead {
        // A plan outside the plan cache is made again for each run: its steps are not kept
        // ready, so nothing tells a first run from a later one.
        if !cached || !kiln_cache::config().gpu_compile_ahead || interp::compile_workers() < 2 {
            return Ahead::none();
        }
        let steps = &plan.schedule.steps;
        let first = !gpu.device.has_context();
        // Two new steps at least, or one beside the context's creation.
        let least = if first { 1 } else { 2 };
        if steps.len() < least {
            return Ahead::none();
        }
        let ready: Vec<bool> = {
            let cache = ready_cache().lock().unwrap_or_else(|e| e.into_inner());
            // A plan whose first step is ready ran on this device before (steps are prepared
            // in order): one lookup on the path of every call.
            if cache.contains_key(&ready_key(plan, 0, gpu)) {
                return Ahead::none();
            }
            (0..steps.len()).map(|si| cache.contains_key(&ready_key(plan, si, gpu))).collect()
        };
        let ahead: Vec<bool> =
            (0..steps.len()).map(|si| !ready[si] && compiles_first(plan, si, first)).collect();
        if ahead.iter().filter(|a| **a).count() < least {
            return Ahead::none();
        }
        let slots = ahead
            .iter()
            .enumerate()
            .map(|(si, &ahead)| {
                ahead.then(|| {
                    let slot = Arc::new(Slot::new());
                    let (job_slot, plan) = (slot.clone(), plan.clone());
                    let job = Box::new(move || {
                        if job_slot.claim() {
                            let region = &plan.partition.regions[plan.schedule.steps[si].region];
                            let prepared = std::panic::catch_unwind(AssertUnwindSafe(|| {
                                prepare(gpu, region, false)
                            }));
                            job_slot.finish(prepared);
                        }
                    });
                    // Where the workers are full the slot stays queued: the walk prepares it.
                    if interp::on_worker(gpu, job) {
                        QUEUED.with(|q| q.set(q.get() + 1));
                    }
                    slot
                })
            })
            .collect();
        Ahead { slots, plan: Arc::as_ptr(plan) as usize }
    }

    /// Step `si`'s region prepared ahead: waited for where a worker prepares it, prepared here
    /// (as the walk would) where none has started; `None` where it was not prepared ahead.
    pub(super) fn take(
        &self,
        gpu: &'static Gpu,
        si: usize,
        region: &Region,
    ) -> Option<Result<Ready>> {
        let slot = self.slots.get(si)?.as_ref()?;
        if slot.claim() {
            let ready = prepare(gpu, region, false);
            *slot.lock() = State::Taken;
            return Some(ready);
        }
        match slot.take()? {
            Ok(ready) => Some(ready),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Ahead {
    /// Preparations no worker started are dropped with the run (an error ended its walk).
    fn drop(&mut self) {
        for slot in self.slots.iter().flatten() {
            let mut state = slot.lock();
            if matches!(*state, State::Queued) {
                *state = State::Taken;
            }
        }
    }
}

impl<T> Slot<T> {
    fn new() -> Slot<T> {
        Slot { state: Mutex::new(State::Queued), done: Condvar::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the preparation on where no one has: whether it is the caller's.
    fn claim(&self) -> bool {
        let mut state = self.lock();
        let queued = matches!(*state, State::Queued);
        if queued {
            *state = State::Running;
        }
        queued
    }

    fn finish(&self, value: T) {
        *self.lock() = State::Done(value);
        self.done.notify_all();
    }

    /// The result of a preparation claimed by another thread, once it finishes (`None`: taken
    /// before, or dropped unstarted).
    fn take(&self) -> Option<T> {
        let mut state = self.lock();
        loop {
            match std::mem::replace(&mut *state, State::Taken) {
                State::Done(value) => return Some(value),
                State::Taken => return None,
                running @ (State::Running | State::Queued) => {
                    *state = running;
                    state = self.done.wait(state).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }
}

/// Whether step `si` of `plan`, not ready yet, would compile its kernel before it launches:
/// its region makes a kernel, and the interpreter would not run it while it compiles (`first`:
/// the device's first call, where the interpreter's own module would wait for the context
/// too: compiled unless `KILN_GPU_INTERP=always`).
fn compiles_first(plan: &Compiled, si: usize, first: bool) -> bool {
    let region = &plan.partition.regions[plan.schedule.steps[si].region];
    let kernel = match region.kind {
        RegionKind::Elementwise
        | RegionKind::Reduction
        | RegionKind::Scatter
        | RegionKind::Scan => true,
        RegionKind::Sort | RegionKind::Vendor | RegionKind::Custom => false,
    };
    let interpreted = || {
        interp::interpreting() != GpuInterp::Off
            && may_interpret(plan, si)
            && Bytecode::of(region).is_ok()
    };
    kernel && ((first && interp::interpreting() != GpuInterp::Always) || !interpreted())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_prepared_once_and_taken_once() {
        let slot = Slot::<u32>::new();
        assert!(slot.claim(), "the first claim takes it");
        assert!(!slot.claim(), "a second finds it running");
        slot.finish(7);
        assert!(!slot.claim(), "nor once done");
        assert_eq!(slot.take(), Some(7));
        assert_eq!(slot.take(), None, "taken once");
    }

    #[test]
    fn taking_waits_for_the_worker() {
        let slot = Arc::new(Slot::<u32>::new());
        assert!(slot.claim());
        let worker = slot.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            worker.finish(9);
        });
        assert_eq!(slot.take(), Some(9));
        t.join().unwrap();
    }
}
