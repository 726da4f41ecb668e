//! The steps simulated on the host: each step's batched layout is read and written exactly as
//! cuFFT would (one-dimensional transforms by `rustfft` in f64), and the result is compared with
//! the host executor's on the same call. Every output element must be written, and the input
//! never.

use kiln_ir::host::Data;
use kiln_ir::shape::numel;
use kiln_ir::{DType, FftNorm, HostArray, Layout};
use num_complex::Complex64 as C64;
use rustfft::FftPlanner;

use kiln_compiler::vendor::fft_steps::*;
use kiln_compiler::vendor::{FftCall, FftKind, Strided, VendorCall};

use super::host;

fn call(kind: FftKind, axes: &[usize], norm: FftNorm, layout: Layout) -> FftCall {
    let mut out_shape = layout.shape.clone();
    let last = *axes.last().unwrap();
    let (in_dtype, out_dtype) = match kind {
        FftKind::C2C { .. } => (DType::Complex128, DType::Complex128),
        FftKind::R2C { n } => {
            out_shape[last] = n / 2 + 1;
            (DType::Float64, DType::Complex128)
        }
        FftKind::C2R { n } => {
            out_shape[last] = n;
            (DType::Complex128, DType::Float64)
        }
    };
    FftCall {
        kind,
        axes: axes.into(),
        norm,
        input: Strided { input: 0, layout },
        in_dtype,
        out_dtype,
        out_shape,
    }
}

/// One transform of `lane` as cuFFT computes it (unnormalised).
fn transform(kind: StepKind, n: usize, lane: &[C64]) -> Vec<C64> {
    let mut planner = FftPlanner::<f64>::new();
    match kind {
        StepKind::C2C { inverse } => {
            let mut v = lane.to_vec();
            let plan =
                if inverse { planner.plan_fft_inverse(n) } else { planner.plan_fft_forward(n) };
            plan.process(&mut v);
            v
        }
        StepKind::R2C => {
            let mut v: Vec<C64> = lane.iter().map(|z| C64::new(z.re, 0.0)).collect();
            planner.plan_fft_forward(n).process(&mut v);
            v.truncate(n / 2 + 1);
            v
        }
        StepKind::C2R => {
            let mut full = vec![C64::default(); n];
            for (k, z) in lane.iter().enumerate() {
                let z = if k == 0 || 2 * k == n { C64::new(z.re, 0.0) } else { *z };
                full[k] = z;
                if k > 0 && k < n {
                    full[n - k] = z.conj();
                }
            }
            planner.plan_fft_inverse(n).process(&mut full);
            full.iter().map(|z| C64::new(z.re, 0.0)).collect()
        }
    }
}

/// Runs the steps of `call` on `base` (the buffer its layout indexes; reals as `re`).
fn simulate(call: &FftCall, base: &[C64]) -> (FftSteps, Vec<C64>) {
    let plan = plan(call);
    let l = &call.input.layout;
    let nan = C64::new(f64::NAN, f64::NAN);
    let scratch = match plan.scratch {
        Some(Scratch::Gather) => {
            let mut idx = vec![0usize; l.rank()];
            (0..l.numel())
                .map(|mut flat| {
                    for k in (0..l.rank()).rev() {
                        idx[k] = flat % l.shape[k];
                        flat /= l.shape[k];
                    }
                    base[l.position(&idx) as usize]
                })
                .collect()
        }
        Some(Scratch::Empty) => vec![nan; l.numel()],
        None => Vec::new(),
    };
    let mut bufs = [base.to_vec(), scratch, vec![nan; numel(&call.out_shape)]];
    let slot = |b: Buffer| match b {
        Buffer::Input => 0,
        Buffer::Scratch => 1,
        Buffer::Output => 2,
    };
    for s in &plan.steps {
        assert_ne!(s.to, Buffer::Input, "{s:?}");
        let b = s.batched;
        let (ni, no) = b.extents();
        for &(io, oo) in &s.calls {
            let lanes: Vec<Vec<C64>> = (0..b.batch)
                .map(|t| {
                    let lane: Vec<C64> = (0..ni)
                        .map(|x| bufs[slot(s.from)][io + t * b.idist + x * b.istride])
                        .collect();
                    transform(b.kind, b.n, &lane)
                })
                .collect();
            for (t, lane) in lanes.iter().enumerate() {
                assert_eq!(lane.len(), no);
                for (x, z) in lane.iter().enumerate() {
                    bufs[slot(s.to)][oo + t * b.odist + x * b.ostride] = *z;
                }
            }
        }
    }
    let out = bufs[2].iter().map(|z| z * plan.scale).collect();
    (plan, out)
}

