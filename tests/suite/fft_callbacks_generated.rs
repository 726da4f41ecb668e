//! cuFFT callbacks kiln generates from the plan (issue 24 §2): an FFT's elementwise producer as
//! its load callback, its elementwise consumer as its store callback, both on one plan; every
//! transform kind (C2C, R2C, C2R; float32 and float64) in each of the three modes (never,
//! always, measured) against the same work without callbacks; the sites and decisions in the
//! fusion report. The `gpu_*` tests skip without a CUDA backend; the others run on the CPU.

use kiln::fft::{self, config};
use kiln::{Array, DType};
use kiln_compiler::vendor::fft_callback::{load_callback, store_callback, Side};

use super::fft_callbacks::{close, randn};
use crate::vendor_gpu::on_gpu;

/// The regions of the plan of `outs`.
fn regions_of(outs: &[&Array]) -> Vec<kiln_compiler::fusion::Region> {
    let lowered = kiln::lower(outs);
    let options = kiln_compiler::pipeline::Options::from_env();
    kiln_compiler::pipeline::compile(&lowered.graph, &options).unwrap().partition.regions.clone()
}

/// The report's `fft callback:` lines for `y`.
fn callback_lines(y: &Array) -> Vec<String> {
    let report = kiln::explain(&[y]).report.to_string();
    report.lines().filter(|l| l.starts_with("fft callback:")).map(str::to_string).collect()
}

#[test]
fn an_fft_producer_is_written_as_a_load_callback() {
    use kiln_compiler::fusion::RegionKind;
    let z = randn(&[8, 64], 1, DType::Complex64);
    let w = randn(&[8, 64], 2, DType::Float32);
    let y = fft::fft(&(&z * &w), None, -1, "backward").abs();
    let regions = regions_of(&[&y]);
    let kinds: Vec<RegionKind> = regions.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RegionKind::Elementwise, RegionKind::Vendor, RegionKind::Elementwise]);
    let cb = load_callback(&regions[0]).unwrap();
    assert_eq!((cb.inputs, cb.dtype, cb.side), (2, DType::Complex64, Side::Load));
    insta::assert_snapshot!("fft_window_load_callback", cb.source);
    // The FFT itself is no callback; the consumer (abs of complex: double hypot) is a value.
    assert!(load_callback(&regions[1]).unwrap_err().contains("vendor"));
    let abs = load_callback(&regions[2]).unwrap();
    assert!(abs.dtype == DType::Float32 && abs.source.contains("c_abs(v0)"), "{}", abs.source);
    // A constant, a cast and a real function, in float64.
    let x = randn(&[4, 32], 3, DType::Float64);
    let y = fft::rfft(&((&x * 0.5).exp() - 1.0), None, -1, "backward");
    let regions = regions_of(&[&y]);
    let cb = load_callback(&regions[0]).unwrap();
    assert!(
        cb.source.contains("exp(") && cb.source.contains("__longlong_as_double"),
        "{}",
        cb.source
    );
    // What the emitter refuses, with the reason: an op it has no form for.
    let y = fft::fft(&(x.tanh().astype(DType::Complex128)), None, -1, "backward");
    let regions = regions_of(&[&y]);
    let why = load_callback(&regions[0]).unwrap_err();
    assert!(why.contains("tanh"), "{why}");
}

#[test]
fn an_fft_consumer_is_written_as_a_store_callback() {
    // |ifft(z)| · w: the norm's factor 1/64 applied to the element first, as cuBLAS's
    // Csscal does (a float product per part), then abs and the product.
    let z = randn(&[8, 64], 4, DType::Complex64);
    let w = randn(&[8, 64], 5, DType::Float32);
    let y = &fft::ifft(&z, None, -1, "backward").abs() * &w;
    let regions = regions_of(&[&y]);
    let k = regions[1].inputs.iter().position(|&i| i == regions[0].outputs[0]).unwrap();
    let cb = store_callback(&regions[1], k, DType::Complex64, 1.0 / 64.0).unwrap();
    assert_eq!((cb.side, cb.inputs, cb.table_len()), (Side::Store, 2, 3));
    insta::assert_snapshot!("fft_abs_times_w_store_callback", cb.source);
    // The element's dtype must be the FFT's output's.
    let why = store_callback(&regions[1], k, DType::Complex128, 1.0).unwrap_err();
    assert!(why.contains("FFT's output"), "{why}");
}

