//! kiln's GPU benchmark: the workloads of `../shared/bench/peers.py`, same definitions and
//! sizes, timed on the device kiln runs on (`KILN_DEVICE`, default cuda:0).
//!
//! ```sh
//! kiln-bench [--quick] [--json OUT] [--reps N] [WORKLOAD...]
//! kiln-bench --multi-gpu [--gpus G | --gpus 0 --order 1,2] [--reps N]   # every GPU of the host: NCCL all-reduce, data-parallel k-means
//! ```
//!
//! Each workload builds its lazy expression afresh and materialises it (`eval`) on inputs
//! already in device memory: what a user's call costs, kiln's host work included. Timed with
//! CUDA events on the current stream around the call, median of `--reps` (25) runs after the
//! warm-up calls (GPU kernels start at the fast tier and are optimised once hot: from their 4th
//! call for large work, their 64th for small; the warm-up takes 65 calls); the kernel time alone (events around the launches, from the runtime's
//! profile) is reported beside it. Memory-bound work is also given in GB/s of the fewest bytes
//! it must move, and as a fraction of the device-to-device copy rate measured in the same run.
//! `tiny_chain_48ops` is wall time from the host call to the result on the device (synchronised);
//! `tiny_chain_48ops_fuse` the same chain as a `kiln::fuse` closure run per call (`Fused::run`);
//! `first_call_compile` is wall time of the first call of a new fused expression, compiled
//! from scratch (at the fast tier) (the benchmark runs with an empty disk cache of its own unless `KILN_CACHE_DIR`
//! is set); `first_call_disk_hit` is the same first call in a new process whose disk cache holds
//! the kernel (the child is this binary with `--first-call-child`, timed after its device is set
//! up and its input uploaded; a first call with no cached code runs in kiln's bytecode
//! interpreter while the code compiles, `KILN_GPU_INTERP`). The expression is `x * k + cos(x)`
//! (`first_expr` times it with another constant once compiled, or interpreted with
//! `KILN_GPU_INTERP=always`); `KILN_BENCH_FIRST_EXPR=plain`
//! times `x * k + 0.5` instead (no libdevice function in its kernel), for measuring.
//! `sqdiff_ek` and `l2norm_rk` are `sqdiff_bcast` and `l2norm_rows` written as CuPy's
//! `ElementwiseKernel` and `ReductionKernel` (peers.py's `cupy.Elementwise` and
//! `cupy.Reduction` rows of those workloads).

use std::time::Instant;

use kiln::{Array, DType};
use kiln_runtime::{Device, DeviceBuffer, Event, Stream};

mod multi_gpu;
mod tiny;

struct Args {
    quick: bool,
    multi_gpu: bool,
    /// `--gpus G`: the multi-GPU figures on G GPUs only.
    gpus: Option<usize>,
    /// `--order 2,1,2`: the GPU counts `--gpus 0` runs, in order.
    order: Vec<usize>,
    first_call_child: bool,
    json: Option<String>,
    reps: usize,
    only: Vec<String>,
}

fn args() -> Args {
    let mut a = Args {
        quick: false,
        multi_gpu: false,
        gpus: None,
        order: Vec::new(),
        first_call_child: false,
        json: None,
        reps: 25,
        only: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--quick" => a.quick = true,
            "--multi-gpu" => a.multi_gpu = true,
            "--gpus" => a.gpus = it.next().and_then(|v| v.parse().ok()),
            "--order" => {
                a.order = it
                    .next()
                    .map(|o| o.split(',').filter_map(|g| g.parse().ok()).collect())
                    .unwrap_or_default()
            }
            "--first-call-child" => a.first_call_child = true,
            "--json" => a.json = it.next(),
            "--reps" => a.reps = it.next().and_then(|v| v.parse().ok()).unwrap_or(25),
            _ => a.only.push(s),
        }
    }
    a
}

/// Standard normal float32s from a fixed seed (SplitMix64 + Box–Muller).
fn normal(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let (u1, u2) = (next().max(1e-300), next());
        let r = (-2.0 * u1.ln()).sqrt();
        v.push((r * (2.0 * std::f64::consts::PI * u2).cos()) as f32);
        v.push((r * (2.0 * std::f64::consts::PI * u2).sin()) as f32);
    }
    v.truncate(n);
    v
}

fn device_array(v: Vec<f32>, shape: &[usize]) -> Array {
    let a = Array::from_vec(v, shape);
    a.to_device_array();
    a
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Row {
    work: String,
    ms: f64,
    kernel_ms: Option<f64>,
    gbps: Option<f64>,
    kernels: Option<usize>,
    tflops: Option<f64>,
}

/// Event-timed median of `reps` calls of `f` after two warm-up calls, in ms: for library calls
/// of many milliseconds (no kernel tiers to warm).
fn time_few(stream: &Stream, reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..2 {
        f();
        kiln_exec::cuda::interp::wait_for_compiles();
    }
    stream.synchronize().unwrap();
    let mut ts = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Event::new(stream.device()).unwrap();
        let end = Event::new(stream.device()).unwrap();
        start.record(stream).unwrap();
        f();
        end.record(stream).unwrap();
        end.synchronize().unwrap();
        ts.push(end.elapsed_since(&start).unwrap() as f64);
    }
    median(ts)
}

