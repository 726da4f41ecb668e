//! Library ops on the host: `matmul`/`dot` (the `gemm` crate), `kiln::fft` (`rustfft`,
//! `realfft`) and `kiln::random` (`rand`).
//!
//! - NumPy's outputs (`tests/fixtures/vendor_cases.txt`, from `make_fixtures.py`) against kiln's,
//!   one test per case: batch broadcasting, 1-D operands, transposed and sliced views, every
//!   NumPy dtype; every FFT function with every norm, `n`/`s` cropping and padding, axes;
//! - the host libraries against the reference evaluator (bfloat16, which NumPy lacks, strided
//!   operands of every kind, lengths that take each FFT algorithm);
//! - fusion: operand views inside the library call's region, bias/relu consumers of a product
//!   absorbed into its GEMM call (cuBLASLt's epilogues; the host applies them after its GEMM),
//!   other elementwise consumers fused into one kernel after it, and the report's epilogues;
//! - typed errors; random numbers: reproducibility and moments.

use std::collections::HashMap;
use std::sync::OnceLock;

use kiln::fft::{self, FftNorm};
use kiln::ir::IrError;
use kiln::{s, Array, DType, Error, HostArray, LtEpilogue};
use kiln_compiler::fusion::RegionKind;
use kiln_compiler::pipeline::{compile, Compiled, Options};
use kiln_compiler::vendor::{GemmEpilogue, VendorCall};

use crate::numpy_fixtures::{assert_same_cases, compare, load_manifest, run_case_in, Case, Tol};

// ------------------------------------------------------------------------------------------------
// NumPy fixtures
// ------------------------------------------------------------------------------------------------

fn manifest() -> &'static HashMap<String, Case> {
    static M: OnceLock<HashMap<String, Case>> = OnceLock::new();
    M.get_or_init(|| load_manifest("vendor_cases.txt"))
}

macro_rules! cases {
    ($($($name:ident),+ => $f:expr;)*) => {
        $($(
            #[test]
            fn $name() {
                run_case_in(manifest(), stringify!($name), $f)
            }
        )+)*
        /// Every case that has a closure here.
        const CASES: &[&str] = &[$($(stringify!($name)),+),*];
    };
}

#[test]
fn every_vendor_case_has_a_closure_and_back() {
    assert_same_cases(manifest(), CASES);
}

#[test]
fn the_fixture_harness_rejects_wrong_products_and_transforms() {
    let fails = |name: &str, f: fn(&[Array]) -> Array| {
        let r = std::panic::catch_unwind(|| run_case_in(manifest(), name, f));
        assert!(r.is_err(), "case {name} accepted a wrong answer");
    };
    fails("matmul_batch_f32", |a| &a[0].matmul(&a[1]) * 1.0001);
    fails("matmul_t_f64", |a| a[0].t().matmul(&a[1].flip(Some(&[-1]))));
    fails("fft_ortho_c128", |a| fft::fft(&a[0], None, -1, "backward"));
    fails("irfft_odd_n_c128", |a| fft::irfft(&a[0], Some(8), -1, "backward").slice(&s![.., ..7]));
}

