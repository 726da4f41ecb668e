//! The one schedule walk: every executor runs a [`Schedule`] through [`walk`], with its own
//! buffers ([`Walker::Buf`]: host arrays, device arrays) and its own way of running a step.

use kiln_compiler::schedule::{BufferId, BufferSource, Schedule, Step};

use crate::ExecError;

/// An executor's side of [`walk`].
pub trait Walker {
    /// A buffer's value (cheap to clone where it is shared: borrowed or reference-counted).
    type Buf: Clone;

    /// Runs step `s` (`step.region`'s region) on the buffers it reads (`reads[k]` for the
    /// body's `input {index=k}`), and returns its outputs, one per `step.writes`.
    fn step(
        &mut self,
        s: usize,
        step: &Step,
        reads: &[&Self::Buf],
    ) -> Result<Vec<Self::Buf>, ExecError>;

    /// The schedule drops `value`, the content of buffer `b`: after its last reader, or when a
    /// write in place replaces it. By default it is dropped at once.
    fn release(&mut self, _b: BufferId, _value: Self::Buf) {}

    /// Buffer `b` was written by the step just run.
    fn wrote(&mut self, _b: BufferId) {}

    /// A step failed: called before the walk drops the buffers it holds (a device executor
    /// lets the work queued on them finish here).
    fn failed(&mut self) {}

    /// After the last step, before the outputs are taken: the values still held that steps
    /// wrote (the outputs among them).
    fn end(&mut self, _written: Vec<&mut Self::Buf>) -> Result<(), ExecError> {
        Ok(())
    }
}

/// Runs `sched`'s steps in order: graph inputs (`inputs[k]` for `input {index=k}`) are never
/// freed or overwritten; each intermediate is released after its last reader; a write in place
/// replaces the dying input it is written over. Returns the graph outputs in order (an output
/// named twice is cloned).
///
/// Errors: an input not given, a buffer read before it is written, an output never written
/// ([`ExecError::Schedule`]); what the walker's steps return.
pub fn walk<W: Walker>(
    sched: &Schedule,
    inputs: &[W::Buf],
    w: &mut W,
) -> Result<Vec<W::Buf>, ExecError> {
    let mut bufs: Vec<Option<W::Buf>> = vec![None; sched.buffers.len()];
    for (i, b) in sched.buffers.iter().enumerate() {
        if let BufferSource::Input(index) = b.source {
            let a = inputs.get(index as usize).ok_or_else(|| {
                ExecError::Schedule(format!(
                    "buffer b{i}: no input {index} given ({} inputs)",
                    inputs.len()
                ))
            })?;
            bufs[i] = Some(a.clone());
        }
    }
    if let Err(e) = run_steps(sched, &mut bufs, w) {
        w.failed();
        return Err(e);
    }
    let written: Vec<&mut W::Buf> = sched
        .buffers
        .iter()
        .zip(bufs.iter_mut())
        .filter(|(b, _)| matches!(b.source, BufferSource::Step(_)))
        .filter_map(|(_, a)| a.as_mut())
        .collect();
    w.end(written)?;
    let mut results = Vec::with_capacity(sched.outputs.len());
    for (i, b) in sched.outputs.iter().enumerate() {
        let slot = &mut bufs[b.0 as usize];
        let again = sched.outputs[i + 1..].contains(b);
        let a = if again { slot.clone() } else { slot.take() };
        results.push(a.ok_or_else(|| ExecError::Schedule(format!("output {b} is never written")))?);
    }
    Ok(results)
}

/// The steps of [`walk`], over its buffers.
fn run_steps<W: Walker>(
    sched: &Schedule,
    bufs: &mut [Option<W::Buf>],
    w: &mut W,
) -> Result<(), ExecError> {
    for (s, step) in sched.steps.iter().enumerate() {
        let reads: Vec<&W::Buf> = step
            .reads
            .iter()
            .map(|b| {
                bufs[b.0 as usize]
                    .as_ref()
                    .ok_or_else(|| ExecError::Schedule(format!("{b} read before it is written")))
            })
            .collect::<Result<_, _>>()?;
        let outs = w.step(s, step, &reads)?;
        drop(reads);
        if outs.len() != step.writes.len() {
            return Err(ExecError::Schedule(format!(
                "step {s} made {} outputs, it writes {}",
                outs.len(),
                step.writes.len()
            )));
        }
        for (b, v) in step.writes.iter().zip(outs) {
            if let Some(old) = bufs[b.0 as usize].replace(v) {
                w.release(*b, old);
            }
            w.wrote(*b);
        }
        for b in &step.frees {
            if let Some(old) = bufs[b.0 as usize].take() {
                w.release(*b, old);
            }
        }
    }
    Ok(())
}