/// `kiln::linalg` on peers_ops.py's workloads (float32; L = 8192, 4096 with --quick; S = 2048):
/// cholesky and solve of an SPD matrix, svd and eigh of S×S, qr of L×L, inv of 100,000 8×8
/// matrices, and `einsum("bij,bjk->bik")` of (64, 512, 256)·(64, 256, 512). At most 5 timed
/// calls each. Only run when named (`--only cholesky` ...): they take seconds.
fn linalg_workloads(a: &Args, stream: &Stream, rows: &mut Vec<Row>) {
    use kiln::linalg;
    let want = |w: &str| a.only.iter().any(|o| w.contains(o.as_str()));
    let l = if a.quick { 4096usize } else { 8192 };
    let s = 2048usize;
    let reps = a.reps.min(5);
    let mut push = |work: String, ms: f64, flops: Option<f64>| {
        rows.push(Row {
            work,
            ms,
            kernel_ms: None,
            gbps: None,
            kernels: None,
            tflops: flops.map(|f| f / (ms * 1e-3) / 1e12),
        })
    };
    let (chol, solve, qr) = (format!("cholesky_{l}"), format!("solve_{l}"), format!("qr_{l}"));
    if want(&chol) || want(&solve) || want(&qr) {
        let x = device_array(normal(l * l, 21), &[l, l]);
        let spd =
            (x.matmul(&x.t()) / l as f64 + kiln::eye(l, None, 0, DType::Float32)).eval().clone();
        let b = device_array(normal(l, 22), &[l, 1]);
        let lf = l as f64;
        if want(&chol) {
            let ms = time_few(stream, reps, || {
                linalg::cholesky(&spd).eval();
            });
            push(chol, ms, Some(lf.powi(3) / 3.0));
        }
        if want(&solve) {
            let ms = time_few(stream, reps, || {
                linalg::solve(&spd, &b).eval();
            });
            push(solve, ms, Some(2.0 * lf.powi(3) / 3.0));
        }
        if want(&qr) {
            let ms = time_few(stream, reps, || {
                let (q, r) = linalg::qr(&x, linalg::QrMode::Reduced);
                kiln::eval_all(&[&q, &r]);
            });
            push(qr, ms, None);
        }
    }
    let (svd, eigh) = (format!("svd_{s}"), format!("eigh_{s}"));
    if want(&svd) || want(&eigh) {
        let x = device_array(normal(s * s, 23), &[s, s]);
        let sym = ((&x + &x.t()) / 2.0).eval().clone();
        if want(&svd) {
            let ms = time_few(stream, reps, || {
                let (u, sv, vh) = linalg::svd(&x, true);
                kiln::eval_all(&[&u, &sv, &vh]);
            });
            push(svd, ms, None);
        }
        if want(&eigh) {
            let ms = time_few(stream, reps, || {
                let (w, v) = linalg::eigh(&sym);
                kiln::eval_all(&[&w, &v]);
            });
            push(eigh, ms, None);
        }
    }
    if want("inv_batched_100000x8x8") {
        let b = 100_000usize;
        let x = device_array(normal(b * 64, 24), &[b, 8, 8]);
        let m = (x + kiln::eye(8, None, 0, DType::Float32) * 4.0).eval().clone();
        let ms = time_few(stream, reps, || {
            linalg::inv(&m).eval();
        });
        push("inv_batched_100000x8x8".into(), ms, None);
    }
    if want("einsum_bij_bjk_bik") {
        let e1 = device_array(normal(64 * 512 * 256, 25), &[64, 512, 256]);
        let e2 = device_array(normal(64 * 256 * 512, 26), &[64, 256, 512]);
        let ms = time_few(stream, reps, || {
            kiln::einsum("bij,bjk->bik", &[&e1, &e2]).eval();
        });
        push("einsum_bij_bjk_bik".into(), ms, Some(2.0 * 64.0 * 512.0 * 256.0 * 512.0));
    }
}

/// Event-timed median of `reps` calls of `f` after warm-ups (enough for GPU kernels to reach
/// their optimised tier, small ones included: `GPU_HOT_CALLS_SMALL`), in ms.
fn time_events(name: &str, stream: &Stream, reps: usize, mut f: impl FnMut()) -> f64 {
    // A new kernel's first call runs interpreted while its code compiles on a worker: the
    // warm-up goes on once it landed.
    f();
    kiln_exec::cuda::interp::wait_for_compiles();
    for _ in 0..kiln_compiler::codegen::gpu::GPU_HOT_CALLS_SMALL {
        f();
    }
    stream.synchronize().unwrap();
    let (before, n0) = kiln::host_phase_times();
    let graphs0 = kiln::cuda::replay::stats();
    let mut ts = Vec::with_capacity(reps);
    let mut host = Vec::with_capacity(reps);
    kiln_runtime::host_trace::report();
    for _ in 0..reps {
        let start = Event::new(stream.device()).unwrap();
        let end = Event::new(stream.device()).unwrap();
        start.record(stream).unwrap();
        let t0 = Instant::now();
        kiln_runtime::host_trace::begin();
        f();
        kiln_runtime::host_trace::point("bench: call returned");
        host.push(t0.elapsed().as_secs_f64() * 1e6);
        end.record(stream).unwrap();
        end.synchronize().unwrap();
        ts.push(end.elapsed_since(&start).unwrap() as f64);
    }
    // Where the host's time per call goes: while it runs, the GPU waits for the first launch.
    let (per, n) = phases_since(&before, n0);
    println!(
        "{name}: host µs per call {:.1} (median; {} materialisations per call: {per})",
        median(host),
        n / reps.max(1)
    );
    print_host_trace(name, reps);
    let g = kiln::cuda::replay::stats();
    if g.replayed + g.built + g.direct > graphs0.replayed + graphs0.built + graphs0.direct {
        println!(
            "{name}: launch lists in {reps} calls: {} replayed as graphs ({} nodes updated), {} \
             built, {} plain ({} after a graph failed)",
            g.replayed - graphs0.replayed,
            g.updated_nodes - graphs0.updated_nodes,
            g.built - graphs0.built,
            g.direct - graphs0.direct,
            g.fallbacks - graphs0.fallbacks,
        );
    }
    median(ts)
}

