//! A catalogue of programs written with kiln's API, each snapshotted (insta) as ONE readable file
//! per program: the lowered graph, the simplified graph, the fused regions, the schedule and the
//! fusion report, as `kiln::explain` gives them (`tests/suite/snapshots/main__catalogue__*.snap`).
//!
//! Every program also checks that
//! - `explain` (which goes through the plan cache) says what a fresh, uncached compile says;
//! - running its schedule region by region gives the reference evaluator's results on the
//!   unfused graph (bit for bit; NaNs compared as NaNs);
//! - every stage's graph passes the verifier and the regions' text parses back;
//!
//! and some programs assert their number of regions (kernels), where the fusion issue demands it.
//!
//! Regenerate the snapshots with `INSTA_UPDATE=always cargo test --release --test main catalogue`
//! and review the `.snap` files by reading them.

use kiln::{axis, s, where_, Array, DType};
use kiln_compiler::fusion::RegionKind;
use kiln_compiler::pipeline::{compile, Options};

// ------------------------------------------------------------------------------------------------
// Deterministic inputs
// ------------------------------------------------------------------------------------------------

/// A 64-bit LCG stream; `seed` picks the stream.
fn stream(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s >> 40
    }
}

/// Held f32 data in [-2, 2).
fn f32s(shape: &[usize], seed: u64) -> Array {
    let mut next = stream(seed);
    let n: usize = shape.iter().product();
    Array::from_vec(
        (0..n).map(|_| (next() as f32 / (1u64 << 24) as f32) * 4.0 - 2.0).collect::<Vec<f32>>(),
        shape,
    )
}

/// Held f64 data in [-2, 2).
fn f64s(shape: &[usize], seed: u64) -> Array {
    let mut next = stream(seed);
    let n: usize = shape.iter().product();
    Array::from_vec(
        (0..n).map(|_| (next() as f64 / (1u64 << 24) as f64) * 4.0 - 2.0).collect::<Vec<f64>>(),
        shape,
    )
}

/// Held i32 data in [lo, hi).
fn i32s(shape: &[usize], lo: i32, hi: i32, seed: u64) -> Array {
    let mut next = stream(seed);
    let n: usize = shape.iter().product();
    let span = (hi - lo) as u64;
    Array::from_vec((0..n).map(|_| lo + (next() % span) as i32).collect::<Vec<i32>>(), shape)
}

/// Held i8 data in [lo, hi).
fn i8s(shape: &[usize], lo: i8, hi: i8, seed: u64) -> Array {
    let mut next = stream(seed);
    let n: usize = shape.iter().product();
    let span = (hi as i64 - lo as i64) as u64;
    Array::from_vec(
        (0..n).map(|_| (lo as i64 + (next() % span) as i64) as i8).collect::<Vec<i8>>(),
        shape,
    )
}

/// Held bool data.
fn bools(shape: &[usize], seed: u64) -> Array {
    let mut next = stream(seed);
    let n: usize = shape.iter().product();
    Array::from_vec((0..n).map(|_| next() % 2 == 1).collect::<Vec<bool>>(), shape)
}

// ------------------------------------------------------------------------------------------------
// The snapshot of one program
// ------------------------------------------------------------------------------------------------

/// Equal as arrays: same dtype, shape and elements; floats bit for bit except that any NaN
/// equals any NaN.
pub(crate) fn same(a: &kiln::HostArray, b: &kiln::HostArray) -> bool {
    use kiln::ir::host::Data;
    if a.dtype() != b.dtype() || a.shape() != b.shape() {
        return false;
    }
    fn fl<T: Copy, F: Fn(T) -> (bool, u64)>(x: &[T], y: &[T], bits: F) -> bool {
        x.iter().zip(y).all(|(&p, &q)| {
            let ((pn, pb), (qn, qb)) = (bits(p), bits(q));
            (pn && qn) || (!pn && !qn && pb == qb)
        })
    }
    match (a.data(), b.data()) {
        (Data::Float16(x), Data::Float16(y)) => fl(x, y, |v| (v.is_nan(), v.to_bits() as u64)),
        (Data::BFloat16(x), Data::BFloat16(y)) => fl(x, y, |v| (v.is_nan(), v.to_bits() as u64)),
        (Data::Float32(x), Data::Float32(y)) => fl(x, y, |v| (v.is_nan(), v.to_bits() as u64)),
        (Data::Float64(x), Data::Float64(y)) => fl(x, y, |v| (v.is_nan(), v.to_bits())),
        (Data::Complex64(x), Data::Complex64(y)) => {
            fl(x, y, |v| (v.re.is_nan(), v.re.to_bits() as u64))
                && fl(x, y, |v| (v.im.is_nan(), v.im.to_bits() as u64))
        }
        (Data::Complex128(x), Data::Complex128(y)) => {
            fl(x, y, |v| (v.re.is_nan(), v.re.to_bits()))
                && fl(x, y, |v| (v.im.is_nan(), v.im.to_bits()))
        }
        (x, y) => x == y,
    }
}

