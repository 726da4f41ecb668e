//! Runs kiln-runtime's GPU tests (`kiln_runtime::gpu_tests`) and exits non-zero if one fails.
//!
//! Usage: `kiln-gpu-selftest [FILTER...]` runs the tests whose name contains a filter (all by
//! default). Prints one line per test and `N passed, N failed, N skipped`. Without a CUDA device
//! every test is skipped and the exit status is 0.

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).collect();
    if filters.iter().any(|f| f == "-h" || f == "--help") {
        println!("usage: kiln-gpu-selftest [FILTER...]");
        for test in kiln_runtime::gpu_tests::tests() {
            println!("  {}", test.name);
        }
        return;
    }
    let summary = kiln_runtime::gpu_tests::run_matching(&filters);
    if summary.failed > 0 {
        std::process::exit(1);
    }
}