cases! {
    matmul_batch_f16, matmul_batch_f32, matmul_batch_f64, matmul_batch_c64, matmul_batch_c128,
        matmul_vec_left_f16, matmul_vec_left_f32, matmul_vec_left_f64, matmul_vec_left_c64, matmul_vec_left_c128,
        matmul_vec_right_f16, matmul_vec_right_f32, matmul_vec_right_f64, matmul_vec_right_c64, matmul_vec_right_c128,
        matmul_i8_wraps, matmul_i32_wraps, matmul_bool => |a| a[0].matmul(&a[1]);
    matmul_t_f16, matmul_t_f32, matmul_t_f64, matmul_t_c64, matmul_t_c128 => |a| a[0].t().matmul(&a[1]);
    matmul_vec_vec_f16, matmul_vec_vec_f32, matmul_vec_vec_f64, matmul_vec_vec_c64, matmul_vec_vec_c128
        => |a| kiln::matmul(&a[0], &a[0].flip(None));
    matmul_sliced_f64 => |a| a[0].slice(&s![.., .., ..;-1, 1..]).matmul(&a[1].slice(&s![..;2, 1.., ..;-2]));
    matmul_bt_f32 => |a| a[0].matmul(&a[0].permute(&[0, 2, 1]));
    matmul_u8_t => |a| a[0].matmul(&a[0].t());
    matmul_i64_t => |a| a[0].t().matmul(&a[0]);
    matmul_i8_f32_promotes => |a| a[1].t().slice(&s![.., ..6]).matmul(&a[0].slice(&s![..6]));
    dot_nd_f64, dot_vec_vec_f32 => |a| a[0].dot(a.last().unwrap());
    dot_nd_vec_f64 => |a| kiln::dot(&a[0], &a[1].slice(&s![..4]));
    dot_scalar_f64 => |a| a[0].dot(&Array::scalar(2.5f64));

    fft_backward_c128 => |a| fft::fft(&a[0], None, -1, "backward");
    fft_ortho_c128 => |a| fft::fft(&a[0], None, -1, "ortho");
    fft_forward_c128 => |a| fft::fft(&a[0], None, -1, FftNorm::Forward);
    ifft_backward_c128 => |a| fft::ifft(&a[0], None, -1, "backward");
    ifft_ortho_c128 => |a| fft::ifft(&a[0], None, -1, "ortho");
    ifft_forward_c128 => |a| fft::ifft(&a[0], None, -1, "forward");
    rfft_backward_f64 => |a| fft::rfft(&a[0], None, -1, "backward");
    rfft_ortho_f64 => |a| fft::rfft(&a[0], None, -1, "ortho");
    rfft_forward_f64 => |a| fft::rfft(&a[0], None, -1, "forward");
    irfft_backward_c128 => |a| fft::irfft(&a[0], None, -1, "backward");
    irfft_ortho_c128 => |a| fft::irfft(&a[0], None, -1, "ortho");
    irfft_forward_c128 => |a| fft::irfft(&a[0], None, -1, "forward");
    fft2_backward_c64 => |a| fft::fft2(&a[0], None, &[-2, -1], "backward");
    fft2_ortho_c64 => |a| fft::fft2(&a[0], None, &[-2, -1], "ortho");
    fft2_forward_c64 => |a| fft::fft2(&a[0], None, &[-2, -1], "forward");
    ifft2_backward_c128 => |a| fft::ifft2(&a[0], None, &[-2, -1], "backward");
    ifft2_ortho_c128 => |a| fft::ifft2(&a[0], None, &[-2, -1], "ortho");
    ifft2_forward_c128 => |a| fft::ifft2(&a[0], None, &[-2, -1], "forward");
    fftn_backward_c128 => |a| fft::fftn(&a[0], None, None, "backward");
    fftn_ortho_c128 => |a| fft::fftn(&a[0], None, None, "ortho");
    fftn_forward_c128 => |a| fft::fftn(&a[0], None, None, "forward");
    ifftn_backward_c128 => |a| fft::ifftn(&a[0], None, None, "backward");
    ifftn_ortho_c128 => |a| fft::ifftn(&a[0], None, None, "ortho");
    ifftn_forward_c128 => |a| fft::ifftn(&a[0], None, None, "forward");
    rfftn_backward_f64 => |a| fft::rfftn(&a[0], None, None, "backward");
    rfftn_ortho_f64 => |a| fft::rfftn(&a[0], None, None, "ortho");
    rfftn_forward_f64 => |a| fft::rfftn(&a[0], None, None, "forward");
    irfftn_backward_c128 => |a| fft::irfftn(&a[0], None, None, "backward");
    irfftn_ortho_c128 => |a| fft::irfftn(&a[0], None, None, "ortho");
    irfftn_forward_c128 => |a| fft::irfftn(&a[0], None, None, "forward");
    fft_n_crop_axis0_c128 => |a| fft::fft(&a[0], Some(4), 0, "backward");
    fft_n_pad_axis0_c64 => |a| fft::fft(&a[0], Some(9), 0, "backward");
    ifft_n_pad_c128 => |a| fft::ifft(&a[0], Some(13), -1, "backward");
    fft_f32_gives_c64 => |a| fft::fft(&a[0], None, -1, "backward");
    fft_i32_gives_c128 => |a| fft::fft(&a[0], None, 0, "backward");
    rfft_odd_n_f64 => |a| fft::rfft(&a[0], Some(7), -1, "backward");
    rfft_pad_axis0_f32 => |a| fft::rfft(&a[0], Some(8), 0, "backward");
    rfft_f16_gives_c64, rfft_i32_gives_c128 => |a| fft::rfft(&a[0], None, -1, "backward");
    irfft_odd_n_c128 => |a| fft::irfft(&a[0], Some(7), -1, "backward");
    irfft_pad_axis0_c64 => |a| fft::irfft(&a[0], Some(15), 0, "ortho");
    irfft_f64_input, irfft_f16_gives_f16 => |a| fft::irfft(&a[0], None, -1, "backward");
    fftn_s_axes_c128 => |a| fft::fftn(&a[0], Some(&[3, 6]), Some(&[2, 0]), "backward");
    fftn_s_only_c128 => |a| fft::fftn(&a[0], Some(&[2, 7]), None, "backward");
    rfftn_axes_10_f64 => |a| fft::rfftn(&a[0], None, Some(&[2, 0]), "backward");
    rfft2_s_f32 => |a| fft::rfft2(&a[0], Some(&[4, 9]), &[-2, -1], "backward");
    irfftn_s_axes_c128 => |a| fft::irfftn(&a[0], Some(&[5, 3]), Some(&[1, 2]), "ortho");
    irfft2_c128 => |a| fft::irfft2(&a[0], None, &[-2, -1], "backward");
    ifft2_axes_20_c128 => |a| fft::ifft2(&a[0], None, &[2, 0], "backward");
}

// ------------------------------------------------------------------------------------------------
// The host libraries against the reference evaluator
// ------------------------------------------------------------------------------------------------

fn randn(shape: &[usize], seed: u64, dtype: DType) -> Array {
    let x = kiln::random::default_rng(Some(seed)).standard_normal(shape, DType::Float64);
    if dtype.is_complex() {
        let y = kiln::random::default_rng(Some(seed + 1000)).standard_normal(shape, DType::Float64);
        let i = Array::scalar(num_complex::Complex64::new(0.0, 1.0));
        (&x + &y * &i).astype(dtype).eval().clone()
    } else if dtype.is_integer() || dtype.is_bool() {
        (&x * 40.0).astype(dtype).eval().clone()
    } else {
        x.astype(dtype).eval().clone()
    }
}

/// Tolerance of a library result against the evaluator's (which computes in f64 and rounds
/// once), relative to the largest part of the result.
fn tolerance(d: DType) -> Tol {
    match d {
        DType::Float16 => Tol::Norm(2e-3),
        DType::BFloat16 => Tol::Norm(1.6e-2),
        DType::Float32 | DType::Complex64 => Tol::Norm(2e-6),
        DType::Float64 | DType::Complex128 => Tol::Norm(1e-13),
        _ => Tol::Exact,
    }
}

