//! The GPU scatter kernel whose rows producer warps copy by bulk copies into a queue of tile
//! buffers that consumer warps take (`compiler/src/codegen/lower/scatter/queue.rs`; devices
//! with `sm_90`'s bulk copies, from 2^16 positions): k-means iterations and scatters of
//! positions computed in the kernel against the evaluator, bit for bit on exact data, at sizes
//! whose blocks end in partial tiles, rows of 16 to 512 bytes, float and integer bins, sums,
//! maxima and minima; and that the queue is what ran.

use kiln::{Array, DType};
use kiln_exec::RanCode;

use crate::sorts_gpu::matches_evaluator_when;
use crate::vendor_gpu::on_gpu;

/// Whether a queued GPU scatter kernel ran.
fn queued(c: &RanCode) -> bool {
    matches!(c, RanCode::Gpu(g) if g.0.kernel.gpu_scatter.is_some_and(|s| s.queue.is_some()))
}

/// Whether the device has bulk copies (the queue applies there, by default).
fn bulk_device() -> bool {
    let (major, _) = kiln_runtime::Device::new(0).unwrap().compute_capability().unwrap();
    matches!(major, 9 | 10) && std::env::var("KILN_GPU_SCATTER_QUEUE").is_err()
}

/// `[n, d]` small integers of `dt` (`-5..=5`, positions and elements mixed by `seed`): sums of
/// up to 2^20 of them are exact in float32, so any order of combining gives the evaluator's bits.
fn small(n: usize, d: usize, dt: DType, seed: usize) -> Array {
    let v: Vec<f64> =
        (0..n * d).map(|i| ((i * 7919 + i / d * seed + seed) % 11) as f64 - 5.0).collect();
    Array::from_vec(v, &[n, d]).astype(dt).eval().clone()
}

/// On a device with bulk copies, k-means iterations on small-integer points (ties among the
/// distances included: the screen's exact fold decides them as the evaluator does) match the
/// evaluator bit for bit, through the queue: 2^16 points of 64 (the fewest it takes), points of
/// 4 elements (16-byte rows) whose blocks end in partial tiles, 32 with 16 centres, 128 (rows of
/// 512 bytes).
#[test]
fn gpu_queued_kmeans_iterations_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    let expected = bulk_device();
    for (n, d, k) in [(1 << 16, 64, 10), ((1 << 17) + 77, 4, 3), ((3 << 15) + 5, 32, 16)]
        .into_iter()
        .chain([((1 << 16) + 31, 128, 5)])
    {
        let x = small(n, d, DType::Float32, 3);
        let c = small(k, d, DType::Float32, 17);
        let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
        let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, &x);
        let counts = kiln::bincount(&labels, None, k);
        let what = format!("{n}x{d}, k = {k}: the queue ran");
        matches_evaluator_when(&[&sums, &counts], queued, expected, &what);
    }
}

/// On a device with bulk copies, scatters of rows read by position at positions computed in
/// the kernel (`arange` mixed: no second input read by position) through the queue, against
/// the evaluator: float64 sums and maxima of 2-element rows (16 bytes), int32 sums of
/// 4-element rows, int64 minima, float32 maxima onto a computed starting array.
#[test]
fn gpu_queued_scatters_of_every_combine_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    let expected = bulk_device();
    let n = (1 << 17) + 13;
    let rows = |bins: i64| kiln::arange(n as i64) * 7919i64 % bins;
    let cases: Vec<(Array, String)> = vec![
        {
            let v = small(n, 2, DType::Float64, 5);
            (kiln::zeros(&[7, 2], DType::Float64).add_at(&rows(7), &v), "float64 sums".into())
        },
        {
            let v = small(n, 2, DType::Float64, 6);
            (kiln::full(&[5, 2], -9.0, DType::Float64).maximum_at(&rows(5), &v), "maxima".into())
        },
        {
            let v = small(n, 4, DType::Int32, 7);
            (kiln::zeros(&[33, 4], DType::Int32).add_at(&rows(33), &v), "int32 sums".into())
        },
        {
            let v = small(n, 2, DType::Int64, 8);
            (kiln::zeros(&[3, 2], DType::Int64).minimum_at(&rows(3), &v), "int64 minima".into())
        },
        {
            let v = small(n, 8, DType::Float32, 9);
            let start = (kiln::arange(6 * 8) % 3i64).astype(DType::Float32).reshape(&[6, 8]) - 1.0;
            (start.maximum_at(&rows(6), &v), "float32 maxima on a computed start".into())
        },
    ];
    for (out, what) in &cases {
        matches_evaluator_when(&[out], queued, expected, &format!("{what}: the queue ran"));
    }
}

/// A k-means iteration of `n` points of 64 float32, k = 10 (kiln-bench's), and its GPU kernel
/// for `sm_90` (no GPU needed).
fn kmeans_kernel(n: usize) -> kiln_compiler::codegen::gpu::GpuKernel {
    let x = small(n, 64, DType::Float32, 3);
    let c = small(10, 64, DType::Float32, 17);
    let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
    let sums = kiln::zeros(&[10, 64], DType::Float32).add_at(&labels, &x);
    let counts = kiln::bincount(&labels, None, 10).astype(DType::Float32);
    let centres = &sums / counts.maximum(1.0f32).expand_dims(&[1]);
    crate::support::only_gpu_kernel(&[&centres])
}

/// The 2^17 k-means iteration's kernel for `sm_90` is queued (16 consumer warps, 4 producers,
/// 20 buffers, 132 blocks of 640 threads, launch bounds of one block a multiprocessor), spills
/// nothing, and its synchronisation is the queue's: per row one bulk copy completing on the
/// buffer's `full` mbarrier, the tag spin and the `full` wait of consumers, the `empty` wait and
/// the tag store of producers, warp barriers in the tile loops, block barriers only outside
/// them (snapshot, registers renumbered); its labels are screened by expanded distances (a
/// fused multiply-add a term and centre, no subtract). One point fewer than 2^16 keeps the
/// block's tiles.
#[test]
fn queued_kmeans_kernel_ptx() {
    let k = kmeans_kernel(1 << 17);
    let gs = k.kernel.gpu_scatter.expect("a GPU scatter kernel");
    assert_eq!((gs.queue, gs.blocks, gs.threads, gs.min_blocks), (Some((16, 4, 20)), 132, 640, 1));
    let ptx = &k.ptx;
    assert!(!ptx.contains(".local"), "local memory:\n{ptx}");
    assert!(ptx.contains(".maxntid 640, 1, 1"), "launch bounds:\n{ptx}");
    let sync: Vec<String> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| {
            [
                "bar.",
                "mbarrier.",
                "cp.async",
                "fence.",
                "atom.",
                "{ .reg",
                "ld.volatile",
                "st.volatile",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .map(crate::indexing::without_register_numbers)
        .collect();
    insta::assert_snapshot!("queued_kmeans_kernel_ptx_sync_lines", sync.join("\n"));
    let count = |p: &str| ptx.lines().filter(|l| l.trim_start().starts_with(p)).count();
    // (The direct screen's loop is a subtract and a fused multiply-add a term and centre: 10
    // of them; the expanded one's a fused multiply-add a centre and one for ‖x‖², its norms'
    // loop 8 more.)
    let fma = count("fma.rn.f32");
    assert!(fma >= 19, "{fma} fused multiply-adds:\n{ptx}");
    let below = kmeans_kernel((1 << 16) - 1);
    assert_eq!(below.kernel.gpu_scatter.expect("a GPU scatter kernel").queue, None);
}
