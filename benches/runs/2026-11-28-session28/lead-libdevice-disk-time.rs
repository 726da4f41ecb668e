//! Session 28 record: the first PTX compile of `x * 1000.123 + cos(x)` in this process
//! (`kiln::kernel_code`, the GPU's fast path not involved: LLVM's NVPTX code generation on the
//! host), in ms. Run it twice with one `KILN_CACHE_DIR`: the second process reads libdevice's
//! optimised `cosf` from the disk cache.
fn main() {
    let x = kiln::Array::from_vec(vec![0.5f32; 1024], &[1024]);
    let y = &x * (1000.0f32 + 0.123) + x.cos();
    let t = std::time::Instant::now();
    let ptx = kiln::kernel_code(&[&y], kiln::CodeStage::Ptx(Default::default())).unwrap();
    println!("first PTX compile {:.2} ms ({} bytes)", t.elapsed().as_secs_f64() * 1e3, ptx.len());
}