/// Compiles the arrays' graph, runs its schedule through the host libraries, and checks the
/// results against the reference evaluator on the unfused graph. Returns the plan.
fn library_matches_evaluator(outs: &[&Array]) -> Compiled {
    let lowered = kiln::lower(outs);
    let plan = compile(&lowered.graph, &Options::from_env()).unwrap();
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let got = kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Libraries).unwrap();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()), "output {k}");
        if let Err(msg) = compare(w, g, tolerance(w.dtype()), true) {
            panic!("output {k} ({} {:?}): {msg}\n{}", w.dtype(), w.shape(), plan.report());
        }
    }
    plan
}

#[test]
fn matmul_of_every_dtype_matches_the_evaluator() {
    for dt in DType::ALL {
        let a = randn(&[2, 1, 3, 7], 1, dt);
        let b = randn(&[4, 7, 5], 2, dt);
        let kt = randn(&[7, 3], 3, dt);
        let outs = [
            a.matmul(&b),
            kt.t().matmul(&b),
            a.matmul(&b.slice(&s![0, .., 2])),
            b.slice(&s![1..3, 0]).dot(&b.permute(&[0, 2, 1])),
        ];
        let refs: Vec<&Array> = outs.iter().collect();
        library_matches_evaluator(&refs);
    }
}

#[test]
fn strided_operands_reach_the_gemm_without_a_copy() {
    let a = randn(&[9, 6], 4, DType::Float32);
    let b = randn(&[3, 9, 5], 5, DType::Float32);
    let cases = [
        a.t().matmul(&b),                                                    // transposed
        a.slice(&s![..;-2, 1..]).t().matmul(&b.slice(&s![.., ..;2, ..;-1])), // sliced, flipped
        a.t().broadcast_to(&[4, 3, 6, 9]).matmul(&b),                        // broadcast batch
        a.t().expand_dims(&[0]).matmul(&b.slice(&s![..1])),                  // expand_dims
    ];
    for y in &cases {
        let plan = library_matches_evaluator(&[y]);
        let report = plan.report();
        assert_eq!(report.kernel_count(), 1, "{report}");
        assert_eq!(report.regions[0].kind, RegionKind::Vendor, "{report}");
        assert!(report.regions[0].ops.len() > 1, "the views are in the call's region: {report}");
    }
    // A reshape the strides cannot express (a transposed view flattened) is copied first.
    let y = a.t().reshape(&[3, 18]).matmul(&randn(&[18, 2], 6, DType::Float32));
    let report = library_matches_evaluator(&[&y]).report();
    assert_eq!(report.kernel_count(), 2, "{report}");
    // Products of a constant operand stay correct (the constant is materialised for the call).
    let y = a.matmul(&kiln::ones(&[6, 2], DType::Float32));
    library_matches_evaluator(&[&y]);
}

#[test]
fn batched_and_large_products_match_the_evaluator() {
    // Many small products (one task each) and one product large enough for gemm's threads.
    let a = randn(&[64, 5, 6], 7, DType::Float64);
    let b = randn(&[6, 4], 8, DType::Float64);
    library_matches_evaluator(&[&a.matmul(&b)]);
    let a = randn(&[96, 80], 9, DType::Float32);
    let b = randn(&[80, 72], 10, DType::Float32);
    library_matches_evaluator(&[&a.matmul(&b), &a.t().t().matmul(&b.t().t())]);
    // Empty extents: (2, 0) @ (0, 3) is zeros; (0, 4) @ (4, 5) is empty.
    let z = randn(&[2, 0], 11, DType::Float32).matmul(&randn(&[0, 3], 12, DType::Float32));
    assert_eq!(z.to_vec::<f32>(), vec![0.0; 6]);
    assert_eq!(
        randn(&[0, 4], 13, DType::Int32).matmul(&randn(&[4, 5], 14, DType::Int32)).shape(),
        &[0, 5]
    );
}

/// Integer and bool products are no library call: the pipeline makes each a reduction
/// (`kiln_compiler::int_matmul`) that kiln's code generation compiles, one kernel, wrapping as
/// NumPy's integer matmul does (checked against plain wrapping arithmetic and the evaluator).
#[test]
fn integer_matmul_is_a_generated_reduction_that_wraps() {
    // int32 sums past 2^31 and int8 products past 127 wrap.
    let a = Array::from_vec(vec![1i32 << 30, 3, -7, i32::MAX, 5, 1 << 20], &[2, 3]);
    let b = Array::from_vec(vec![3i32, 1, -2, 1 << 12, 9, 4], &[3, 2]);
    let (av, bv) = (a.to_vec::<i32>(), b.to_vec::<i32>());
    let want: Vec<i32> = (0..4)
        .map(|ij| {
            (0..3).fold(0i32, |s, k| {
                s.wrapping_add(av[ij / 2 * 3 + k].wrapping_mul(bv[k * 2 + ij % 2]))
            })
        })
        .collect();
    let y = a.matmul(&b);
    let mlir = kiln::kernel_code(&[&y], kiln::CodeStage::HostMlir).unwrap();
    assert!(mlir.contains("func.func"), "no generated kernel:\n{mlir}");
    assert_eq!(y.to_vec::<i32>(), want);
    let p8 =
        Array::from_vec(vec![100i8, 100], &[1, 2]).matmul(&Array::from_vec(vec![2i8, 2], &[2, 1]));
    assert_eq!(p8.to_vec::<i8>(), vec![-112]); // 400 - 512
                                               // Every integer width, bools (or-of-ands), batch broadcasting, 1-D operands, views.
    let x = randn(&[2, 1, 3, 7], 80, DType::Int64);
    let w = randn(&[4, 7, 5], 81, DType::Int64);
    for dt in [
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::UInt32,
        DType::Bool,
    ] {
        let (x, w) = (x.astype(dt), w.astype(dt));
        let outs = [
            x.matmul(&w),
            w.slice(&s![1, .., 2]).matmul(&w.slice(&s![.., ..;-1, ..])),
            kiln::dot(&w.slice(&s![0, 0]), &w.slice(&s![2, 0])),
        ];
        for (i, y) in outs.iter().enumerate() {
            let report = kiln::explain(&[y]).report;
            assert!(report.regions.iter().all(|r| r.kind != RegionKind::Vendor), "{dt}: {report}");
            assert_eq!(report.regions[0].kind, RegionKind::Reduction, "{dt}: {report}");
            // One kernel; a 1-D operand's removed axis (a squeeze after the sum) is a second.
            assert!(report.kernel_count() <= if i == 0 { 1 } else { 2 }, "{dt}: {report}");
        }
        let refs: Vec<&Array> = outs.iter().collect();
        library_matches_evaluator(&refs);
        // Materialised through the code generator (the default CPU path).
        let lowered = kiln::lower(&refs);
        let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
        let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
        for (y, w) in outs.iter().zip(&want) {
            compare(w, &y.try_to_host().unwrap(), Tol::Exact, true)
                .unwrap_or_else(|m| panic!("{dt}: {m}"));
        }
    }
}

