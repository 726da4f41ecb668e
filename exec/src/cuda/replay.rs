//! Plans replayed as CUDA graphs (`KILN_GPU_GRAPHS`, [`kiln_runtime::replay`]).
//!
//! A single-stream schedule's steps that only launch kernels and clear memory (compiled
//! region kernels, with their scratch and counters; the radix sort's histogram, scan and
//! passes) are recorded as one launch list, issued when a step of another kind comes (a
//! library call, an FFT with callbacks, a row sort, a selection, a host step: these run as
//! before, after the list; the look-ahead scan's cooperative launch is recorded as a
//! cooperative kernel node) and at the end of the walk. A list of the same shape seen twice
//! before on the thread is replayed as a CUDA graph, its nodes' arguments updated where the
//! buffers or scalars differ. A schedule on several streams is not recorded. Which steps broke
//! a list, and when a graph was built, is logged (target `kiln::plan`, debug).

use kiln_runtime::replay::{Issued, Recording};

use super::*;

/// Why a step is not recorded, `None` if it is.
pub(super) fn not_recorded(
    ready: &prepare::Ready,
    region: &Region,
    fft_pending: bool,
) -> Option<&'static str> {
    if fft_pending {
        return Some("an FFT's callback step");
    }
    match (ready.kernel(), &ready.vendor) {
        (None, _) if ready.pending.is_some() => Some("an interpreted kernel"),
        (Some(_), _) if ready.fft_site.is_some() => Some("a kernel beside an FFT"),
        (Some(_), _) => None,
        (None, Some(_)) => Some("a library call"),
        (None, None) if kiln_runtime::nvrtc::nvrtc_available() && radix_sort(region).is_ok() => {
            None
        }
        (None, None) => Some("a sort, selection or host step"),
    }
}

/// The recording of a walk: the list in progress, and the steps that broke lists.
pub(super) struct Replaying {
    enabled: bool,
    device: Device,
    recording: Option<Recording>,
    /// Steps not recorded (step, why).
    breaks: Vec<(usize, &'static str)>,
    /// Lists issued as graphs in this walk.
    built: usize,
}

impl Replaying {
    /// Recording for `sched` on `device`, if the mode allows it and it uses one stream.
    pub(super) fn new(device: Device, sched: &Schedule) -> Replaying {
        let single = sched.streams.is_single_stream();
        Replaying {
            enabled: single && kiln_runtime::replay::enabled(),
            device,
            recording: None,
            breaks: Vec::new(),
            built: 0,
        }
    }

    /// Before step `si`: starts a list for a step recorded, issues the list before another.
    pub(super) fn before(&mut self, si: usize, why_not: Option<&'static str>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        match why_not {
            None if self.recording.is_none() => {
                self.recording = Recording::begin(&Stream::current_on(self.device)?);
                Ok(())
            }
            None => Ok(()),
            Some(why) => {
                self.breaks.push((si, why));
                self.issue()
            }
        }
    }

    /// Issues the list in progress.
    pub(super) fn issue(&mut self) -> Result<()> {
        if let Some(r) = self.recording.take() {
            if let Issued::Built { .. } = r.finish()? {
                self.built += 1;
            }
        }
        Ok(())
    }

    /// After the last step: issues the list, and logs what was recorded.
    pub(super) fn end(&mut self) -> Result<()> {
        self.issue()?;
        if self.built > 0 {
            tracing::debug!(
                target: "kiln::plan",
                graphs = self.built,
                not_in_graphs = ?self.breaks,
                "launch lists replayed as CUDA graphs from now on"
            );
        }
        Ok(())
    }
}
