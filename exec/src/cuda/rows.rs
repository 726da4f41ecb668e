//! Sort regions of short lines on the GPU ([`RowSort`]): a block a line, sorted in shared
//! memory by `kiln_rowsort_<dtype>` / `kiln_rowargsort_<dtype>` of `radix_rows.cu` (an LSD
//! radix sort of the keys' order-preserving bits, 8 bits a pass, each pass ranked stably by
//! ballots; passes whose digit is the same for every key of the line skipped: see the file's
//! head). The kernels are in the radix sort's module (NVRTC, the disk kernel cache: `radix.rs`).
//!
//! A block has the fewest threads (a multiple of 32, at most [`MAX_THREADS`]) whose
//! [`ITEMS`] keys each hold the line; the slots past the line are padding that sorts last.

use std::sync::Arc;

use kiln_compiler::codegen::RowSort;
use kiln_compiler::fusion::Region;
use kiln_ir::DType;
use kiln_runtime::{KernelArg, LaunchConfig};

use super::{radix, DeviceArray, Gpu, Result};
use crate::ExecError as Error;

/// Most threads of a block (the source's `ROW_THREADS`).
const MAX_THREADS: usize = 512;
/// Keys a thread holds (the source's `ROW_ITEMS`).
const ITEMS: usize = 16;
/// Digit values (the source's `RADIX`).
const RADIX: usize = 256;

/// The threads of a block sorting lines of `n` elements and the dynamic shared memory it takes
/// (bytes): the keys (16-byte aligned), argsort's 32-bit positions, each warp's digit counts and
/// the digits' sums.
fn block_of(n: usize, key_bytes: usize, argsort: bool) -> (usize, usize) {
    let threads = n.div_ceil(ITEMS).next_multiple_of(32).clamp(32, MAX_THREADS);
    let cap = threads * ITEMS;
    let keys = (cap * key_bytes).next_multiple_of(16);
    let vals = if argsort { cap * 4 } else { 0 };
    (threads, keys + vals + (threads / 32 + 1) * RADIX * 4)
}

/// Runs `sort` (the row sort of `region`) over the region's inputs `reads` on the current
/// stream: the output array (sorted elements, or int64 positions within each line).
pub(super) fn run(
    gpu: &Gpu,
    region: &Region,
    sort: &RowSort,
    reads: &[Arc<DeviceArray>],
) -> Result<Vec<DeviceArray>> {
    let out_node = region.body.node(region.body.outputs()[0]);
    let x = super::region_input(reads, sort.input, "row sort")?;
    let (n, lines, dt) = (sort.n, sort.lines, sort.dtype);
    let es = dt.itemsize();
    let out_dt = if sort.argsort { DType::Int64 } else { dt };
    if x.dtype() != dt
        || x.buffer().len() != n * lines * es
        || n > MAX_THREADS * ITEMS
        || out_node.dtype != out_dt
        || out_node.shape.iter().product::<usize>() != lines * n
    {
        return Err(Error::InvalidInput(format!(
            "row sort: {lines} lines of {n} {dt} to {out_dt}, given {} {:?}",
            x.dtype(),
            x.shape()
        )));
    }
    let Some(name) = radix::suffix(dt) else {
        return Err(Error::InvalidInput(format!("row sort: {dt} has no row sort kernel")));
    };
    let out = DeviceArray::empty(out_node.dtype, &out_node.shape)?;
    let module = radix::module(gpu)?;
    let kind = if sort.argsort { "rowargsort" } else { "rowsort" };
    let f = module.function(&format!("kiln_{kind}_{name}"))?;
    let (threads, shared) = block_of(n, es, sort.argsort);
    // Beyond 48 KiB with the static shared memory: opt in.
    if shared > 32 * 1024 {
        f.set_max_dynamic_shared_memory(shared as u32)?;
    }
    let (src, dst, n32) = (x.buffer().ptr(), out.buffer().ptr(), n as u32);
    let args: [&dyn KernelArg; 3] = [&src, &dst, &n32];
    let config = LaunchConfig::linear(lines as u32, threads as u32).with_shared_mem(shared as u32);
    // SAFETY: kiln_row(arg)sort_<name>(in, out, n): block b reads line b's n elements (the
    // input holds lines × n of the dtype, checked above) and writes line b of `out` (lines × n
    // elements of the dtype, or int64 for argsort: the output node's, checked); n is at most
    // threads × ITEMS, the keys the block holds; `shared` bytes of dynamic shared memory as the
    // source lays them out for `threads` threads.
    unsafe { f.launch(config, &args)? };
    Ok(vec![out])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_holds_its_line() {
        for (n, bytes, argsort) in [(1, 1, false), (17, 2, true), (8192, 4, true), (8192, 8, true)]
        {
            let (threads, shared) = block_of(n, bytes, argsort);
            assert!(threads % 32 == 0 && threads <= MAX_THREADS && threads * ITEMS >= n);
            assert!(shared <= 227 * 1024, "{n} {bytes}: {shared}");
        }
        assert_eq!(block_of(8192, 4, false), (512, 8192 * 4 + 17 * 256 * 4));
        assert_eq!(block_of(513, 8, true).0, 64);
    }
}
