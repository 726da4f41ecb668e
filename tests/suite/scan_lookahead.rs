//! The look-ahead scan of one long line (`sm_90`: persistent blocks fed by bulk copies, each
//! tile's prefix from the totals of the tiles before it; `scan_gpu/lookahead.rs`). On the GPU
//! these lines take it; on the host they check the same results through the host scan. Lines of
//! 2^22 + 12345 elements: 256 whole tiles of 16384 and a partial one (read from global memory).

use kiln::{Array, CodeStage, DType};
use kiln_compiler::toolchain::ptx::PtxTarget;

const N: usize = (1 << 22) + 12345;

/// Eighths of small integers: every partial sum is exact in float32 in any association.
fn eighths(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((((i * 2654435761usize) >> 7) % 17) as f32 - 8.0) / 8.0).collect()
}

fn running<T: Copy>(x: &[T], first: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = first;
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            acc = if i == 0 { f(first, v) } else { f(acc, v) };
            acc
        })
        .collect()
}

/// The PTX of a long line's cumsum uses bulk copies and mbarriers (the look-ahead kernel), with
/// its prologue (`x * x`) in it; a line shorter than `LOOKAHEAD_MIN` keeps the chunk
/// look-back. Runs without a GPU.
#[test]
fn lookahead_scan_is_chosen_for_long_lines() {
    if kiln_compiler::codegen::gpu::libdevice_path().is_none() {
        eprintln!("skipped: no libdevice (scripts/setup.sh fetches it)");
        return;
    }
    let ptx = CodeStage::Ptx(PtxTarget::default());
    let x = Array::from_vec(eighths(N), &[N]);
    let long = (&x * &x).cumsum(None);
    let code = kiln::kernel_code(&[&long], ptx).unwrap();
    for needle in ["cp.async.bulk.shared::cluster.global", "mbarrier.try_wait.parity", "mul.rn.f32"]
    {
        assert!(code.contains(needle), "{needle} not in the long scan's PTX");
    }
    // Two staged inputs, and a bool one beside a float one: two bulk copies a tile.
    let keep = Array::from_vec((0..N).map(|i| i % 3 == 0).collect::<Vec<bool>>(), &[N]);
    let y = Array::from_vec(eighths(N), &[N]);
    for two in [(&x * &y).cumsum(None), kiln::where_(&keep, &x, 0.0).cumsum(None)] {
        let code = kiln::kernel_code(&[&two], ptx).unwrap();
        assert!(code.contains("cp.async.bulk.shared::cluster.global"), "two inputs staged");
    }
    let short = Array::from_vec(eighths(1 << 20), &[1 << 20]).cumsum(None);
    let code = kiln::kernel_code(&[&short], ptx).unwrap();
    assert!(!code.contains("cp.async.bulk"), "a short line keeps the chunk look-back");
    // Before sm_90 there are no bulk copies (and a block of sm_89 or sm_120 could not have the
    // stages' shared memory): the chunk look-back.
    for target in [PtxTarget { sm: 80, ptx_isa: 78 }, PtxTarget { sm: 89, ptx_isa: 78 }] {
        let code = kiln::kernel_code(&[&long], CodeStage::Ptx(target)).unwrap();
        assert!(!code.contains("cp.async.bulk"), "{target:?} takes the chunk look-back");
    }
}