#[test]
fn ffts_match_the_evaluator() {
    // Lengths for rustfft's radix, mixed-radix, Rader and Bluestein paths and the evaluator's.
    for &n in &[1usize, 2, 7, 12, 64, 97, 360, 1000, 1024] {
        let z = randn(&[3, n], 20 + n as u64, DType::Complex128);
        let r = randn(&[n, 3], 21 + n as u64, DType::Float64);
        let outs = [
            fft::fft(&z, None, -1, "backward"),
            fft::ifft(&z.t(), None, 0, "ortho"),
            fft::rfft(&r, None, 0, "forward"),
            fft::irfft(&z, Some(2 * n + 1), -1, "backward"),
            fft::fft(&z.astype(DType::Complex64), None, -1, "backward"),
        ];
        let refs: Vec<&Array> = outs.iter().collect();
        library_matches_evaluator(&refs);
    }
}

#[test]
fn multi_axis_and_strided_ffts_match_the_evaluator() {
    let z = randn(&[4, 6, 10], 30, DType::Complex64);
    let r = randn(&[6, 5, 8], 31, DType::Float32);
    let outs = [
        fft::fftn(&z.slice(&s![..;-1, 1.., ..;2]), None, None, "ortho"),
        fft::ifftn(&z.permute(&[2, 0, 1]), None, Some(&[0, 2]), "backward"),
        fft::rfftn(&r.t(), None, Some(&[2, 0]), "backward"),
        fft::irfftn(&z, Some(&[6, 9]), Some(&[2, 1]), "forward"),
        fft::rfft(&r.astype(DType::Float16), None, 1, "backward"),
        fft::rfft(&r.astype(DType::BFloat16), None, -1, "backward"),
        fft::irfft(&z.astype(DType::Complex128), Some(18), -1, "ortho"),
    ];
    let refs: Vec<&Array> = outs.iter().collect();
    let plan = library_matches_evaluator(&refs);
    // Each transform is one library call reading its operand's views.
    let report = plan.report();
    let vendor = report.regions.iter().filter(|r| r.kind == RegionKind::Vendor).count();
    assert_eq!(vendor, outs.len(), "{report}");
}

#[test]
fn materialisation_uses_the_libraries_and_reuses_plans_across_sizes() {
    // Through the public path (plan cache included): rfft of lengths 8 then 10, a matmul chain.
    for n in [8usize, 10, 8] {
        let x = randn(&[2, n], 40 + n as u64, DType::Float64);
        let y = fft::irfft(&fft::rfft(&x, None, -1, "backward"), Some(n), -1, "backward");
        let (got, want) = (y.to_vec::<f64>(), x.to_vec::<f64>());
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-12, "n={n}: {got:?} vs {want:?}");
        }
    }
    let a = randn(&[30, 20], 50, DType::Float32);
    let y = a.matmul(&a.t()).matmul(&a);
    let lowered = kiln::lower(&[&y]);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    compare(&want[0], &y.try_to_host().unwrap(), Tol::Norm(1e-5), true).unwrap();
}

#[test]
fn the_codegen_path_calls_the_libraries_too() {
    // KILN_CODEGEN=host's runner: elementwise kernels compiled, library regions called.
    let a = randn(&[12, 8], 70, DType::Float32);
    let bias = randn(&[12], 71, DType::Float32);
    let z = randn(&[4, 16], 72, DType::Complex64);
    let y = (&a.matmul(&a.t()) + &bias).maximum(0.0f32);
    let f = fft::ifft(&fft::fft(&z, None, -1, "ortho"), None, -1, "ortho").abs();
    let lowered = kiln::lower(&[&y, &f]);
    let plan = compile(&lowered.graph, &Options::from_env()).unwrap();
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let got = kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Compiled).unwrap();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    for (g, w) in got.iter().zip(&want) {
        compare(w, g, Tol::Norm(1e-5), true).unwrap();
    }
}

// ------------------------------------------------------------------------------------------------
// Epilogues
// ------------------------------------------------------------------------------------------------

/// The library call of a plan's only region, a matmul: its epilogue.
fn gemm_epilogue(plan: &Compiled) -> Option<GemmEpilogue> {
    match kiln_compiler::vendor::plan(&plan.partition.regions[0]).unwrap() {
        VendorCall::MatMul(mm) => mm.epilogue,
        VendorCall::Fft(f) => panic!("an FFT: {f:?}"),
        VendorCall::Linalg(l) => panic!("a decomposition: {l:?}"),
    }
}

