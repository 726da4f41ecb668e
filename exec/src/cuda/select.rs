//! `sort_take` regions on the GPU ([`SortTake`]): order statistics (median, quantiles) by
//! selection. Lines that fit a block's shared memory run `kiln_select_<dtype>` of
//! `radix_select.cu` (a block a line, a radix select per position: see the file's head); longer
//! ones (a few) are radix-sorted by `radix.rs` into a scratch buffer, then read at their
//! positions by `kiln_sort_pick_<bytes>`. `argtopk` regions run `kiln_topk_<dtype>` of
//! `radix_topk.cu` (a block a line: a radix select of the k-th element, the elements before it
//! collected and ranked). The kernels are in the radix sort's module (NVRTC, the disk kernel
//! cache).

use std::sync::Arc;

use kiln_compiler::codegen::{RadixSort, SortTake, TopK};
use kiln_compiler::fusion::Region;
use kiln_ir::DType;
use kiln_runtime::{KernelArg, LaunchConfig};

use super::{radix, DeviceArray, Gpu, Result};
use crate::ExecError as Error;

/// Most threads of a select block (the source's `__launch_bounds__`; 256 measured faster than
/// 512 on an H200: 0.44 against 0.55 ms for the medians of 8192 × 8192 float32).
const MAX_THREADS: usize = 256;
/// Most candidates a select block copies out (keys of the digits chosen so far).
const MAX_CANDIDATES: usize = 1024;

/// Runs `s` (the plan of `region`) over the region's inputs `reads` on the current stream: the
/// selected elements, `lines × m`.
pub(super) fn run(
    gpu: &Gpu,
    region: &Region,
    s: &SortTake,
    reads: &[Arc<DeviceArray>],
) -> Result<Vec<DeviceArray>> {
    let out_node = region.body.node(region.body.outputs()[0]);
    let input = |i: usize| super::region_input(reads, i, "sort_take");
    let (x, ks) = (input(s.input)?, input(s.positions)?);
    let (n, lines, m, dt) = (s.n, s.lines, s.m, s.dtype);
    let es = dt.itemsize();
    let k_lines = if s.per_line { lines } else { 1 };
    if x.dtype() != dt
        || x.buffer().len() != n * lines * es
        || ks.dtype() != DType::Int64
        || ks.buffer().len() != k_lines * m * 8
        || out_node.dtype != dt
        || out_node.shape.iter().product::<usize>() != lines * m
    {
        return Err(Error::InvalidInput(format!(
            "sort_take: {lines} x {n} {dt} read at {k_lines} x {m} positions, given {} {:?} and {} {:?}",
            x.dtype(),
            x.shape(),
            ks.dtype(),
            ks.shape()
        )));
    }
    let Some(name) = radix::suffix(dt) else {
        return Err(Error::InvalidInput(format!("sort_take: {dt} has no select kernel")));
    };
    let out = DeviceArray::empty(out_node.dtype, &out_node.shape)?;
    let module = radix::module(gpu)?;
    let (n32, m32) = (n as u32, m as u32);
    let k_stride = if s.per_line { m32 } else { 0 };
    let (kp, op) = (ks.buffer().ptr(), out.buffer().ptr());
    if s.in_shared {
        let f = module.function(&format!("kiln_select_{name}"))?;
        // The line's keys, then room for the candidates of a digit prefix.
        let cand_cap = if n >= 1024 { (n / 4).min(MAX_CANDIDATES) } else { 0 };
        let shared = ((n * es).next_multiple_of(16) + cand_cap * es) as u32;
        // Beyond 48 KiB with the static shared memory: opt in.
        if shared > 32 * 1024 {
            f.set_max_dynamic_shared_memory(shared)?;
        }
        let threads = (n / 32).next_multiple_of(32).clamp(64, MAX_THREADS) as u32;
        let (src, cap) = (x.buffer().ptr(), cand_cap as u32);
        let args: [&dyn KernelArg; 7] = [&src, &n32, &kp, &k_stride, &m32, &op, &cap];
        let config = LaunchConfig::linear(lines as u32, threads).with_shared_mem(shared);
        // SAFETY: kiln_select_<name>(in, n, ks, k_stride, m, out, cand_cap): block b reads
        // line b's n elements (the input holds lines × n, checked above), its m positions at
        // ks[b * k_stride ..] (k_stride is 0 or m, and ks holds k_lines × m, checked), writes
        // out[b * m .. (b + 1) * m] (lines × m elements); `shared` bytes of dynamic shared
        // memory hold the line's keys (16-byte aligned) and cand_cap candidates.
        unsafe { f.launch(config, &args)? };
    } else {
        let sort = RadixSort { input: s.input, argsort: false, n, lines, dtype: dt };
        let sorted = DeviceArray::empty(dt, &[lines, n])?;
        radix::sort_into(gpu, &sort, x, &sorted)?;
        let f = module.function(&format!("kiln_sort_pick_{es}"))?;
        let (sp, l32) = (sorted.buffer().ptr(), lines as u32);
        let args: [&dyn KernelArg; 7] = [&sp, &n32, &kp, &k_stride, &m32, &op, &l32];
        let blocks = (lines * m).div_ceil(256) as u32;
        // SAFETY: kiln_sort_pick_<es>(sorted, n, ks, k_stride, m, out, lines): thread i <
        // lines × m reads ks[(i / m) * k_stride + i % m] (inside ks, as above) and one element
        // of line i / m of `sorted` (lines × n), and writes out[i].
        unsafe { f.launch(LaunchConfig::linear(blocks, 256), &args)? };
    }
    Ok(vec![out])
}

