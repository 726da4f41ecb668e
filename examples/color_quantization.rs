//! scikit-learn's "Color Quantization using K-Means" on a photograph: the 427×640 RGB pixels of
//! `china.npy` (273,280 points of 3 values in [0, 1]) clustered into k = 64 colours by k-means
//! (k-means++ seeding, fixed seed, Lloyd iterations by `add_at` and `bincount`: one scatter
//! kernel an iteration reads the pixels once), every pixel replaced by its cluster's colour, and
//! the picture written as PNG. Unlike scikit-learn's example, which fits on 1,000 sampled
//! pixels, the fit uses all of them. Prints the inertia, iterations, time per iteration and
//! kernels per iteration.
//!
//! ```sh
//! cargo run --release --example color_quantization -- ../shared/data/china.npy china_64.png
//! ```

use std::time::Instant;

use kiln::{Array, DType};

#[path = "common/lloyd.rs"]
mod lloyd;
use lloyd::{fit, SplitMix};

const K: usize = 64;
const MAX_ITER: usize = 300;
/// scikit-learn's default tolerance (1e-4) scaled by the data's mean variance, as it scales it.
const TOL_FACTOR: f32 = 1e-4;
const SEED: u64 = 0;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let input = args.next().unwrap_or_else(|| "../shared/data/china.npy".into());
    let output = args.next().unwrap_or_else(|| "china_64.png".into());
    let img = kiln::load_npy(&input)?;
    let (h, w, c) = (img.shape()[0], img.shape()[1], img.shape()[2]);
    let pixels = img.reshape(&[(h * w) as i64, c as i64]).astype(DType::Float32) / 255.0f32;
    pixels.eval();
    let tol: f32 = pixels.var(kiln::axis(0), 0).mean(None).item::<f32>() * TOL_FACTOR;
    println!("color_quantization: {h}x{w} pixels of {c} channels, k = {K}, seed {SEED}");
    let start = Instant::now();
    let f = fit(&pixels, K, MAX_ITER, tol, &mut SplitMix(SEED));
    let fit_time = start.elapsed().as_secs_f64() * 1e3;
    // Every pixel its cluster's colour: a gather of the centers' rows by the labels.
    let labels = Array::from_vec(f.labels, &[h * w]);
    let quantized = (f.centers.take(&labels, Some(0)) * 255.0f32)
        .rint()
        .clip(0.0f32, 255.0f32)
        .astype(DType::UInt8);
    let bytes: Vec<u8> = quantized.to_vec();
    image::RgbImage::from_raw(w as u32, h as u32, bytes).ok_or("image size")?.save(&output)?;
    println!("inertia {:.2} after {} iterations", f.inertia, f.iterations);
    println!(
        "time per iteration: {:.2} ms (fit {fit_time:.1} ms, k-means++ seeding included)",
        fit_time / f.iterations as f64
    );
    println!("kernels per iteration: {}", f.kernels);
    println!("wrote {output}");
    Ok(())
}