#[test]
fn bias_relu_and_gelu_consumers_of_a_product_are_absorbed_into_its_gemm_call() {
    for dt in [DType::Float32, DType::Float16, DType::BFloat16, DType::Float64] {
        let a = randn(&[16, 32], 60, dt);
        let b = randn(&[32, 24], 61, dt);
        let bias = randn(&[24], 62, dt);
        let p = a.matmul(&b);
        let zero = Array::scalar(0.0f64).astype(dt);
        let gelu = |x: &Array| kiln::nn::gelu_tanh(x).unwrap();
        let cases: [(Array, LtEpilogue, Option<Vec<usize>>); 9] = [
            ((&p + &bias).maximum(&zero), LtEpilogue::BiasRelu, Some(vec![24])),
            // The tanh GELU (torch's approximate="tanh"), cuBLASLt's GELU epilogue.
            (gelu(&p), LtEpilogue::Gelu, None),
            (gelu(&(&p + &bias)), LtEpilogue::BiasGelu, Some(vec![24])),
            (
                gelu(&(&bias.reshape(&[1, 24]) + &randn(&[2, 16, 32], 74, dt).matmul(&b))),
                LtEpilogue::BiasGelu,
                Some(vec![24]),
            ),
            (&p + &bias, LtEpilogue::Bias, Some(vec![24])),
            (&bias + &p, LtEpilogue::Bias, Some(vec![24])),
            (p.maximum(&zero), LtEpilogue::Relu, None),
            (zero.maximum(&(&p + &bias.reshape(&[1, 24]))), LtEpilogue::BiasRelu, Some(vec![24])),
            // A transposed operand stays strides; a batch shares the bias.
            (
                (&randn(&[3, 32, 16], 73, dt).permute(&[0, 2, 1]).matmul(&b) + &bias)
                    .maximum(&zero),
                LtEpilogue::BiasRelu,
                Some(vec![24]),
            ),
        ];
        for (y, form, bias_shape_of) in cases {
            let plan = library_matches_evaluator(&[&y]);
            let report = plan.report();
            let e = report.epilogues.last().unwrap_or_else(|| panic!("{report}"));
            if dt == DType::Float64 && matches!(form, LtEpilogue::Gelu | LtEpilogue::BiasGelu) {
                // cuBLASLt's GELU is not float64-accurate: a float64 GELU (bias included) is one
                // kernel of kiln's after the product.
                assert_eq!(
                    (report.kernel_count(), e.kernel.is_some(), e.lt),
                    (2, true, None),
                    "{report}"
                );
                continue;
            }
            let last = report.kernel_count() - 1;
            assert_eq!(report.regions[last].kind, RegionKind::Vendor, "{report}");
            assert_eq!((e.region, e.kernel, e.lt), (last, None, Some(form)), "{report}");
            assert!(e.ops.contains(&"add") || e.ops.contains(&"maximum"), "{report}");
            if last == 0 {
                // The call carries the form and the bias vector's region input.
                let call = gemm_epilogue(&plan).unwrap_or_else(|| panic!("{report}"));
                let bias_shape = call.bias.map(|k| report.regions[0].inputs[k].2.to_vec());
                assert_eq!((call.form, bias_shape), (form, bias_shape_of), "{report}");
            }
            let line = format!("{} in the GEMM call (cuBLASLt)", form.name());
            assert!(report.to_string().contains(&line), "{report}");
        }
    }
}