/// Simulates `call` over a base buffer of `len` elements and compares with the host executor.
fn check(call: &FftCall, len: usize) -> FftSteps {
    let base: Vec<C64> = (0..len)
        .map(|i| {
            let re = ((i * 7919) % 113) as f64 / 17.0 - 3.0;
            let im = if call.in_dtype.is_complex() {
                ((i * 104729) % 97) as f64 / 13.0 - 4.0
            } else {
                0.0
            };
            C64::new(re, im)
        })
        .collect();
    let x = match call.in_dtype {
        DType::Complex128 => HostArray::new(&[len], Data::Complex128(base.clone())).unwrap(),
        _ => HostArray::new(&[len], Data::Float64(base.iter().map(|z| z.re).collect())).unwrap(),
    };
    let want: Vec<C64> = match host::run(&VendorCall::Fft(call.clone()), &[&x]).unwrap().data() {
        Data::Complex128(v) => v.clone(),
        Data::Float64(v) => v.iter().map(|&r| C64::new(r, 0.0)).collect(),
        d => panic!("{:?}", d.dtype()),
    };
    let (plan, got) = simulate(call, &base);
    let top = want.iter().map(|z| z.norm()).fold(1.0, f64::max);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).norm() <= 1e-9 * top, "element {k}: {g} vs {w}\n{call:?}\n{plan:#?}");
    }
    plan
}

fn c2c(inverse: bool) -> FftKind {
    FftKind::C2C { inverse }
}

#[test]
fn a_contiguous_operand_is_one_packed_call_from_the_input_to_the_output() {
    let p = check(&call(c2c(false), &[0], FftNorm::Backward, Layout::contiguous(&[64])), 64);
    assert_eq!(
        (p.scratch, p.steps.len(), p.steps[0].calls.clone(), p.passes()),
        (None, 1, vec![(0, 0)], 1)
    );
    assert_eq!((p.steps[0].from, p.steps[0].to), (Buffer::Input, Buffer::Output));
    assert!(p.steps[0].batched.is_packed());
    // The benchmark's transform: complex64 2^24, forward, "backward": one cuFFT call, no pass
    // besides it (planned only, nothing computed).
    let big = FftCall {
        in_dtype: DType::Complex64,
        out_dtype: DType::Complex64,
        ..call(c2c(false), &[0], FftNorm::Backward, Layout::contiguous(&[1 << 24]))
    };
    let p = plan(&big);
    assert_eq!((p.scratch, p.passes(), p.scale), (None, 1, 1.0));
    assert_eq!(
        p.steps[0].batched,
        Batched {
            kind: step_kind(c2c(false)),
            n: 1 << 24,
            batch: 1,
            istride: 1,
            idist: 1 << 24,
            ostride: 1,
            odist: 1 << 24
        }
    );
    // Rows of a matrix: one batched call; a column transform: one interleaved call.
    let p = check(&call(c2c(false), &[1], FftNorm::Backward, Layout::contiguous(&[6, 10])), 60);
    assert_eq!(
        (p.passes(), p.steps[0].batched.batch, p.steps[0].batched.is_packed()),
        (1, 6, true)
    );
    let p = check(&call(c2c(true), &[0], FftNorm::Forward, Layout::contiguous(&[6, 10])), 60);
    let b = p.steps[0].batched;
    assert_eq!((p.passes(), b.batch, b.istride, b.idist), (1, 10, 10, 1));
}

#[test]
fn views_are_read_through_their_strides_without_a_gather() {
    // Transposed, sliced with a step and an offset, a middle axis, a broadcast batch axis.
    let base = Layout::contiguous(&[10, 6]);
    for (layout, axes, len) in [
        (base.permute(&[1, 0]), vec![1], 60),
        (base.permute(&[1, 0]), vec![0], 60),
        (Layout::contiguous(&[20, 12]).slice(&[(3, 2, 6), (1, 1, 10)]), vec![1], 240),
        (Layout::contiguous(&[4, 6, 10]), vec![1], 240),
        (
            Layout::contiguous(&[4, 6, 10]).permute(&[2, 0, 1]).slice(&[
                (1, 3, 3),
                (0, 1, 4),
                (2, 1, 3),
            ]),
            vec![2],
            240,
        ),
        (Layout::contiguous(&[8]).broadcast_to(&[5, 8]), vec![1], 8),
    ] {
        for inverse in [false, true] {
            let p = check(&call(c2c(inverse), &axes, FftNorm::Ortho, layout.clone()), len);
            assert_eq!(p.scratch, None, "{layout:?} {axes:?}");
            assert_eq!(p.steps[0].from, Buffer::Input);
        }
    }
}

