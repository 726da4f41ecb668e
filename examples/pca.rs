//! Principal component analysis of the 1797 handwritten digits (8×8 pixels, 64 features), as
//! scikit-learn's `PCA(10)`: centre the data, take the eigendecomposition of its covariance
//! (`kiln::linalg::eigh`), keep the 10 largest components and project onto them. Prints the
//! explained variance ratio of each component and the time.
//!
//! ```sh
//! cargo run --release --example pca -- ../shared/data/digits_x.npy
//! ```
//! NumPy/scikit-learn equivalent: `PCA(10).fit(x).explained_variance_ratio_`, or
//! `w, v = np.linalg.eigh(np.cov(x.T)); w[::-1][:10] / w.sum()`.

use std::time::Instant;

use kiln::linalg;
use kiln::{DType, SliceArg};

const COMPONENTS: usize = 10;
const K: i64 = COMPONENTS as i64;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "../shared/data/digits_x.npy".to_string());
    let x = kiln::load_npy(&path)?.astype(DType::Float64);
    let (n, d) = (x.shape()[0], x.shape()[1]);
    let t = Instant::now();
    let centred = x.try_subtract(&x.try_mean(0)?)?;
    let cov = centred.t().try_matmul(&centred)?.try_divide((n - 1) as f64)?;
    let (w, v) = linalg::try_eigh(&cov)?;
    // eigh's eigenvalues ascend: the top components are the last columns, largest first.
    let last = d as i64 - 1;
    let largest_first = SliceArg::Range { start: Some(last), stop: Some(last - K), step: -1 };
    let top = v.try_slice(&[SliceArg::FULL, largest_first])?;
    let ratio = w.try_divide(&w.try_sum(kiln::all_axes())?)?;
    let projected = centred.try_matmul(&top)?;
    kiln::try_eval_all(&[&ratio, &projected])?;
    let elapsed = t.elapsed();
    let mut r = ratio.try_to_vec::<f64>()?;
    r.reverse();
    let line: Vec<String> = r[..COMPONENTS].iter().map(|x| format!("{x:.6}")).collect();
    println!("explained variance ratio: {}", line.join(" "));
    println!("projected: {:?}", projected.shape());
    eprintln!(
        "{path} {n}×{d}: PCA({COMPONENTS}) in {:.3} ms ({:?})",
        elapsed.as_secs_f64() * 1e3,
        kiln::backend()
    );
    Ok(())
}