#[test]
fn the_fusion_report_names_the_callback_sites() {
    let z = randn(&[8, 64], 6, DType::Complex64);
    let w = randn(&[8, 64], 7, DType::Float32);
    // Producer and consumer: a load and a store site on one FFT.
    let y = fft::fft(&(&z * &w), None, -1, "backward").abs();
    assert_eq!(
        callback_lines(&y),
        [
            "fft callback: region 1 load from region 0 (cast multiply): candidate, not measured",
            "fft callback: region 1 store into region 2 (absolute): candidate, not measured",
        ]
    );
    // A producer with an op the generator has no form for: the reason is shown.
    let x = randn(&[8, 64], 8, DType::Float64);
    let y = fft::rfft(&x.tanh(), None, -1, "backward");
    assert_eq!(
        callback_lines(&y),
        ["fft callback: region 1 load from region 0 (tanh): not a callback (the op tanh)"]
    );
    // A consumer of every kind; C2R too (of a held operand: no load site).
    let h = fft::rfft(&x, None, -1, "backward").eval().clone();
    let y = &fft::irfft(&h, Some(64), -1, "backward") * &x;
    assert_eq!(
        callback_lines(&y),
        ["fft callback: region 0 store into region 1 (multiply): candidate, not measured"]
    );
    // C2R's producer: cuFFT overwrites a C2R input, so it reads a copy, but the executor runs
    // it on a fused producer's unwritten output instead.
    let y = fft::irfft(&(&h * 2.0), Some(64), -1, "backward");
    let lines = callback_lines(&y);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("fft callback: region 1 load from region 0 ("), "{lines:?}");
    assert!(lines[0].ends_with("): candidate, not measured"), "{lines:?}");
    // An FFT output also read elsewhere is no site.
    let f = fft::fft(&z, None, -1, "backward");
    let (a, b) = (f.abs(), f.real());
    assert!(kiln::explain(&[&a, &b]).report.fft_callbacks.is_empty());
}

type Work<'a> = Box<dyn Fn() -> Array + 'a>;

/// Runs each work never fused, always fused and measured (twice: the second call follows the
/// decision), and compares them.
fn three_ways(works: &[(&str, Work)]) {
    use config::{set_fft_callback_mode, FftCallbackMode};
    for (what, work) in works {
        let lines = callback_lines(&work());
        assert!(lines.iter().any(|l| l.contains("candidate")), "{what}: {lines:?}");
        let previous = set_fft_callback_mode(FftCallbackMode::Never);
        let plain = work().eval().clone();
        set_fft_callback_mode(FftCallbackMode::Always);
        let fused = work().try_eval().map(|a| a.clone());
        let fused_code = kiln_exec::last_run_code();
        set_fft_callback_mode(FftCallbackMode::Measure);
        let measured = work().eval().clone();
        let again = work().eval().clone();
        set_fft_callback_mode(previous);
        close(&fused.unwrap_or_else(|e| panic!("{what}: {e}")), &plain, what);
        // Always: no kernel ran but those that are no site's.
        let kernels =
            fused_code.iter().filter(|(_, c)| matches!(c, kiln_exec::RanCode::Gpu(_))).count();
        assert_eq!(kernels, 0, "{what}: {} kernels ran fused", kernels);
        close(&measured, &plain, what);
        close(&again, &plain, what);
        let lines = callback_lines(&work());
        assert!(lines.iter().all(|l| l.contains("kept")), "{what}: {lines:?}");
        println!("{what}: {}", lines.join(" | "));
    }
}

#[test]
fn gpu_fft_producers_fused_as_load_callbacks() {
    if !on_gpu() {
        return;
    }
    // Operands of 8 MiB: measured by default (at least MEASURE_MIN_BYTES).
    let z = randn(&[256, 4096], 31, DType::Complex64);
    let x = randn(&[512, 2048], 33, DType::Float64);
    let x32 = randn(&[512, 4096], 34, DType::Float32);
    let z128 = randn(&[256, 2048], 35, DType::Complex128);
    let w64 = randn(&[256, 2048], 36, DType::Float64);
    let h32 = fft::rfft(&x32, None, -1, "backward").eval().clone();
    let w32h = randn(&[512, 2049], 37, DType::Float32);
    let h64 = fft::rfft(&x, None, -1, "backward").eval().clone();
    let works: [(&str, Work); 6] = [
        ("rfft f64 of exp", Box::new(|| fft::rfft(&((&x * 0.5).exp() - 1.0), None, -1, "ortho"))),
        (
            "fft2 c64 of a sum",
            Box::new(|| fft::fft2(&(&z + &z * 2.0), None, &[-2, -1], "backward")),
        ),
        (
            "rfft f32 of a square",
            Box::new(|| fft::rfft(&(x32.square() - 1.0), None, -1, "backward")),
        ),
        ("fft c128 of a product", Box::new(|| fft::fft(&(&z128 * &w64), None, -1, "forward"))),
        (
            "irfft c64 of a product",
            Box::new(|| fft::irfft(&(&h32 * &w32h), Some(4096), -1, "backward")),
        ),
        (
            "irfft2 c128 of a sum",
            Box::new(|| fft::irfft2(&(&h64 + &h64 * 2.0), None, &[-2, -1], "ortho")),
        ),
    ];
    three_ways(&works);
}

