//! Sort regions of long lines on the GPU ([`RadixSort`]): each line by the LSD radix sort of
//! `radix_sort.cu` (8-bit digits of the elements' order-preserving bits, one histogram pass,
//! then one "onesweep" pass per digit with decoupled look-back; stable and deterministic; the
//! file's head says how). Its CUDA C++ is compiled by NVRTC once per device and kept in the
//! disk kernel cache ([`kiln_runtime::kiln_modules`]).
//!
//! Buffers per call, from the pool: the scratch words (every digit's histogram, a tile
//! counter and a trivial-pass flag per pass, a status word per tile and digit per pass: zeroed
//! by one memset), a second buffer of keys (argsort: two, and two of 32-bit positions). Every
//! pass is launched; one whose digit is the same for every key returns at once (the buffers
//! each pass reads and writes are found on the device from the flags, so a sort of small
//! integers makes only the passes of their low bytes: no read back to the host). Lines of a region are
//! sorted one after the other (at most [`kiln_compiler::codegen::RADIX_MAX_LINES`]).

use std::sync::Arc;

use kiln_compiler::codegen::RadixSort;
use kiln_compiler::fusion::Region;
use kiln_ir::DType;
use kiln_runtime::{DeviceBuffer, KernelArg, LaunchConfig, Module};

use super::{DeviceArray, Gpu, Result};
use crate::ExecError as Error;

/// The kernels' CUDA C++: the radix sort, then the radix select and top-k of `select.rs` and
/// the row sort of `rows.rs` (one module).
pub(crate) const SOURCE: &str = concat!(
    include_str!("radix_sort.cu"),
    include_str!("radix_select.cu"),
    include_str!("radix_topk.cu"),
    include_str!("radix_rows.cu")
);

/// Threads of a histogram or scan block (the source's `THREADS`, one per digit).
const THREADS: u32 = 256;
/// Threads of a digit pass's block (the source's `PASS_THREADS`).
const PASS_THREADS: u32 = 384;
/// Digit values (the source's `RADIX`).
const RADIX: usize = 256;
/// Shared words of a digit pass besides its keys and values:
/// `(PASS_WARPS + 1) * RADIX + PASS_WARPS + 1`.
const PASS_WORDS: usize = (12 + 1) * RADIX + 12 + 1;
/// A sort's (keys without values) mask words besides: `PASS_WARPS * RADIX`.
const MASK_WORDS: usize = 12 * RADIX;

/// The kernels' name suffix of a dtype (its keys' width and order), `None` for complex ones.
pub(super) fn suffix(dt: DType) -> Option<&'static str> {
    Some(match dt {
        DType::Bool | DType::UInt8 => "u8",
        DType::Int8 => "i8",
        DType::UInt16 => "u16",
        DType::Int16 => "i16",
        DType::Float16 => "f16",
        DType::BFloat16 => "bf16",
        DType::UInt32 => "u32",
        DType::Int32 => "i32",
        DType::Float32 => "f32",
        DType::UInt64 => "u64",
        DType::Int64 => "i64",
        DType::Float64 => "f64",
        DType::Complex64 | DType::Complex128 => return None,
    })
}

/// Keys of a tile: PASS_THREADS times the source's ITEMS (sort) or ITEMS_PAIRS (argsort) of
/// keys of four bytes or fewer, ITEMS8 of 8-byte keys.
fn tile_of(key_bytes: usize, argsort: bool) -> usize {
    PASS_THREADS as usize
        * match (key_bytes, argsort) {
            (8, _) => 12,
            (_, false) => 19,
            (_, true) => 23,
        }
}

/// The module of [`SOURCE`] on `gpu`'s device ([`kiln_runtime::kiln_modules`]: compiled once
/// per device, kept in the disk cache).
pub(super) fn module(gpu: &Gpu) -> Result<Arc<Module>> {
    Ok(kiln_runtime::kiln_modules::kiln_module(
        gpu.device,
        "kiln_radix_sort",
        SOURCE,
        gpu.disk.as_ref(),
    )?)
}

/// Runs `sort` (the radix sort of `region`) over the region's inputs `reads` on the current
/// stream: the output array (sorted elements, or int64 positions within each line).
pub(super) fn run(
    gpu: &Gpu,
    region: &Region,
    sort: &RadixSort,
    reads: &[Arc<DeviceArray>],
) -> Result<Vec<DeviceArray>> {
    let out_node = region.body.node(region.body.outputs()[0]);
    let input = super::region_input(reads, sort.input, "radix sort")?;
    let out = DeviceArray::empty(out_node.dtype, &out_node.shape)?;
    sort_into(gpu, sort, input, &out)?;
    Ok(vec![out])
}