#[test]
fn the_absorbed_relu_bias_report_and_regions() {
    let a = randn(&[4, 5], 63, DType::Float32);
    let b = randn(&[5, 6], 64, DType::Float32);
    let bias = randn(&[6], 65, DType::Float32);
    let y = kiln::nn::relu(&(&a.matmul(&b) + &bias)).unwrap();
    let plan = library_matches_evaluator(&[&y]);
    insta::assert_snapshot!(format!("{}\n{}", plan.stage_text(kiln_compiler::pipeline::Stage::Regions).unwrap(), plan.report()), @r"
    kiln.regions v1
    region 0 vendor opaque inputs=[%0,%1,%3] outputs=[%8] {
      %0 = input {index=0} : f32[4,5]
      %1 = input {index=1} : f32[5,6]
      %2 = input {index=2} : f32[6]
      %3 = matmul(%0, %1) : f32[4,6]
      %4 = broadcast_to(%2) {shape=[4,6]} : f32[4,6]
      %5 = add(%3, %4) : f32[4,6]
      %6 = const {value=0.0} : f32[]
      %7 = broadcast_to(%6) {shape=[4,6]} : f32[4,6]
      %8 = maximum(%5, %7) : f32[4,6]
      return %8
    }

    1 region(s)
    region 0 vendor opaque (320 bytes)
      ops: matmul broadcast_to add const broadcast_to maximum
      code: host library; gpu library
      inputs: %0: f32 (4, 5), %1: f32 (5, 6), %3: f32 (6,)
      outputs: %8: f32 (4, 6)
    epilogue of %2 (region 0): bias_relu in the GEMM call (cuBLASLt) [broadcast_to add const broadcast_to maximum]
    ");
}

/// With products of small integers the GEMM is exact, so the host's epilogue must give the
/// evaluator's bits: NaN kept by relu (NumPy's maximum), bias sums rounded once in the dtype,
/// the tanh GELU op by op in the dtype.
#[test]
fn the_host_epilogue_is_the_evaluators_arithmetic() {
    for dt in [DType::Float32, DType::Float16, DType::BFloat16, DType::Float64] {
        // Integers in [-4, 4] (a NaN at a[1, 1]), a bias of thirds: sums that round.
        let ints = |shape: &[usize], step: usize| {
            let n: usize = shape.iter().product();
            let v: Vec<f64> = (0..n)
                .map(
                    |i| if step == 7 && i == 10 { f64::NAN } else { ((i * step) % 9) as f64 - 4.0 },
                )
                .collect();
            Array::from_vec(v, shape).astype(dt).eval().clone()
        };
        let (a, b) = (ints(&[7, 9], 7), ints(&[9, 5], 5));
        let bias =
            Array::from_vec((0..5).map(|i| i as f64 / 3.0 - 0.6).collect::<Vec<f64>>(), &[5])
                .astype(dt)
                .eval()
                .clone();
        let zero = Array::scalar(0.0f64).astype(dt);
        let gelu = |x: &Array| kiln::nn::gelu_tanh(x).unwrap();
        for y in [
            (&a.matmul(&b) + &bias).maximum(&zero),
            a.matmul(&b) + &bias,
            a.matmul(&b).maximum(&zero),
            gelu(&a.matmul(&b)),
            gelu(&(&a.matmul(&b) + &bias)),
        ] {
            let lowered = kiln::lower(&[&y]);
            let plan = compile(&lowered.graph, &Options::from_env()).unwrap();
            // float64 GELUs are a kernel after the product (not absorbed).
            let gelu64 =
                dt == DType::Float64 && plan.report().epilogues.iter().any(|e| e.lt.is_none());
            assert_eq!(
                plan.report().kernel_count(),
                if gelu64 { 2 } else { 1 },
                "{}",
                plan.report()
            );
            let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
            let got = kiln_exec::cpu::run_plan(&plan, &inputs, kiln_exec::cpu::HostRun::Libraries)
                .unwrap();
            let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
            compare(&want[0], &got[0], Tol::Exact, true).unwrap_or_else(|m| panic!("{dt}: {m}"));
        }
    }
}

#[test]
fn other_consumers_of_a_product_fuse_into_one_kernel_after_it() {
    let a = randn(&[16, 32], 60, DType::Float32);
    let b = randn(&[32, 24], 61, DType::Float32);
    let bias = randn(&[24], 62, DType::Float32);
    let p = a.matmul(&b);
    let column = randn(&[16, 1], 69, DType::Float32);
    let cases: [(Array, Option<LtEpilogue>); 6] = [
        // gelu: fused after the product; not a cuBLASLt form (its exact erf form is not
        // cuBLASLt's tanh approximation).
        kiln::nn::gelu(&(&p + &bias)).map(|g| (g, None)).unwrap(),
        // Near misses of the tanh GELU: no cube, another coefficient.
        (&p * 0.5f32 * &((&p * 0.797_884_6f32).tanh() + 1.0f32), None),
        (
            &p * 0.5f32 * &((&(&p + &(&p * &p * &p * 0.045f32)) * 0.797_884_6f32).tanh() + 1.0f32),
            None,
        ),
        ((&p * 2.0f32).sin() + &bias.reshape(&[1, 24]), None),
        // A bias along columns, and a computed bias, are no cuBLASLt bias.
        (&p + &column, None),
        (&p + &(&bias * 2.0f32), None),
    ];
    for (y, lt) in cases {
        let plan = library_matches_evaluator(&[&y]);
        let report = plan.report();
        assert_eq!(report.kernel_count(), 2, "{report}");
        assert_eq!(report.regions[0].kind, RegionKind::Vendor);
        assert_eq!(report.regions[1].kind, RegionKind::Elementwise);
        assert_eq!(report.epilogues.len(), 1, "{report}");
        let e = &report.epilogues[0];
        assert_eq!((e.region, e.kernel, e.lt), (0, Some(1), lt), "{report}");
        assert_eq!(e.ops, report.regions[1].ops);
        assert_eq!(gemm_epilogue(&plan), None);
        assert!(report.to_string().contains("epilogue of %"), "{report}");
    }
    // The product read by two kernels (a reduction and an elementwise one), or itself a result:
    // the form is kept in its own kernel, reported as not absorbed; the reduction is no epilogue.
    let y = (&p + &bias).maximum(0.0f32);
    for other in [p.sum(1), p.clone()] {
        let plan = library_matches_evaluator(&[&y, &other]);
        let report = plan.report();
        assert_eq!(report.epilogues.len(), 1, "{report}");
        assert_eq!(report.epilogues[0].lt, Some(LtEpilogue::BiasRelu), "{report}");
        assert!(report.epilogues[0].kernel.is_some(), "{report}");
        assert!(report.to_string().contains("cublaslt bias_relu (not absorbed)"), "{report}");
    }
    // Integer and complex products take no epilogue (an integer product is a reduction, see
    // integer_matmul_is_a_generated_reduction_that_wraps).
    for dt in [DType::Int32, DType::Complex64] {
        let (a, b, bias) = (randn(&[4, 3], 70, dt), randn(&[3, 5], 71, dt), randn(&[5], 72, dt));
        let plan = library_matches_evaluator(&[&(&a.matmul(&b) + &bias)]);
        let report = plan.report();
        assert!(report.epilogues.iter().all(|e| e.kernel.is_some()), "{dt}: {report}");
        let vendor = report.regions.iter().filter(|r| r.kind == RegionKind::Vendor).count();
        assert_eq!(vendor, usize::from(dt.is_complex()), "{dt}: {report}");
    }
}

// ------------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------------

fn f32s(shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    Array::from_vec((0..n).map(|i| i as f32).collect(), shape)
}

#[test]
fn a_matmul_shape_mismatch_names_both_shapes() {
    let (a, b) = (f32s(&[2, 3]), f32s(&[4, 5]));
    let e = a.try_matmul(&b).unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::MatMulShape { k1: 3, k2: 4, .. })), "{e:?}");
    assert_eq!(
        e.to_string(),
        "matmul: input operand 1 has a mismatch in its core dimension 0 (size 4 is different from 3); shapes (2, 3) and (4, 5)"
    );
    // 1-D operands are named as given, not as promoted to matrices.
    let e = kiln::try_matmul(&f32s(&[3]), &f32s(&[4])).unwrap_err();
    assert!(e.to_string().ends_with("shapes (3,) and (4,)"), "{e}");
    let e = kiln::try_dot(&f32s(&[2, 3, 4]), &f32s(&[5, 3, 6])).unwrap_err();
    assert!(
        e.to_string().starts_with("dot: ")
            && e.to_string().ends_with("shapes (2, 3, 4) and (5, 3, 6)"),
        "{e}"
    );
    // Batch axes that do not broadcast, and rank 0.
    let e = f32s(&[2, 3, 4]).try_matmul(&f32s(&[5, 4, 6])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "matmul: operands could not be broadcast together with shapes (2, 3, 4) (5, 4, 6)"
    );
    let e = f32s(&[]).try_matmul(&f32s(&[3])).unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::InvalidShape { .. })), "{e}");
    assert!(e.to_string().contains("input operand 0 does not have enough dimensions"), "{e}");
    // The panicking form says the same; the operands stay usable.
    let msg = std::panic::catch_unwind(|| f32s(&[2, 3]).matmul(&f32s(&[4, 5]))).unwrap_err();
    assert!(msg.downcast_ref::<String>().unwrap().contains("shapes (2, 3) and (4, 5)"));
    assert_eq!(a.matmul(&b.slice(&s![..3, ..])).shape(), &[2, 5]);
}