/// Explains `outs`, checks it (see the module docs), snapshots it as `name`, and returns it.
#[track_caller]
fn program(name: &str, outs: &[&Array]) -> kiln::Explain {
    let explained = kiln::explain(outs);

    // A fresh compile, past the plan cache, says the same.
    let lowered = kiln::lower(outs);
    let g = &lowered.graph;
    kiln::ir::verify::verify(g).unwrap();
    assert_eq!(kiln::ir::text::print(g), explained.graph, "{name}: lowered graph");
    let plan = compile(g, &Options::from_env()).unwrap_or_else(|e| panic!("{name}: {e}"));
    use kiln_compiler::pipeline::Stage;
    for (stage, text) in [
        (Stage::IntMatmul, &explained.simplified),
        (Stage::Regions, &explained.regions),
        (Stage::Schedule, &explained.schedule),
    ] {
        assert_eq!(
            &plan.stage_text(stage).unwrap(),
            text,
            "{name}: explain's {} differs from a fresh compile's",
            stage.name()
        );
    }
    assert_eq!(plan.report(), explained.report, "{name}: report");

    // Every stage verifies and the texts parse back.
    kiln::ir::verify::verify(&plan.simplified).unwrap();
    assert_eq!(kiln::ir::text::parse(&explained.simplified).unwrap(), plan.simplified, "{name}");
    for r in &plan.partition.regions {
        kiln::ir::verify::verify(&r.body).unwrap_or_else(|e| panic!("{name}: region body: {e}"));
    }
    assert_eq!(
        kiln_compiler::fusion::parse_regions(&explained.regions).unwrap(),
        plan.partition.regions,
        "{name}"
    );

    // The schedule, run region by region, gives the reference's results.
    let inputs: Vec<&kiln::HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference =
        kiln::ir::eval::evaluate(g, &inputs).unwrap_or_else(|e| panic!("{name}: reference: {e}"));
    let fused = kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Evaluator)
        .unwrap_or_else(|e| panic!("{name}: fused: {e}"));
    assert_eq!(reference.len(), fused.len());
    for (k, (r, f)) in reference.iter().zip(&fused).enumerate() {
        assert!(
            same(r, f),
            "{name}: output {k} differs\nreference: {r:?}\nfused: {f:?}\n{}",
            explained.report
        );
    }

    gpu_kernels(name, &plan.partition.regions);

    let text = format!(
        "program: {name}\nkernels: {}\n\n\
         ======== graph ========\n{}\n\
         ======== simplified ========\n{}\n\
         ======== regions ========\n{}\n\
         ======== schedule ========\n{}\n\
         ======== report ========\n{}",
        explained.report.kernel_count(),
        explained.graph.trim_end(),
        explained.simplified.trim_end(),
        explained.regions.trim_end(),
        explained.schedule.trim_end(),
        explained.report,
    );
    insta::assert_snapshot!(name, text);
    explained
}

/// Every region code generation supports compiles to PTX for sm_90 with an `.entry`, no
/// local-memory spills of the grid-stride loop's state, and assembles with NVIDIA's `ptxas`
/// where it is installed (`KILN_PTXAS`, or `ptxas` on the `PATH`).
///
/// The GPU code is snapshotted too, as `<name>__gpu`: each region's GPU MLIR (canonical and
/// shape-generic; its LLVM IR is a mechanical translation, `KILN_DUMP=llvm`) and the PTX lines
/// that matter, counted by opcode ([`ptx_profile`]): global loads and stores and their widths,
/// shared memory, barriers, shuffles, atomics, fences, calls, and the local-memory frame.
/// Without libdevice (which `scripts/setup.sh` fetches) the snapshot is skipped.
pub(crate) fn gpu_kernels(name: &str, regions: &[kiln_compiler::fusion::Region]) {
    use kiln_compiler::toolchain::ptx::PtxTarget;
    let mut snap = String::new();
    for (k, r) in regions.iter().enumerate() {
        let g = match crate::support::gpu_kernel(
            r,
            PtxTarget::default(),
            kiln_compiler::codegen::Tier::Optimized,
        ) {
            Ok(g) => g,
            Err(kiln_compiler::CompileError::Unsupported { op, reason, .. }) => {
                snap += &format!("======== region {k}: not compiled ({op}: {reason})\n");
                continue;
            }
            Err(e) if kiln_compiler::codegen::gpu::libdevice_path().is_none() => {
                eprintln!("{name}: region {k}: PTX not checked (no libdevice: scripts/setup.sh fetches it): {e}");
                return;
            }
            Err(e) => panic!("{name}: region {k}: PTX: {e}"),
        };
        let ptx = &g.ptx;
        assert!(ptx.contains(".entry kiln_gpu("), "{name}: region {k}: no entry\n{ptx}");
        assert!(
            !ptx.contains("llvm."),
            "{name}: region {k}: an LLVM intrinsic reached the PTX\n{ptx}"
        );
        snap += &format!(
            "======== region {k}: MLIR\n{}======== region {k}: PTX lines that matter\n{}",
            g.kernel.mlir,
            ptx_profile(ptx)
        );
        assemble(&format!("{name}-{k}"), ptx);
        // The fast tier (what a new region with little work gets first) compiles and
        // assembles too.
        let fast =
            fast_tier_ptx(r).unwrap_or_else(|e| panic!("{name}: region {k}: fast-tier PTX: {e}"));
        assert!(
            fast.contains(".entry kiln_gpu("),
            "{name}: region {k}: no entry in the fast tier\n{fast}"
        );
        assert!(
            !fast.contains("llvm."),
            "{name}: region {k}: an LLVM intrinsic reached the fast tier's PTX\n{fast}"
        );
        assemble(&format!("{name}-{k}-fast"), &fast);
    }
    for (k, r) in regions.iter().enumerate() {
        polynomial_ptx(name, k, r);
    }
    if kiln_compiler::codegen::gpu::libdevice_path().is_some() {
        insta::assert_snapshot!(format!("{name}__gpu"), snap);
    }
}

