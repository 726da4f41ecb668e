//! An image pipeline of views and elementwise ops: an RGB photograph → grayscale → 5×5 Gaussian
//! blur (a sum of 25 shifted slices) → Sobel gradient magnitude → normalised to 0..255 →
//! `edges.png`. The shifted slices are views: they fuse into the kernels as index maps, no copies.
//!
//! ```sh
//! cargo run --release --example image_pipeline -- ../shared/data/china.npy edges.png
//! ```

use std::time::Instant;

use kiln::{s, Array, DType};

/// `sum over (i, j) of w[i][j] * img[i : h-k+1+i, j : w-k+1+j]` for a k×k stencil: a "valid"
/// correlation written as shifted slices.
fn correlate(img: &Array, weights: &[&[f32]]) -> Array {
    let k = weights.len() as i64;
    let (h, w) = (img.shape()[0] as i64, img.shape()[1] as i64);
    let mut acc: Option<Array> = None;
    for (i, row) in weights.iter().enumerate() {
        for (j, &wij) in row.iter().enumerate() {
            if wij == 0.0 {
                continue;
            }
            let (i, j) = (i as i64, j as i64);
            let term = img.slice(&s![i..h - k + 1 + i, j..w - k + 1 + j]) * wij;
            acc = Some(match acc {
                Some(a) => a + term,
                None => term,
            });
        }
    }
    acc.expect("a non-zero weight")
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let input = args.next().unwrap_or_else(|| "../shared/data/china.npy".into());
    let output = args.next().unwrap_or_else(|| "edges.png".into());
    let rgb = kiln::load_npy(&input)?; // (h, w, 3) uint8
    let start = Instant::now();
    let luma = Array::from_vec(vec![0.299f32, 0.587, 0.114], &[3]);
    let gray = (rgb.astype(DType::Float32) * &luma).sum(2);
    let g = [1.0f32, 4.0, 6.0, 4.0, 1.0];
    let gauss: Vec<Vec<f32>> =
        g.iter().map(|a| g.iter().map(|b| a * b / 256.0).collect()).collect();
    let gauss: Vec<&[f32]> = gauss.iter().map(|r| r.as_slice()).collect();
    let blurred = correlate(&gray, &gauss);
    let gx = correlate(&blurred, &[&[-1.0, 0.0, 1.0], &[-2.0, 0.0, 2.0], &[-1.0, 0.0, 1.0]]);
    let gy = correlate(&blurred, &[&[-1.0, -2.0, -1.0], &[0.0, 0.0, 0.0], &[1.0, 2.0, 1.0]]);
    let magnitude = gx.hypot(&gy);
    let edges = (&magnitude / magnitude.max(None) * 255.0).rint().astype(DType::UInt8);
    let kernels = kiln::explain(&[&edges]).report.kernel_count();
    let pixels: Vec<u8> = edges.to_vec();
    let (h, w) = (edges.shape()[0], edges.shape()[1]);
    println!(
        "{input} {:?} -> edges {h}x{w}: {kernels} kernel(s), {:.1} ms",
        rgb.shape(),
        start.elapsed().as_secs_f64() * 1e3
    );
    image::GrayImage::from_raw(w as u32, h as u32, pixels).ok_or("image size")?.save(&output)?;
    edges.save_npy(output.replace(".png", ".npy"))?;
    println!("wrote {output}");
    Ok(())
}
