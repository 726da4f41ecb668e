//! The two row kernels, softmax and layer normalisation, on random data, each checked against
//! the reference evaluator: prints the kernels each one runs (from the fusion report), the time,
//! and the largest difference from the reference. Writes `softmax.npy` and `layernorm.npy`.
//!
//! ```sh
//! cargo run --release --example softmax_layernorm -- 1024 512
//! KILN_CODEGEN=eval cargo run --release --example softmax_layernorm -- 1024 512   # the evaluator
//! ```

use std::time::Instant;

use kiln::Array;

/// Uniform values in [-4, 4) from a fixed-seed SplitMix64.
fn random(rows: usize, cols: usize, seed: u64) -> Array {
    let mut s = seed;
    let v: Vec<f32> = (0..rows * cols)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0
        })
        .collect();
    Array::from_vec(v, &[rows, cols])
}

/// Runs `y`, then compares it with the reference evaluator on the same graph.
fn check(name: &str, y: &Array) -> Result<(), Box<dyn std::error::Error>> {
    let kernels = kiln::try_explain(&[y])?.report.kernel_count();
    let lowered = kiln::lower(&[y]);
    let t = Instant::now();
    y.try_eval()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let inputs: Vec<&kiln::HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    let reference = kiln::ir::eval::evaluate(&lowered.graph, &inputs)?;
    let want = reference[0].as_slice::<f32>()?;
    let got = y.try_to_vec::<f32>()?;
    let max_diff = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    println!("{name}: {:?}, {kernels} kernel(s), {ms:.2} ms, largest difference from the reference {max_diff:.3e}", y.shape());
    if !(max_diff <= 1e-5) {
        return Err(format!("{name} differs from the reference by {max_diff}").into());
    }
    y.save_npy(format!("{name}.npy"))?;
    Ok(())
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let rows = args.next().transpose()?.unwrap_or(1024);
    let cols = args.next().transpose()?.unwrap_or(512);
    let x = random(rows, cols, 1);
    let w = random(1, cols, 2).reshape(&[cols as i64]);
    let b = random(1, cols, 3).reshape(&[cols as i64]);
    x.eval();
    w.eval();
    b.eval();
    check("softmax", &kiln::nn::softmax(&x, -1)?)?;
    check("layernorm", &kiln::nn::layer_norm(&x, &w, &b, 1e-5)?)?;
    Ok(())
}
