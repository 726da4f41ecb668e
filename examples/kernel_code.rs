//! Prints the code kiln generates for a few of the benchmark's expressions, at one stage:
//! `cargo run --release --example kernel_code -- [ptx|gpu-mlir|gpu-llvm|host-mlir|host-llvm|host-asm] [softmax|layernorm|layernorm_affine|sum_all|ew_chain|normal|uniform|dropout|pad_reflect|cumsum|cumsum_sq|cumsum_long|kmeans]`.
//! No GPU is needed (PTX is for sm_90).
use kiln::{Array, CodeStage};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stage = match args.first().map(String::as_str).unwrap_or("ptx") {
        "ptx" => CodeStage::Ptx(Default::default()),
        "gpu-mlir" => CodeStage::GpuMlir,
        "gpu-llvm" => CodeStage::GpuLlvm,
        "host-mlir" => CodeStage::HostMlir,
        "host-llvm" => CodeStage::HostLlvm,
        "host-asm" => CodeStage::HostAsm,
        other => panic!("unknown stage {other}"),
    };
    let work = args.get(1).map(String::as_str).unwrap_or("softmax");
    let (r, c) = (64, 8192);
    let m = Array::from_vec(vec![0.5f32; r * c], &[r, c]);
    let x = Array::from_vec(vec![0.5f32; 1 << 20], &[1 << 20]);
    let y: Array = match work {
        "softmax" => kiln::nn::softmax(&m, -1).unwrap(),
        "layernorm" => {
            let mu = m.mean(kiln::axis(1).keepdims());
            let d = &m - &mu;
            let var = (&d * &d).mean(kiln::axis(1).keepdims());
            &d / (var + 1e-5).sqrt()
        }
        "layernorm_affine" => {
            let mu = m.mean(kiln::axis(1).keepdims());
            let d = &m - &mu;
            let var = (&d * &d).mean(kiln::axis(1).keepdims());
            let g = Array::from_vec(vec![1.5f32; c], &[c]);
            let b = Array::from_vec(vec![0.25f32; c], &[c]);
            &d / (var + 1e-5).sqrt() * &g + &b
        }
        "sum_all" => x.sum(None),
        "sum_cols" => m.sum(0),
        "ew_chain" => ((&x - 1.5).power(2.0) * 0.5 + x.sin()) * (-(&x * &x)).exp(),
        "normal" => {
            kiln::random::default_rng(Some(1)).standard_normal(&[1 << 20], kiln::DType::Float32)
        }
        "uniform" => kiln::random::default_rng(Some(1)).random(&[1 << 20], kiln::DType::Float32),
        "dropout" => {
            let keep = kiln::random::default_rng(Some(1))
                .random(&[1 << 20], kiln::DType::Float32)
                .greater_equal(0.1f32);
            &x * keep / 0.9f32
        }
        "pad_reflect" => m.pad(&[(8, 8), (8, 8)], kiln::PadMode::Reflect),
        "cumsum" => x.cumsum(None),
        "cumsum_sq" => (&x * &x).cumsum(None),
        // A line long enough for the look-ahead scan (sm_90: bulk copies into shared memory).
        "cumsum_long" => Array::from_vec(vec![0.5f32; 1 << 26], &[1 << 26]).cumsum(None),
        // kiln-bench's k-means iteration on 2^20×64 points, k = 10 (one scatter kernel).
        "kmeans" => {
            let (n, d, k) = (1usize << 20, 64usize, 10usize);
            let px = Array::from_vec(vec![0.5f32; n * d], &[n, d]);
            let pc = Array::from_vec(vec![0.25f32; k * d], &[k, d]);
            let labels = (px.expand_dims(&[1]) - pc.expand_dims(&[0])).square().sum(2).argmin(1);
            let sums = kiln::zeros(&[k, d], kiln::DType::Float32).add_at(&labels, &px);
            let counts = kiln::bincount(&labels, None, k).astype(kiln::DType::Float32);
            &sums / counts.maximum(1.0f32).expand_dims(&[1])
        }
        other => panic!("unknown work {other}"),
    };
    println!("{}", kiln::kernel_code(&[&y], stage).unwrap());
}
