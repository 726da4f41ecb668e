//! The first-call bench's kernel (`x * 1000.123 + cos(x)`, float32) compiled to PTX for sm_90
//! at both tiers, each stage timed (the first compile of a process, then repeats):
//! `cargo run --release --example cold_ptx -- [OUT_DIR]` writes `fast.ptx` and `optimized.ptx`.
use kiln::Array;
use kiln_compiler::codegen::{gpu::ptx_of_mlir_tier, lower, LowerOptions, Tier};
use kiln_compiler::pipeline::{compile, Options};
use kiln_compiler::toolchain::ptx::PtxTarget;

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let x = Array::from_vec(vec![0.5f32; 1 << 20], &[1 << 20]);
    let y = &x * (1000.0 + 0.123) + x.cos();
    let target = PtxTarget::default();
    let l = kiln::lower(&[&y]);
    let plan = compile(&l.graph, &Options::from_env()).unwrap();
    let region = &plan.partition.regions[0];
    let k = lower(region, &LowerOptions::gpu_tier(Tier::Fast)).unwrap();
    std::fs::write(format!("{out}/fast.mlir"), &k.mlir).unwrap();
    std::fs::write(
        format!("{out}/fast.ll"),
        kiln_compiler::codegen::llvm_ir_of_mlir(&k.mlir).unwrap(),
    )
    .unwrap();
    for tier in [Tier::Fast, Tier::Optimized, Tier::Fast] {
        let k = lower(region, &LowerOptions::gpu_tier(tier)).unwrap();
        for rep in 0..3 {
            let t = std::time::Instant::now();
            let (ptx, times) = ptx_of_mlir_tier(&k.mlir, target, tier).unwrap();
            println!(
                "{tier:?} rep {rep}: {:.2} ms {times:?} ({} bytes of PTX)",
                t.elapsed().as_secs_f64() * 1e3,
                ptx.len()
            );
            let name = format!("{out}/{}.ptx", tier.name());
            std::fs::write(name, ptx).unwrap();
        }
    }
    // The same without `cos`: the floor of the driver's JIT for this kernel's frame.
    let plain = &x * (1000.0 + 0.123) + &x;
    let l = kiln::lower(&[&plain]);
    let plan = compile(&l.graph, &Options::from_env()).unwrap();
    let k = lower(&plan.partition.regions[0], &LowerOptions::gpu_tier(Tier::Fast)).unwrap();
    std::fs::write(
        format!("{out}/plain.ptx"),
        ptx_of_mlir_tier(&k.mlir, target, Tier::Fast).unwrap().0,
    )
    .unwrap();
}