/// Sorts the lines of `input` as `sort` says into `out` (`lines × n` elements of the input's
/// dtype, or int64 positions for argsort).
pub(super) fn sort_into(
    gpu: &Gpu,
    sort: &RadixSort,
    input: &DeviceArray,
    out: &DeviceArray,
) -> Result<()> {
    let (n, lines, dt) = (sort.n, sort.lines, sort.dtype);
    let es = dt.itemsize();
    if input.dtype() != dt || input.buffer().len() != n * lines * es {
        return Err(Error::InvalidInput(format!(
            "radix sort: input {dt} of {lines} x {n} elements, given {} {:?}",
            input.dtype(),
            input.shape()
        )));
    }
    let Some(name) = suffix(dt) else {
        return Err(Error::InvalidInput(format!("radix sort: {dt} has no radix kernels")));
    };
    let out_es = if sort.argsort { 8 } else { es };
    if out.buffer().len() != n * lines * out_es {
        return Err(Error::InvalidInput(format!("radix sort: an output of {:?}", out.shape())));
    }
    let module = module(gpu)?;
    let hist_fn = module.function(&format!("kiln_radix_hist_{name}"))?;
    let scan_fn = module.function("kiln_radix_scan")?;
    let pass_fn = if sort.argsort {
        module.function(&format!("kiln_radix_pairs_{name}"))?
    } else {
        module.function(&format!("kiln_radix_pass_{name}"))?
    };
    let passes = es;
    let tile = tile_of(es, sort.argsort);
    let tiles = n.div_ceil(tile);
    // Scratch words: histograms, tile counters, trivial-pass flags, then (from a 16-byte
    // boundary: the look-back reads four words at once) the status words of each pass.
    let status_words = tiles * RADIX;
    let head = (passes * RADIX + 2 * passes).next_multiple_of(4);
    let words = head + passes * status_words;
    let mut scratch = DeviceBuffer::alloc(words * 4)?;
    let keys_a = DeviceBuffer::alloc(n * es)?;
    let keys_b = if sort.argsort { Some(DeviceBuffer::alloc(n * es)?) } else { None };
    let vals = if sort.argsort {
        Some((DeviceBuffer::alloc(n * 4)?, DeviceBuffer::alloc(n * 4)?))
    } else {
        None
    };
    let shared = tile * es + if sort.argsort { tile * 4 } else { MASK_WORDS * 4 } + PASS_WORDS * 4;
    // Beyond 48 KiB (argsort's, 8-byte keys'): opt in.
    if shared > 48 * 1024 {
        pass_fn.set_max_dynamic_shared_memory(shared as u32)?;
    }
    let sms = (gpu.max_blocks / 32).max(1) as usize;
    let hist_blocks = n.div_ceil(THREADS as usize * 8).clamp(1, sms * 8) as u32;
    let (n32, passes32) = (n as u32, passes as u32);
    for line in 0..lines {
        scratch.memset(0)?;
        let hist = scratch.ptr();
        let counters = hist + (passes * RADIX * 4) as u64;
        let trivial = counters + (passes * 4) as u64;
        let status = hist + (head * 4) as u64;
        let src = input.buffer().ptr() + (line * n * es) as u64;
        let dst = out.buffer().ptr() + (line * n * out_es) as u64;
        let args: [&dyn KernelArg; 3] = [&src, &n32, &hist];
        // SAFETY: kiln_radix_hist_<name>(keys, n, hist) reads the line's n keys (checked above:
        // the input holds lines × n elements of the dtype) and adds to the passes × 256 zeroed
        // words at `hist`, inside `scratch`.
        unsafe { hist_fn.launch(LaunchConfig::linear(hist_blocks, THREADS), &args)? };
        let args: [&dyn KernelArg; 3] = [&hist, &n32, &trivial];
        // SAFETY: kiln_radix_scan(hist, n, trivial) scans the 256 words of block p's pass in
        // place and sets trivial[p], `passes` blocks: words of `scratch`.
        unsafe { scan_fn.launch(LaunchConfig::linear(passes32, THREADS), &args)? };
        for p in 0..passes32 {
            let bins = hist + (p as usize * RADIX * 4) as u64;
            let counter = counters + (p * 4) as u64;
            let status = status + (p as usize * status_words * 4) as u64;
            let config =
                LaunchConfig::linear(tiles as u32, PASS_THREADS).with_shared_mem(shared as u32);
            match (&keys_b, &vals) {
                (Some(keys_b), Some((va, vb))) => {
                    let (ka, kb, va, vb) = (keys_a.ptr(), keys_b.ptr(), va.ptr(), vb.ptr());
                    let args: [&dyn KernelArg; 13] = [
                        &src, &ka, &kb, &va, &vb, &dst, &n32, &p, &passes32, &bins, &status,
                        &counter, &trivial,
                    ];
                    // SAFETY: kiln_radix_pairs_<name>(src, ka, kb, va, vb, index, n, pass,
                    // passes, bins, status, counter, trivial): n keys and positions read from
                    // the line or buffers of n elements and written to keys_a/keys_b and the
                    // value buffers (n elements each, never the buffer read), or, in the last
                    // pass that is not skipped, n int64 positions to this line of `out`; its
                    // status words (tiles × 256), counter and the trivial flags inside
                    // `scratch`, zeroed; `shared` bytes of dynamic shared memory as the source
                    // lays them out.
                    unsafe { pass_fn.launch(config, &args)? };
                }
                _ => {
                    let tmp = keys_a.ptr();
                    let args: [&dyn KernelArg; 10] =
                        [&src, &tmp, &dst, &n32, &p, &passes32, &bins, &status, &counter, &trivial];
                    // SAFETY: kiln_radix_pass_<name>(src, tmp, dst, n, pass, passes, bins,
                    // status, counter, trivial): n keys read from the line, `keys_a` or this line
                    // of `out`, n written to another of `keys_a` and the line of `out` (never
                    // the buffer read); its status words (tiles × 256), counter and the trivial
                    // flags inside `scratch`, zeroed; `shared` bytes of dynamic shared memory as
                    // the source lays them out.
                    unsafe { pass_fn.launch(config, &args)? };
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The library's prebuilt cubin of this module was made from this very source.
    #[test]
    fn the_prebuilt_module_is_of_this_source() {
        kiln_runtime::kiln_modules::assert_prebuilt_current("kiln_radix_sort", super::SOURCE);
    }
}