#[test]
fn unsupported_dtypes_are_typed_errors() {
    let z = f32s(&[4]).astype(DType::Complex64);
    let e = fft::try_rfft(&z, None, -1, "backward").unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::UnsupportedDType { op, .. }) if op == "rfft"), "{e:?}");
    let e = kiln::random::try_standard_normal(&[3], DType::Int32).unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::UnsupportedDType { .. })), "{e:?}");
    let e = kiln::random::try_integers(0, 5, &[3], DType::Float32).unwrap_err();
    assert!(matches!(&e, Error::Ir(IrError::UnsupportedDType { .. })), "{e:?}");
    // The IR's own rules: an fft node of a real operand, an rfft of a complex one.
    let mut g = kiln::ir::Graph::new();
    let x = g.input(0, DType::Float32, &[4]);
    let c = g.input(1, DType::Complex64, &[4]);
    let fft_attrs = kiln::ir::Attrs::Fft {
        axes: [0].into_iter().collect(),
        inverse: false,
        norm: FftNorm::Backward,
    };
    assert!(matches!(
        g.add(kiln::ir::OpKind::Fft, fft_attrs, &[x]),
        Err(IrError::UnsupportedDType { .. })
    ));
    let real =
        kiln::ir::Attrs::RealFft { axes: [0].into_iter().collect(), n: 4, norm: FftNorm::Backward };
    assert!(matches!(
        g.add(kiln::ir::OpKind::Rfft, real, &[c]),
        Err(IrError::UnsupportedDType { .. })
    ));
}

/// NumPy 2: an n-dimensional complex transform over no axes is the input itself, dtype and all
/// (`np.fft.fftn(a, axes=()) is a`); a real one over no axes is an error.
#[test]
fn fftn_over_no_axes_is_the_input() {
    let x = f32s(&[4, 6]);
    let i = x.astype(DType::Int64);
    for a in [&x, &i] {
        let y = fft::fftn(a, None, Some(&[]), "backward");
        assert!(y.same_expr(a) && y.dtype() == a.dtype(), "{}", y.describe());
        let y = fft::ifftn(a, Some(&[]), Some(&[]), "ortho");
        assert!(y.same_expr(a), "{}", y.describe());
    }
    // NumPy 2 never reads `norm` over no axes: `np.fft.fftn(a, axes=(), norm="bogus") is a`.
    let y = fft::try_fftn(&x, None, Some(&[]), "bogus").unwrap();
    assert!(y.same_expr(&x));
    assert!(fft::try_fftn(&x, None, Some(&[0]), "bogus").is_err());
    assert!(fft::try_rfftn(&x, None, Some(&[]), "backward").is_err());
    assert!(fft::try_irfftn(&x, None, Some(&[]), "backward").is_err());
}

#[test]
fn an_fft_on_a_bad_axis_or_length_is_a_typed_error() {
    let x = f32s(&[4, 6]);
    let e = fft::try_fft(&x, None, 2, "backward").unwrap_err();
    assert!(
        matches!(&e, Error::Ir(IrError::AxisOutOfBounds { op, axis: 2, rank: 2 }) if op == "fft"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "fft: axis 2 is out of bounds for array of dimension 2");
    let e = fft::try_rfftn(&x, None, Some(&[0, -2]), "backward").unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::RepeatedAxis { .. })), "{e:?}");
    let e = fft::try_ifft(&x, Some(0), -1, "backward").unwrap_err();
    assert_eq!(e.to_string(), "ifft: Invalid number of FFT data points (0) specified.");
    let e = fft::try_irfft(&f32s(&[3, 1]), None, -1, "backward").unwrap_err();
    assert_eq!(e.to_string(), "irfft: Invalid number of FFT data points (0) specified.");
    let e = fft::try_fftn(&x, Some(&[2, 2]), Some(&[0]), "backward").unwrap_err();
    assert_eq!(e.to_string(), "fftn: Shape and axes have different lengths.");
    let e = fft::try_fft(&x, None, -1, "unitary").unwrap_err();
    assert!(matches!(e, Error::Value { .. }));
    assert_eq!(
        e.to_string(),
        "fft: Invalid norm value unitary; should be \"backward\",\"ortho\" or \"forward\"."
    );
    // The IR rejects an rfft node whose n disagrees with its operand.
    let mut g = kiln::ir::Graph::new();
    let r = g.input(0, DType::Float64, &[4, 6]);
    let attrs =
        kiln::ir::Attrs::RealFft { axes: [1].into_iter().collect(), n: 5, norm: FftNorm::Backward };
    assert!(matches!(
        g.add(kiln::ir::OpKind::Rfft, attrs, &[r]),
        Err(IrError::InvalidShape { .. })
    ));
    // x is still fine.
    assert_eq!(fft::fft(&x, None, -1, "backward").shape(), &[4, 6]);
}

