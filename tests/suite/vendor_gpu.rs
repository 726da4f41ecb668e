//! Library ops on a CUDA device: cuBLAS/cuBLASLt products, cuFFT transforms with the plan
//! cache, cuRAND draws. Every test is named `gpu_...` and, without a CUDA backend
//! (`kiln::backend()` is the CPU: no GPU, or `KILN_DEVICE=cpu`), prints `skipped: no GPU` and
//! returns. On a GPU each result, materialised on the device, is compared with the reference
//! evaluator (`kiln::ir::eval`) on the same graph within the dtype's float tolerance.
//!
//! Run on the GPU machine: `KILN_DEVICE=cuda:0 ./main gpu_` (see `scripts/gpu/run.sh`).

use kiln::fft::{self, config};
use kiln::{s, Array, DType, HostArray};
use kiln_runtime::Backend;

use crate::numpy_fixtures::{compare, Tol};

/// Whether the backend is a CUDA device; prints the skip notice otherwise (the `gpu_*` tests of
/// every module use it).
pub(crate) fn on_gpu() -> bool {
    if matches!(kiln::backend(), Backend::Cuda(_)) {
        true
    } else {
        println!("skipped: no GPU");
        false
    }
}

fn randn(shape: &[usize], seed: u64, dtype: DType) -> Array {
    let x = kiln::random::default_rng(Some(seed)).standard_normal(shape, DType::Float64);
    if dtype.is_complex() {
        let y = kiln::random::default_rng(Some(seed + 1000)).standard_normal(shape, DType::Float64);
        let i = Array::scalar(num_complex::Complex64::new(0.0, 1.0));
        (&x + &y * &i).astype(dtype).eval().clone()
    } else if dtype.is_integer() {
        (&x * 40.0).astype(dtype).eval().clone()
    } else {
        x.astype(dtype).eval().clone()
    }
}

/// Tolerance of a library result against the evaluator's (f64 sums rounded once), relative to
/// the largest part of the result: cuBLAS's f32 sums (no TF32) and f16/bf16 accumulated in f32.
fn tolerance(d: DType) -> Tol {
    match d {
        DType::Float16 => Tol::Norm(2e-3),
        DType::BFloat16 => Tol::Norm(1.6e-2),
        DType::Float32 | DType::Complex64 => Tol::Norm(1e-5),
        DType::Float64 | DType::Complex128 => Tol::Norm(1e-12),
        _ => Tol::Exact,
    }
}

/// Materialises `outs` on the device and compares each with the reference evaluator's value of
/// the same graph.
fn device_matches_evaluator(outs: &[&Array]) {
    let lowered = kiln::lower(outs);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    kiln::eval_all(outs);
    for (k, (a, w)) in outs.iter().zip(&want).enumerate() {
        let g = a.try_to_host().unwrap();
        assert_eq!((g.dtype(), g.shape()), (w.dtype(), w.shape()), "output {k}");
        if let Err(msg) = compare(w, &g, tolerance(w.dtype()), true) {
            panic!("output {k} ({} {:?}): {msg}\n{}", w.dtype(), w.shape(), kiln::explain(&[*a]));
        }
    }
}

#[test]
fn gpu_matmul_of_every_float_dtype_matches_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for dt in [
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
        DType::Complex128,
    ] {
        let a = randn(&[2, 1, 3, 7], 1, dt);
        let b = randn(&[4, 7, 5], 2, dt);
        let kt = randn(&[7, 3], 3, dt);
        let outs = [
            a.matmul(&b),                                      // batch broadcasting (2,1) x (4)
            kt.t().matmul(&b),                                 // transposed: op T
            a.matmul(&b.slice(&s![0, .., 2])),                 // matrix @ vector (a column slice)
            b.slice(&s![1..3, 0]).dot(&b.permute(&[0, 2, 1])), // sliced rows, transposed batch
        ];
        let refs: Vec<&Array> = outs.iter().collect();
        device_matches_evaluator(&refs);
    }
}

