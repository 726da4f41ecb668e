//! Scatter epilogues (`fusion::scatter_epilogue`): a small elementwise kernel reading only a
//! scatter region's results (k-means' `sums / maximum(counts, 1)[:, None]`) runs after the
//! combine in the scatter's kernel: one kernel for a whole k-means iteration. The report says
//! so; the result is the division of the combined sums, bit for bit, on whichever backend runs
//! the suite (`gpu_*`: on a GPU, skipped without); what is not an epilogue keeps its reason.

use kiln::{Array, DType};

use crate::vendor_gpu::on_gpu;

/// Points and centres of small integers (`-5..=5`): their sums are exact in float32 in any
/// order, so the scatter's result is the evaluator's bit for bit whatever the order of its
/// combine.
fn integer_data(n: usize, d: usize, k: usize) -> (Array, Array) {
    let x: Vec<f32> = (0..n * d).map(|i| ((i * 7919 + i / d) % 11) as f32 - 5.0).collect();
    let c: Vec<f32> = (0..k * d).map(|i| ((i * 104729 + 3) % 11) as f32 - 5.0).collect();
    (Array::from_vec(x, &[n, d]), Array::from_vec(c, &[k, d]))
}

/// Points and centres of fractions: sums rounded, in an order the backend chooses.
fn fraction_data(n: usize, d: usize, k: usize) -> (Array, Array) {
    let x: Vec<f32> = (0..n * d).map(|i| ((i * 7919 % 1000) as f32) / 99.0 - 5.0).collect();
    let c: Vec<f32> = (0..k * d).map(|i| ((i * 104729 % 1000) as f32) / 99.0 - 5.0).collect();
    (Array::from_vec(x, &[n, d]), Array::from_vec(c, &[k, d]))
}

/// One k-means iteration as kiln-bench's `kmeans_iter_*` writes it: the labels, the sums and
/// counts by scatters of them, and the new centres.
fn iteration(x: &Array, c: &Array) -> (Array, Array, Array) {
    let (k, d) = (c.shape()[0], c.shape()[1]);
    let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, x);
    let counts = kiln::bincount(&labels, None, k);
    let centres = &sums / counts.astype(DType::Float32).maximum(1.0f32).expand_dims(&[1]);
    (sums, counts, centres)
}

