//! Host code generation: compile latency of a new region, and the CPU time of fused kernels.
//!
//! `cargo bench --bench codegen` (release; `-- user_kernels` for user kernels against array ops;
//! `-- "host disk"` for the host disk-cache hit, with its breakdown). Figures on the 2-core development machine are in the
//! code generation report; the reference points are NumPy's (~100 ms for ew_chain on 2^24
//! float32 elements).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use kiln::{Array, HostArray};
use kiln_compiler::codegen::{
    compile, compile_region_disk, lower, CodeTarget, CompiledRegion, LowerOptions, Origin, Tier,
};
use kiln_compiler::fusion::{partition, Region};
use kiln_compiler::schedule::{schedule, Schedule};

fn uniform(n: usize, shape: &[usize], lo: f32, hi: f32) -> Array {
    let mut s = 0x9E3779B97F4A7C15u64;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect();
    let a = Array::from_vec(v, shape);
    a.eval();
    a
}

fn ew_chain(x: &Array, c: f32) -> Array {
    ((x - c as f64).square() * 0.5 + x.sin()) * (-(x * x)).exp()
}

/// The program's graph, regions, schedule and inputs.
fn plan(y: &Array) -> (Vec<Region>, Schedule, Vec<std::sync::Arc<HostArray>>) {
    let l = kiln::lower(&[y]);
    let p = partition(&l.graph);
    let s = schedule(&l.graph, &p.regions);
    (p.regions, s, l.inputs)
}

