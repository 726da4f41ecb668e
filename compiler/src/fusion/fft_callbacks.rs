//! The fusion report's lines on cuFFT callbacks: for each FFT, the elementwise neighbour that
//! may run inside it as a load or store callback ([`crate::vendor::fft_callback_sites`]), and,
//! once the executor has measured it, the choice it made (`kiln::explain` fills
//! [`FftCallbackSite::decision`] from the executor's decisions; the compiler never runs
//! anything).

use std::fmt;

use crate::vendor::fft_callback::Side;

/// An FFT region and its elementwise neighbour that may be its callback.
#[derive(Clone, Debug, PartialEq)]
pub struct FftCallbackSite {
    pub side: Side,
    pub fft_region: usize,
    pub kernel_region: usize,
    /// The kernel's ops.
    pub ops: Vec<&'static str>,
    /// `Ok`: a callback can be generated; `Err`: why not.
    pub candidate: Result<(), String>,
    /// The executor's key of the decision (side, FFT layout, callback source).
    pub key: String,
    /// The executor's measured choice, where one was made in this process.
    pub decision: Option<FftCallbackChoice>,
}

/// A measured choice between the kernel with the FFT and the FFT with the callback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FftCallbackChoice {
    /// Milliseconds of the kernel and the FFT.
    pub kernel_then_fft_ms: f32,
    /// Milliseconds of the FFT with the callback (`None`: cuFFT could not make the plan).
    pub callback_ms: Option<f32>,
    /// Whether the callback was kept.
    pub fused: bool,
}

impl fmt::Display for FftCallbackSite {
    /// `fft callback: region 1 (fft) load from region 0 (multiply): candidate, not measured`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = match self.side {
            Side::Load => "from",
            Side::Store => "into",
        };
        write!(
            f,
            "fft callback: region {} {} {dir} region {} ({}): ",
            self.fft_region,
            self.side.name(),
            self.kernel_region,
            self.ops.join(" ")
        )?;
        match (&self.candidate, &self.decision) {
            (Err(why), _) => write!(f, "not a callback ({why})"),
            (Ok(()), None) => write!(f, "candidate, not measured"),
            (Ok(()), Some(d)) => {
                write!(f, "measured kernel+fft {:.3} ms, ", d.kernel_then_fft_ms)?;
                match d.callback_ms {
                    Some(ms) => write!(f, "callback {ms:.3} ms")?,
                    None => write!(f, "callback plan failed")?,
                }
                write!(f, ": {}", if d.fused { "callback kept" } else { "kernel kept" })
            }
        }
    }
}