/// `sums / max(counts, 1)` row by row, as IEEE float32 division (the evaluator's).
fn divided(sums: &[f32], counts: &[i64], d: usize) -> Vec<u32> {
    sums.iter().enumerate().map(|(e, s)| (s / (counts[e / d] as f32).max(1.0)).to_bits()).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn kmeans_division_is_the_scatter_kernels_epilogue() {
    let (x, c) = integer_data(1797, 64, 10);
    let (sums, counts, centres) = iteration(&x, &c);
    let ex = kiln::explain(&[&centres]);
    let report = ex.report.to_string();
    assert_eq!(ex.report.kernel_count(), 1, "{report}");
    assert!(report.contains("region 0 scatter scatter items=[1797]"), "{report}");
    for op in ["argmin", "scatter_add", "divide", "maximum"] {
        assert!(report.contains(op), "{op} in {report}");
    }
    assert!(
        report.contains("partials combined in block order, then the epilogue by the last block"),
        "{report}"
    );
    assert!(!report.contains("unfused"), "{report}");
    // Only the centres are written: the sums and counts stay in the kernel.
    assert_eq!(ex.report.regions[0].outputs.len(), 1, "{report}");
    // Requested too, the scatters' results are written beside the epilogue's.
    let ex = kiln::explain(&[&sums, &counts, &centres]);
    let report = ex.report.to_string();
    assert_eq!(ex.report.kernel_count(), 1, "{report}");
    assert_eq!(ex.report.regions[0].outputs.len(), 3, "{report}");
}

/// What is not an epilogue stays a kernel of its own, its edges from the scatters named
/// `scatter_result`: an elementwise kernel that also reads a large array, and a reduction.
#[test]
fn consumers_that_are_not_epilogues_keep_their_reason() {
    let (x, c) = integer_data(1797, 64, 10);
    let (sums, counts, centres) = iteration(&x, &c);
    let moved = &centres + &x.slice(&kiln::s![..10]);
    let ex = kiln::explain(&[&moved]);
    let report = ex.report.to_string();
    assert_eq!(ex.report.kernel_count(), 2, "{report}");
    assert!(report.contains(": scatter_result"), "{report}");
    assert!(!report.contains("then the epilogue"), "{report}");
    let rows = sums.sum(1);
    let ex = kiln::explain(&[&rows, &counts]);
    let report = ex.report.to_string();
    assert_eq!(ex.report.kernel_count(), 2, "{report}");
    assert!(report.contains(": scatter_result"), "{report}");
    // Both computed: the slice's sum against the evaluator (exact data).
    crate::sorts_gpu::matches_evaluator_exactly(&[&moved, &rows, &counts], "not epilogues");
}

/// The epilogue's centres against the evaluator bit for bit (integer data: exact sums), at sizes
/// of one host chunk and of several (2 and 16 private copies), and on the GPU of one block, of
/// several and of two combine levels (more than 16 blocks).
#[test]
fn epilogue_centres_match_the_evaluator() {
    for (n, d, k) in [(64, 4, 3), (1797, 64, 10), (1 << 14, 64, 10), (5000, 3, 64)] {
        let (x, c) = integer_data(n, d, k);
        let (_, counts, centres) = iteration(&x, &c);
        crate::sorts_gpu::matches_evaluator_exactly(&[&centres], &format!("{n}x{d}, k={k}"));
        // and with the counts written too (a scatter output beside the epilogue's)
        let (_, _, centres2) = iteration(&x, &c);
        crate::sorts_gpu::matches_evaluator_exactly(&[&counts, &centres2], "counts and centres");
    }
}

/// With rounded sums, the centres are the division of the sums the scatter combined, bit for
/// bit: computed alone (the sums and counts never leave the kernel) and with them requested.
#[test]
fn epilogue_divides_the_combined_sums() {
    for (n, d, k) in [(1797, 64, 10), (1 << 14, 64, 10), (1 << 17, 16, 7)] {
        let (x, c) = fraction_data(n, d, k);
        let (sums, counts, centres) = iteration(&x, &c);
        let alone = bits(&centres.to_vec::<f32>());
        kiln::eval_all(&[&sums, &counts]);
        let (s, m) = (sums.to_vec::<f32>(), counts.to_vec::<i64>());
        assert_eq!(alone, divided(&s, &m, d), "{n}x{d}, k={k}: alone");
        let (sums2, counts2, centres2) = iteration(&x, &c);
        kiln::eval_all(&[&sums2, &counts2, &centres2]);
        assert_eq!(bits(&sums2.to_vec::<f32>()), bits(&s), "{n}x{d}: the same sums");
        assert_eq!(bits(&centres2.to_vec::<f32>()), alone, "{n}x{d}, k={k}: with the sums");
    }
}

/// On a GPU: the digits' iteration and the 2^20 one each run as one kernel (a GPU scatter
/// kernel), their centres the division of the combined sums bit for bit, the same every run;
/// the digits' centres the evaluator's on exact data.
#[test]
fn gpu_kmeans_iteration_is_one_kernel_with_its_epilogue() {
    if !on_gpu() {
        return;
    }
    for (n, d, k) in [(1797, 64, 10), (1 << 20, 64, 10)] {
        let (x, c) = fraction_data(n, d, k);
        let (sums, counts, centres) = iteration(&x, &c);
        let alone = bits(&centres.to_vec::<f32>());
        let ran = kiln_exec::last_run_code();
        assert_eq!(ran.len(), 1, "{n}: one kernel");
        let gpu = ran.iter().all(|(_, c)| matches!(c, kiln_exec::RanCode::Gpu(_)));
        assert!(gpu, "{n}: a GPU kernel");
        kiln::eval_all(&[&sums, &counts]);
        let (s, m) = (sums.to_vec::<f32>(), counts.to_vec::<i64>());
        assert_eq!(alone, divided(&s, &m, d), "{n}: the combined sums divided");
        for _ in 0..3 {
            let (_, _, again) = iteration(&x, &c);
            assert_eq!(bits(&again.to_vec::<f32>()), alone, "{n}: the same bits every run");
        }
    }
    // Against the evaluator (exact data) at the digits' size: the evaluator's distances of
    // 2^20 points take it longer than the suite's time on a device.
    let (x, c) = integer_data(1797, 64, 10);
    let (_, _, exact) = iteration(&x, &c);
    crate::sorts_gpu::matches_evaluator_exactly(&[&exact], "1797: exact data");
}

/// The digits' iteration's GPU kernel, compiled to PTX here (no GPU needed): the scatter
/// kernel's barriers, atomics and fences, then one more barrier before the last block's
/// epilogue reads the combined results.
#[test]
fn kmeans_iteration_gpu_kernel_ptx() {
    let (x, c) = integer_data(1797, 64, 10);
    let (_, _, centres) = iteration(&x, &c);
    let k = crate::support::only_gpu_kernel(&[&centres]);
    assert!(k.kernel.gpu_scatter.is_some(), "a GPU scatter kernel");
    assert_eq!(k.kernel.outputs, vec![(DType::Float32, vec![10, 64])], "only the centres");
    let ptx = &k.ptx;
    assert!(!ptx.contains(".local"), "local memory:\n{ptx}");
    assert!(ptx.contains("div.rn.f32"), "IEEE division:\n{ptx}");
    let lines: Vec<String> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| ["bar.sync", "atom.", "fence.", "membar"].iter().any(|p| l.starts_with(p)))
        .map(crate::indexing::without_register_numbers)
        .collect();
    // (With `KILN_GPU_SCATTER_OWNED=off`, the previous kernel's lines: the counts' atomic add.)
    let name = match bins_owned() {
        true => "kmeans_iteration_ptx_sync_lines",
        false => "kmeans_iteration_ptx_sync_lines_bins_copies",
    };
    insta::assert_snapshot!(name, lines.join("\n"));
}

