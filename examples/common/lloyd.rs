//! k-means pieces shared by the examples (`kmeans`, `color_quantization`): squared distances
//! by broadcasting, k-means++ seeding, and one Lloyd update by `add_at` and `bincount`.

use kiln::{Array, DType};

/// SplitMix64: a small, fixed-seed generator for the seeding (not for statistics).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Squared distances of every point to every center: `((x[:, None] - c[None]) ** 2).sum(2)`.
pub fn sq_distances(x: &Array, c: &Array) -> Array {
    (x.expand_dims(&[1]) - c.expand_dims(&[0])).square().sum(2)
}

/// k-means++: each new center drawn with probability proportional to its squared distance to
/// the nearest center already chosen; centers gathered by `take`.
pub fn kmeans_pp(x: &Array, k: usize, rng: &mut SplitMix) -> Array {
    let n = x.shape()[0];
    let mut chosen = vec![(rng.next_f64() * n as f64) as usize];
    while chosen.len() < k {
        let idx = Array::from_vec(chosen.iter().map(|&i| i as i64).collect(), &[chosen.len()]);
        let d2: Vec<f32> = sq_distances(x, &x.take(&idx, Some(0))).min(1).to_vec();
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
    let idx = Array::from_vec(chosen.iter().map(|&i| i as i64).collect(), &[k]);
    x.take(&idx, Some(0))
}

/// One Lloyd step from `centers` (k × d): the new centers (cluster means; an empty cluster keeps
/// its center) and the squared shift of all centers, both lazy. The labels, the sums (`add_at`)
/// and the counts (`bincount` of the same labels, an argmin over k: its length is known) are one
/// scatter kernel that reads the points once.
pub fn update(x: &Array, centers: &Array) -> (Array, Array) {
    let (k, d) = (centers.shape()[0], centers.shape()[1]);
    let labels = sq_distances(x, centers).argmin(1);
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, x);
    let counts = kiln::bincount(&labels, None, k).astype(DType::Float32);
    let means = &sums / counts.maximum(1.0f32).expand_dims(&[1]);
    let new_centers = kiln::where_(counts.greater(0.0f32).expand_dims(&[1]), &means, centers);
    let shift = (&new_centers - centers).square().sum(None);
    (new_centers, shift)
}

/// A fit: labels and inertia of the final centers' assignment.
#[allow(dead_code)] // `centers` is read by one example of two
pub struct Fit {
    pub centers: Array,
    pub labels: Vec<i64>,
    pub inertia: f32,
    pub iterations: usize,
    /// Kernels of one update (the first iteration's plan).
    pub kernels: usize,
}

/// Lloyd iterations from k-means++ centers until the centers move by at most `tol` (squared,
/// summed) or `max_iter`; then every point assigned to the centers the last update started from.
pub fn fit(x: &Array, k: usize, max_iter: usize, tol: f32, rng: &mut SplitMix) -> Fit {
    let mut centers = kmeans_pp(x, k, rng);
    centers.eval();
    let mut kernels = 0;
    for it in 1..=max_iter {
        let (new_centers, shift) = update(x, &centers);
        if it == 1 {
            kernels = kiln::explain(&[&new_centers, &shift]).report.kernel_count();
        }
        kiln::eval_all(&[&new_centers, &shift]);
        if shift.item::<f32>() <= tol || it == max_iter {
            let dist = sq_distances(x, &centers);
            let (labels, inertia) = (dist.argmin(1), dist.min(1).sum(None));
            kiln::eval_all(&[&labels, &inertia]);
            return Fit {
                centers,
                labels: labels.to_vec(),
                inertia: inertia.item(),
                iterations: it,
                kernels,
            };
        }
        centers = new_centers;
    }
    unreachable!("max_iter >= 1")
}