// ------------------------------------------------------------------------------------------------
// Random numbers
// ------------------------------------------------------------------------------------------------

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n)
}

#[test]
fn a_seed_reproduces_the_numbers() {
    use kiln::random::default_rng;
    let draw =
        |seed| default_rng(Some(seed)).normal(1.0, 2.0, &[1000], DType::Float64).to_vec::<f64>();
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8));
    // The global generator: seed() restarts it; successive draws differ.
    kiln::random::seed(123);
    let first = kiln::random::random(&[5], DType::Float32).to_vec::<f32>();
    let second = kiln::random::random(&[5], DType::Float32).to_vec::<f32>();
    kiln::random::seed(123);
    assert_eq!(kiln::random::random(&[5], DType::Float32).to_vec::<f32>(), first);
    assert_ne!(first, second);
    // Each function of a seeded generator is a pure function of the seed and the call order.
    let calls = |seed| {
        let mut g = default_rng(Some(seed));
        let a = g.uniform(-3.0, 5.0, &[4], DType::Float32).to_vec::<f32>();
        let b = g.integers(-5, 9, &[6], DType::Int16).to_vec::<i16>();
        let c = g.standard_normal(&[3], DType::Float32).to_vec::<f32>();
        (a, b, c)
    };
    assert_eq!(calls(99), calls(99));
}

#[test]
fn distributions_have_their_moments() {
    let mut g = kiln::random::default_rng(Some(2024));
    let n = 200_000;
    // Bounds of 6 standard errors: a correct sampler fails with probability ~1e-9.
    let se = |var: f64| 6.0 * (var / n as f64).sqrt();
    let to64 = |a: Array| a.astype(DType::Float64).to_vec::<f64>();
    for dt in [DType::Float32, DType::Float64] {
        let u = to64(g.random(&[n], dt));
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
        let (m, v) = mean_var(&u);
        assert!((m - 0.5).abs() < se(1.0 / 12.0), "{dt} random mean {m}");
        assert!(
            (v - 1.0 / 12.0).abs() < 0.01 * (1.0 / 12.0) + se(1.0 / 180.0),
            "{dt} random var {v}"
        );
        let x = to64(g.uniform(-2.0, 6.0, &[n], dt));
        assert!(x.iter().all(|&x| (-2.0..=6.0).contains(&x)));
        let (m, v) = mean_var(&x);
        assert!(
            (m - 2.0).abs() < se(64.0 / 12.0) && (v - 64.0 / 12.0).abs() < 0.07,
            "{dt} uniform {m} {v}"
        );
        let z = to64(g.standard_normal(&[n], dt));
        let (m, v) = mean_var(&z);
        assert!(m.abs() < se(1.0) && (v - 1.0).abs() < se(2.0), "{dt} standard_normal {m} {v}");
        // About 68.27% within one standard deviation.
        let within = z.iter().filter(|x| x.abs() < 1.0).count() as f64 / n as f64;
        assert!((within - 0.682_689).abs() < 0.006, "{dt} {within}");
        let y = to64(g.normal(3.0, 0.5, &[n], dt));
        let (m, v) = mean_var(&y);
        assert!(
            (m - 3.0).abs() < se(0.25) && (v - 0.25).abs() < se(2.0 * 0.0625),
            "{dt} normal {m} {v}"
        );
    }
    let k = g.integers(-3, 4, &[n], DType::Int8).to_vec::<i8>();
    assert!(k.iter().all(|&x| (-3..4).contains(&x)));
    for value in -3..4i8 {
        let share = k.iter().filter(|&&x| x == value).count() as f64 / n as f64;
        assert!((share - 1.0 / 7.0).abs() < se(1.0 / 7.0 * 6.0 / 7.0), "{value}: {share}");
    }
    let big = g.integers(0, 1 << 40, &[1000], DType::UInt64).to_vec::<u64>();
    assert!(big.iter().all(|&x| x < 1 << 40) && big.iter().any(|&x| x > 1 << 39));
}

#[test]
fn random_argument_errors() {
    let mut g = kiln::random::default_rng(Some(1));
    assert_eq!(
        g.try_integers(5, 5, &[2], DType::Int32).unwrap_err().to_string(),
        "integers: low >= high"
    );
    assert_eq!(
        g.try_integers(0, 300, &[2], DType::UInt8).unwrap_err().to_string(),
        "integers: high is out of bounds for uint8"
    );
    assert_eq!(
        g.try_integers(-1, 3, &[2], DType::UInt8).unwrap_err().to_string(),
        "integers: low is out of bounds for uint8"
    );
    assert!(g.try_integers(0, 256, &[2], DType::UInt8).is_ok());
    assert!(matches!(g.try_normal(0.0, -1.0, &[2], DType::Float64), Err(Error::Value { .. })));
    assert!(matches!(
        g.try_uniform(0.0, f64::INFINITY, &[2], DType::Float64),
        Err(Error::Value { .. })
    ));
    assert!(matches!(
        g.try_random(&[2], DType::Float16),
        Err(Error::Ir(IrError::UnsupportedDType { .. }))
    ));
    // Random arrays are lazy expressions (Philox of each position), fused with what uses them.
    let r = g.random(&[3, 3], DType::Float64);
    assert!(!r.is_materialized());
    assert_eq!(r.matmul(&r).shape(), &[3, 3]);
    let v = r.to_vec::<f64>();
    assert!(v.iter().all(|x| (0.0..1.0).contains(x)), "{v:?}");
}