/// The k-means iteration's GPU kernel where a block takes several tiles together (2^17
/// positions: blocks of two tiles; without bulk copies, `support::only_tiled_gpu_kernel`) holds the centres whole in shared memory (`lower/tile.rs`, `Held`):
/// each block copies them once, and the label phase reads them there, two elements a load or more (a
/// lane's consecutive elements), so the kernel's read-only global loads (`ld.global.nc`) are
/// the tile copy's and the centres' copy only (21 with `KILN_GPU_SCATTER_HELD=off`: the label
/// phase's loads of the centres), and it spills nothing.
#[test]
fn kmeans_iteration_of_several_tiles_reads_the_centres_from_shared_memory() {
    if std::env::var("KILN_GPU_SCATTER_HELD")
        .is_ok_and(|v| ["0", "off", "false", "no"].contains(&v.trim().to_lowercase().as_str()))
    {
        return;
    }
    let (x, c) = integer_data(1 << 17, 64, 10);
    let (_, _, centres) = iteration(&x, &c);
    let k = crate::support::only_tiled_gpu_kernel(&[&centres]);
    assert!(k.kernel.gpu_scatter.is_some(), "a GPU scatter kernel");
    let ptx = &k.ptx;
    if let Some(path) = std::env::var_os("KILN_TEST_PTX_OUT") {
        std::fs::write(path, ptx.as_bytes()).unwrap();
    }
    assert!(!ptx.contains(".local"), "local memory:\n{ptx}");
    let count = |p: &str| ptx.lines().filter(|l| l.trim_start().starts_with(p)).count();
    let (nc, pairs) = (count("ld.global.nc"), count("ld.shared.v"));
    assert!(
        nc <= 2 && pairs >= 10,
        "{nc} read-only global loads, {pairs} vector shared loads:\n{ptx}"
    );
}

/// Whether GPU scatter kernels' bins are owned by threads (`KILN_GPU_SCATTER_OWNED`, on unless
/// the environment says off): the shared-memory atomics their PTX has depend on it.
pub(crate) fn bins_owned() -> bool {
    !std::env::var("KILN_GPU_SCATTER_OWNED")
        .is_ok_and(|v| ["0", "off", "false", "no"].contains(&v.trim().to_lowercase().as_str()))
}

/// The same kernel's bins phase with its bins owned by threads (`KILN_GPU_SCATTER_OWNED`, the
/// default; `lower/scatter/owned.rs`): the label phase marks each position in its row's bit
/// mask by a shared-memory `or`, and the bins' threads walk the masks' set bits (a population
/// count for the trip, the lowest bit each step), so the kernel has no atomic add in shared
/// memory (the counts' int64 bins took one a position before) and no private copies to combine;
/// it spills nothing. With the knob off, the previous kernel: its counts' atomic add, no `or`.
#[test]
fn kmeans_iteration_bins_owned_by_threads_walk_the_label_masks() {
    let (x, c) = integer_data(1 << 17, 64, 10);
    let (_, _, centres) = iteration(&x, &c);
    let k = crate::support::only_gpu_kernel(&[&centres]);
    assert!(k.kernel.gpu_scatter.is_some(), "a GPU scatter kernel");
    let ptx = &k.ptx;
    let count = |p: &str| ptx.lines().filter(|l| l.trim_start().starts_with(p)).count();
    let (or, add, popc) =
        (count("atom.shared.or.b32"), count("atom.shared.add"), count("popc.b32"));
    if bins_owned() {
        assert!(!ptx.contains(".local"), "local memory:\n{ptx}");
        assert!(
            or >= 1 && add == 0 && popc >= 1,
            "{or} shared ors, {add} shared atomic adds, {popc} population counts:\n{ptx}"
        );
    } else {
        assert!(or == 0 && add >= 1, "{or} shared ors, {add} shared atomic adds:\n{ptx}");
    }
}

/// A plan reused at other sizes (the plan cache) keeps its epilogue only where it still fits:
/// the iteration with 100 centres of 64 (25,600 bytes of sums, more than `EPILOGUE_BYTES`) is
/// compiled again, its division a kernel of its own. (Written with `maximum(counts, 0.5)`, a
/// structure of its own, so that no other test's plan is replaced meanwhile.)
#[test]
fn a_plan_reused_where_its_epilogue_no_longer_fits_is_compiled_again() {
    let half = |x: &Array, c: &Array| {
        let (sums, counts, _) = iteration(x, c);
        &sums / counts.astype(DType::Float32).maximum(0.5f32).expand_dims(&[1])
    };
    let (x, c) = integer_data(1797, 64, 10);
    let small = half(&x, &c);
    crate::sorts_gpu::matches_evaluator_exactly(&[&small], "10 centres");
    assert_eq!(kiln_exec::last_run_code().len(), 1, "10 centres: one kernel");
    let (x, c) = integer_data(1797, 64, 100);
    let large = half(&x, &c);
    crate::sorts_gpu::matches_evaluator_exactly(&[&large], "100 centres");
    assert_eq!(kiln_exec::last_run_code().len(), 2, "100 centres: the division on its own");
}
