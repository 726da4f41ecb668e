//! Data-parallel k-means over several GPUs (issue 25's main job): each GPU holds a shard of the
//! points and computes, in its one-pass scatter kernel, the labels and its partial cluster sums
//! and counts; one NCCL `all_reduce` of k×(d+1) values per iteration combines them, and every
//! GPU computes the same new centers.
//!
//! ```sh
//! # one process driving every GPU (a thread per GPU): the digits, then 2^24×64 synthetic
//! # points timed on 1, 2, ... GPUs
//! cargo run --release --example kmeans_multi_gpu -- ../shared/data/digits_x.npy
//! cargo run --release --example kmeans_multi_gpu -- --synthetic 24 --iters 20
//! # one process per GPU (torchrun's variables; rank 0 listens on MASTER_PORT)
//! for r in 0 1; do RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_PORT=29500 \
//!   cargo run --release --example kmeans_multi_gpu -- --synthetic 24 & done; wait
//! ```
//! On the CPU backend (no GPU) it says collectives need CUDA devices and runs nothing.

use std::time::Instant;

use kiln::cuda::Device;
use kiln::distributed::{Communicator, Launch, ReduceOp};
use kiln::{s, Array, DType};

#[path = "common/lloyd.rs"]
#[allow(dead_code)] // `update` and `fit` are the one-GPU example's
mod lloyd;
use lloyd::{kmeans_pp, sq_distances, SplitMix};

const K: usize = 10;
const SEED: u64 = 0;

/// One data-parallel Lloyd step on a shard: the new centers (the same on every rank) and their
/// squared shift, lazy; the labels, sums and counts are one scatter kernel over the shard, then
/// one all-reduce of `[sums | counts]` (k × (d + 1)).
fn step(comm: &Communicator, x: &Array, centers: &Array) -> kiln::Result<(Array, Array)> {
    let (k, d) = (centers.shape()[0], centers.shape()[1]);
    let labels = sq_distances(x, centers).argmin(1);
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, x);
    let counts = kiln::bincount(&labels, None, k).astype(DType::Float32);
    let partial = kiln::concatenate(&[&sums, &counts.expand_dims(&[1])], 1);
    // The centers (lazy: the last step's update) are computed with the partial sums, in one
    // materialisation, and kept: the step's only one but the all-reduce.
    kiln::try_eval_all(&[&partial, centers])?;
    let total = comm.all_reduce(&partial, ReduceOp::Sum)?;
    let (sums, counts) = (total.slice(&s![.., ..d as i64]), total.slice(&s![.., d as i64]));
    let means = &sums / counts.maximum(1.0f32).expand_dims(&[1]);
    let new_centers = kiln::where_(counts.greater(0.0f32).expand_dims(&[1]), &means, centers);
    let shift = (&new_centers - centers).square().sum(None);
    Ok((new_centers, shift))
}

/// A rank's shard of the run: points `rank * n / size .. (rank + 1) * n / size` of the digits,
/// or of `n` synthetic points (drawn on the device: K Gaussian blobs in 64 dimensions).
pub enum Data {
    File(Array),
    Synthetic { n: usize, d: usize },
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Data::File(x) => x.shape()[0],
            Data::Synthetic { n, .. } => *n,
        }
    }

    fn shard(&self, rank: usize, size: usize) -> Array {
        let (lo, hi) = (rank * self.len() / size, (rank + 1) * self.len() / size);
        match self {
            Data::File(x) => {
                x.slice(&s![lo as i64..hi as i64]).astype(DType::Float32).eval().clone()
            }
            Data::Synthetic { n, d } => {
                // Drawn in chunks of 2^22 points, chunk j from seed j, so the points are the
                // same whatever the number of GPUs (when it divides the chunks).
                let chunk = (*n).min(1 << 22);
                let chunks = n / chunk;
                let mine: Vec<usize> = if chunks % size == 0 {
                    (rank * chunks / size..(rank + 1) * chunks / size).collect()
                } else {
                    vec![rank]
                };
                let m = if chunks % size == 0 { chunk } else { hi - lo };
                // The blobs' centres: a fixed draw, the same on every rank.
                let centres = kiln::random::default_rng(Some(SEED)).uniform(
                    -8.0,
                    8.0,
                    &[K, *d],
                    DType::Float32,
                );
                let parts: Vec<Array> = mine
                    .iter()
                    .map(|&j| {
                        let mut rng = kiln::random::default_rng(Some(SEED + 1 + j as u64));
                        let blob = rng.integers(0, K as i64, &[m], DType::Int64);
                        centres.take(&blob, Some(0)) + rng.standard_normal(&[m, *d], DType::Float32)
                    })
                    .collect();
                let parts: Vec<&Array> = parts.iter().collect();
                kiln::concatenate(&parts, 0).eval().clone()
            }
        }
    }
}