/// Runs `t` (the plan of `region`, an `argtopk`) over the region's inputs `reads` on the
/// current stream: the int64 positions, `lines × m`.
pub(super) fn run_topk(
    gpu: &Gpu,
    region: &Region,
    t: &TopK,
    reads: &[Arc<DeviceArray>],
) -> Result<Vec<DeviceArray>> {
    let out_node = region.body.node(region.body.outputs()[0]);
    let x = super::region_input(reads, t.input, "argtopk")?;
    let (n, lines, m, dt) = (t.n, t.lines, t.m, t.dtype);
    let es = dt.itemsize();
    if x.dtype() != dt
        || x.buffer().len() != n * lines * es
        || out_node.dtype != DType::Int64
        || out_node.shape.iter().product::<usize>() != lines * m
    {
        return Err(Error::InvalidInput(format!(
            "argtopk: {lines} x {n} {dt} to {m} positions a line, given {} {:?}",
            x.dtype(),
            x.shape()
        )));
    }
    let Some(name) = radix::suffix(dt) else {
        return Err(Error::InvalidInput(format!("argtopk: {dt} has no top-k kernel")));
    };
    let out = DeviceArray::empty(DType::Int64, &out_node.shape)?;
    let module = radix::module(gpu)?;
    let f = module.function(&format!("kiln_topk_{name}"))?;
    // The line's keys, then the candidates' keys and positions (each 16-byte aligned).
    let shared = ((n * es).next_multiple_of(16) + (m * es).next_multiple_of(16) + m * 4) as u32;
    if shared > 32 * 1024 {
        f.set_max_dynamic_shared_memory(shared)?;
    }
    let threads = (n / 32).next_multiple_of(32).clamp(64, MAX_THREADS) as u32;
    let (src, op) = (x.buffer().ptr(), out.buffer().ptr());
    let (n32, m32, largest) = (n as u32, m as u32, u32::from(t.largest));
    let args: [&dyn KernelArg; 5] = [&src, &n32, &m32, &largest, &op];
    let config = LaunchConfig::linear(lines as u32, threads).with_shared_mem(shared);
    // SAFETY: kiln_topk_<name>(in, n, m, largest, out): block b reads line b's n elements (the
    // input holds lines × n, checked above) and writes out[b * m .. (b + 1) * m] (int64, lines
    // × m, checked); `shared` bytes of dynamic shared memory hold the line's n keys and m
    // candidates' keys and 32-bit positions, each part 16-byte aligned.
    unsafe { f.launch(config, &args)? };
    Ok(vec![out])
}
