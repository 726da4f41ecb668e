//! k-means on the digits data set (1797 images of 8×8 pixels), the algorithm of CuPy's
//! `examples/kmeans`: squared distances by broadcasting, `argmin`, then the cluster sums by
//! `add_at` (NumPy's `np.add.at`, CuPy's `cupyx.scatter_add`) and the counts by `bincount` of
//! the same labels: one scatter kernel computes the labels and both (it reads the points once).
//! k-means++ seeding (centers gathered by `take`), several restarts, a fixed seed; prints
//! iterations, inertia, the adjusted Rand index against the true digits, the time and the
//! kernels each iteration runs.
//!
//! ```sh
//! cargo run --release --example kmeans -- ../shared/data/digits_x.npy ../shared/data/digits_y.npy
//! ```
//! Writes the labels to `kmeans_labels.npy`.

use std::time::Instant;

use kiln::{Array, DType};

#[path = "common/metrics.rs"]
mod metrics;
use metrics::adjusted_rand_index;

const K: usize = 10;
const RESTARTS: usize = 4;
const MAX_ITER: usize = 100;
const TOL: f32 = 1e-4;
const SEED: u64 = 0;

/// SplitMix64: a small, fixed-seed generator for the seeding (not for statistics).
struct SplitMix(u64);

impl SplitMix {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Squared distances of every point to every center: `((x[:, None] - c[None]) ** 2).sum(2)`.
fn sq_distances(x: &Array, c: &Array) -> Array {
    (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2)
}

/// k-means++: each new center drawn with probability proportional to its squared distance to
/// the nearest center already chosen.
fn kmeans_pp(x: &Array, rng: &mut SplitMix) -> Array {
    let n = x.shape()[0];
    let mut chosen = vec![(rng.next_f64() * n as f64) as usize];
    while chosen.len() < K {
        let idx = Array::from_vec(chosen.iter().map(|&i| i as i64).collect(), &[chosen.len()]);
        let centers = x.take(&idx, Some(0));
        let d2: Vec<f32> = sq_distances(x, &centers).min(1).to_vec();
        let total: f64 = d2.iter().map(|&v| v as f64).sum();
        let mut r = rng.next_f64() * total;
        let mut pick = n - 1;
        for (i, &v) in d2.iter().enumerate() {
            r -= v as f64;
            if r <= 0.0 {
                pick = i;
                break;
            }
        }
        chosen.push(pick);
    }
    let idx = Array::from_vec(chosen.iter().map(|&i| i as i64).collect(), &[K]);
    x.take(&idx, Some(0))
}

struct Fit {
    labels: Vec<i64>,
    inertia: f32,
    iterations: usize,
}

fn fit(x: &Array, rng: &mut SplitMix, kernels: &mut Option<usize>) -> Fit {
    let mut centers = kmeans_pp(x, rng);
    centers.eval();
    let d = x.shape()[1];
    for it in 1..=MAX_ITER {
        let labels = sq_distances(x, &centers).argmin(1); // (n,)
        // Labels are argmins over K centers: bincount knows its length without reading them.
        let sums = kiln::zeros(&[K, d], DType::Float32).add_at(&labels, x); // (K, D)
        let counts = kiln::bincount(&labels, None, K).astype(DType::Float32); // (K,)
        let means = &sums / counts.maximum(1.0f32).expand_dims(&[1]);
        // An empty cluster keeps its center.
        let new_centers = kiln::where_(counts.greater(0.0f32).expand_dims(&[1]), &means, &centers);
        let shift = (&new_centers - &centers).square().sum(None);
        if kernels.is_none() {
            *kernels = Some(kiln::explain(&[&new_centers, &shift]).report.kernel_count());
        }
        kiln::eval_all(&[&new_centers, &shift]);
        let converged = shift.item::<f32>() <= TOL || it == MAX_ITER;
        if converged {
            // The labels and inertia of the centers the last update started from.
            let dist = sq_distances(x, &centers);
            let (labels, inertia) = (dist.argmin(1), dist.min(1).sum(None));
            kiln::eval_all(&[&labels, &inertia]);
            return Fit { labels: labels.to_vec(), inertia: inertia.item(), iterations: it };
        }
        centers = new_centers;
    }
    unreachable!()
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let xp = args.next().unwrap_or_else(|| "../shared/data/digits_x.npy".into());
    let yp = args.next().unwrap_or_else(|| "../shared/data/digits_y.npy".into());
    let x = kiln::load_npy(&xp)?;
    let truth: Vec<i64> = kiln::load_npy(&yp)?.to_vec();
    println!("kmeans: {} points of {} features, k = {K}, {RESTARTS} restarts, seed {SEED}", x.shape()[0], x.shape()[1]);
    let mut rng = SplitMix(SEED);
    let mut kernels = None;
    let start = Instant::now();
    let mut best: Option<Fit> = None;
    for r in 0..RESTARTS {
        let t = Instant::now();
        let f = fit(&x, &mut rng, &mut kernels);
        println!(
            "restart {r}: {} iterations, inertia {:.1}, {:.1} ms/iteration",
            f.iterations,
            f.inertia,
            t.elapsed().as_secs_f64() * 1e3 / f.iterations as f64
        );
        if best.as_ref().is_none_or(|b| f.inertia < b.inertia) {
            best = Some(f);
        }
    }
    let best = best.expect("at least one restart");
    let ari = adjusted_rand_index(&best.labels, &truth);
    println!("best inertia {:.1} after {} iterations", best.inertia, best.iterations);
    println!("adjusted Rand index vs digits_y: {ari:.4}");
    println!("kernels per iteration: {}", kernels.unwrap_or(0));
    println!("total time: {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
    let n = best.labels.len();
    Array::from_vec(best.labels, &[n]).save_npy("kmeans_labels.npy")?;
    Ok(())
}