/// Float sums that are exact in any association give the running sum's bits; a fused square;
/// two staged inputs, and a bool one beside a float one;
/// an int32 accumulator (`cumsum_dtype`); a running maximum that grows late; a count of a
/// mask computed in the kernel; and inexact float sums that are the same bits on every run.
#[test]
fn lookahead_scans_of_a_long_line() {
    let f = eighths(N);
    let x = Array::from_vec(f.clone(), &[N]);
    assert_eq!(x.cumsum(None).to_vec::<f32>(), running(&f, 0.0, |a, b| a + b));

    // Squares of {-1/2, 0, 1/2}: quarters, exact.
    let h: Vec<f32> = (0..N).map(|i| ((i * 7919) % 3) as f32 * 0.5 - 0.5).collect();
    let hx = Array::from_vec(h.clone(), &[N]);
    let sq: Vec<f32> = h.iter().map(|v| v * v).collect();
    assert_eq!((&hx * &hx).cumsum(None).to_vec::<f32>(), running(&sq, 0.0, |a, b| a + b));

    // Two staged inputs (tiles of 8192), and a bool input beside a float one (its own part of
    // each stage): products and selections of exact values, exact.
    let prod: Vec<f32> = f.iter().zip(&h).map(|(a, b)| a * b).collect();
    assert_eq!((&x * &hx).cumsum(None).to_vec::<f32>(), running(&prod, 0.0, |a, b| a + b));
    let keep: Vec<bool> = (0..N).map(|i| (i * 7) % 5 < 2).collect();
    let kept_x: Vec<f32> = f.iter().zip(&keep).map(|(&v, &k)| if k { v } else { 0.0 }).collect();
    let sel = kiln::where_(&Array::from_vec(keep, &[N]), &x, 0.0).cumsum(None);
    assert_eq!(sel.to_vec::<f32>(), running(&kept_x, 0.0, |a, b| a + b));

    let xi: Vec<i32> = (0..N).map(|i| ((i as i64 * 7919) % 201) as i32 - 100).collect();
    let a = Array::from_vec(xi.clone(), &[N]);
    let want = running(&xi, 0, |p: i32, q| p.wrapping_add(q));
    assert_eq!(a.cumsum_dtype(None, DType::Int32).to_vec::<i32>(), want);

    let ramp: Vec<f32> =
        (0..N).map(|i| ((i as i64 * 37) % 1001) as f32 + (i / 4096) as f32).collect();
    let r = Array::from_vec(ramp.clone(), &[N]);
    assert_eq!(r.cummax(None).to_vec::<f32>(), running(&ramp, f32::NEG_INFINITY, f32::max));

    let kept = x.greater(0.0).cumsum_dtype(None, DType::Int32).to_vec::<i32>();
    let pos: Vec<i32> = f.iter().map(|&v| (v > 0.0) as i32).collect();
    assert_eq!(kept, running(&pos, 0, |p, q| p + q));

    let g: Vec<f32> =
        (0..N).map(|i| (((i * 2654435761usize) >> 7) % 1000) as f32 / 997.0 - 0.5).collect();
    let make = || Array::from_vec(g.clone(), &[N]).cumsum(None).to_vec::<f32>();
    let (g1, g2, g3) = (make(), make(), make());
    let same = |p: &[f32], q: &[f32]| p.iter().zip(q).all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same(&g1, &g2) && same(&g1, &g3), "three runs of one float cumsum differ");
    // Within rounding of an f64 running sum (the scale of the sum's magnitude).
    let mut acc = 0.0f64;
    let worst = g.iter().zip(&g1).fold(0.0f64, |w, (&v, &got)| {
        acc += v as f64;
        w.max((got as f64 - acc).abs())
    });
    let scale = g.iter().map(|&v| v.abs() as f64).sum::<f64>();
    assert!(worst <= scale * 1e-6, "worst error {worst} against a scale of {scale}");
}

/// The look-ahead scan's words are kept per stream and tagged by launch epochs, not zeroed a
/// launch (`GpuGrid::persistent`): many launches in turn of two line lengths (two kept
/// buffers), of kernels that share one buffer (cumsum, a fused square, an int32 count), on the
/// default stream and on a stream of their own, each exact.
#[test]
fn gpu_lookahead_words_kept_across_launches_lengths_and_streams() {
    if !matches!(kiln::backend(), kiln_runtime::Backend::Cuda(_)) {
        println!("skipped: no GPU");
        return;
    }
    let lengths = [(1 << 21) + 4321, N];
    let check = |call: usize, n: usize| {
        // Eighths (their sums exact), and for the squares halves (quarters squared, exact).
        let f: Vec<f32> = match call % 3 {
            1 => (0..n).map(|i| ((i * 7919 + call) % 3) as f32 * 0.5 - 0.5).collect(),
            _ => eighths(n + call)[call..].to_vec(),
        };
        let f = &f[..];
        let x = Array::from_vec(f.to_vec(), &[n]);
        let got = match call % 3 {
            0 => x.cumsum(None).to_vec::<f32>(),
            1 => (&x * &x).cumsum(None).to_vec::<f32>(),
            _ => x
                .greater(0.0)
                .cumsum_dtype(None, DType::Int32)
                .to_vec::<i32>()
                .iter()
                .map(|&c| c as f32)
                .collect(),
        };
        let want = match call % 3 {
            0 => running(f, 0.0, |a, b| a + b),
            1 => running(&f.iter().map(|v| v * v).collect::<Vec<_>>(), 0.0, |a, b| a + b),
            _ => running(
                &f.iter().map(|&v| (v > 0.0) as i32 as f32).collect::<Vec<_>>(),
                0.0,
                |a, b| a + b,
            ),
        };
        assert!(got == want, "call {call}, {n} elements: the scan differs from the running sum");
    };
    for call in 0..24 {
        check(call, lengths[call % 2]);
    }
    let stream = kiln_runtime::Stream::non_blocking(kiln_runtime::Device::new(0).unwrap()).unwrap();
    {
        let _on = stream.use_scoped();
        for call in 24..30 {
            check(call, lengths[call % 2]);
        }
    }
    for call in 30..34 {
        check(call, lengths[call % 2]);
    }
}