#[test]
fn gpu_strided_and_gathered_operands_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    let a = randn(&[9, 6], 4, DType::Float32);
    let b = randn(&[3, 9, 5], 5, DType::Float32);
    let outs = [
        a.t().matmul(&b),                                                    // op T, ld 6
        a.slice(&s![..;-2, 1..]).t().matmul(&b.slice(&s![.., ..;2, ..;-1])), // flipped: gathered
        a.slice(&s![..;2, ..;2]).matmul(&randn(&[3, 4], 6, DType::Float32)), // no unit stride: gathered
        a.t().broadcast_to(&[4, 3, 6, 9]).matmul(&b), // broadcast batch, stride 0
        a.t().expand_dims(&[0]).matmul(&b.slice(&s![..1])),
        a.matmul(&kiln::ones(&[6, 2], DType::Float32)), // a constant operand
    ];
    let refs: Vec<&Array> = outs.iter().collect();
    device_matches_evaluator(&refs);
    // Larger, batched, and an odd size.
    let x = randn(&[5, 130, 257], 7, DType::Float64);
    let y = randn(&[257, 66], 8, DType::Float64);
    device_matches_evaluator(&[
        &x.matmul(&y),
        &x.permute(&[0, 2, 1]).slice(&s![.., ..66, ..]).permute(&[0, 2, 1]).t(),
    ]);
    // Empty extents: k = 0 gives zeros.
    let z = randn(&[2, 0], 11, DType::Float32).matmul(&randn(&[0, 3], 12, DType::Float32));
    assert_eq!(z.to_vec::<f32>(), vec![0.0; 6]);
    // The gather is kiln's module: on sm_90 its carried cubin, loaded once, and NVRTC never
    // runs (it compiled it, and the driver's JIT its PTX, in every process before: ~0.7 s).
    let (major, minor) = kiln_runtime::Device::new(0).unwrap().compute_capability().unwrap();
    if (major, minor) == (9, 0) {
        // (Once a device: at least once here, more where other devices gathered.)
        let loads = kiln_runtime::kiln_modules::prebuilt_loads("kiln_gather");
        let compiles = kiln_runtime::kiln_modules::compiles("kiln_gather");
        assert!(compiles == 0 && loads >= 1, "NVRTC compiled {compiles}, prebuilt loads {loads}");
    }
}

#[test]
fn gpu_integer_matmul_runs_as_a_generated_reduction_kernel() {
    if !on_gpu() {
        return;
    }
    let a = randn(&[3, 4, 5], 13, DType::Int32);
    let b = randn(&[5, 6], 14, DType::Int32);
    let big = randn(&[70, 300], 15, DType::Int64);
    let outs = [
        a.matmul(&b),
        a.astype(DType::Int8).matmul(&b.astype(DType::Int8)), // wraps in int8
        a.astype(DType::UInt16).matmul(&b.t().t().astype(DType::UInt16)),
        a.astype(DType::Bool).matmul(&b.astype(DType::Bool)), // bools: or-of-ands
        big.matmul(&big.t()),
    ];
    for y in &outs {
        let report = kiln::explain(&[y]).report;
        assert_eq!(report.kernel_count(), 1, "{report}");
        assert!(
            report.regions.iter().all(|r| r.kind != kiln_compiler::fusion::RegionKind::Vendor),
            "{report}"
        );
    }
    let refs: Vec<&Array> = outs.iter().collect();
    device_matches_evaluator(&refs);
}

#[test]
fn gpu_products_with_bias_and_activation_consumers_match() {
    if !on_gpu() {
        return;
    }
    for dt in [DType::Float32, DType::Float16] {
        let a = randn(&[64, 48], 15, dt);
        let b = randn(&[48, 40], 16, dt);
        let bias = randn(&[40], 17, dt);
        let p = a.matmul(&b);
        // gelu and a product that is also a result: a kernel after the GEMM.
        let outs = [
            kiln::nn::gelu(&(&p + &bias)).unwrap(),
            kiln::nn::relu(&(&p + &bias)).unwrap(),
            p.clone(),
        ];
        let refs: Vec<&Array> = outs.iter().collect();
        device_matches_evaluator(&refs);
    }
}