#[test]
fn gpu_fft_consumers_fused_as_store_callbacks() {
    if !on_gpu() {
        return;
    }
    // Outputs of 8 MiB or more: measured by default.
    let z = randn(&[256, 4096], 41, DType::Complex64);
    let w = randn(&[256, 4096], 42, DType::Float32);
    let x = randn(&[512, 2048], 43, DType::Float64);
    let x32 = randn(&[512, 4096], 44, DType::Float32);
    let z128 = randn(&[256, 2048], 45, DType::Complex128);
    let w64 = randn(&[256, 2048], 46, DType::Float64);
    let h32 = fft::rfft(&x32, None, -1, "backward").eval().clone();
    let h64 = fft::rfft(&x, None, -1, "backward").eval().clone();
    let works: [(&str, Work); 8] = [
        ("abs of fft c64", Box::new(|| fft::fft(&z, None, -1, "backward").abs())),
        ("window: load and store", Box::new(|| fft::fft(&(&z * &w), None, -1, "backward").abs())),
        ("ifft c128 times w", Box::new(|| &fft::ifft(&z128, None, -1, "backward") * &w64)),
        ("rfft f32 ortho abs", Box::new(|| fft::rfft(&x32, None, -1, "ortho").abs())),
        ("rfft f64 times 2", Box::new(|| &fft::rfft(&x, None, -1, "backward") * 2.0)),
        ("irfft c64 plus x", Box::new(|| &fft::irfft(&h32, Some(4096), -1, "backward") + &x32)),
        ("irfft c128 times x", Box::new(|| &fft::irfft(&h64, Some(2048), -1, "ortho") * &x)),
        ("fft2 c64 real", Box::new(|| fft::fft2(&z, None, &[-2, -1], "forward").real())),
    ];
    three_ways(&works);
    let decisions = config::fft_callback_decisions();
    for d in &decisions {
        let (side, ops, fft, plain) =
            (d.side.name(), d.ops.join(" "), &d.fft, d.kernel_then_fft_ms);
        let cb = d.callback_ms.map_or("no plan".into(), |ms| format!("{ms:.4} ms"));
        println!(
            "decision {side} [{ops}] {fft}: kernel+fft {plain:.4} ms, callback {cb}, fused {}",
            d.fused
        );
    }
    assert!(decisions.iter().any(|d| d.side == config::FftCallbackSide::Store), "{decisions:?}");
}

/// Run by `gpu_generated_callbacks_start_warm` as a child process (`KILN_FFT_CALLBACK_CHILD`
/// set): `abs(fft(z * w))` with its load and store callbacks, then the NVRTC compiles made.
#[test]
#[ignore = "a child process of gpu_generated_callbacks_start_warm"]
fn generated_callbacks_child() {
    use config::{set_fft_callback_mode, FftCallbackMode};
    if std::env::var_os("KILN_FFT_CALLBACK_CHILD").is_none() {
        println!("skipped: run by fft_callbacks_generated::gpu_generated_callbacks_start_warm");
        return;
    }
    let z = randn(&[8, 64], 61, DType::Complex64);
    let w = randn(&[8, 64], 62, DType::Float32);
    let previous = set_fft_callback_mode(FftCallbackMode::Never);
    let plain = fft::fft(&(&z * &w), None, -1, "backward").abs().eval().clone();
    set_fft_callback_mode(FftCallbackMode::Always);
    let fused = fft::fft(&(&z * &w), None, -1, "backward").abs().eval().clone();
    set_fft_callback_mode(previous);
    close(&fused, &plain, "abs(fft(z * w))");
    println!("lto-compiles={}", kiln_exec::cuda::lto_compile_count());
}

/// The generated callbacks' LTO-IR is kept in the disk kernel cache: a second process with the
/// same cache compiles no callback (NVRTC runs for none).
#[test]
fn gpu_generated_callbacks_start_warm() {
    if !on_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = || -> u64 {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "fft_callbacks_generated::generated_callbacks_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("KILN_FFT_CALLBACK_CHILD", "1")
            .env("KILN_CACHE_DIR", dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        // The count follows libtest's `test ... ` on its line.
        let count = stdout.split("lto-compiles=").nth(1).expect("a count");
        count.split_whitespace().next().unwrap().parse().unwrap()
    };
    assert_eq!(run(), 2, "a cold cache: the load and the store callback compiled");
    assert_eq!(run(), 0, "a warm cache: nothing compiled");
}