/// Runs k-means on `comm`'s rank: `iters` fixed iterations (timed), or until the centers move
/// by at most 1e-4 (`iters == 0`). Returns (iterations, ms per iteration, inertia).
pub fn run_rank(comm: &Communicator, data: &Data, iters: usize) -> kiln::Result<(usize, f64, f32)> {
    let _device = comm.device().use_scoped()?;
    // A stream of the rank's own, as NCCL advises (not the legacy default stream, which
    // synchronises with the device's other blocking streams).
    let stream = kiln::cuda::Stream::non_blocking(comm.device())?;
    let _stream = stream.use_scoped();
    let x = data.shard(comm.rank(), comm.size());
    // Rank 0 seeds by k-means++ on the run's first points (at most 2^16: within its shard),
    // so every GPU count starts from the same centers; everyone gets them.
    let seed = if comm.rank() == 0 {
        let m = x.shape()[0].min(1 << 16) as i64;
        kmeans_pp(&x.slice(&s![..m]).eval().clone(), K, &mut SplitMix(SEED))
    } else {
        kiln::zeros(&[K, x.shape()[1]], DType::Float32)
    };
    let mut centers = comm.broadcast(&seed, 0)?;
    // Warm-up: compiles the step's kernels (fast code first, optimised from the 4th call).
    for _ in 0..5 {
        let (warm, _) = step(comm, &x, &centers)?;
        warm.try_eval()?;
    }
    comm.barrier()?;
    let start = Instant::now();
    let mut done = 0;
    let limit = if iters == 0 { 300 } else { iters };
    while done < limit {
        let (new_centers, shift) = step(comm, &x, &centers)?;
        centers = new_centers;
        done += 1;
        // Converging runs read the shift (a synchronisation); timed runs leave the new
        // centers lazy for the next step's materialisation.
        if iters == 0 && shift.item::<f32>() <= 1e-4 {
            break;
        }
    }
    centers.try_eval()?;
    comm.barrier()?;
    let ms = start.elapsed().as_secs_f64() * 1e3 / done as f64;
    let inertia = sq_distances(&x, &centers).min(1).sum(None).astype(DType::Float64);
    let inertia = comm.all_reduce(&inertia, ReduceOp::Sum)?.item::<f64>() as f32;
    Ok((done, ms, inertia))
}

/// One process driving the first `gpus` devices, a thread each.
pub fn run_threads(data: &Data, gpus: usize, iters: usize) -> kiln::Result<(usize, f64, f32)> {
    let devices: Vec<usize> = (0..gpus).collect();
    let comms = Communicator::init_all(&devices)?;
    let results: Vec<kiln::Result<(usize, f64, f32)>> = std::thread::scope(|s| {
        let handles: Vec<_> =
            comms.into_iter().map(|c| s.spawn(move || run_rank(&c, data, iters))).collect();
        handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
    });
    let mut worst = (0, 0.0f64, 0.0f32);
    for r in results {
        let (it, ms, inertia) = r?;
        worst = (it, worst.1.max(ms), inertia);
    }
    Ok(worst)
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
    };
    let iters: usize = flag("--iters").map_or(Ok(0), str::parse)?;
    let data = match flag("--synthetic") {
        Some(log2) => Data::Synthetic { n: 1usize << log2.parse::<u32>()?, d: 64 },
        None => {
            let path = args
                .iter()
                .find(|a| a.ends_with(".npy"))
                .cloned()
                .unwrap_or_else(|| "../shared/data/digits_x.npy".into());
            Data::File(kiln::load_npy(&path)?)
        }
    };
    if !matches!(kiln::backend(), kiln::cuda::Backend::Cuda(_)) {
        println!("kmeans_multi_gpu: collectives need CUDA devices; the backend is the CPU");
        return Ok(());
    }
    println!(
        "kmeans_multi_gpu: {} points, k = {K}, NCCL {:?}",
        data.len(),
        kiln::cuda::nccl::version()?
    );
    if std::env::var_os("RANK").is_some() || std::env::var_os("SLURM_PROCID").is_some() {
        let launch = Launch::from_env()?;
        let comm = Communicator::from_launch(&launch)?;
        let (it, ms, inertia) = run_rank(&comm, &data, iters)?;
        println!(
            "rank {} of {} on {}: {it} iterations, {ms:.3} ms/iteration, inertia {inertia:.1}",
            comm.rank(),
            comm.size(),
            comm.device()
        );
        return Ok(());
    }
    let available = Device::all().len();
    let mut one = None;
    for gpus in 1..=available {
        let (it, ms, inertia) = run_threads(&data, gpus, iters)?;
        let speedup = one.map_or(1.0, |t: f64| t / ms);
        one.get_or_insert(ms);
        println!(
            "{gpus} GPU(s): {it} iterations, {ms:.3} ms/iteration ({speedup:.2}x one GPU), \
             inertia {inertia:.1}"
        );
    }
    Ok(())
}