fn compile_latency(c: &mut Criterion) {
    let x = uniform(1024, &[1024], -3.0, 3.0);
    // Each iteration compiles a region never seen before: the constant differs, so its text
    // (the cache key) and its kernel's MLIR differ.
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let new_region = || {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let (regions, _, _) = plan(&ew_chain(&x, 1.0 + k as f32 * 1e-3));
        regions
    };
    let mut g = c.benchmark_group("compile");
    g.sample_size(50);
    for tier in [Tier::Fast, Tier::Optimized] {
        g.bench_function(format!("new elementwise region (ew_chain), {tier:?} tier"), |b| {
            b.iter_batched(
                new_region,
                |regions| compile_host(&regions[0], tier),
                BatchSize::PerIteration,
            )
        });
    }
    // A host disk-cache hit: a warm start's first call of a kernel (a new process, the kernel in
    // KILN_CACHE_DIR): the region lowered to MLIR text, the key made, the entry read and checked
    // (SHA-256), its object file linked (ORC); neither MLIR nor LLVM runs.
    let host_dir =
        std::env::temp_dir().join(format!("kiln-bench-host-disk-{}", std::process::id()));
    let host_disk = kiln_runtime::DiskCache::new(&host_dir);
    let regions = new_region();
    compile_region_disk(&regions[0], Tier::Optimized, &host_disk).unwrap();
    g.bench_function("host disk cache hit (lower the region, key, read the entry, link it)", |b| {
        b.iter_with_large_drop(|| {
            let c = compile_region_disk(&regions[0], Tier::Fast, &host_disk).unwrap();
            assert_eq!(c.code.get().origin, Origin::DiskCache);
            c
        })
    });
    host_disk_breakdown(&regions[0], &host_disk);
    let _ = std::fs::remove_dir_all(&host_dir);
    // To PTX (sm_90, libdevice linked where the kernel calls it): LLVM's NVPTX back end, no
    // device needed. Skipped without libdevice (scripts/setup.sh fetches it).
    if kiln_compiler::codegen::gpu::libdevice_path().is_some() {
        // Optimised (`default<O3>`, unrolled 4-wide path, optimised NVPTX code generation): what
        // a region with much work gets at once, and any other once hot.
        g.bench_function("new elementwise region (ew_chain) to PTX", |b| {
            b.iter_batched(
                new_region,
                |regions| compile_gpu_tier(&regions[0], Tier::Optimized),
                BatchSize::PerIteration,
            )
        });
        ptx_breakdown(Tier::Optimized, || new_region().swap_remove(0));
        // The fast tier (`FAST_PIPELINE`, one item at a time, `-O0` code generation): what a new
        // region with little work gets first.
        g.bench_function("new elementwise region (ew_chain) to PTX, fast tier", |b| {
            b.iter_batched(
                new_region,
                |regions| compile_gpu_tier(&regions[0], Tier::Fast),
                BatchSize::PerIteration,
            )
        });
        ptx_breakdown(Tier::Fast, || new_region().swap_remove(0));
    }
    // A disk-cache hit: the entry's file read and checked (SHA-256), as a warm start does
    // before loading the cubin (loading it needs a device: kiln-bench's first_call_disk_hit).
    let dir = std::env::temp_dir().join(format!("kiln-bench-disk-{}", std::process::id()));
    let cache = kiln_runtime::DiskCache::new(&dir);
    let regions = new_region();
    let kernel = lower(&regions[0], &LowerOptions::gpu()).unwrap();
    let key = kiln_compiler::codegen::gpu::disk_cache_key(
        &kernel,
        Default::default(),
        kiln_compiler::codegen::Tier::Optimized,
        13000,
    );
    let entry = kiln_runtime::CachedKernel { ptx: "x".repeat(40_000), cubin: vec![1u8; 20_000] };
    cache.store(&key, &entry).unwrap();
    g.bench_function("disk cache hit (lower the region, key, read and check the entry)", |b| {
        b.iter(|| {
            let k = lower(&regions[0], &LowerOptions::gpu()).unwrap();
            let key = kiln_compiler::codegen::gpu::disk_cache_key(
                &k,
                Default::default(),
                kiln_compiler::codegen::Tier::Optimized,
                13000,
            );
            assert!(matches!(cache.lookup(&key), kiln_runtime::Lookup::Hit(_)));
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
    g.finish();
}

/// Where the time of a host disk-cache hit goes, beside a compilation of the same kernel
/// (optimised tier): the median and the minimum over 30 runs, in ms.
fn host_disk_breakdown(region: &Region, disk: &kiln_runtime::DiskCache) {
    let median_min = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0])
    };
    let mut rows: Vec<(&str, Vec<f64>)> =
        ["read + check the entry", "link (ORC)", "lower + key + read + link (wall)"]
            .into_iter()
            .map(|n| (n, Vec::new()))
            .collect();
    for _ in 0..30 {
        let t = std::time::Instant::now();
        let c = compile_region_disk(region, Tier::Fast, disk).unwrap();
        let wall = t.elapsed().as_secs_f64() * 1e3;
        let times = c.code.get().times;
        for (row, v) in rows.iter_mut().zip([times.disk * 1e3, times.link * 1e3, wall]) {
            row.1.push(v);
        }
    }
    let mut compile: Vec<(&str, Vec<f64>)> =
        ["MLIR", "LLVM optimisation", "code generation", "link (ORC)", "lower + compile (wall)"]
            .into_iter()
            .map(|n| (n, Vec::new()))
            .collect();
    for _ in 0..30 {
        let t = std::time::Instant::now();
        let c = compile_host(region, Tier::Optimized);
        let wall = t.elapsed().as_secs_f64() * 1e3;
        let ts = c.code.get().times;
        for (row, v) in compile
            .iter_mut()
            .zip([ts.mlir, ts.optimize, ts.jit, ts.link].map(|s| s * 1e3).into_iter().chain([wall]))
        {
            row.1.push(v);
        }
    }
    println!("host kernel from the disk cache, ms (median, min) over 30 loads:");
    for (name, v) in rows {
        let (med, min) = median_min(v);
        println!("  {name:34} {med:7.3} {min:7.3}");
    }
    println!("the same kernel compiled (optimised tier), ms (median, min) over 30:");
    for (name, v) in compile {
        let (med, min) = median_min(v);
        println!("  {name:34} {med:7.3} {min:7.3}");
    }
}

/// `region` lowered for the GPU and compiled to PTX at `tier` (sm_90).
fn compile_gpu_tier(region: &Region, tier: Tier) -> kiln_compiler::codegen::gpu::GpuKernel {
    let kernel = lower(region, &LowerOptions::gpu_tier(tier)).unwrap();
    compile(kernel, CodeTarget::Ptx(Default::default()), tier).unwrap().into_ptx().unwrap()
}

/// `region` lowered and compiled for the host at `tier`, bypassing the caches.
fn compile_host(region: &Region, tier: Tier) -> CompiledRegion {
    let kernel = lower(region, &LowerOptions::host()).unwrap();
    compile(kernel, CodeTarget::Host, tier).unwrap().into_host().unwrap()
}

/// Where the time of compiling a new region to PTX goes, stage by stage (`PtxTimes`): the
/// median and the minimum over 30 new regions (the minimum is the figure least disturbed by
/// other work on a shared machine), printed beside criterion's figures.
fn ptx_breakdown(tier: Tier, mut new_region: impl FnMut() -> Region) {
    let runs: Vec<(kiln_compiler::toolchain::ptx::PtxTimes, f64)> = (0..30)
        .map(|_| {
            let region = new_region();
            let t = std::time::Instant::now();
            let g = compile_gpu_tier(&region, tier);
            (g.times, t.elapsed().as_secs_f64() * 1e3)
        })
        .collect();
    type Stage = fn(&(kiln_compiler::toolchain::ptx::PtxTimes, f64)) -> f64;
    let stages: [(&str, Stage); 8] = [
        ("MLIR parse + verify", |r| r.0.parse),
        ("MLIR passes", |r| r.0.passes),
        ("translation to LLVM IR", |r| r.0.translate),
        ("libdevice link", |r| r.0.link),
        ("LLVM optimisation", |r| r.0.optimize),
        ("NVPTX code generation", |r| r.0.codegen),
        ("sum of the stages", |r| r.0.total()),
        ("lower + compile (wall)", |r| r.1),
    ];
    println!(
        "to PTX ({} tier), ms per stage over {} new regions (median, min):",
        tier.name(),
        runs.len()
    );
    for (name, stage) in stages {
        let mut v: Vec<f64> = runs.iter().map(stage).collect();
        v.sort_by(f64::total_cmp);
        println!("  {name:24} {:7.2} {:7.2}", v[v.len() / 2], v[0]);
    }
}

fn run(c: &mut Criterion) {
    let mut g = c.benchmark_group("host");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    let x = uniform(1 << 24, &[1 << 24], -3.0, 3.0);
    let (regions, sched, inputs) = plan(&ew_chain(&x, 1.5));
    let refs: Vec<&HostArray> = inputs.iter().map(|a| a.as_ref()).collect();
    kiln_exec::cpu::run_schedule(&sched, &regions, &refs, kiln_exec::cpu::HostRun::Compiled)
        .unwrap();
    settle();
    g.bench_function("ew_chain 2^24 f32", |b| {
        b.iter(|| {
            kiln_exec::cpu::run_schedule(&sched, &regions, &refs, kiln_exec::cpu::HostRun::Compiled)
                .unwrap()
        })
    });

    let x = uniform(4096 * 4096, &[4096, 4096], -5.0, 5.0);
    let (regions, sched, inputs) = plan(&kiln::nn::softmax(&x, -1).unwrap());
    let refs: Vec<&HostArray> = inputs.iter().map(|a| a.as_ref()).collect();
    kiln_exec::cpu::run_schedule(&sched, &regions, &refs, kiln_exec::cpu::HostRun::Compiled)
        .unwrap();
    settle();
    g.bench_function("softmax rows 4096x4096 f32", |b| {
        b.iter(|| {
            kiln_exec::cpu::run_schedule(&sched, &regions, &refs, kiln_exec::cpu::HostRun::Compiled)
                .unwrap()
        })
    });
    g.finish();
}

/// User kernels against the same computation written with array operations: the traced graph
/// is the same but for `label` nodes, so the kernels should cost the same; and the cost of a
/// call (tracing the kernel's code into the graph).
fn user_kernels(c: &mut Criterion) {
    let mut g = c.benchmark_group("user_kernels");
    g.sample_size(20).measurement_time(Duration::from_secs(6));
    let sqdiff =
        kiln::ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
            .unwrap();
    let l2norm =
        kiln::ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
            .unwrap();
    let x = uniform(4096 * 4096, &[4096, 4096], -3.0, 3.0);
    let y = uniform(4096, &[4096], -3.0, 3.0);
    let programs = [
        ("sqdiff_bcast 4096x4096 f32, ElementwiseKernel", sqdiff.call(&[(&x).into(), (&y).into()])),
        ("sqdiff_bcast 4096x4096 f32, array ops", (&x - &y).square()),
        ("l2norm_rows 4096x4096 f32, ReductionKernel", l2norm.call(&[(&x).into()], 1)),
        ("l2norm_rows 4096x4096 f32, array ops", (&x * &x).sum(1).sqrt()),
    ];
    for (name, out) in &programs {
        let (regions, sched, inputs) = plan(out);
        let refs: Vec<&HostArray> = inputs.iter().map(|a| a.as_ref()).collect();
        kiln_exec::cpu::run_schedule(&sched, &regions, &refs, kiln_exec::cpu::HostRun::Compiled)
            .unwrap();
        settle();
        g.bench_function(*name, |b| {
            b.iter(|| {
                kiln_exec::cpu::run_schedule(
                    &sched,
                    &regions,
                    &refs,
                    kiln_exec::cpu::HostRun::Compiled,
                )
                .unwrap()
            })
        });
    }
    g.bench_function("trace ElementwiseKernel squared_diff (a call)", |b| {
        b.iter(|| sqdiff.call(&[(&x).into(), (&y).into()]))
    });
    g.bench_function("trace ReductionKernel l2norm (a call)", |b| {
        b.iter(|| l2norm.call(&[(&x).into()], 1))
    });
    let fused = kiln::fuse("squared_diff", |a: &[kiln::Operand]| {
        let d = a[0].to_array().try_subtract(a[1].clone())?;
        d.try_multiply(&d)
    });
    fused.call(&[(&x).into(), (&y).into()]);
    g.bench_function("fuse squared_diff (a cached call)", |b| {
        b.iter(|| fused.call(&[(&x).into(), (&y).into()]))
    });
    g.finish();
}

/// Waits until the background thread has replaced the fast code with the optimised one (the
/// figures are those of the optimised tier).
fn settle() {
    std::thread::sleep(Duration::from_millis(300));
}

criterion_group!(benches, compile_latency, run, user_kernels);
criterion_main!(benches);
