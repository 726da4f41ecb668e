//! Column statistics of the digits data set: the mean and standard deviation (ddof=0, NumPy's
//! default) of each of the 64 pixel columns.
//!
//! ```sh
//! cargo run --release --example digits_stats -- ../shared/data/digits_x.npy
//! KILN_DUMP=graph cargo run --release --example digits_stats -- ../shared/data/digits_x.npy
//! ```
//! NumPy equivalent: `x = np.load(path); print(x.mean(0)); print(x.std(0))`.

use std::time::Instant;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "../shared/data/digits_x.npy".to_string());
    let x = kiln::load_npy(&path)?;
    let t = Instant::now();
    let mean = x.try_mean(0)?;
    let std = x.try_std(0, 0)?;
    kiln::try_eval_all(&[&mean, &std])?;
    let elapsed = t.elapsed();
    let fmt = |v: Vec<f32>| v.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(" ");
    println!("mean: {}", fmt(mean.try_to_vec::<f32>()?));
    println!("std: {}", fmt(std.try_to_vec::<f32>()?));
    eprintln!(
        "{} {:?} {}: computed in {:.3} ms",
        path,
        x.shape(),
        x.dtype(),
        elapsed.as_secs_f64() * 1e3
    );
    Ok(())
}
