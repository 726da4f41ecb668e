//! kiln's bytecode interpreter on a CUDA device (`kiln_exec::cuda::interp`): every sample
//! program of `kiln_compiler::bytecode::samples` against the evaluator, and a new expression's
//! first call interpreted until its code lands. Tests are named `gpu_...` and print
//! `skipped: no GPU` without a CUDA backend.

use kiln::Array;
use kiln_cache::config::GpuInterp;
use kiln_compiler::bytecode::{samples, Bytecode};
use kiln_exec::cuda::interp::{self, Interpreted};
use kiln_exec::cuda::{DeviceArray, Gpu};
use kiln_exec::RanCode;
use kiln_ir::HostArray;
use kiln_runtime::Backend;

use crate::vendor_gpu::on_gpu;

fn gpu() -> &'static Gpu {
    let Backend::Cuda(n) = kiln::backend() else { unreachable!("on a GPU") };
    Gpu::get(n).expect("the device")
}

/// Libdevice's float32 bounds reach 4 ulps (`tan`), the host's libm's 1.
const MATH_ULPS: u64 = 4;

#[test]
fn gpu_every_sample_program_agrees_with_the_evaluator() {
    if !on_gpu() {
        return;
    }
    let gpu = gpu();
    let _d = gpu.device().use_scoped().unwrap();
    // Small arrays run one element a thread, large ones four (`kiln_interp_1`, `kiln_interp`);
    // 2^21 + 3 elements are more tiles than the blocks the device holds at once (a block runs
    // several, the last one partly full).
    for n in [1000, 1 << 18, (1 << 21) + 3] {
        every_sample_program_agrees_at(gpu, n);
    }
}

fn every_sample_program_agrees_at(gpu: &'static Gpu, n: usize) {
    let programs = samples::programs(n);
    for (text, max_ulps) in &programs {
        let g = kiln_ir::text::parse(text).unwrap();
        let region = kiln_compiler::fusion::partition(&g).regions.remove(0);
        let program = Bytecode::of(&region).unwrap();
        let host = samples::inputs(&program, 11);
        let refs: Vec<&HostArray> = host.iter().collect();
        let want = kiln_ir::eval::evaluate(&region.body, &refs).unwrap();
        let inputs: Vec<_> =
            host.iter().map(|h| std::sync::Arc::new(DeviceArray::upload(h).unwrap())).collect();
        let interpreted = Interpreted::new(gpu, program).unwrap();
        let outs = interpreted.run(&inputs).unwrap();
        for (k, (o, w)) in outs.iter().zip(&want).enumerate() {
            let got = o.download().unwrap();
            let bound = if *max_ulps > 0 { MATH_ULPS } else { 0 };
            let u = samples::ulps_apart(&got, w);
            assert!(u <= bound, "{n} elements, output {k} {u} ulps apart:\n{text}");
        }
    }
}

/// A constant new to this process and to any disk cache.
fn new_k(salt: u64) -> f32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let bits = t.as_nanos() as u64 ^ u64::from(std::process::id()) << 20 ^ salt << 40;
    1000.0 + (bits % 1_000_000) as f32 / 1e6
}

fn x() -> Array {
    Array::from_vec((0..4096).map(|i| i as f32 * 0.01 - 20.0).collect::<Vec<f32>>(), &[4096])
}

/// `x * k + cos(x)`, as a host array, and how its one region ran.
fn run(x: &Array, k: f32) -> (HostArray, RanCode) {
    let y = (x * f64::from(k) + x.cos()).to_vec::<f32>();
    let ran = kiln_exec::last_run_code();
    assert_eq!(ran.len(), 1, "one region");
    (HostArray::from_vec(&[4096], y).unwrap(), ran[0].1.clone())
}

/// The same on the host, in float32 (the product and the sum rounded once each).
fn host(x: &Array, k: f32) -> HostArray {
    let v = x.to_vec::<f32>().iter().map(|&x| x * k + x.cos()).collect();
    HostArray::from_vec(&[4096], v).unwrap()
}

#[test]
fn gpu_a_new_expression_runs_interpreted_until_its_code_lands() {
    if !on_gpu() {
        return;
    }
    if kiln_cache::config().gpu_interp != GpuInterp::On {
        println!("skipped: KILN_GPU_INTERP is not on");
        return;
    }
    // The context made first: a process's first call compiles beside the context's creation
    // rather than interpreting (`gpu_a_process_s_first_kernel_compiles_while_the_context_is_made`).
    gpu().device().synchronize().unwrap();
    let (x, k) = (x(), new_k(1));
    let (first, ran) = run(&x, k);
    assert!(matches!(ran, RanCode::GpuInterpreted(_)), "the first call is interpreted");
    assert!(samples::ulps_apart(&first, &host(&x, k)) <= 2);
    interp::wait_for_compiles();
    let (second, ran) = run(&x, k);
    assert!(matches!(ran, RanCode::Gpu(_)), "the code landed");
    // Compiled code may contract the product and the sum into one FMA.
    assert!(samples::ulps_apart(&first, &second) <= 2);
}

