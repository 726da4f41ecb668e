//! An [`FftCall`] as cuFFT runs it: a list of *steps*, each a batched one-dimensional transform
//! in cuFFT's advanced layout (`batch` transforms of length `n`, element `x` of transform `b`
//! at `b * idist + x * istride`, in elements of the step's input and output types), queued once
//! per entry of its `calls` (the element offsets of the first transform's input and output).
//!
//! The plan is made here, without a GPU, so that the GPU executor only maps it to cuFFT calls
//! and a host simulation (this module's tests) checks every layout against the host executor.
//!
//! - **The operand is read in place.** The first step reads the region input through its
//!   strides (a transposed, sliced or offset view, a broadcast or reversed axis looped over as
//!   separate calls) and writes the fresh C-contiguous output; so a contiguous operand's 1-D
//!   transform is one out-of-place call reading the input buffer and writing the output, and
//!   nothing else. Only where the view needs many more calls than its gathered copy would (a
//!   transform axis with a negative or zero stride, batch axes that do not merge) is the
//!   operand first gathered into a C-contiguous scratch buffer ([`Scratch::Gather`]).
//! - **C2C over several axes:** the first step (the axis whose strided read needs the fewest
//!   calls) goes from the input to the output, the others run in place on the output.
//! - **R2C:** the halved (last) axis first, input to output, then the other axes in place.
//! - **C2R:** cuFFT's complex-to-real transform overwrites its input, so it never reads the
//!   operand: over one axis the operand is gathered into scratch first; over several, the
//!   first complex step writes the scratch from the operand ([`Scratch::Empty`]), the other
//!   complex steps run in place there, and the halved axis goes from the scratch to the output.
//! - **The norm's factor** ([`FftSteps::scale`]) is 1 for `"backward"` forward transforms and
//!   `"forward"` inverse ones (nothing to do); otherwise the executor scales the output once
//!   after the steps.

use kiln_ir::shape::{c_strides, numel};
use kiln_ir::Layout;

use super::{FftCall, FftKind};

/// Which transform a step computes (the precision is the call's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepKind {
    C2C {
        inverse: bool,
    },
    /// Real to complex: `n` reals give n/2+1 terms.
    R2C,
    /// Complex to real: n/2+1 terms give `n` reals (overwrites its input).
    C2R,
}

/// `batch` transforms of length `n` in cuFFT's advanced layout (strides in elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Batched {
    pub kind: StepKind,
    pub n: usize,
    pub batch: usize,
    pub istride: usize,
    pub idist: usize,
    pub ostride: usize,
    pub odist: usize,
}

impl Batched {
    /// Elements of input and output along one transform.
    pub fn extents(&self) -> (usize, usize) {
        match self.kind {
            StepKind::C2C { .. } => (self.n, self.n),
            StepKind::R2C => (self.n, self.n / 2 + 1),
            StepKind::C2R => (self.n / 2 + 1, self.n),
        }
    }

    /// Whether the layout is cuFFT's basic one: unit strides, transforms one after another
    /// (a plan made with null embeds, as CuPy and torch make them for contiguous data).
    pub fn is_packed(&self) -> bool {
        let (ni, no) = self.extents();
        self.istride == 1 && self.ostride == 1 && self.idist == ni && self.odist == no
    }
}

/// A buffer a step reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    /// The region input (never written).
    Input,
    /// A C-contiguous scratch array of the operand's dtype and shape.
    Scratch,
    /// The fresh C-contiguous output.
    Output,
}

/// What the scratch buffer holds before the first step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scratch {
    /// The operand gathered in C order (one copy pass).
    Gather,
    /// Nothing: the first step writes it.
    Empty,
}

/// One batched transform, queued once per call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub batched: Batched,
    pub from: Buffer,
    pub to: Buffer,
    /// Element offsets (input, output) of each call's first transform.
    pub calls: Vec<(usize, usize)>,
}

/// The steps of a call, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct FftSteps {
    pub scratch: Option<Scratch>,
    pub steps: Vec<Step>,
    /// The factor the output is multiplied by after the steps (1: none).
    pub scale: f64,
}

impl FftSteps {
    /// Library launches and passes over memory: calls of every step, plus the gather and the
    /// scale when there are.
    pub fn passes(&self) -> usize {
        self.steps.iter().map(|s| s.calls.len()).sum::<usize>()
            + usize::from(self.scratch == Some(Scratch::Gather))
            + usize::from(self.scale != 1.0)
    }
}

/// A strided read needing up to this many calls more than the gathered copy's is preferred to
/// the gather (a gather is one more pass over the operand; a call is a launch).
const EXTRA_CALLS: usize = 8;

