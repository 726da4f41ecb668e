//! kiln's examples in one binary, for machines without Rust (the GPU pack): the example to run
//! is the name it is invoked by (`argv[0]`, busybox style), so each example reads its own
//! arguments as when built on its own.
//!
//! ```sh
//! (exec -a kmeans kiln-examples ../shared/data/digits_x.npy ../shared/data/digits_y.npy)
//! ```
//! Names: color_quantization, digits_stats, kmeans, kmeans_multi_gpu, gmm, image_pipeline, pca,
//! softmax_layernorm.

#![allow(dead_code)]

#[path = "../../examples/color_quantization.rs"]
mod color_quantization;
#[path = "../../examples/digits_stats.rs"]
mod digits_stats;
#[path = "../../examples/gmm.rs"]
mod gmm;
#[path = "../../examples/image_pipeline.rs"]
mod image_pipeline;
#[path = "../../examples/kmeans.rs"]
mod kmeans;
#[path = "../../examples/kmeans_multi_gpu.rs"]
mod kmeans_multi_gpu;
#[path = "../../examples/pca.rs"]
mod pca;
#[path = "../../examples/softmax_layernorm.rs"]
mod softmax_layernorm;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv0 = std::env::args().next().unwrap_or_default();
    let name = std::path::Path::new(&argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    kiln_runtime::host_trace::begin();
    let result = run(&name);
    print_host_trace(&name);
    result
}

/// With `KILN_HOST_TRACE=1`: the main thread's whole run split at kiln's trace points (the time
/// before each point since the previous one, summed: where a cold run goes), to stderr.
fn print_host_trace(name: &str) {
    let mut points = kiln_runtime::host_trace::report();
    if points.is_empty() {
        return;
    }
    points.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = points.iter().map(|p| p.1).sum();
    eprintln!("{name}: host trace, ms (of {:.1} ms traced), most first:", total / 1e3);
    for (p, us, n) in points.iter().filter(|p| p.1 >= 100.0) {
        eprintln!("  {p}: {:.1} ms, {n} times", us / 1e3);
    }
}

fn run(name: &str) -> Result<(), Box<dyn std::error::Error>> {
    match name {
        "color_quantization" => color_quantization::main(),
        "digits_stats" => digits_stats::main(),
        "gmm" => gmm::main(),
        "image_pipeline" => image_pipeline::main(),
        "kmeans" => kmeans::main(),
        "kmeans_multi_gpu" => kmeans_multi_gpu::main(),
        "pca" => pca::main(),
        "softmax_layernorm" => softmax_layernorm::main(),
        other => {
            eprintln!(
                "kiln-examples: invoked as {other:?}; invoke it as one of color_quantization, digits_stats, gmm, image_pipeline, kmeans, kmeans_multi_gpu, \
                 pca, softmax_layernorm (exec -a NAME kiln-examples ARGS...)"
            );
            std::process::exit(2)
        }
    }
}