#[test]
fn gpu_a_thread_without_the_interpreter_compiles_first() {
    if !on_gpu() {
        return;
    }
    let _never = interp::no_interpreter();
    let (x, k) = (x(), new_k(2));
    let (y, ran) = run(&x, k);
    assert!(matches!(ran, RanCode::Gpu(_)), "compiled before its first launch");
    assert!(samples::ulps_apart(&y, &host(&x, k)) <= 2);
}

#[test]
fn gpu_a_plans_new_kernels_are_prepared_side_by_side() {
    if !on_gpu() {
        return;
    }
    if !kiln_cache::config().gpu_compile_ahead {
        println!("skipped: KILN_GPU_COMPILE_AHEAD is off");
        return;
    }
    // Three reductions over other axes and of other kinds: three regions, none of which the
    // interpreter runs (reductions), each new to this process and to any disk cache.
    let (k1, k2, k3) = (new_k(3), new_k(4), new_k(5));
    let v: Vec<f32> = (0..64 * 48).map(|i| ((i * 37) % 101) as f32 * 0.25 - 12.0).collect();
    let x = Array::from_vec(v.clone(), &[64, 48]);
    let cols = (&x * f64::from(k1)).sum(0);
    let rows = (&x - f64::from(k2)).max(1);
    let all = (x.cos() * f64::from(k3)).sum(None);
    let before = kiln_exec::cuda::queued_ahead();
    kiln::eval_all(&[&cols, &rows, &all]);
    let ran = kiln_exec::last_run_code();
    assert_eq!(ran.len(), 3, "three regions");
    assert!(ran.iter().all(|r| matches!(r.1, RanCode::Gpu(_))), "each a compiled kernel");
    if kiln_exec::cuda::interp::compile_workers() >= 2 {
        assert_eq!(kiln_exec::cuda::queued_ahead() - before, 3, "each queued ahead");
    }
    let at = |r: usize, c: usize| v[r * 48 + c];
    let close = |got: f32, want: f64| (f64::from(got) - want).abs() <= 1e-5 * want.abs().max(1.0);
    let cols = cols.to_vec::<f32>();
    for c in 0..48 {
        let want: f64 = (0..64).map(|r| f64::from(at(r, c) * k1)).sum();
        assert!(close(cols[c], want), "column {c}: {} against {want}", cols[c]);
    }
    let rows = rows.to_vec::<f32>();
    for r in 0..64 {
        let want = (0..48).map(|c| at(r, c) - k2).fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(rows[r], want, "row {r}");
    }
    let want: f64 = v.iter().map(|&x| f64::from(x.cos() * k3)).sum();
    assert!(close(all.to_vec::<f32>()[0], want), "{:?} against {want}", all.to_vec::<f32>());
}

/// A process's first call compiles its one new kernel on a worker while the call's copy waits
/// for the device's context (`kiln_exec::cuda::Ahead`: one new step is enough where the device
/// has no context yet). In a child process (this binary, `first_call_child`), where no context
/// was made before.
#[test]
fn gpu_a_process_s_first_kernel_compiles_while_the_context_is_made() {
    if !on_gpu() {
        return;
    }
    if !kiln_cache::config().gpu_compile_ahead || interp::compile_workers() < 2 {
        println!("skipped: no compile ahead (KILN_GPU_COMPILE_AHEAD off, or one worker)");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["interp_gpu::first_call_child", "--exact", "--ignored", "--nocapture"])
        .env("KILN_FIRST_CALL_CHILD", "1")
        // No interpreter warm-up thread, which could make the context before the first call
        // starts its compile ahead.
        .env("KILN_GPU_INTERP", "off")
        .env("KILN_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let at = stdout.find("first-call-child ").unwrap_or_else(|| panic!("no report in:\n{stdout}"));
    let line = stdout[at..].lines().next().unwrap_or_default();
    assert_eq!(line.trim(), "first-call-child context_before=false queued_ahead=1 right=true");
}

/// Run by `gpu_a_process_s_first_kernel_compiles_while_the_context_is_made` as a child process
/// (`KILN_FIRST_CALL_CHILD` set): one column sum (a reduction: not interpreted) as the process's
/// first call on the device.
#[test]
#[ignore = "a child process of gpu_a_process_s_first_kernel_compiles_while_the_context_is_made"]
fn first_call_child() {
    if std::env::var_os("KILN_FIRST_CALL_CHILD").is_none() {
        println!("skipped: run by interp_gpu::gpu_a_process_s_first_kernel_compiles_while_the_context_is_made");
        return;
    }
    let device = kiln_runtime::Device::new(0).unwrap();
    let context_before = device.has_context();
    let v: Vec<f32> = (0..96 * 40).map(|i| ((i * 13) % 29) as f32 - 7.0).collect();
    let x = Array::from_vec(v.clone(), &[96, 40]);
    let before = kiln_exec::cuda::queued_ahead();
    let cols = (&x * 3.0f32).sum(0).to_vec::<f32>();
    let queued = kiln_exec::cuda::queued_ahead() - before;
    let right = (0..40).all(|c| cols[c] == (0..96).map(|r| v[r * 40 + c] * 3.0).sum::<f32>());
    println!(
        "first-call-child context_before={context_before} queued_ahead={queued} right={right}"
    );
}