/// The steps of `call` (any in-bounds operand layout; empty arrays give no steps).
pub fn plan(call: &FftCall) -> FftSteps {
    let din: Vec<usize> = call.input.layout.shape.to_vec();
    let dout: Vec<usize> = call.out_shape.to_vec();
    let (&last, others) = call.axes.split_last().expect("an FFT has axes");
    let inverse = matches!(call.kind, FftKind::C2C { inverse: true } | FftKind::C2R { .. });
    let lengths: usize = match call.kind {
        FftKind::C2R { .. } => call.axes.iter().map(|&a| dout[a]).product(),
        _ => call.axes.iter().map(|&a| din[a]).product(),
    };
    let scale = call.norm.scale(inverse, lengths);
    if numel(&din) == 0 || numel(&dout) == 0 {
        return FftSteps { scratch: None, steps: Vec::new(), scale };
    }
    let input = &call.input.layout;
    let packed_in = Layout::contiguous(&din);
    // In place over a C-contiguous array of `shape`.
    let in_place = |kind, axis: usize, shape: &[usize], buf| {
        let l = Layout::contiguous(shape);
        let mut s =
            step(kind, axis, shape[axis], &l, shape).expect("a C-contiguous layout is expressible");
        (s.from, s.to) = (buf, buf);
        s
    };
    let (scratch, steps) = match call.kind {
        FftKind::C2C { inverse } => {
            let kind = StepKind::C2C { inverse };
            // The first axis: the one whose read of the operand needs the fewest calls.
            let fewest = |l: &Layout| {
                call.axes
                    .iter()
                    .filter_map(|&a| step(kind, a, din[a], l, &dout).map(|s| (a, s)))
                    .min_by_key(|(_, s)| s.calls.len())
            };
            let (ga, gathered) = fewest(&packed_in).expect("a C-contiguous layout is expressible");
            let (scratch, first_axis, first) = match fewest(input) {
                Some((a, s)) if s.calls.len() <= gathered.calls.len() + EXTRA_CALLS => (None, a, s),
                _ => (Some(Scratch::Gather), ga, Step { from: Buffer::Scratch, ..gathered }),
            };
            let mut steps = vec![first];
            steps.extend(
                call.axes
                    .iter()
                    .filter(|&&a| a != first_axis)
                    .map(|&a| in_place(kind, a, &dout, Buffer::Output)),
            );
            (scratch, steps)
        }
        FftKind::R2C { n } => {
            let direct = step(StepKind::R2C, last, n, input, &dout);
            let gathered = step(StepKind::R2C, last, n, &packed_in, &dout).expect("C-contiguous");
            let (scratch, first) = match direct {
                Some(s) if s.calls.len() <= gathered.calls.len() + EXTRA_CALLS => (None, s),
                _ => (Some(Scratch::Gather), Step { from: Buffer::Scratch, ..gathered }),
            };
            let mut steps = vec![first];
            steps.extend(
                others
                    .iter()
                    .map(|&a| in_place(StepKind::C2C { inverse: false }, a, &dout, Buffer::Output)),
            );
            (scratch, steps)
        }
        FftKind::C2R { n } => {
            let kind = StepKind::C2C { inverse: true };
            let mut steps = Vec::new();
            let mut scratch = Some(Scratch::Gather);
            if let Some((&first_axis, rest)) = others.split_first() {
                let direct = step(kind, first_axis, din[first_axis], input, &din);
                let gathered = in_place(kind, first_axis, &din, Buffer::Scratch);
                match direct {
                    Some(s) if s.calls.len() <= gathered.calls.len() + EXTRA_CALLS => {
                        scratch = Some(Scratch::Empty);
                        steps.push(Step { to: Buffer::Scratch, ..s });
                    }
                    _ => steps.push(gathered),
                }
                steps.extend(rest.iter().map(|&a| in_place(kind, a, &din, Buffer::Scratch)));
            }
            let mut s = step(StepKind::C2R, last, n, &packed_in, &dout).expect("C-contiguous");
            s.from = Buffer::Scratch;
            steps.push(s);
            (scratch, steps)
        }
    };
    FftSteps { scratch, steps, scale }
}

/// One extent-stride pair per batch axis: (extent, input stride, output stride).
type Dim = (usize, isize, isize);

/// The transform along `axis` (of length `n`) from `src` (its shape: the step's input) to a
/// fresh C-contiguous array of `dst_shape` (equal but along `axis`), reading `Input` and
/// writing `Output`. `None` where cuFFT cannot read `src` (a transform axis of negative or zero
/// stride). Batch axes merge where both sides allow; the longest merged run with a positive
/// input stride is cuFFT's batch, the others are looped as calls.
fn step(kind: StepKind, axis: usize, n: usize, src: &Layout, dst_shape: &[usize]) -> Option<Step> {
    let dst = c_strides(dst_shape);
    let (ni, no) = (src.shape[axis], dst_shape[axis]);
    let istride =
        if ni > 1 { usize::try_from(src.strides[axis]).ok().filter(|&s| s > 0)? } else { 1 };
    let ostride = if no > 1 { dst[axis] as usize } else { 1 };
    // Batch axes, outermost first, merged where the input and the output both allow.
    let mut dims: Vec<Dim> = Vec::new();
    for j in (0..src.rank()).filter(|&j| j != axis && src.shape[j] > 1) {
        let d = (src.shape[j], src.strides[j], dst[j]);
        match dims.last_mut() {
            Some(p) if p.1 == d.1 * d.0 as isize && p.2 == d.2 * d.0 as isize => {
                *p = (p.0 * d.0, d.1, d.2)
            }
            _ => dims.push(d),
        }
    }
    let pick = dims
        .iter()
        .enumerate()
        .filter(|(_, d)| d.1 > 0)
        .max_by_key(|(i, d)| (d.0, usize::MAX - i))
        .map(|(i, _)| i);
    let (batch, idist, odist) = match pick {
        Some(i) => {
            let d = dims.remove(i);
            (d.0, d.1 as usize, d.2 as usize)
        }
        None => (1, 0, 0),
    };
    let mut batched = Batched { kind, n, batch, istride, idist, ostride, odist };
    if batch == 1 {
        // One transform: the distances are unused; cuFFT's basic layout where strides allow.
        (batched.idist, batched.odist) = batched.extents();
    }
    // The looped axes' offsets, C order.
    let mut calls = vec![(src.offset, 0isize)];
    for &(e, is, os) in &dims {
        calls = calls
            .iter()
            .flat_map(|&(i, o)| (0..e as isize).map(move |k| (i + k * is, o + k * os)))
            .collect();
    }
    let calls = calls.into_iter().map(|(i, o)| (i as usize, o as usize)).collect();
    Some(Step { batched, from: Buffer::Input, to: Buffer::Output, calls })
}