/// `p + bias`, `relu(p)`, `relu(p + bias)`, `gelu_tanh(p)`, `gelu_tanh(p + bias)` absorbed
/// into the GEMM: one `cublasLtMatmul` with its epilogue (one region in the plan; float64 GELU
/// may find no cuBLASLt algorithm and run on the host), compared with the evaluator for every
/// real float dtype, with a transposed operand and with batches sharing the bias.
#[test]
fn gpu_absorbed_epilogues_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for dt in [DType::Float32, DType::Float16, DType::BFloat16, DType::Float64] {
        let a = randn(&[70, 48], 18, dt);
        let b = randn(&[48, 40], 19, dt);
        let bias = randn(&[40], 20, dt);
        let zero = Array::scalar(0.0f64).astype(dt);
        let batch = randn(&[3, 70, 48], 21, dt);
        let outs = [
            &a.matmul(&b) + &bias,
            a.matmul(&b).maximum(&zero),
            (&a.matmul(&b) + &bias).maximum(&zero),
            (&a.t().t().matmul(&randn(&[40, 48], 22, dt).t()) + &bias.reshape(&[1, 40]))
                .maximum(&zero),
            (&batch.matmul(&b) + &bias).maximum(&zero),
            kiln::nn::gelu_tanh(&a.matmul(&b)).unwrap(),
            kiln::nn::gelu_tanh(&(&batch.matmul(&b) + &bias)).unwrap(),
        ];
        for (k, y) in outs.iter().enumerate() {
            let report = kiln::explain(&[y]).report;
            if dt == DType::Float64 && k >= 5 {
                // A float64 GELU is not absorbed (cuBLASLt's is not float64-accurate): one
                // kernel after the product.
                assert_eq!(report.kernel_count(), 2, "{dt}: {report}");
            } else {
                assert_eq!(
                    (report.kernel_count(), report.epilogues[0].kernel),
                    (1, None),
                    "{dt}: {report}"
                );
            }
            device_matches_evaluator(&[y]);
        }
    }
}

/// NaN products through the absorbed relu: kiln's `relu` is NumPy's `maximum(x, 0)`, which
/// keeps NaN (so does the host's epilogue, see `vendor::the_host_epilogue_is_the_evaluators_arithmetic`);
/// cuBLASLt's `CUBLASLT_EPILOGUE_RELU`/`_RELU_BIAS` is documented as `max(x, 0)` and may give
/// 0 (CUDA's `fmaxf` returns the number). The rows without NaN must match the evaluator; a NaN
/// row must be all NaN (as NumPy) or all 0 (the documented difference); which one is printed.
/// The tanh GELU keeps NaN on both.
#[test]
fn gpu_absorbed_relu_of_nan_products() {
    if !on_gpu() {
        return;
    }
    let mut v: Vec<f32> = randn(&[6, 8], 23, DType::Float32).to_vec();
    v[2 * 8 + 3] = f32::NAN; // row 2 of every product is NaN
    let (bv, biasv) = (
        randn(&[8, 5], 24, DType::Float32).to_vec::<f32>(),
        randn(&[5], 25, DType::Float32).to_vec::<f32>(),
    );
    let a = Array::from_vec(v.clone(), &[6, 8]);
    let b = Array::from_vec(bv.clone(), &[8, 5]);
    let bias = Array::from_vec(biasv.clone(), &[5]);
    for (name, with_bias) in [("relu", false), ("bias_relu", true)] {
        let y = if with_bias {
            (&a.matmul(&b) + &bias).maximum(0.0f32)
        } else {
            a.matmul(&b).maximum(0.0f32)
        };
        assert_eq!(kiln::explain(&[&y]).report.kernel_count(), 1);
        let got = y.to_vec::<f32>();
        for r in (0..6).filter(|&r| r != 2) {
            for c in 0..5 {
                let p: f64 =
                    (0..8).map(|k| v[r * 8 + k] as f64 * bv[k * 5 + c] as f64).sum::<f64>();
                let w = (p + if with_bias { biasv[c] as f64 } else { 0.0 }).max(0.0) as f32;
                let g = got[r * 5 + c];
                assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{name} [{r}, {c}]: {g} vs {w}");
            }
        }
        let row = &got[10..15];
        let kept = row.iter().all(|x| x.is_nan());
        assert!(kept || row.iter().all(|&x| x == 0.0), "{name}: a NaN row gave {row:?}");
        println!(
            "cuBLASLt {name} of a NaN product: {}",
            if kept { "NaN (as NumPy)" } else { "0 (NumPy keeps NaN)" }
        );
    }
    let g = kiln::nn::gelu_tanh(&(&a.matmul(&b) + &bias)).unwrap().to_vec::<f32>();
    assert!(g[10..15].iter().all(|x| x.is_nan()), "gelu of NaN: {:?}", &g[10..15]);
}

