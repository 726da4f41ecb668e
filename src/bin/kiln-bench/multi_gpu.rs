//! `kiln-bench --multi-gpu`: issue 25's figures on every GPU of the host, one process driving
//! them (a thread per GPU): NCCL's all-reduce of 1 GiB of float32 through
//! `kiln::distributed` (bus bandwidth as nccl-tests reports it: 2 (n-1)/n bytes per second),
//! and the data-parallel k-means iteration of `examples/kmeans_multi_gpu.rs` on 2^24×64 points,
//! k = 10, on 1, 2, ... GPUs. `scripts/gpu/allreduce_peers.py` times torch.distributed's
//! all-reduce on the same machine.

use kiln::cuda::{Device, Event, Stream};
use kiln::distributed::{Communicator, ReduceOp};
use kiln::DType;

#[path = "../../../examples/kmeans_multi_gpu.rs"]
#[allow(dead_code)]
mod kmeans_multi_gpu;

/// Median milliseconds of `reps` all-reduces of `bytes` on each of `gpus` GPUs (rank 0's
/// events; a barrier before each).
fn all_reduce_ms(gpus: usize, bytes: usize, reps: usize) -> kiln::Result<f64> {
    let comms = Communicator::init_all(&(0..gpus).collect::<Vec<_>>())?;
    let times: Vec<kiln::Result<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|c| {
                s.spawn(move || -> kiln::Result<f64> {
                    let _d = c.device().use_scoped()?;
                    let x = kiln::ones(&[bytes / 4], DType::Float32).eval().clone();
                    let stream = Stream::current_on(c.device())?;
                    for _ in 0..3 {
                        c.all_reduce(&x, ReduceOp::Sum)?.try_eval()?;
                    }
                    let mut ms = Vec::new();
                    for _ in 0..reps {
                        c.barrier()?;
                        let (a, b) = (Event::new(c.device())?, Event::new(c.device())?);
                        a.record(&stream)?;
                        let y = c.all_reduce(&x, ReduceOp::Sum)?;
                        b.record(&stream)?;
                        b.synchronize()?;
                        ms.push(kiln::cuda::elapsed_time(&a, &b)? as f64);
                        drop(y);
                    }
                    ms.sort_by(f64::total_cmp);
                    Ok(ms[ms.len() / 2])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
    });
    let mut first = None;
    for t in times {
        let t = t?;
        first.get_or_insert(t);
    }
    Ok(first.expect("one rank at least"))
}

/// The figures on every GPU count, each count in a process of its own (this binary with
/// `--gpus G`), as a user runs one count a process; `--gpus 0` times every count in this one
/// process, in the order `--order 2,2,1,2` gives: there, a 2-GPU run right after another ran
/// 4× slower (10.8 ms against 2.45; open in issue 25).
pub fn run(reps: usize, only: Option<usize>, order: &[usize]) {
    let gpus = Device::all().len();
    println!(
        "multi-GPU: {gpus} GPU(s) ({}), NCCL {:?} from {}",
        Device::new(0).and_then(|d| d.name()).unwrap_or_default(),
        kiln::cuda::nccl::version(),
        kiln::cuda::nccl::library_path().unwrap_or("?")
    );
    if only == Some(0) {
        // Every count in this one process, one after another (to compare with the children).
        let data = kmeans_multi_gpu::Data::Synthetic { n: 1 << 24, d: 64 };
        let order = if order.is_empty() { (1..=gpus).collect() } else { order.to_vec() };
        for g in order {
            match kmeans_multi_gpu::run_threads(&data, g, 20) {
                Ok((_, ms, _)) => println!(
                    "kmeans_dp_2^24x64_k10 {g} GPU(s), in one process: {ms:.3} ms/iteration"
                ),
                Err(e) => println!("kmeans_dp_2^24x64_k10 {g} GPU(s), in one process: error: {e}"),
            }
        }
        return;
    }
    let Some(g) = only else {
        let exe = std::env::current_exe().expect("this binary");
        for g in 1..=gpus {
            let status = std::process::Command::new(&exe)
                .args(["--multi-gpu", "--gpus", &g.to_string(), "--reps", &reps.to_string()])
                .status();
            if !status.as_ref().is_ok_and(|s| s.success()) {
                println!("--gpus {g}: the child failed ({status:?})");
            }
        }
        return;
    };
    let bytes = 1usize << 30;
    if g >= 2 {
        match all_reduce_ms(g, bytes, reps) {
            Ok(ms) => {
                let bus = 2.0 * (g - 1) as f64 / g as f64 * bytes as f64 / (ms * 1e-3) / 1e9;
                println!("allreduce_1gib_f32 {g} GPUs: {ms:.3} ms, bus bandwidth {bus:.1} GB/s");
            }
            Err(e) => println!("allreduce_1gib_f32 {g} GPUs: error: {e}"),
        }
    }
    let data = kmeans_multi_gpu::Data::Synthetic { n: 1 << 24, d: 64 };
    let (before, calls) = kiln::host_phase_times();
    match kmeans_multi_gpu::run_threads(&data, g, 20) {
        Ok((it, ms, inertia)) => println!(
            "kmeans_dp_2^24x64_k10 {g} GPU(s): {ms:.3} ms/iteration over {it}, inertia {inertia:.4e}"
        ),
        Err(e) => println!("kmeans_dp_2^24x64_k10 {g} GPU(s): error: {e}"),
    }
    let (after, calls_after) = kiln::host_phase_times();
    let n = (calls_after - calls).max(1) as f64;
    let phases: Vec<String> = after
        .iter()
        .zip(&before)
        .map(|((name, t), (_, t0))| format!("{name} {:.0} µs", (t - t0) / n))
        .collect();
    println!("  host per materialisation, warm-up included ({n} of them): {}", phases.join(", "));
}
