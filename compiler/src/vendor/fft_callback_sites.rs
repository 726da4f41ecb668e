//! Where in a plan an elementwise kernel may run inside an FFT as a cuFFT callback
//! ([`super::fft_callback`]): found from the schedule, without a device, so that the executor
//! (which decides by measurement, `kiln_exec`'s FFT fusion) and the fusion report
//! ([`crate::fusion::FftCallbackSite`]) see the same sites.
//!
//! - **Load:** step `s` is a kernel whose one output only step `s + 1` reads, an FFT that reads
//!   nothing else, its operand C-contiguous from offset 0 in its first step's one cuFFT call
//!   with no copy before (so cuFFT's load offsets are the operand's flat indices); a one-axis
//!   C2R transform's copy is skipped by the executor when the producer is fused.
//! - **Store:** step `s` is such an FFT whose one output is read only by step `s + 1`, an
//!   elementwise kernel with one output of the FFT's output shape, reading the FFT's output
//!   once and at the same positions (no view); the FFT's last step writes its output in one
//!   call from offset 0 (so the store offsets are the output's flat indices). The kernel may be
//!   written over the FFT's output buffer in place: the executor gives it a fresh one anyway.
//!
//! Both sides need the two steps on the same stream. Step `s` runs region `s`.

use crate::fusion::{FftCallbackSite, RegionKind};
use crate::pipeline::Compiled;
use crate::schedule::Schedule;

use super::fft_callback::{self, Callback, Side};
use super::fft_steps::{self, Buffer, Scratch};
use super::{FftCall, FftKind, VendorCall};

/// A site with its generated callback.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub side: Side,
    /// The kernel's step (its region).
    pub kernel: usize,
    /// The FFT's step (its region).
    pub fft: usize,
    /// The callback, or why the kernel cannot be one.
    pub callback: Result<Callback, String>,
    /// Bytes of the FFT's operand (load) or output (store).
    pub bytes: usize,
    /// What the executor keeps its decision under: side, FFT kind and layout, callback source.
    pub key: String,
    /// The FFT, in words (its kind, dtype and shape).
    pub description: String,
    /// A store site: the kernel's input that is the FFT's output.
    pub fft_output: Option<usize>,
}

/// The site whose FFT is step `fft_step` and whose kernel is on `side` of it, if the schedule
/// allows one (the callback may still be refused: [`Site::callback`]).
pub fn site(plan: &Compiled, fft_step: usize, side: Side) -> Option<Site> {
    let sched = &plan.schedule;
    let regions = &plan.partition.regions;
    let kernel = match side {
        Side::Load => fft_step.checked_sub(1)?,
        Side::Store => fft_step + 1,
    };
    let (kr, fr) = (regions.get(kernel)?, regions.get(fft_step)?);
    if kr.kind != RegionKind::Elementwise || fr.kind != RegionKind::Vendor {
        return None;
    }
    let Ok(VendorCall::Fft(f)) = super::plan(fr) else { return None };
    let streams = &sched.streams.streams;
    if streams.get(kernel) != streams.get(fft_step) {
        return None;
    }
    let (callback, bytes, fft_output) = match side {
        Side::Load => {
            load_edge(sched, kernel).filter(|_| reads_from_start(&f))?;
            let cb = fft_callback::load_callback(kr).and_then(|cb| {
                if cb.dtype == f.in_dtype {
                    Ok(cb)
                } else {
                    Err(format!("a value of {} for an FFT of {}", cb.dtype, f.in_dtype))
                }
            });
            (cb, f.input.layout.numel() * f.in_dtype.itemsize(), None)
        }
        Side::Store => {
            let k = store_edge(sched, fft_step)?;
            let steps = fft_steps::plan(&f);
            writes_from_start(&steps)?;
            let cb = fft_callback::store_callback(kr, k, f.out_dtype, steps.scale).and_then(|cb| {
                let out = kr.body.node(kr.body.outputs()[0]);
                if out.shape == f.out_shape {
                    Ok(cb)
                } else {
                    Err(format!("an output of shape {:?} beside {:?}", out.shape, f.out_shape))
                }
            });
            (cb, f.out_shape.iter().product::<usize>() * f.out_dtype.itemsize(), Some(k))
        }
    };
    let source = callback.as_ref().map_or("", |c| c.source.as_str());
    let key = format!("{}\n{:?}\n{:?}\n{source}", side.name(), f.kind, f.input.layout);
    let description = format!("{:?} of {} {:?}", f.kind, f.in_dtype, f.input.layout.shape);
    Some(Site { side, kernel, fft: fft_step, callback, bytes, key, description, fft_output })
}