#[test]
fn gpu_ffts_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    for &n in &[1usize, 2, 7, 12, 64, 97, 360, 1024] {
        let z = randn(&[3, n], 20 + n as u64, DType::Complex128);
        let r = randn(&[n, 3], 21 + n as u64, DType::Float64);
        let outs = [
            fft::fft(&z, None, -1, "backward"),
            fft::ifft(&z.t(), None, 0, "ortho"),
            fft::rfft(&r, None, 0, "forward"),
            fft::irfft(&z, Some(2 * n + 1), -1, "backward"),
            fft::irfft(&z, Some(2 * n.max(2) - 2), -1, "ortho"),
            fft::fft(&z.astype(DType::Complex64), None, -1, "forward"),
            fft::rfft(&r.astype(DType::Float32), None, 0, "backward"),
        ];
        let refs: Vec<&Array> = outs.iter().collect();
        device_matches_evaluator(&refs);
    }
}

#[test]
fn gpu_multi_axis_and_strided_ffts_match_the_evaluator() {
    if !on_gpu() {
        return;
    }
    let z = randn(&[4, 6, 10], 30, DType::Complex64);
    let r = randn(&[6, 5, 8], 31, DType::Float32);
    let outs = [
        fft::fft2(&z, None, &[-2, -1], "backward"),
        fft::ifft2(&z, None, &[0, 2], "ortho"),
        fft::fftn(&z.slice(&s![..;2, .., ..;-1]), None, None, "forward"),
        fft::rfftn(&r, None, None, "backward"),
        fft::irfftn(&fft::rfftn(&r, None, None, "backward"), Some(&[6, 5, 8]), None, "backward"),
        fft::fft(&z, None, 1, "backward"),
    ];
    let refs: Vec<&Array> = outs.iter().collect();
    device_matches_evaluator(&refs);
}

/// Operands read by cuFFT through their strides (no gather, see
/// `kiln_compiler::vendor::fft_steps`): offset and stepped slices, transposes, a middle axis, a
/// broadcast batch axis, a reversed batch axis (looped), a reversed transform axis (gathered),
/// and multi-axis transforms whose first step reads the view.
#[test]
fn gpu_strided_operands_go_straight_to_cufft() {
    if !on_gpu() {
        return;
    }
    for dt in [DType::Complex64, DType::Complex128] {
        let z = randn(&[6, 8, 10], 32, dt);
        let v = randn(&[10], 33, dt);
        let outs = [
            fft::fft(&z.slice(&s![1..5, 2, 1..;2]), None, -1, "backward"),
            fft::fft(&z.permute(&[2, 0, 1]), None, 0, "ortho"),
            fft::ifft(&z, None, 1, "backward"),
            fft::fft(&v.broadcast_to(&[4, 10]), None, -1, "forward"),
            fft::fft(&z.slice(&s![..;-1, .., ..]), None, -1, "backward"),
            fft::fft(&z.slice(&s![.., .., ..;-1]), None, -1, "backward"),
            fft::ifftn(&z.slice(&s![..;2, 1.., ..]).permute(&[1, 2, 0]), None, None, "ortho"),
            fft::irfftn(&z.permute(&[2, 1, 0]), None, Some(&[0, 2]), "forward"),
        ];
        let refs: Vec<&Array> = outs.iter().collect();
        device_matches_evaluator(&refs);
    }
    let r = randn(&[12, 9], 34, DType::Float32);
    let outs = [
        fft::rfft(&r.t(), None, -1, "backward"),
        fft::rfft(&r.slice(&s![2..10, ..]), None, 0, "ortho"),
    ];
    let refs: Vec<&Array> = outs.iter().collect();
    device_matches_evaluator(&refs);
}