/// The PTX of `region`'s GPU kernel at the fast tier (sm_90).
pub(crate) fn fast_tier_ptx(
    region: &kiln_compiler::fusion::Region,
) -> Result<std::sync::Arc<str>, kiln_compiler::CompileError> {
    use kiln_compiler::codegen::Tier;
    let kernel = kiln_compiler::codegen::lower(
        region,
        &kiln_compiler::codegen::LowerOptions::gpu_tier(Tier::Fast),
    )?;
    Ok(crate::support::gpu_compile(kernel, Default::default(), Tier::Fast)?.ptx)
}

/// Assembles `ptx` for sm_90 with NVIDIA's ptxas when there is one (`crate::ptxas`), asserting
/// it is accepted.
fn assemble(label: &str, ptx: &str) {
    let Some(ptxas) = crate::ptxas() else { return };
    let dir = std::env::temp_dir().join(format!("kiln-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{label}.ptx"));
    std::fs::write(&file, ptx.as_bytes()).unwrap();
    let out = std::process::Command::new(&ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(dir.join(format!("{label}.cubin")))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{label}: ptxas: {}\n{ptx}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A region's kernel with math functions forced to the polynomial approximations (GPUs without
/// libdevice): no LLVM intrinsic (`llvm.exp` would abort NVPTX) and no libdevice call
/// (`__nv_sinf`) may remain in its PTX, which ptxas must accept; a float64 math function is a
/// typed error naming libdevice.
fn polynomial_ptx(name: &str, k: usize, r: &kiln_compiler::fusion::Region) {
    use kiln_compiler::codegen::{self, LowerOptions, MathLib, Tier};
    use kiln_compiler::toolchain::ptx::PtxTarget;
    let kernel = match codegen::lower(r, &LowerOptions::gpu().with_math(MathLib::Polynomial)) {
        Ok(kernel) => kernel,
        // float64 math (naming libdevice), or what the GPU path does not compile at all.
        Err(kiln_compiler::CompileError::Unsupported { .. }) => return,
        Err(e) => panic!("{name}: region {k}: polynomial lowering: {e}"),
    };
    let g = crate::support::gpu_compile(kernel, PtxTarget::default(), Tier::Optimized)
        .unwrap_or_else(|e| panic!("{name}: region {k}: polynomial PTX: {e}"));
    let ptx = &g.ptx;
    assert!(ptx.contains(".entry kiln_gpu("), "{name}: region {k}: no entry\n{ptx}");
    assert!(
        !ptx.contains("llvm."),
        "{name}: region {k}: an LLVM intrinsic reached the polynomial PTX\n{ptx}"
    );
    assert!(
        !ptx.contains("__nv_"),
        "{name}: region {k}: a libdevice call in the polynomial PTX\n{ptx}"
    );
    assemble(&format!("{name}-{k}-polynomial"), ptx);
}

/// The PTX lines that matter, counted by opcode (static counts): memory operations by state
/// space and width (`ld.global.nc.v4.f32`: vector loads), barriers, shuffles, atomics,
/// fences, calls; and the size of the local-memory frame (spills), if any.
fn ptx_profile(ptx: &str) -> String {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut local = Vec::new();
    for line in ptx.lines() {
        let t = line.trim();
        if t.starts_with(".local") {
            local.push(t.trim_end_matches(';').to_string());
            continue;
        }
        let mut words = t.split_whitespace();
        let mut op = words.next().unwrap_or("");
        if op.starts_with('@') {
            op = words.next().unwrap_or("");
        }
        let matters = ["ld.", "st.", "shfl", "bar.", "atom", "red.", "fence", "membar", "call"];
        if matters.iter().any(|m| op.starts_with(m)) && !op.starts_with("ld.param") {
            *counts.entry(op.trim_end_matches(';').to_string()).or_default() += 1;
        }
    }
    let mut out = String::new();
    for (op, n) in &counts {
        out += &format!("{n:>4}  {op}\n");
    }
    if local.is_empty() {
        out += "local memory: none\n";
    }
    for l in local {
        out += &format!("local memory: {l}\n");
    }
    out
}

fn kinds(e: &kiln::Explain) -> Vec<RegionKind> {
    e.report.regions.iter().map(|r| r.kind).collect()
}

#[track_caller]
fn assert_kernels(e: &kiln::Explain, n: usize) {
    assert_eq!(e.report.kernel_count(), n, "\n{}", e.report);
}

/// No region copies: no `contiguous` (views are index maps, not copies).
#[track_caller]
fn assert_no_copy(e: &kiln::Explain) {
    assert!(!e.regions.contains("contiguous"), "a copy:\n{}", e.regions);
}

// ------------------------------------------------------------------------------------------------
// Elementwise, broadcasting, views
// ------------------------------------------------------------------------------------------------

/// `((x - 1.5)**2 * 0.5 + sin(x)) * exp(-x*x)`: one region reading x once.
#[test]
fn ew_chain() {
    let x = f32s(&[64], 1);
    let y = ((&x - 1.5).power(2) * 0.5 + x.sin()) * (-(&x * &x)).exp();
    let e = program("ew_chain", &[&y]);
    assert_kernels(&e, 1);
    assert_eq!(e.report.regions[0].inputs.len(), 1, "x read once\n{}", e.report);
    assert_no_copy(&e);
}

/// A row vector and a column vector broadcast against a matrix: one region, no copy.
#[test]
fn broadcast_row_and_column() {
    let x = f32s(&[6, 8], 2);
    let row = f32s(&[8], 3);
    let col = f32s(&[6, 1], 4);
    let y = (&x * &row + &col).tanh();
    let e = program("broadcast_row_and_column", &[&y]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// An outer sum of a row and a column vector (no full-size input at all).
#[test]
fn broadcast_outer_sum() {
    let row = f32s(&[8], 5);
    let col = f32s(&[6], 6);
    let y = (&row.expand_dims(&[0]) + &col.expand_dims(&[1])).exp();
    let e = program("broadcast_outer_sum", &[&y]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// A transposed input plus a broadcast vector: one region, no copy.
#[test]
fn transposed_input() {
    let a = f32s(&[16, 8], 7);
    let b = f32s(&[16], 8);
    let y = a.t() + &b;
    let e = program("transposed_input", &[&y]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// A 3-D permuted input with a swapped-axes second input.
#[test]
fn permuted_3d_inputs() {
    let a = f32s(&[2, 3, 4], 9);
    let b = f32s(&[4, 2, 3], 10);
    let y = a.permute(&[2, 0, 1]) * b.swapaxes(1, 2).swapaxes(1, 2) - 1.0;
    let e = program("permuted_3d_inputs", &[&y]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// Negative-step slices of an input, `x[::-1, 1::2] * 2 + 1`: one region, no copy.
#[test]
fn negative_step_slice_input() {
    let x = f32s(&[6, 8], 11);
    let y = x.slice(&s![..;-1, 1..;2]) * 2.0 + 1.0;
    let e = program("negative_step_slice_input", &[&y]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// A flipped input added to a reversed-step slice of another.
#[test]
fn flip_and_reverse_slice() {
    let x = f32s(&[5, 4], 12);
    let z = f32s(&[10, 4], 13);
    let y = x.flip(Some(&[0])) - z.slice(&s![..;-2, ..]);
    let e = program("flip_and_reverse_slice", &[&y]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// A slice of an elementwise result: `(exp(x) + y)[1:5, ::-2]`.
#[test]
fn slice_of_elementwise() {
    let x = f32s(&[6, 8], 14);
    let y = f32s(&[6, 8], 15);
    let r = (x.exp() + &y).slice(&s![1..5, ..;-2]);
    let e = program("slice_of_elementwise", &[&r]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// `broadcast_to` then reshape of a flipped input (all views, one region).
#[test]
fn views_into_elementwise() {
    let x = f32s(&[4, 6], 16);
    let y = x.flip(None).reshape(&[2, 12]).broadcast_to(&[3, 2, 12]).sqrt().abs();
    let e = program("views_into_elementwise", &[&y]);
    assert_kernels(&e, 1);
    assert_no_copy(&e);
}

/// expand_dims then squeeze round trip around an elementwise op.
#[test]
fn expand_squeeze() {
    let x = f32s(&[4, 5], 17);
    let y = (x.expand_dims(&[0, 2]).sin() + 1.0).squeeze(None);
    let e = program("expand_squeeze", &[&y]);
    assert_kernels(&e, 1);
}

// ------------------------------------------------------------------------------------------------
// Reductions
// ------------------------------------------------------------------------------------------------

/// Softmax over rows: one region.
#[test]
fn softmax_rows() {
    let x = f32s(&[8, 16], 20);
    let y = kiln::nn::softmax(&x, -1).unwrap();
    let e = program("softmax_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// Softmax over columns (axis 0).
#[test]
fn softmax_cols() {
    let x = f32s(&[8, 16], 21);
    let y = kiln::nn::softmax(&x, 0).unwrap();
    let e = program("softmax_cols", &[&y]);
    assert_kernels(&e, 1);
}

/// Layer norm over rows: one region.
#[test]
fn layernorm_rows() {
    let x = f32s(&[8, 16], 22);
    let w = f32s(&[16], 23);
    let b = f32s(&[16], 24);
    let y = kiln::nn::layer_norm(&x, &w, &b, 1e-5).unwrap();
    let e = program("layernorm_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// Row L2 norms.
#[test]
fn l2norm_rows() {
    let x = f32s(&[8, 16], 25);
    let y = kiln::nn::l2norm_rows(&x).unwrap();
    let e = program("l2norm_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// Row-normalised: `x / l2norm(x)[:, None]`.
#[test]
fn l2normalize_rows() {
    let x = f32s(&[8, 16], 26);
    let n = kiln::nn::l2norm_rows(&x).unwrap();
    let y = &x / n.expand_dims(&[1]);
    let e = program("l2normalize_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// var and std over rows (ddof 0 and 1) as two outputs.
#[test]
fn var_std_rows() {
    let x = f32s(&[8, 16], 27);
    let v = x.var(1, 0);
    let sd = x.std(1, 1);
    let e = program("var_std_rows", &[&v, &sd]);
    assert_no_copy(&e);
}

/// var and std over columns.
#[test]
fn var_std_cols() {
    let x = f32s(&[16, 8], 28);
    let v = x.var(0, 0);
    let sd = x.std(0, 1);
    let e = program("var_std_cols", &[&v, &sd]);
    assert_no_copy(&e);
}

/// std over rows alone (one output): one region.
#[test]
fn std_rows() {
    let x = f64s(&[8, 16], 29);
    let y = x.std(1, 0);
    let e = program("std_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// Centering with a keepdims mean broadcast back: `x - mean(x, axis=1, keepdims=True)`.
#[test]
fn center_rows() {
    let x = f32s(&[8, 16], 30);
    let y = &x - x.mean(axis(1).keepdims());
    let e = program("center_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// Centering columns: `x - mean(x, axis=0, keepdims=True)`.
#[test]
fn center_cols() {
    let x = f32s(&[8, 16], 31);
    let y = &x - x.mean(axis(0).keepdims());
    let e = program("center_cols", &[&y]);
    assert_kernels(&e, 1);
}

/// argmax over rows.
#[test]
fn argmax_rows() {
    let x = f32s(&[8, 16], 32);
    let y = x.argmax(1);
    let e = program("argmax_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// argmin over columns of an elementwise result, and the flat argmax.
#[test]
fn argmin_cols_and_flat_argmax() {
    let x = f32s(&[8, 16], 33);
    let a = (&x * &x - &x).argmin(0);
    let b = x.argmax(kiln::all_axes());
    let e = program("argmin_cols_and_flat_argmax", &[&a, &b]);
    assert_no_copy(&e);
}

/// Leaky relu by `where`, then `clip`.
#[test]
fn where_clip() {
    let x = f32s(&[8, 16], 34);
    let y = where_(x.greater(0.0), &x, &x * 0.1).clip(-0.5, 1.5);
    let e = program("where_clip", &[&y]);
    assert_kernels(&e, 1);
}

/// logsumexp over rows.
#[test]
fn logsumexp_rows() {
    let x = f32s(&[8, 16], 35);
    let y = kiln::nn::logsumexp(&x, 1).unwrap();
    let e = program("logsumexp_rows", &[&y]);
    assert_kernels(&e, 1);
}

/// A k-means assignment step: squared distances of 64 points to 5 centroids, argmin.
#[test]
fn kmeans_assign() {
    let x = f32s(&[64, 4], 36);
    let c = f32s(&[5, 4], 37);
    let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
    let e = program("kmeans_assign", &[&labels]);
    assert_kernels(&e, 1);
}

/// The k-means centroid update from held labels, by masked sums: one-hot mask `labels == k`,
/// `sum(mask[:, :, None] * x[:, None, :], 0) / max(count, 1)`.
#[test]
fn kmeans_update() {
    let x = f32s(&[64, 4], 38);
    let labels = i32s(&[64], 0, 5, 39).astype(DType::Int64);
    labels.eval();
    let onehot = labels.expand_dims(&[1]).equal(kiln::arange(5).expand_dims(&[0]));
    let sums = (onehot.astype(DType::Float32).expand_dims(&[2]) * x.expand_dims(&[1])).sum(0);
    let counts = onehot.sum(0);
    let centroids = &sums / counts.maximum(1).astype(DType::Float32).expand_dims(&[1]);
    let e = program("kmeans_update", &[&centroids]);
    assert_no_copy(&e);
}

/// A whole k-means step: assignment, then the update from those labels.
#[test]
fn kmeans_step() {
    let x = f32s(&[64, 4], 40);
    let c = f32s(&[5, 4], 41);
    let labels = (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2).argmin(1);
    let onehot = labels.expand_dims(&[1]).equal(kiln::arange(5).expand_dims(&[0]));
    let sums = (onehot.astype(DType::Float32).expand_dims(&[2]) * x.expand_dims(&[1])).sum(0);
    let counts = onehot.sum(0);
    let centroids = &sums / counts.maximum(1).astype(DType::Float32).expand_dims(&[1]);
    let e = program("kmeans_step", &[&labels, &centroids]);
    assert_no_copy(&e);
}

/// A full reduction broadcast back into elementwise work: `x / sum(|x|)`.
#[test]
fn global_normalize() {
    let x = f32s(&[8, 16], 42);
    let y = &x / x.abs().sum(kiln::all_axes());
    let e = program("global_normalize", &[&y]);
    // A reduction over every axis does not take a full-shape epilogue (one work item would do
    // all of it): the sum, then a parallel elementwise kernel.
    assert_kernels(&e, 2);
}

/// A column reduction (no keepdims) broadcast back: `x * max(|x|, axis=0)`, then a row sum.
#[test]
fn reduction_broadcast_back() {
    let x = f32s(&[8, 16], 43);
    let scaled = &x / x.abs().max(0);
    let y = scaled.exp().sum(1);
    let e = program("reduction_broadcast_back", &[&y]);
    assert_no_copy(&e);
}

/// Two reductions of the same input: sum and max over rows, siblings in one region.
#[test]
fn sibling_sum_max() {
    let x = f32s(&[8, 16], 44);
    let a = x.sum(1);
    let b = x.max(1);
    let e = program("sibling_sum_max", &[&a, &b]);
    assert_kernels(&e, 1);
    assert_eq!(e.report.regions[0].outputs.len(), 2, "{}", e.report);
}

/// A max of a max over different axes: one reduction after simplification.
#[test]
fn reduce_of_reduce() {
    let x = f32s(&[3, 4, 5], 45);
    let y = x.max(2).max(0);
    let e = program("reduce_of_reduce", &[&y]);
    assert_kernels(&e, 1);
}

/// A costly elementwise value read by a row sum and a column sum.
#[test]
fn shared_costly_value_two_reductions() {
    let x = f32s(&[8, 16], 46);
    let t = ((x.sin() * x.cos() + x.exp()).tanh() * 3.0 - x.abs()).sqrt() + x.square().log1p();
    let a = t.sum(0);
    let b = t.sum(1);
    let e = program("shared_costly_value_two_reductions", &[&a, &b]);
    assert_no_copy(&e);
}

/// Integer mean (float64) and an integer sum (int64).
#[test]
fn integer_mean_and_sum() {
    let a = i32s(&[6, 8], -50, 50, 47);
    let m = a.mean(1);
    let s = a.sum(0);
    let e = program("integer_mean_and_sum", &[&m, &s]);
    assert_no_copy(&e);
}

// ------------------------------------------------------------------------------------------------
// Integers, bools, casts
// ------------------------------------------------------------------------------------------------

/// Integer arithmetic with casts: int8 promoted to int32, floor division and remainder, a cast to
/// float64 and a sqrt.
#[test]
fn integer_arith_casts() {
    let a = i32s(&[6, 8], -100, 100, 50);
    let b = i8s(&[8], -10, 10, 51);
    let q = (&a * 3 + &b).floor_divide(4) % 5;
    let y = q.astype(DType::Float64) + a.abs().sqrt();
    let e = program("integer_arith_casts", &[&y]);
    assert_kernels(&e, 1);
}

/// Bitwise integer ops and shifts.
#[test]
fn integer_bitwise() {
    let a = i32s(&[6, 8], -1000, 1000, 52);
    let b = i32s(&[6, 8], 0, 8, 53);
    let y = (&a & 0xF) ^ (&b << 2) | a.invert() >> &b;
    let e = program("integer_bitwise", &[&y]);
    assert_kernels(&e, 1);
}

/// Bool logic: comparisons, and/or/xor/not, isnan, then any/all over rows.
#[test]
fn bool_logic() {
    let x = f32s(&[6, 8], 54);
    let y = f32s(&[6, 8], 55);
    let m = bools(&[6, 8], 56);
    let c = (x.greater(0.0) & y.less(0.5).logical_not()) | (m.logical_xor(x.isnan()));
    let any = c.any(1);
    let all = c.all(1);
    let e = program("bool_logic", &[&any, &all]);
    assert_kernels(&e, 1);
}

/// Casts chain f32 → f64 → f32: the round trip is exact, so it folds away.
#[test]
fn cast_chain_exact() {
    let x = f32s(&[4, 8], 57);
    let y = x.astype(DType::Float64).astype(DType::Float32) + 1.0;
    let e = program("cast_chain_exact", &[&y]);
    assert_kernels(&e, 1);
}

/// Casts chain f64 → f32 → f64: lossy, must stay.
#[test]
fn cast_chain_lossy() {
    let x = f64s(&[4, 8], 58);
    let y = x.astype(DType::Float32).astype(DType::Float64) - &x;
    let e = program("cast_chain_lossy", &[&y]);
    assert_kernels(&e, 1);
}

/// Integer casts chain: int8 → int32 → int64 composes to one cast; int32 → int8 → int32 wraps.
#[test]
fn cast_chain_integers() {
    let a = i8s(&[16], -100, 100, 59);
    let b = i32s(&[16], -1000, 1000, 60);
    let y = a.astype(DType::Int32).astype(DType::Int64)
        + b.astype(DType::Int8).astype(DType::Int32).astype(DType::Int64);
    let e = program("cast_chain_integers", &[&y]);
    assert_kernels(&e, 1);
}

/// float16 arithmetic (computed in float16 per op).
#[test]
fn float16_chain() {
    let x = f32s(&[4, 8], 61).astype(DType::Float16);
    x.eval();
    let y = (&x * 0.5 + 1.0).exp().sum(1);
    let e = program("float16_chain", &[&y]);
    assert_kernels(&e, 1);
}

// ------------------------------------------------------------------------------------------------
// Copies
// ------------------------------------------------------------------------------------------------

/// concatenate of two elementwise results, then a row sum: one kernel (each operand's producer
/// computed in its branch of the join).
#[test]
fn concatenate_fuses() {
    let x = f32s(&[3, 4], 62);
    let y = f32s(&[2, 4], 63);
    let c = kiln::concatenate(&[&x.exp(), &(&y * 2.0)], 0);
    let z = c.sum(1);
    let e = program("concatenate_fuses", &[&z]);
    assert_kernels(&e, 1);
}

/// stack of an elementwise result and an input, then elementwise work: one kernel.
#[test]
fn stack_fuses() {
    let a = f32s(&[4, 5], 64);
    let b = f32s(&[4, 5], 65);
    let st = kiln::stack(&[&(&a + 1.0), &b], 1);
    let y = st * 3.0;
    let e = program("stack_fuses", &[&y]);
    assert_kernels(&e, 1);
}

/// ascontiguousarray of a transposed elementwise result inside an expression: one kernel.
#[test]
fn contiguous_fuses() {
    let a = f32s(&[4, 5], 66);
    let y = (a.t() * 2.0).ascontiguousarray() + 1.0;
    let e = program("contiguous_fuses", &[&y]);
    assert_kernels(&e, 1);
}

// ------------------------------------------------------------------------------------------------
// Simplification
// ------------------------------------------------------------------------------------------------

/// `-(-x) + y` = `x + y`.
#[test]
fn double_negation() {
    let x = f32s(&[4, 8], 70);
    let y = f32s(&[4, 8], 71);
    let z = -(-&x) + &y;
    let e = program("double_negation", &[&z]);
    assert_kernels(&e, 1);
}

/// `x * 1 + y * 1.0 - z / 1.0`: the identities fold away.
#[test]
fn multiply_by_one() {
    let x = f32s(&[4, 8], 72);
    let y = f32s(&[4, 8], 73);
    let z = f32s(&[4, 8], 74);
    let w = &x * 1 + &y * 1.0 - &z / 1.0;
    let e = program("multiply_by_one", &[&w]);
    assert_kernels(&e, 1);
}

/// `x * x` = `square(x)`.
#[test]
fn x_times_x_is_square() {
    let x = f32s(&[4, 8], 75);
    let y = &x * &x + 1.0;
    let e = program("x_times_x_is_square", &[&y]);
    assert_kernels(&e, 1);
}

/// `reshape(reshape(x))` = one reshape.
#[test]
fn reshape_reshape() {
    let x = f32s(&[4, 6], 76);
    let y = x.reshape(&[2, 12]).reshape(&[3, 8]) + 1.0;
    let e = program("reshape_reshape", &[&y]);
    assert_kernels(&e, 1);
}

/// `permute(permute(x))` composing to the identity.
#[test]
fn permute_permute() {
    let x = f32s(&[2, 3, 4], 77);
    let y = x.permute(&[1, 2, 0]).permute(&[2, 0, 1]) * 2.0;
    let e = program("permute_permute", &[&y]);
    assert_kernels(&e, 1);
}

/// Constants folded: `full(2) * 3 - 1` is a constant 5; an index ramp stays.
#[test]
fn constants_folded() {
    let x = f32s(&[4, 8], 78);
    let c = kiln::full(&[4, 8], 2.0, DType::Float32) * 3.0 - 1.0;
    let r = kiln::arange(8).astype(DType::Float32) * 0.5;
    let y = &x * &c + &r;
    let e = program("constants_folded", &[&y]);
    assert_kernels(&e, 1);
}

/// `where` with a constant condition folds to one branch.
#[test]
fn where_constant_condition() {
    let x = f32s(&[4, 8], 79);
    let y = f32s(&[4, 8], 80);
    let z = where_(true, x.exp(), y.sin()) + 1.0;
    let e = program("where_constant_condition", &[&z]);
    assert_kernels(&e, 1);
}

/// A graph output that is just an input: no region at all.
#[test]
fn identity_output() {
    let x = f32s(&[4, 8], 81);
    let y = x.astype(DType::Float64).astype(DType::Float32);
    let e = program("identity_output", &[&y]);
    assert_kernels(&e, 0);
}

// ------------------------------------------------------------------------------------------------
// Library calls
// ------------------------------------------------------------------------------------------------

/// `relu(a.T @ b + bias)`: the GEMM reads `a` through its transpose (strides, no copy kernel), and
/// the bias and relu are absorbed into its call as a cuBLASLt `bias_relu` epilogue: one region.
#[test]
fn matmul_bias_relu() {
    let a = f32s(&[5, 4], 82);
    let b = f32s(&[5, 6], 83);
    let bias = f32s(&[6], 84);
    let y = (&a.t().matmul(&b) + &bias).maximum(0.0f32);
    let e = program("matmul_bias_relu", &[&y]);
    assert_eq!(kinds(&e), vec![RegionKind::Vendor]);
    assert_eq!(
        (e.report.epilogues[0].kernel, e.report.epilogues[0].lt),
        (None, Some(kiln::LtEpilogue::BiasRelu))
    );
}

/// `abs(fft(w * z))`: the window product is one kernel, the FFT one library call, the magnitude
/// one kernel after it.
#[test]
fn fft_magnitude() {
    let w = f32s(&[16], 85);
    let z = f32s(&[3, 16], 86).astype(DType::Complex64);
    let y = kiln::fft::fft(&(&w * &z), None, -1, "backward").abs();
    let e = program("fft_magnitude", &[&y]);
    assert_eq!(
        kinds(&e),
        vec![RegionKind::Elementwise, RegionKind::Vendor, RegionKind::Elementwise]
    );
}

/// Reductions of many elements into few results are split across GPU blocks (the two-stage
/// tree of `codegen::GpuSplit`): the kernel counts its blocks in with an atomic add and reads
/// the partials with volatile loads; the PTX assembles. Small ones are not split.
#[test]
fn split_gpu_reductions() {
    let x = f32s(&[1 << 20], 1);
    let xd = f64s(&[1 << 18], 2);
    let m = f32s(&[4, 1 << 17], 3);
    let small = f32s(&[1000], 4);
    let cases: Vec<(&str, Array, bool)> = vec![
        ("split_sum", x.sum(None), true),
        ("split_mean_max", &x.mean(None) + &x.max(None), true),
        ("split_argmax", x.argmax(None), true),
        ("split_sum_f64", xd.sum(None), true),
        ("split_rows", m.sum(kiln::axis(1)), true),
        ("split_columns", f32s(&[1 << 14, 64], 5).sum(kiln::axis(0)), true),
        ("split_columns_argmax", f32s(&[1 << 14, 40], 6).argmax(kiln::axis(0)), true),
        ("not_split_small", small.sum(None), false),
    ];
    for (name, y, split) in &cases {
        let l = kiln::lower(&[y]);
        let p = kiln_compiler::fusion::partition(&l.graph);
        assert_eq!(p.regions.len(), 1, "{name}");
        let k = kiln_compiler::codegen::lower(
            &p.regions[0],
            &kiln_compiler::codegen::LowerOptions::gpu(),
        )
        .unwrap();
        assert_eq!(k.gpu_split.is_some(), *split, "{name}: {:?}", k.gpu_split);
        assert_eq!(k.mlir.contains("llvm.atomicrmw add"), *split, "{name}");
        if *split {
            assert!(k.mlir.contains("llvm.load volatile"), "{name}");
        }
        if std::env::var("KILN_TEST_VERBOSE").is_ok() {
            let ptx = kiln_compiler::codegen::gpu::ptx_text(&p.regions[0], Default::default());
            eprintln!("{name}:\n{}\n{}", k.mlir, ptx.unwrap_or_else(|e| e.to_string()));
        }
        gpu_kernels(name, &p.regions);
    }
}