#[test]
fn a_reversed_transform_axis_is_gathered_first() {
    let flipped = Layout::contiguous(&[3, 16]).flip(&[1]);
    let p = check(&call(c2c(false), &[1], FftNorm::Backward, flipped.clone()), 48);
    assert_eq!(
        (p.scratch, p.steps[0].from, p.passes()),
        (Some(Scratch::Gather), Buffer::Scratch, 2)
    );
    // A reversed batch axis is looped over instead.
    let p = check(
        &call(c2c(false), &[1], FftNorm::Backward, Layout::contiguous(&[3, 16]).flip(&[0])),
        48,
    );
    assert_eq!((p.scratch, p.steps[0].calls.len()), (None, 3));
    check(&call(FftKind::R2C { n: 16 }, &[1], FftNorm::Forward, flipped), 48);
}

#[test]
fn multi_axis_transforms_read_the_operand_once_then_run_in_place() {
    let view = Layout::contiguous(&[6, 8, 10]).permute(&[2, 0, 1]).slice(&[
        (0, 2, 5),
        (1, 1, 4),
        (0, 1, 8),
    ]);
    let p = check(&call(c2c(true), &[0, 1, 2], FftNorm::Ortho, view.clone()), 480);
    assert_eq!((p.scratch, p.steps.len()), (None, 3));
    assert!(p.steps[1..].iter().all(|s| (s.from, s.to) == (Buffer::Output, Buffer::Output)));
    check(&call(c2c(false), &[0, 2], FftNorm::Forward, view.clone()), 480);
    // rfftn: the halved axis first, from the input.
    let real = Layout::contiguous(&[4, 6, 8]);
    let p = check(&call(FftKind::R2C { n: 8 }, &[0, 2], FftNorm::Backward, real.clone()), 192);
    assert_eq!((p.scratch, p.steps[0].batched.kind, p.passes()), (None, StepKind::R2C, 2));
    check(&call(FftKind::R2C { n: 6 }, &[2, 0], FftNorm::Ortho, real.permute(&[1, 2, 0])), 192);
}

#[test]
fn complex_to_real_never_reads_the_operand_it_would_overwrite() {
    // One axis: a gather, then the transform from the scratch.
    for n in [16, 17] {
        let p = check(
            &call(FftKind::C2R { n }, &[1], FftNorm::Backward, Layout::contiguous(&[3, 9])),
            27,
        );
        assert_eq!(
            (p.scratch, p.steps.len(), p.steps[0].from, p.passes()),
            (Some(Scratch::Gather), 1, Buffer::Scratch, 3)
        );
    }
    // Several axes: the first complex step writes the scratch from the operand, no gather.
    let spec = Layout::contiguous(&[6, 5, 4]).permute(&[2, 0, 1]);
    let p = check(&call(FftKind::C2R { n: 8 }, &[0, 1, 2], FftNorm::Ortho, spec.clone()), 120);
    assert_eq!(
        (p.scratch, p.steps[0].from, p.steps[0].to),
        (Some(Scratch::Empty), Buffer::Input, Buffer::Scratch)
    );
    assert_eq!(
        p.steps.last().map(|s| (s.batched.kind, s.from, s.to)),
        Some((StepKind::C2R, Buffer::Scratch, Buffer::Output))
    );
    check(&call(FftKind::C2R { n: 7 }, &[2, 0], FftNorm::Forward, spec.flip(&[0, 2])), 120);
}

#[test]
fn empty_arrays_have_no_steps() {
    let p = plan(&call(c2c(false), &[1], FftNorm::Backward, Layout::contiguous(&[0, 4])));
    assert!(p.steps.is_empty() && p.scratch.is_none());
}

/// The step kind of a transform kind.
fn step_kind(kind: FftKind) -> StepKind {
    match kind {
        FftKind::C2C { inverse } => StepKind::C2C { inverse },
        FftKind::R2C { .. } => StepKind::R2C,
        FftKind::C2R { .. } => StepKind::C2R,
    }
}