/// cuFFT runs on the current stream: a kernel on a non-blocking stream spins, then writes the
/// operand; an FFT materialised with that stream current must see the written values (on any
/// other stream it would run during the spin and transform the zeros).
#[test]
fn gpu_ffts_run_on_the_current_stream() {
    if !on_gpu() {
        return;
    }
    let stream = kiln_runtime::Stream::non_blocking(kiln_runtime::Device::new(0).unwrap()).unwrap();
    let _current = stream.use_scoped();
    let late_fill = kiln::RawKernel::new(
        r#"
extern "C" __global__ void late_fill(double2* y, long long n, long long spin) {
    long long t0 = clock64();
    while (clock64() - t0 < spin) {}
    for (long long i = blockDim.x * blockIdx.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = make_double2((double)(i % 7), 1.0 / (1 + i % 5));
    }
}
"#,
        "late_fill",
        &[],
    );
    let n = 1i64 << 16;
    let mut y = kiln::zeros(&[n as usize], DType::Complex128);
    let args: &mut [kiln::RawArg] =
        &mut [(&mut y).into(), n.into(), crate::streams::late_fill_spin().into()];
    // SAFETY: late_fill writes n complex128 elements, y's size.
    unsafe { late_fill.launch(64, 256, args, 0, None) };
    let f = fft::fft(&y, None, -1, "backward");
    f.eval();
    let got = f.try_to_host().unwrap();
    // The evaluator's transform of the operand's final values (downloaded after the stream ran).
    let lowered = kiln::lower(&[&fft::fft(&y, None, -1, "backward")]);
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let want = kiln::ir::eval::evaluate(&lowered.graph, &inputs).unwrap();
    if let Err(msg) = compare(&want[0], &got, tolerance(DType::Complex128), true) {
        panic!("an FFT off the current stream? {msg}");
    }
}

#[test]
fn gpu_the_plan_cache_counts_hits_and_misses_and_keeps_its_limit() {
    if !on_gpu() {
        return;
    }
    // Sizes no other test uses, so the counts below are this test's (tests share the cache:
    // only differences are compared, and the limit is restored).
    let before = config::get_plan_cache().unwrap();
    let z = randn(&[1, 4099], 40, DType::Complex64);
    fft::fft(&z, None, -1, "backward").eval();
    let after_first = config::get_plan_cache().unwrap();
    assert!(after_first.misses > before.misses, "{before:?} {after_first:?}");
    let w = randn(&[1, 4099], 41, DType::Complex64);
    fft::fft(&w, None, -1, "backward").eval();
    let after_second = config::get_plan_cache().unwrap();
    assert!(after_second.hits > after_first.hits, "{after_first:?} {after_second:?}");
    assert!(after_second.size <= after_second.limit);
    config::set_plan_cache_size(1).unwrap();
    assert!(config::get_plan_cache().unwrap().size <= 1);
    config::clear_plan_cache().unwrap();
    config::set_plan_cache_size(before.limit).unwrap();
    assert_eq!(config::get_plan_cache().unwrap().limit, before.limit);
}

#[test]
fn gpu_random_draws_have_their_moments_and_reproduce_by_seed() {
    if !on_gpu() {
        return;
    }
    let mut g = kiln::random::default_rng(Some(77));
    let n = 1 << 20;
    let se = |var: f64| 6.0 * (var / n as f64).sqrt();
    let mean_var = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64)
    };
    for dt in [DType::Float32, DType::Float64] {
        let u = g.random(&[n], dt).astype(DType::Float64).to_vec::<f64>();
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)), "{dt}");
        let (m, v) = mean_var(&u);
        assert!(
            (m - 0.5).abs() < se(1.0 / 12.0) && (v - 1.0 / 12.0).abs() < 1e-3,
            "{dt} random {m} {v}"
        );
        let z = g.normal(1.0, 2.0, &[n - 1], dt).astype(DType::Float64).to_vec::<f64>();
        assert_eq!(z.len(), n - 1);
        let (m, v) = mean_var(&z);
        assert!((m - 1.0).abs() < se(4.0) && (v - 4.0).abs() < 0.03, "{dt} normal {m} {v}");
    }
    let k = g.integers(-3, 4, &[n], DType::Int16).to_vec::<i16>();
    for value in -3..4i16 {
        let share = k.iter().filter(|&&x| x == value).count() as f64 / n as f64;
        assert!((share - 1.0 / 7.0).abs() < se(1.0 / 7.0 * 6.0 / 7.0), "{value}: {share}");
    }
    let draw = |seed| {
        kiln::random::default_rng(Some(seed))
            .standard_normal(&[1000], DType::Float32)
            .to_vec::<f32>()
    };
    assert_eq!(draw(5), draw(5));
    assert_ne!(draw(5), draw(6));
}