/// With `KILN_HOST_TRACE=1`: the host's µs per call at each traced point
/// (`kiln_runtime::host_trace`), the first point charged with building the expression.
fn print_host_trace(name: &str, reps: usize) {
    let points = kiln_runtime::host_trace::report();
    if points.is_empty() {
        return;
    }
    let per: Vec<String> = points
        .iter()
        .map(|(p, us, n)| {
            format!(
                "{p} {:.2}{}",
                us / reps.max(1) as f64,
                if *n as usize == reps {
                    String::new()
                } else {
                    format!(" (×{:.1})", *n as f64 / reps.max(1) as f64)
                }
            )
        })
        .collect();
    println!("{name}: host trace µs per call: {}", per.join(", "));
}

/// The host phases' µs per materialisation since `before` (taken with `n0` materialisations
/// done), as text, and the number of materialisations since.
fn phases_since(before: &[(&'static str, f64)], n0: usize) -> (String, usize) {
    let (after, n1) = kiln::host_phase_times();
    let n = n1 - n0;
    let per: Vec<String> = before
        .iter()
        .zip(&after)
        .map(|((name, b), (_, a))| format!("{name} {:.1} µs", (a - b) / n.max(1) as f64))
        .collect();
    (per.join(", "), n)
}

/// The expression whose first call is timed: new to the process (a constant no workload uses).
fn first_call_expr(x: &Array) -> Array {
    let k = 1000.0 + 0.123;
    match std::env::var("KILN_BENCH_FIRST_EXPR").as_deref() {
        Ok("plain") => x * k + 0.5,
        _ => x * k + x.cos(),
    }
}

/// Wall time of the first call of [`first_call_expr`], in ms.
/// Prints where the time went: the plan (e-graph, fusion, schedule), the PTX compile by stage,
/// and the rest (the driver's JIT or `ptxas`, the module load, the launch).
fn time_first_call(x: &Array, stream: &Stream) -> f64 {
    stream.synchronize().unwrap();
    let (before, _) = kiln::host_phase_times();
    kiln_runtime::host_trace::report();
    let t0 = Instant::now();
    kiln_runtime::host_trace::begin();
    first_call_expr(x).eval();
    stream.synchronize().unwrap();
    kiln_runtime::host_trace::point("bench: synchronized");
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let interpreted = kiln_exec::last_run_code()
        .iter()
        .any(|(_, c)| matches!(c, kiln_exec::RanCode::GpuInterpreted(_)));
    kiln_exec::cuda::interp::wait_for_compiles();
    println!(
        "first call: {}; its code landed {:.1} ms after the call began",
        if interpreted { "interpreted while its code compiled" } else { "compiled code" },
        t0.elapsed().as_secs_f64() * 1e3
    );
    // KILN_HOST_TRACE=1: where the call's host time went, point by point.
    let trace: Vec<String> = kiln_runtime::host_trace::report()
        .iter()
        .map(|(point, us, _)| format!("{point} {us:.0}"))
        .collect();
    if !trace.is_empty() {
        println!("first call trace (µs): {}", trace.join(", "));
    }
    let (after, _) = kiln::host_phase_times();
    let plan_ms = (after[1].1 - before[1].1) / 1e3;
    let mut ptx = String::new();
    let mut compile_ms = 0.0;
    for (_, code) in kiln_exec::last_run_code() {
        if let kiln_exec::RanCode::Gpu(g) = code {
            let t = &g.0.times;
            compile_ms += g.0.compile_ms;
            ptx += &format!(
                "{:.1} ms ({} tier: parse {:.1}, passes {:.1}, translate {:.1}, link {:.1}, \
                 optimize {:.1}, codegen {:.1})",
                g.0.compile_ms,
                g.0.tier.name(),
                t.parse,
                t.passes,
                t.translate,
                t.link,
                t.optimize,
                t.codegen
            );
        }
    }
    println!(
        "first call {ms:.1} ms: plan {plan_ms:.1} ms, PTX {ptx}, the rest (JIT or ptxas, load, \
         launch) {:.1} ms",
        ms - plan_ms - compile_ms
    );
    ms
}

fn main() {
    let a = args();
    // A cold first call needs a cache of its own: the user's may already hold the kernel.
    let own_cache = std::env::var_os("KILN_CACHE_DIR").is_none() && !a.first_call_child;
    let cache_dir = std::env::temp_dir().join(format!("kiln-bench-cache-{}", std::process::id()));
    if own_cache {
        std::env::set_var("KILN_CACHE_DIR", &cache_dir);
    }
    let backend = kiln::backend();
    let device = match backend {
        kiln_runtime::Backend::Cuda(n) => Device::new(n).expect("device"),
        kiln_runtime::Backend::Cpu => {
            eprintln!(
                "kiln-bench: no CUDA device (KILN_DEVICE={backend}); the GPU benchmark needs one"
            );
            std::process::exit(2);
        }
    };
    if a.multi_gpu {
        multi_gpu::run(a.reps, a.gpus, &a.order);
        return;
    }
    let _d = device.use_scoped().unwrap();
    let stream = Stream::current().unwrap();
    let name = device.name().unwrap_or_default();
    let (n, r, c) =
        if a.quick { (1usize << 24, 4096usize, 4096usize) } else { (1 << 26, 8192, 8192) };
    println!("kiln-bench on {name} ({backend}), N={n}, R×C={r}×{c}, median of {} runs", a.reps);
    let want = |w: &str| a.only.is_empty() || a.only.iter().any(|o| w.contains(o.as_str()));
    let mut rows: Vec<Row> = Vec::new();

    // The physical ceiling: a device-to-device copy of N float32s.
    let copy_gbps = {
        let src = DeviceBuffer::alloc(4 * n).unwrap();
        let mut dst = DeviceBuffer::alloc(4 * n).unwrap();
        let ms =
            time_events("copy", &stream, a.reps, || dst.copy_from_device(&src, &stream).unwrap());
        let gbps = 8.0 * n as f64 / (ms * 1e-3) / 1e9;
        rows.push(Row {
            work: "copy".into(),
            ms,
            kernel_ms: None,
            gbps: Some(gbps),
            kernels: None,
            tflops: None,
        });
        gbps
    };

    let x = device_array(normal(n, 1), &[n]);
    if a.first_call_child {
        let ms = time_first_call(&x, &stream);
        let st = kiln_runtime::DiskCache::stats();
        println!("first_call_ms {ms} disk_hits {} disk_misses {}", st.hits, st.misses);
        return;
    }
    let m = device_array(normal(r * c, 2), &[r, c]);
    let v = device_array(normal(c, 3), &[c]);
    let g = device_array(normal(c, 4), &[c]);
    let b = device_array(normal(c, 5), &[c]);

    // CuPy's user-kernel forms of sqdiff_bcast and l2norm_rows (peers.py's `ek` and `rk`).
    let ek =
        kiln::ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
            .unwrap();
    let rk =
        kiln::ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
            .unwrap();

    // Copies as `peers_ops.py` defines them (issue 20 §1).
    let parts: Vec<Array> =
        (0..4).map(|k| device_array(normal(n / 4, 20 + k as u64), &[n / 4])).collect();

    // Lazy random draws (Philox in the kernel that reads them), as `peers_ops.py` defines them.
    let rng = std::cell::RefCell::new(kiln::random::default_rng(Some(1)));

    type Work<'a> = (&'static str, Box<dyn Fn() -> Array + 'a>, usize);
    let works: Vec<Work> = vec![
        // The first call's expression with another constant: its kernel's steady time
        // (interpreted with `KILN_GPU_INTERP=always`).
        ("first_expr", Box::new(|| &x * 999.5 + x.cos()), 8 * n),
        (
            "ew_chain",
            Box::new(|| ((&x - 1.5).power(2.0) * 0.5 + x.sin()) * (-(&x * &x)).exp()),
            8 * n,
        ),
        ("sqdiff_bcast", Box::new(|| (&m - &v) * (&m - &v)), 8 * r * c + 4 * c),
        ("sqdiff_ek", Box::new(|| ek.call(&[(&m).into(), (&v).into()])), 8 * r * c + 4 * c),
        ("l2norm_rows", Box::new(|| (&m * &m).sum(1).sqrt()), 4 * r * c + 4 * r),
        ("l2norm_rk", Box::new(|| rk.call(&[(&m).into()], 1)), 4 * r * c + 4 * r),
        ("sum_cols", Box::new(|| m.sum(0)), 4 * r * c + 4 * c),
        ("sum_all", Box::new(|| x.sum(None)), 4 * n),
        ("softmax_rows", Box::new(|| kiln::nn::softmax(&m, -1).unwrap()), 8 * r * c),
        (
            "layernorm_rows",
            Box::new(|| {
                let mu = m.mean(kiln::axis(1).keepdims());
                let d = &m - &mu;
                let var = (&d * &d).mean(kiln::axis(1).keepdims());
                &d / (var + 1e-5).sqrt() * &g + &b
            }),
            8 * r * c + 8 * c,
        ),
        (
            "concatenate_4x2^24",
            Box::new(|| kiln::concatenate(&parts.iter().collect::<Vec<_>>(), 0)),
            8 * n,
        ),
        (
            "pad_reflect_8192x8192_by_8",
            Box::new(|| m.pad(&[(8, 8), (8, 8)], kiln::PadMode::Reflect)),
            8 * r * c,
        ),
        ("roll_8192x8192", Box::new(|| m.roll(3, Some(1))), 8 * r * c),
        // peers_ops.py's `x[x > 0]`: one compaction kernel (the predicate fused) and its count
        // read back (one synchronisation) inside the call; the result holds the kernel's
        // buffer, so the kernels column (the result's plan after the call) is 0.
        ("mask_select_2^26", Box::new(|| x.mask(&x.greater(0.0f32))), 8 * n),
        // peers_ops.py's `nonzero(x > 0)`: the same kernel compacting the positions (int64).
        ("nonzero_2^26", Box::new(|| kiln::nonzero(&x.greater(0.0f32)).remove(0)), 12 * n),
        (
            "random_normal_2^26",
            Box::new(|| rng.borrow_mut().standard_normal(&[n], DType::Float32)),
            4 * n,
        ),
        (
            "dropout_2^26",
            Box::new(|| {
                &x * rng.borrow_mut().random(&[n], DType::Float32).greater_equal(0.1f32) / 0.9f32
            }),
            8 * n,
        ),
        // The same with torch's scaling (a multiply by 1 / (1 - p), not an IEEE division by
        // 1 - p): what the division costs the kernel (last bits differ).
        (
            "dropout_scaled_2^26",
            Box::new(|| {
                &x * rng.borrow_mut().random(&[n], DType::Float32).greater_equal(0.1f32)
                    * (1.0f32 / 0.9)
            }),
            8 * n,
        ),
        // The same roll as a gather at shifted positions (kiln's roll before it was a join).
        (
            "roll_8192x8192_as_gather",
            Box::new(|| {
                let pos = (kiln::arange(c as i64) + (c as i64 - 3)) % c as i64;
                m.take(&pos, Some(1))
            }),
            8 * r * c,
        ),
    ];
    for (work, f, bytes) in &works {
        if !want(work) {
            continue;
        }
        let probe = f();
        let kernels = kiln::explain(&[&probe]).report.kernel_count();
        let ms = time_events(work, &stream, a.reps, || {
            f().eval();
        });
        let gbps = *bytes as f64 / (ms * 1e-3) / 1e9;
        rows.push(Row {
            work: work.to_string(),
            ms,
            kernel_ms: None,
            gbps: Some(gbps),
            kernels: Some(kernels),
            tflops: None,
        });
    }

    // The main job (`kmeans_peers.py`): one k-means iteration, assign by squared distances and
    // argmin, update by sums (`add_at`) and counts (`bincount`) per cluster; and scatters as
    // `peers_ops.py` defines them (2^26 float32 values into 1024 bins, labels on the device).
    for (work, pn, pd) in [
        ("kmeans_iter_1797x64_k10", 1797usize, 64usize),
        ("kmeans_iter_1048576x64_k10", 1 << 20, 64),
    ] {
        if !want(work) {
            continue;
        }
        let k = 10usize;
        let px = device_array(normal(pn * pd, 13), &[pn, pd]);
        let pc = px.slice(&kiln::s![..k as i64]).eval().clone();
        let f = || {
            let labels = (px.expand_dims(&[1]) - pc.expand_dims(&[0])).square().sum(2).argmin(1);
            let sums = kiln::zeros(&[k, pd], DType::Float32).add_at(&labels, &px);
            let counts = kiln::bincount(&labels, None, k).astype(DType::Float32);
            &sums / counts.maximum(1.0f32).expand_dims(&[1])
        };
        let kernels = kiln::explain(&[&f()]).report.kernel_count();
        let ms = time_events(work, &stream, a.reps, || {
            f().eval();
        });
        let gbps = (8 * pn * pd) as f64 / (ms * 1e-3) / 1e9;
        rows.push(Row {
            work: work.into(),
            ms,
            kernel_ms: None,
            gbps: Some(gbps),
            kernels: Some(kernels),
            tflops: None,
        });
    }
    if want("scatter_add_2^26_into_1024") || want("bincount_2^26_into_1024") {
        let bins = 1024usize;
        let u = device_array(normal(n, 14), &[n]);
        // Labels made on the device (no host copy to range-check): spread over the bins.
        let labels = ((&u * 1000.0f32).astype(DType::Int64) % bins as i64).eval().clone();
        let big = 1usize << 20;
        let big_labels = ((&u * 1.0e6f32).astype(DType::Int64) % big as i64).eval().clone();
        type ScatterWork<'a> = (&'static str, Box<dyn Fn() -> Array + 'a>, usize);
        let works: Vec<ScatterWork> = vec![
            (
                "scatter_add_2^26_into_1024",
                Box::new(|| kiln::zeros(&[bins], DType::Float32).add_at(&labels, &x)),
                12 * n,
            ),
            ("bincount_2^26_into_1024", Box::new(|| kiln::bincount(&labels, None, bins)), 8 * n),
            // Bins beyond shared memory: global atomics into the output.
            (
                "scatter_add_2^26_into_1048576",
                Box::new(|| kiln::zeros(&[big], DType::Float32).add_at(&big_labels, &x)),
                12 * n,
            ),
        ];
        for (work, f, bytes) in &works {
            if !want(work) {
                continue;
            }
            let kernels = kiln::explain(&[&f()]).report.kernel_count();
            let ms = time_events(work, &stream, a.reps, || {
                f().eval();
            });
            let gbps = *bytes as f64 / (ms * 1e-3) / 1e9;
            rows.push(Row {
                work: work.to_string(),
                ms,
                kernel_ms: None,
                gbps: Some(gbps),
                kernels: Some(kernels),
                tflops: None,
            });
        }
    }

    // Scans of the whole vector (peers_ops.py's `cumsum_2^26`, and `cumsum_of_square_2^26` with
    // its square fused): by tiles, one pass.
    type ScanWork<'a> = (&'static str, Box<dyn Fn() -> Array + 'a>);
    let scans: Vec<ScanWork> = vec![
        ("cumsum_2^26", Box::new(|| x.cumsum(None))),
        ("cumsum_of_square_2^26", Box::new(|| (&x * &x).cumsum(None))),
    ];
    for (work, f) in &scans {
        if !want(work) {
            continue;
        }
        let kernels = kiln::explain(&[&f()]).report.kernel_count();
        let ms = time_events(work, &stream, a.reps, || {
            f().eval();
        });
        let gbps = (8 * n) as f64 / (ms * 1e-3) / 1e9;
        rows.push(Row {
            work: work.to_string(),
            ms,
            kernel_ms: None,
            gbps: Some(gbps),
            kernels: Some(kernels),
            tflops: None,
        });
    }

    // Sorts (peers_ops.py's names): the rows of the matrix by a block per row in shared memory
    // (`KILN_GPU_ROW_SORT`: the block radix sort, or the bitonic line sort),
    // their medians by a radix select per row (`cuda/radix_select.cu`); the whole vector by the radix sort (`kiln-exec`'s
    // `cuda/radix_sort.cu`), argsort's bytes counting its int64 positions (12 a key, as
    // peers_ops.py counts them).
    let sorts: Vec<ScanWork> = vec![
        ("sort_rows_8192x8192", Box::new(|| m.sort(Some(1)))),
        ("argsort_rows_8192x8192", Box::new(|| m.argsort(Some(1)))),
        ("median_rows_8192x8192", Box::new(|| m.median(Some(1)))),
        // torch.topk's values (the positions computed on the way, an argtopk region).
        ("topk_rows_8192x8192_k16", Box::new(|| kiln::topk(&m, 16, 1, true).0)),
        ("sort_f32_2^26", Box::new(|| x.sort(None))),
        ("argsort_f32_2^26", Box::new(|| x.argsort(None))),
    ];
    for (work, f) in &sorts {
        if !want(work) {
            continue;
        }
        let work = work.replace("8192x8192", &format!("{r}x{c}"));
        let kernels = kiln::explain(&[&f()]).report.kernel_count();
        let ms = time_events(&work, &stream, a.reps, || {
            f().eval();
        });
        let bytes = match work.as_str() {
            "sort_f32_2^26" => 8 * n,
            "argsort_f32_2^26" => 12 * n,
            w if w.starts_with("argsort_rows") => 12 * r * c,
            // A median or a top-k reads each element once (peers_ops.py's count).
            w if w.starts_with("median_rows") || w.starts_with("topk_rows") => 4 * r * c,
            _ => 8 * r * c,
        };
        let gbps = bytes as f64 / (ms * 1e-3) / 1e9;
        rows.push(Row {
            work,
            ms,
            kernel_ms: None,
            gbps: Some(gbps),
            kernels: Some(kernels),
            tflops: None,
        });
    }

    // unique of 2^26 int32 in [0, 2^16) (peers_ops.py's `unique_i32_2^26`): a radix sort, runs
    // numbered by a cumsum, their count read back (one synchronisation), a scatter.
    if want("unique_i32_2^26") {
        let bits: Vec<i32> =
            normal(n, 6).iter().map(|v| ((v.to_bits() >> 5) & 0xffff) as i32).collect();
        let u = Array::from_vec(bits, &[n]);
        u.to_device_array();
        let ms = time_events("unique_i32_2^26", &stream, a.reps, || {
            kiln::unique(&u).eval();
        });
        let gbps = (4 * n) as f64 / (ms * 1e-3) / 1e9;
        rows.push(Row {
            work: "unique_i32_2^26".to_string(),
            ms,
            kernel_ms: None,
            gbps: Some(gbps),
            kernels: None,
            tflops: None,
        });
    }

    // Scans along the rows of the matrix (peers_ops.py's `cumsum_rows_*`, by tiles) and down its
    // columns (a thread per column, sequential along it).
    for (work, axis) in [("cumsum_rows_8192x8192", 1i64), ("cumsum_cols_8192x8192", 0)] {
        if !want(work) {
            continue;
        }
        let work = work.replace("8192x8192", &format!("{r}x{c}"));
        let kernels = kiln::explain(&[&m.cumsum(Some(axis))]).report.kernel_count();
        let ms = time_events(&work, &stream, a.reps, || {
            m.cumsum(Some(axis)).eval();
        });
        let gbps = (8 * r * c) as f64 / (ms * 1e-3) / 1e9;
        rows.push(Row {
            work,
            ms,
            kernel_ms: None,
            gbps: Some(gbps),
            kernels: Some(kernels),
            tflops: None,
        });
    }

    if want("tiny_multi") {
        tiny::multi(&a, &stream, &mut rows);
    }
    if want("tiny_chain_48ops") {
        tiny::chain_48ops(&a, &stream, &mut rows);
    }
    if want("tiny_chain_48ops_fuse") {
        tiny::chain_48ops_fuse(&a, &stream, &mut rows);
    }

    // Library workloads as peers.py defines them (matmul: a @ a of K×K, no TF32; FFT: c64 of
    // F = 2^24, 2^22 with --quick; the window: abs(fft(z * w)), w real).
    for (work, dt, k) in [
        ("matmul_float32_4096", DType::Float32, 4096usize),
        ("matmul_float16_8192", DType::Float16, 8192),
    ] {
        if !want(work) {
            continue;
        }
        let p = device_array(normal(k * k, 7), &[k, k]).astype(dt).eval().clone();
        let kernels = kiln::explain(&[&p.matmul(&p)]).report.kernel_count();
        let ms = time_events(work, &stream, a.reps, || {
            p.matmul(&p).eval();
        });
        let tflops = 2.0 * (k as f64).powi(3) / (ms * 1e-3) / 1e12;
        rows.push(Row {
            work: work.into(),
            ms,
            kernel_ms: None,
            gbps: None,
            kernels: Some(kernels),
            tflops: Some(tflops),
        });
    }
    if want("matmul_bias_relu_f32") {
        let k = 4096usize;
        let p = device_array(normal(k * k, 8), &[k, k]);
        let bias = device_array(normal(k, 9), &[k]);
        let f = || kiln::nn::relu(&(p.matmul(&p) + &bias)).unwrap();
        let kernels = kiln::explain(&[&f()]).report.kernel_count();
        let ms = time_events("matmul_bias_relu_f32", &stream, a.reps, || {
            f().eval();
        });
        let tflops = 2.0 * (k as f64).powi(3) / (ms * 1e-3) / 1e12;
        rows.push(Row {
            work: "matmul_bias_relu_f32".into(),
            ms,
            kernel_ms: None,
            gbps: None,
            kernels: Some(kernels),
            tflops: Some(tflops),
        });
    }
    linalg_workloads(&a, &stream, &mut rows);
    if want("fft_c64") || want("fft_window_abs") {
        let f = if a.quick { 1usize << 22 } else { 1 << 24 };
        let re = device_array(normal(f, 10), &[f]);
        let im = device_array(normal(f, 11), &[f]);
        // complex64 as peers.py's `z` (a rank-0 array of a Rust complex scalar is complex128,
        // which would promote the sum).
        let z = (&re + &im * Array::scalar(num_complex::Complex32::new(0.0, 1.0)))
            .astype(DType::Complex64)
            .eval()
            .clone();
        assert_eq!(z.dtype(), DType::Complex64);
        let w = device_array(normal(f, 12), &[f]);
        type FftWork<'a> = (&'static str, Box<dyn Fn() -> Array + 'a>, usize);
        let works: Vec<FftWork> = vec![
            ("fft_c64", Box::new(|| kiln::fft::fft(&z, None, -1, "backward")), 16 * f),
            (
                "fft_window_abs",
                Box::new(|| kiln::fft::fft(&(&z * &w), None, -1, "backward").abs()),
                24 * f,
            ),
        ];
        for (work, g, bytes) in &works {
            if !want(work) {
                continue;
            }
            let kernels = kiln::explain(&[&g()]).report.kernel_count();
            let ms = time_events(work, &stream, a.reps, || {
                g().eval();
            });
            let gbps = *bytes as f64 / (ms * 1e-3) / 1e9;
            rows.push(Row {
                work: work.to_string(),
                ms,
                kernel_ms: None,
                gbps: Some(gbps),
                kernels: Some(kernels),
                tflops: None,
            });
        }
        if want("fft_window_abs_cb_load") {
            // The window as a hand-written cuFFT load callback (CuPy's `cb_ver="jit"` form),
            // then abs as a kernel: what a CuPy user writes to fuse `z * w` into the FFT.
            let src = "__device__ float2 window(void *d, unsigned long long o, void *w, void *s) \
                       { float2 x = ((float2*)d)[o]; float k = ((const float*)w)[o]; \
                       x.x *= k; x.y *= k; return x; }";
            let _scope =
                kiln::fft::config::set_cufft_callbacks(kiln::fft::config::CufftCallbacks {
                    cb_load: Some(src),
                    cb_load_name: Some("window"),
                    cb_load_aux_arr: Some(&w),
                    ..Default::default()
                })
                .unwrap();
            let ms = time_events("fft_window_abs_cb_load", &stream, a.reps, || {
                kiln::fft::fft(&z, None, -1, "backward").abs().eval();
            });
            rows.push(Row {
                work: "fft_window_abs_cb_load".into(),
                ms,
                kernel_ms: None,
                gbps: Some((24 * f) as f64 / (ms * 1e-3) / 1e9),
                kernels: Some(2),
                tflops: None,
            });
        }
        if want("fft_window_abs_generated") {
            // kiln's own callbacks: `z * w` as the FFT's load callback, `abs` as its store
            // callback (the executor's fusion forced on; by default each is kept only where
            // measured faster): no kernel runs.
            use kiln::fft::config::{set_fft_callback_mode, FftCallbackMode};
            let previous = set_fft_callback_mode(FftCallbackMode::Always);
            let ms = time_events("fft_window_abs_generated", &stream, a.reps, || {
                kiln::fft::fft(&(&z * &w), None, -1, "backward").abs().eval();
            });
            set_fft_callback_mode(previous);
            rows.push(Row {
                work: "fft_window_abs_generated".into(),
                ms,
                kernel_ms: None,
                gbps: Some((24 * f) as f64 / (ms * 1e-3) / 1e9),
                kernels: Some(0),
                tflops: None,
            });
            for d in kiln::fft::config::fft_callback_decisions() {
                let (side, ops, plain, cb) =
                    (d.side.name(), d.ops.join(" "), d.kernel_then_fft_ms, d.callback_ms);
                println!("fft callback decision: {side} [{ops}] {}: kernel+fft {plain:.4} ms, callback {cb:?} ms, fused {}", d.fft, d.fused);
            }
        }
        if want("fft_c64") {
            // cuFFT alone on buffers of the same size (the plan kiln makes for fft_c64): what
            // kiln's own work around the call costs is the difference.
            let layout = kiln_runtime::fft::FftLayout {
                ty: kiln_runtime::fft::FftType::C2C,
                n: f,
                batch: 1,
                istride: 1,
                idist: f,
                ostride: 1,
                odist: f,
            };
            let mut input = DeviceBuffer::alloc(8 * f).unwrap();
            input.memset(0).unwrap();
            let output = DeviceBuffer::alloc(8 * f).unwrap();
            let ms = time_events("fft_c64_cufft_only", &stream, a.reps, || {
                // SAFETY: both buffers hold f complex64 elements, the layout's; they outlive
                // the timing, which synchronises.
                unsafe {
                    kiln_runtime::fft::exec(&layout, false, input.ptr(), output.ptr()).unwrap()
                };
            });
            let gbps = (16 * f) as f64 / (ms * 1e-3) / 1e9;
            rows.push(Row {
                work: "fft_c64_cufft_only".into(),
                ms,
                kernel_ms: None,
                gbps: Some(gbps),
                kernels: Some(1),
                tflops: None,
            });
        }
    }

    if want("first_call") {
        let ms = time_first_call(&x, &stream);
        rows.push(Row {
            work: "first_call_compile".into(),
            ms,
            kernel_ms: None,
            gbps: None,
            kernels: Some(1),
            tflops: None,
        });
        // The same first call in fresh processes: its disk cache warm, and with no disk cache.
        for (work, cache_off) in
            [("first_call_disk_hit", false), ("first_call_in_new_process_no_cache", true)]
        {
            let exe = std::env::current_exe().expect("own path");
            let mut child = std::process::Command::new(exe);
            child.arg("--first-call-child");
            if a.quick {
                child.arg("--quick");
            }
            if cache_off {
                child.env("KILN_CACHE_DIR", "off");
            }
            match child.output() {
                Ok(out) => {
                    let text = String::from_utf8_lossy(&out.stdout);
                    let line = text.lines().find(|l| l.starts_with("first_call_ms")).unwrap_or("");
                    println!("{work} (child): {line}");
                    if let Some(b) = text.lines().find(|l| l.starts_with("first call ")) {
                        println!("{work} (child): {b}");
                    }
                    if let Some(ms) =
                        line.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok())
                    {
                        rows.push(Row {
                            work: work.into(),
                            ms,
                            kernel_ms: None,
                            gbps: None,
                            kernels: Some(1),
                            tflops: None,
                        });
                    } else {
                        eprintln!(
                            "{work}: the child printed no time: {text}{}",
                            String::from_utf8_lossy(&out.stderr)
                        );
                    }
                }
                Err(e) => eprintln!("{work}: cannot run the child: {e}"),
            }
        }
    }

    println!(
        "{:<22} {:>10} {:>9} {:>8} {:>8} {:>8}",
        "work", "ms", "GB/s", "of copy", "kernels", "TFLOP/s"
    );
    for row in &rows {
        let gb = row.gbps.map(|g| format!("{g:.0}")).unwrap_or_default();
        let frac = row.gbps.map(|g| format!("{:.0}%", 100.0 * g / copy_gbps)).unwrap_or_default();
        let k = row.kernels.map(|k| k.to_string()).unwrap_or_default();
        let tf = row.tflops.map(|t| format!("{t:.1}")).unwrap_or_default();
        println!("{:<22} {:>10.4} {:>9} {:>8} {:>8} {:>8}", row.work, row.ms, gb, frac, k, tf);
    }
    if let Some(path) = a.json {
        let mut text = format!(
            "{{\"device\": {:?}, \"N\": {n}, \"R\": {r}, \"C\": {c}, \"results\": [\n",
            name
        );
        for (i, row) in rows.iter().enumerate() {
            text +=
                &format!("  {{\"work\": {:?}, \"peer\": \"kiln\", \"ms\": {}", row.work, row.ms);
            if let Some(g) = row.gbps {
                text += &format!(", \"GBps\": {g}");
            }
            if let Some(k) = row.kernel_ms {
                text += &format!(", \"kernel_ms\": {k}");
            }
            if let Some(k) = row.kernels {
                text += &format!(", \"kernels\": {k}");
            }
            if let Some(t) = row.tflops {
                text += &format!(", \"TFLOPs\": {t}");
            }
            text += if i + 1 < rows.len() { "},\n" } else { "}\n" };
        }
        text += "]}\n";
        std::fs::write(&path, text).expect("write the JSON");
    }
    if own_cache {
        let _ = std::fs::remove_dir_all(&cache_dir);
    }
}