/// Every site of a plan, by FFT step, load before store.
pub fn sites(plan: &Compiled) -> Vec<Site> {
    (0..plan.schedule.steps.len())
        .flat_map(|s| [site(plan, s, Side::Load), site(plan, s, Side::Store)])
        .flatten()
        .collect()
}

/// The sites in the report's form (no decision yet).
pub fn report(plan: &Compiled) -> Vec<FftCallbackSite> {
    sites(plan)
        .into_iter()
        .map(|s| FftCallbackSite {
            side: s.side,
            fft_region: s.fft,
            kernel_region: s.kernel,
            ops: plan.partition.regions[s.kernel].op_names(),
            candidate: s.callback.map(|_| ()),
            key: s.key,
            decision: None,
        })
        .collect()
}

/// Step `kernel` writes one buffer that only the next step (the FFT) reads, and frees.
fn load_edge(sched: &Schedule, kernel: usize) -> Option<()> {
    let (step, next) = (sched.steps.get(kernel)?, sched.steps.get(kernel + 1)?);
    let [b] = step.writes[..] else { return None };
    let only = !step.reads.contains(&b)
        && !sched.outputs.contains(&b)
        && next.reads == [b]
        && next.frees.contains(&b);
    only.then_some(())
}

/// Step `fft` writes one buffer that the next step reads once, as its input `k` (returned),
/// and that nothing reads after: it is freed there, or written over in place.
fn store_edge(sched: &Schedule, fft: usize) -> Option<usize> {
    let (step, next) = (sched.steps.get(fft)?, sched.steps.get(fft + 1)?);
    let [b] = step.writes[..] else { return None };
    let [_] = step.reads[..] else { return None };
    let [_] = next.writes[..] else { return None };
    let k = next.reads.iter().position(|&r| r == b)?;
    let once = next.reads.iter().filter(|&&r| r == b).count() == 1;
    let last = next.writes.contains(&b) || (next.frees.contains(&b) && !sched.outputs.contains(&b));
    (once && last && !step.reads.contains(&b)).then_some(k)
}

/// The FFT reads its operand, C-contiguous from offset 0, in its first step's one call, with no
/// gathered copy before: so cuFFT's load offsets are the operand's flat indices. A one-axis
/// complex-to-real transform reads a gathered copy (cuFFT overwrites its input): the executor
/// runs it on the operand itself when it is a fused producer's unwritten output.
fn reads_from_start(f: &FftCall) -> bool {
    let l = &f.input.layout;
    let steps = fft_steps::plan(f);
    let first =
        |from: Buffer| steps.steps.first().is_some_and(|s| s.from == from && s.calls == [(0, 0)]);
    l.offset == 0
        && l.is_c_contiguous()
        && match steps.scratch {
            None | Some(Scratch::Empty) => first(Buffer::Input),
            Some(Scratch::Gather) => {
                matches!(f.kind, FftKind::C2R { .. }) && first(Buffer::Scratch)
            }
        }
}

/// The FFT's last step writes the output in one call from its start: cuFFT's store offsets
/// are the output's flat indices.
fn writes_from_start(steps: &fft_steps::FftSteps) -> Option<()> {
    let last = steps.steps.last()?;
    (last.to == Buffer::Output && last.calls.len() == 1 && last.calls[0].1 == 0).then_some(())
}