#[test]
fn the_plan_cache_config_is_a_typed_error_on_the_cpu() {
    if matches!(kiln::backend(), Backend::Cuda(_)) {
        return;
    }
    let e = config::get_plan_cache().unwrap_err();
    assert_eq!(
        e.to_string(),
        "get_plan_cache: the backend is the CPU (no CUDA device, or KILN_DEVICE=cpu)"
    );
    assert!(config::set_plan_cache_size(4).is_err());
    assert!(!kiln::allow_tf32(), "TF32 is off by default");
}

/// kiln's linear-algebra helper kernels (CUDA C++, `exec/src/cuda/linalg/kernels.rs`) are one
/// NVRTC program: compiled at most once per device whatever kernels of it run (each kernel's
/// first use compiled the whole program again before), none where the disk cache held it.
#[test]
fn gpu_the_linear_algebra_helpers_compile_once() {
    if !on_gpu() {
        return;
    }
    for dtype in [DType::Float32, DType::Float64, DType::Complex64] {
        let a = randn(&[3, 4, 4], 90, dtype);
        let spd =
            (a.matmul(&a.swapaxes(-1, -2)) + kiln::eye(4, None, 0, dtype) * 4.0).eval().clone();
        kiln::linalg::det(&spd).eval();
        kiln::linalg::inv(&spd).eval();
        if !dtype.is_complex() {
            kiln::linalg::cholesky(&spd).eval();
        }
    }
    let n = kiln_runtime::kiln_modules::compiles("kiln_linalg");
    assert!(n <= 1, "the linear-algebra helpers compiled {n} times on one GPU");
    // On sm_90 the library's own cubin is loaded, once, and NVRTC never runs.
    let (major, minor) = kiln_runtime::Device::new(0).unwrap().compute_capability().unwrap();
    if (major, minor) == (9, 0) {
        let loads = kiln_runtime::kiln_modules::prebuilt_loads("kiln_linalg");
        assert_eq!((n, loads), (0, 1), "NVRTC compiles, prebuilt loads on sm_90");
    }
}

/// A program's CUDA libraries are remembered in the disk cache, and its next process starts
/// loading them when it picks the backend, before any plan calls them. Two child processes of
/// this binary (`remembered_libraries_child`) over one cache: the first calls `cholesky`
/// (cuSOLVER); the next calls nothing and finds cuSOLVER loaded.
#[test]
fn gpu_a_program_s_libraries_load_at_its_next_process_s_start() {
    if !on_gpu() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let child = |mode: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["vendor_gpu::remembered_libraries_child", "--exact", "--ignored", "--nocapture"])
            .env("KILN_REMEMBERED_CHILD", mode)
            .env("KILN_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{mode} child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let at =
            stdout.find("remembered-child ").unwrap_or_else(|| panic!("no report in:\n{stdout}"));
        stdout[at..].lines().next().unwrap_or_default().trim().to_string()
    };
    assert_eq!(child("first"), "remembered-child first cusolver_loaded_at_start=false");
    assert_eq!(child("next"), "remembered-child next cusolver_loaded_at_start=true");
}

/// Run by `gpu_a_program_s_libraries_load_at_its_next_process_s_start` as a child process
/// (`KILN_REMEMBERED_CHILD` = `first` or `next`): whether cuSOLVER is loaded within a while
/// of picking the backend, before any call; `first` then factors a matrix.
#[test]
#[ignore = "a child process of gpu_a_program_s_libraries_load_at_its_next_process_s_start"]
fn remembered_libraries_child() {
    let Ok(mode) = std::env::var("KILN_REMEMBERED_CHILD") else { return };
    assert!(on_gpu(), "the child picks the CUDA backend");
    let start = std::time::Instant::now();
    let wait = std::time::Duration::from_millis(if mode == "first" { 500 } else { 5000 });
    let mut loaded = kiln_runtime::is_mapped(&["cusolver"]);
    while !loaded && start.elapsed() < wait {
        std::thread::sleep(std::time::Duration::from_millis(5));
        loaded = kiln_runtime::is_mapped(&["cusolver"]);
    }
    if mode == "first" {
        let spd = Array::from_vec(vec![4.0f64, 1.0, 1.0, 3.0], &[2, 2]);
        kiln::linalg::cholesky(&spd).eval();
    }
    println!("remembered-child {mode} cusolver_loaded_at_start={loaded}");
}
